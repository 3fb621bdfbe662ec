//! `cancel`: a conversation sends one turn non-blocking and cancels it while it runs,
//! sometimes twice (a client that retries its cancel), then ends.
//!
//! Turned on by `cancel-rate` (the probability per conversation), with `cancel-delay-ms`
//! (the wait between the send and the cancel), `double-cancel-rate` and
//! `cancel-resend-rate`: the turn it cancels was sent twice at once, same messageId (the
//! user who cancels is the impatient one, who clicked twice, or whose proxy retried; the
//! copy goes out first, before any other behaviour's calls before the send, such as a
//! context-mismatch send of that turn). Like `double-cancel-rate`, it is not varied per
//! seed by the swarm. A
//! second copy of the request, queued behind the running turn when the cancel comes, is
//! what makes a2a-sdk 1.3 with a per-pod store run the effect after the cancel (§6.4); the
//! generic `duplicate-rate` alone made that a one-seed-in-25 coincidence.
//!
//! Draws, when the conversation is drawn: `random_bool(cancel-rate)` (only when the rate is
//! above 0), then the turn in `1..=turns`. At that turn, before the send,
//! `random_bool(cancel-resend-rate)` (only when that rate is above 0); after the send, the
//! delay, then `random_bool(double-cancel-rate)`.

use std::cell::RefCell;
use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::{Behaviour, Conversation, Flow, Hook, Knob, Plan, Shape, Swarm, WorkloadSpec};
use crate::client::history::{OpKind, Outcome};

/// The `cancel` behaviour.
pub struct Cancel;

/// The knobs it reads.
const KNOBS: &[Knob] = &[
    Knob::rate(
        "cancel-rate",
        0.0,
        Swarm::Drawn {
            name: "cancel",
            always: true,
        },
        "Probability that a conversation is canceled: at a random turn the client sends the turn non-blocking, then cancels it while it runs.",
    ),
    Knob::ms_range(
        "cancel-delay-ms",
        [0, 80],
        "The cancel follows the non-blocking send after a delay drawn from [min, max] ms.",
    ),
    Knob::rate(
        "double-cancel-rate",
        0.5,
        Swarm::Fixed,
        "Probability that a canceled conversation's cancel is sent a second time.",
    ),
    Knob::rate(
        "cancel-resend-rate",
        0.0,
        Swarm::Fixed,
        "Probability that the turn a conversation cancels was sent twice at once (same messageId): the user who cancels is the impatient one, who clicked twice or whose proxy retried. 0 by default (files without it draw as before).",
    ),
];

impl Behaviour for Cancel {
    fn name(&self) -> &'static str {
        "cancel"
    }

    fn knobs(&self) -> &'static [Knob] {
        KNOBS
    }

    fn draw(&self, spec: &WorkloadSpec, rng: &mut ChaCha8Rng) -> Option<Box<dyn Plan>> {
        let rate = spec.rate("cancel-rate");
        let at = (rate > 0.0 && rng.random_bool(rate))
            .then(|| rng.random_range(1..=spec.turns))?;
        // The cancel's delay and whether it is sent twice come from the same stream.
        Some(Box::new(CancelAt(at, RefCell::new(rng.clone()))))
    }
}

/// Cancels the turn with this number, and ends the conversation; the behaviour's own stream
/// draws the delay and the second cancel.
struct CancelAt(u32, RefCell<ChaCha8Rng>);

impl Plan for CancelAt {
    fn shape(&self, turn: u32, shape: &mut Shape) {
        if turn == self.0 {
            shape.ends = true;
        }
    }

    fn before_send<'a>(&'a self, conv: &'a mut Conversation, turn: u32) -> Option<Hook<'a>> {
        let rate = conv.spec.rate("cancel-resend-rate");
        if turn != self.0 || rate == 0.0 || !self.1.borrow_mut().random_bool(rate) {
            return None;
        }
        // The canceled turn is sent non-blocking (its shape ends the conversation).
        conv.turn(turn, false).fire_duplicate(&conv.client);
        None
    }

    fn after_send<'a>(
        &'a self,
        conv: &'a mut Conversation,
        turn: u32,
        _shape: Shape,
    ) -> Option<Hook<'a, Flow>> {
        if turn != self.0 {
            return None;
        }
        Some(Box::pin(async move {
            if let Some(id) = &conv.task_id {
                let spec = &conv.spec;
                let [min, max] = spec.ms_range("cancel-delay-ms");
                let delay = self.1.borrow_mut().random_range(min..=max);
                tokio::time::sleep(Duration::from_millis(delay)).await;
                let twice = self.1.borrow_mut().random_bool(spec.rate("double-cancel-rate"));
                let times = if twice { 2 } else { 1 };
                for _ in 0..times {
                    cancel(conv, id).await;
                }
            }
            Flow::Stop
        }))
    }
}

/// Cancels a task, retrying while the outcome is unknown.
async fn cancel(conv: &Conversation, task_id: &str) {
    let spec = &conv.spec;
    for attempt in 0..=spec.retries {
        let answer = conv
            .client
            .unary(
                OpKind::Cancel {
                    conversation: conv.name.clone(),
                },
                "CancelTask",
                json!({ "id": task_id }),
                Some(&conv.ctx),
                None,
            )
            .await;
        match answer.outcome {
            Outcome::Info { .. } if attempt < spec.retries => {
                tokio::time::sleep(Duration::from_millis(spec.retry_backoff_ms)).await;
            }
            _ => return,
        }
    }
}
