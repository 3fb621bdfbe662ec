//! `follow-up`: a conversation sends two follow-ups at once (turns n and n+1), as two
//! concurrent callers or a user who typed twice; the router may send them to different
//! replicas. The conversation goes on after turn n+1 when both were acknowledged, and ends
//! otherwise.
//!
//! Turned on by `follow-up-rate` (the probability per conversation; only with 3 turns or
//! more). Only a blocking turn with a task to continue is paired.
//!
//! Draws, when the conversation is drawn: `random_bool(follow-up-rate)` (only when the rate
//! is above 0 and there are 3 turns or more), then n in `2..=turns - 1`. At turn n, turn n
//! sends with the conversation's generator, and turn n+1 with its own (derived from the
//! seed, `follow-up` and the conversation's index).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Behaviour, Conversation, Flow, Hook, Knob, Plan, Shape, Swarm, Turn, WorkloadSpec};

/// The `follow-up` behaviour.
pub struct FollowUp;

/// The knobs it reads.
const KNOBS: &[Knob] = &[Knob::rate(
    "follow-up-rate",
    0.0,
    Swarm::Drawn {
        name: "follow-up",
        always: true,
    },
    "Probability that a conversation sends two follow-ups at once (turns n and n+1).",
)];

impl Behaviour for FollowUp {
    fn name(&self) -> &'static str {
        "follow-up"
    }

    fn knobs(&self) -> &'static [Knob] {
        KNOBS
    }

    fn draw(&self, spec: &WorkloadSpec, rng: &mut ChaCha8Rng) -> Option<Box<dyn Plan>> {
        let rate = spec.rate("follow-up-rate");
        let at = (rate > 0.0 && spec.turns >= 3 && rng.random_bool(rate))
            .then(|| rng.random_range(2..=spec.turns - 1))?;
        Some(Box::new(FollowUpAt(at)))
    }
}

/// Sends the turn with this number and the next one at once.
struct FollowUpAt(u32);

impl Plan for FollowUpAt {
    fn pair<'a>(
        &'a self,
        conv: &'a mut Conversation,
        turn: u32,
        shape: Shape,
    ) -> Option<Hook<'a, Flow>> {
        if turn != self.0 || !shape.blocking() || conv.task_id.is_none() {
            return None;
        }
        Some(Box::pin(async move {
            let second = {
                let (client, spec, name, ctx) = (
                    conv.client.clone(),
                    conv.spec.clone(),
                    conv.name.clone(),
                    conv.ctx.clone(),
                );
                let (seed, task_id) = (conv.seed, conv.task_id.clone());
                let mut rng = ChaCha8Rng::seed_from_u64(crate::trace::derive_seed(
                    seed,
                    "follow-up",
                    u64::from(conv.index),
                ));
                crate::activity::spawn(async move {
                    let req =
                        Turn::new(&spec, seed, &name, &ctx, turn + 1, task_id.as_deref(), true);
                    req.send(&spec, &client, &mut rng).await
                })
            };
            let req = conv.turn(turn, true);
            let first = req.send(&conv.spec, &conv.client, &mut conv.rng).await;
            let second = second.await.ok().flatten();
            match (first, second) {
                (Some(a), Some(b)) => {
                    conv.task_id = b.or(a).or(conv.task_id.take());
                    Flow::Next
                }
                _ => Flow::Stop,
            }
        }))
    }
}
