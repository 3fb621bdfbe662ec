//! `subscribe`: a conversation sends one turn after the first non-blocking and follows it
//! with SubscribeToTask through the router (which may pick a replica that does not run it);
//! a subscriber whose stream was cut (an `info` outcome) may subscribe again.
//!
//! Turned on by `subscribe-rate` (the probability per conversation); `resubscribe-rate` is
//! the probability, per cut stream, of subscribing again (up to `retries` times,
//! `retry-backoff-ms` apart). A turn that is also canceled is not subscribed to, and a
//! subscribed turn is not polled.
//!
//! Draws, when the conversation is drawn: `random_bool(subscribe-rate)` (only when the rate
//! is above 0), then, when there are 2 turns or more, the turn in `2..=turns`. After a cut
//! stream, unless it was the last attempt: `random_bool(resubscribe-rate)` (only when that
//! rate is above 0).

use std::cell::RefCell;
use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::{Behaviour, Conversation, Flow, Hook, Knob, Plan, Shape, Swarm, WorkloadSpec};
use crate::client::history::{OpKind, Outcome};

/// The `subscribe` behaviour.
pub struct Subscribe;

/// The knobs it reads.
const KNOBS: &[Knob] = &[
    Knob::rate(
        "subscribe-rate",
        0.0,
        Swarm::Drawn {
            name: "subscribe",
            always: true,
        },
        "Probability that a conversation sends one turn non-blocking and follows it with SubscribeToTask through the router (which may pick a replica that does not run it).",
    ),
    Knob::rate(
        "resubscribe-rate",
        0.0,
        Swarm::Drawn {
            name: "resubscribe",
            always: true,
        },
        "Probability that a subscriber whose stream was cut (an `info` outcome) subscribes again, up to `retries` times.",
    ),
];

impl Behaviour for Subscribe {
    fn name(&self) -> &'static str {
        "subscribe"
    }

    fn knobs(&self) -> &'static [Knob] {
        KNOBS
    }

    fn draw(&self, spec: &WorkloadSpec, rng: &mut ChaCha8Rng) -> Option<Box<dyn Plan>> {
        // Turn 1 is never watched (it creates the task the subscription names), so the turn
        // is drawn from 2..=turns: drawn from 1..=turns, a third of the draws (half when a
        // seed's shape has 2 turns) subscribed to nothing, and a watched turn, which hazard
        // 8 on the a2a-python 1.3 shared stores needs, came in 115 of seeds 0-299 instead of
        // 152 (issue 20).
        let rate = spec.rate("subscribe-rate");
        let drawn = rate > 0.0 && rng.random_bool(rate);
        let at = (drawn && spec.turns >= 2).then(|| rng.random_range(2..=spec.turns))?;
        // Whether a cut stream is resubscribed comes from the same stream.
        Some(Box::new(SubscribeAt(at, RefCell::new(rng.clone()))))
    }
}

/// Subscribes to the task after the turn with this number (not the first); the
/// behaviour's own stream draws the resubscribes.
struct SubscribeAt(u32, RefCell<ChaCha8Rng>);

impl Plan for SubscribeAt {
    fn shape(&self, turn: u32, shape: &mut Shape) {
        if turn == self.0 && !shape.ends && turn > 1 {
            shape.watched = true;
        }
    }

    fn after_send<'a>(
        &'a self,
        conv: &'a mut Conversation,
        turn: u32,
        shape: Shape,
    ) -> Option<Hook<'a, Flow>> {
        if turn != self.0 || !shape.watched {
            return None;
        }
        Some(Box::pin(async move {
            if let Some(id) = conv.task_id.clone() {
                subscribe(conv, &id, &self.1).await;
            }
            Flow::Next
        }))
    }
}

/// SubscribeToTask through the router; a cut stream is resubscribed (`resubscribe-rate`).
async fn subscribe(conv: &mut Conversation, task_id: &str, rng: &RefCell<ChaCha8Rng>) {
    let spec = &conv.spec;
    for attempt in 0..=spec.retries {
        let answer = conv
            .client
            .stream(
                OpKind::Subscribe {
                    conversation: conv.name.clone(),
                },
                "SubscribeToTask",
                json!({ "id": task_id }),
                Some(&conv.ctx),
                None,
                Duration::from_millis(spec.request_timeout_ms * 2),
            )
            .await;
        let cut = matches!(answer.outcome, Outcome::Info { .. });
        if !cut
            || attempt >= spec.retries
            || spec.rate("resubscribe-rate") <= 0.0
            || !rng.borrow_mut().random_bool(spec.rate("resubscribe-rate"))
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(spec.retry_backoff_ms)).await;
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    /// Every drawn subscription watches a turn (never turn 1, which creates the task), and a
    /// conversation of one turn draws none. Fails on a draw from `1..=turns`.
    #[test]
    fn a_subscription_is_drawn_on_a_turn_it_can_watch() {
        for turns in 1..=4 {
            let mut spec = WorkloadSpec::default();
            spec.turns = turns;
            spec.set("subscribe-rate", crate::workload::Setting::Rate(1.0));
            for seed in 0..200 {
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let Some(plan) = Subscribe.draw(&spec, &mut rng) else {
                    assert_eq!(turns, 1, "seed {seed}: nothing drawn at {turns} turns");
                    continue;
                };
                let watched: Vec<u32> = (1..=turns)
                    .filter(|&t| {
                        let mut shape = Shape::default();
                        plan.shape(t, &mut shape);
                        shape.watched
                    })
                    .collect();
                assert_eq!(watched.len(), 1, "seed {seed}, {turns} turns: {watched:?}");
                assert!(watched[0] >= 2, "seed {seed}: {watched:?}");
            }
        }
    }
}
