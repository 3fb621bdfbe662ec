//! `push`: a conversation registers a push config after its first turn, on whichever
//! replica the router picks, with a receiver drawn from [`PUSH_URLS`]: a healthy one, one
//! that redirects to a private address, a slow one, or a name that rebinds to a private
//! address.
//!
//! Turned on by `push-rate` (the probability per conversation).
//!
//! Draws, when the conversation is drawn: `random_bool(push-rate)` (only when the rate is
//! above 0), then the receiver ([`pick_push_url`]: one `random_range`).

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::{Behaviour, Conversation, Hook, Knob, Plan, Swarm, WorkloadSpec};
use crate::client::history::OpKind;

/// Push receivers a conversation may register, with their weights: a healthy one, one that
/// redirects to a private address, a slow one, and a name that rebinds to a private address.
///
/// Equally likely. Each unhealthy receiver is the one fault a documented hazard needs (§6.5
/// the redirect, §6.13 the slow webhook, §6.6 the rebinding name), and a seed registers about
/// one config (the swarm keeps `push-rate` in 3 seeds of 4 and scales it): at the earlier
/// weights (6, 1, 1, 2) the slow receiver came in 19 of seeds 0-299 and none of 0-54, so
/// hazard 13 first appeared at seed 55 on every model (issue 20). Equal weights put each
/// kind in about one seed of five (61 to 71 of seeds 0-299, the healthy one 71).
pub const PUSH_URLS: &[(u32, &str)] = &[
    (1, "http://hooks.example:7200/ok/"),
    (1, "http://hooks.example:7200/redirect/"),
    (1, "http://hooks.example:7200/slow/"),
    (1, "http://rebind.example:7200/ok/"),
];

/// A push receiver drawn from [`PUSH_URLS`] by weight.
pub fn pick_push_url(rng: &mut ChaCha8Rng) -> &'static str {
    let total: u32 = PUSH_URLS.iter().map(|(w, _)| w).sum();
    let mut pick = rng.random_range(0..total);
    for (weight, url) in PUSH_URLS {
        if pick < *weight {
            return url;
        }
        pick -= weight;
    }
    unreachable!("the weights cover 0..total")
}

/// The `push` behaviour.
pub struct Push;

/// The knobs it reads.
const KNOBS: &[Knob] = &[Knob::rate(
    "push-rate",
    0.0,
    Swarm::Drawn {
        name: "push",
        always: true,
    },
    "Probability that a conversation registers a push config after its first turn, on whichever replica the router picks. The URL is drawn from `PUSH_URLS`.",
)];

impl Behaviour for Push {
    fn name(&self) -> &'static str {
        "push"
    }

    fn knobs(&self) -> &'static [Knob] {
        KNOBS
    }

    fn draw(&self, spec: &WorkloadSpec, rng: &mut ChaCha8Rng) -> Option<Box<dyn Plan>> {
        let rate = spec.rate("push-rate");
        let url = (rate > 0.0 && rng.random_bool(rate))
            .then(|| pick_push_url(rng))?;
        Some(Box::new(PushTo(url)))
    }
}

/// Registers this receiver (followed by the conversation's name) after the first turn.
struct PushTo(&'static str);

impl Plan for PushTo {
    fn after_first_turn<'a>(&'a self, conv: &'a mut Conversation) -> Option<Hook<'a>> {
        let id = conv.task_id.clone()?;
        let url = format!("{}{}", self.0, conv.name);
        Some(Box::pin(async move {
            conv.client
                .unary(
                    OpKind::SetPush {
                        conversation: conv.name.clone(),
                    },
                    "CreateTaskPushNotificationConfig",
                    json!({ "taskId": id, "url": url }),
                    Some(&conv.ctx),
                    None,
                )
                .await;
        }))
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn push_urls_are_drawn_by_weight() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let total: u32 = PUSH_URLS.iter().map(|(w, _)| w).sum();
        let mut counts = vec![0u32; PUSH_URLS.len()];
        for _ in 0..10_000 {
            let url = pick_push_url(&mut rng);
            counts[PUSH_URLS.iter().position(|(_, u)| *u == url).unwrap()] += 1;
        }
        eprintln!("{counts:?}");
        for (i, (w, _)) in PUSH_URLS.iter().enumerate() {
            let expected = 10_000 * w / total;
            assert!(
                counts[i].abs_diff(expected) < expected / 5 + 50,
                "{counts:?}"
            );
        }
    }
}
