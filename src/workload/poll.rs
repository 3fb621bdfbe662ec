//! `poll`: a conversation is a polling client (Cognigy's style, A2A-BEHAVIOURS.md §5):
//! every turn is sent with `returnImmediately`, then GetTask is polled every
//! `poll-interval-ms` until the task waits for input or ends. The client gives up, and the
//! conversation ends, after `poll-timeout-ms` or when the task ends in a state that stops
//! it (a client timeout is not a remote cancel: it just stops).
//!
//! Turned on by `poll-rate` (the probability per conversation). A subscribed turn is not
//! polled.
//!
//! Draws, when the conversation is drawn: `random_bool(poll-rate)` (only when the rate is
//! above 0). Polling draws nothing.

use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::{Behaviour, Conversation, Flow, Hook, Knob, Plan, Shape, Swarm, WorkloadSpec};
use crate::client::history::{OpKind, Outcome};

/// The `poll` behaviour.
pub struct Poll;

/// The knobs it reads.
const KNOBS: &[Knob] = &[
    Knob::rate(
        "poll-rate",
        0.0,
        Swarm::Drawn {
            name: "poll",
            always: true,
        },
        "Probability that a conversation is a polling client: each turn is sent with `returnImmediately`, then GetTask is polled until the task waits for input or ends.",
    ),
    Knob::ms(
        "poll-interval-ms",
        200,
        true,
        "Wait between two polls, simulated ms.",
    ),
    Knob::ms(
        "poll-timeout-ms",
        6000,
        false,
        "A polling client gives up on a turn after this many simulated ms (Cognigy's task timeout, scaled down like every time here).",
    ),
];

impl Behaviour for Poll {
    fn name(&self) -> &'static str {
        "poll"
    }

    fn knobs(&self) -> &'static [Knob] {
        KNOBS
    }

    fn turn_extra_ms(&self, spec: &WorkloadSpec) -> u64 {
        if spec.rate("poll-rate") > 0.0 {
            spec.ms("poll-timeout-ms").saturating_add(spec.ms("poll-interval-ms"))
        } else {
            0
        }
    }

    fn draw(&self, spec: &WorkloadSpec, rng: &mut ChaCha8Rng) -> Option<Box<dyn Plan>> {
        let rate = spec.rate("poll-rate");
        let polling = rate > 0.0 && rng.random_bool(rate);
        polling.then(|| Box::new(Polling) as Box<dyn Plan>)
    }
}

/// Sends every turn non-blocking and polls it.
struct Polling;

impl Plan for Polling {
    fn shape(&self, _turn: u32, shape: &mut Shape) {
        shape.polled = true;
    }

    fn after_send<'a>(
        &'a self,
        conv: &'a mut Conversation,
        _turn: u32,
        shape: Shape,
    ) -> Option<Hook<'a, Flow>> {
        if shape.watched {
            return None;
        }
        Some(Box::pin(async move {
            let settled = match &conv.task_id {
                Some(id) => poll(conv, id).await,
                None => false,
            };
            if settled {
                Flow::Next
            } else {
                Flow::Stop
            }
        }))
    }
}

/// Polls GetTask until the task waits for input or ends; false when the client gave up
/// (the poll timeout passed) or the task ended in a state that stops the conversation.
async fn poll(conv: &Conversation, id: &str) -> bool {
    let spec = &conv.spec;
    let deadline = crate::trace::now_ms() + spec.ms("poll-timeout-ms");
    loop {
        tokio::time::sleep(Duration::from_millis(spec.ms("poll-interval-ms"))).await;
        let answer = conv
            .client
            .unary(
                OpKind::Get {
                    conversation: conv.name.clone(),
                },
                "GetTask",
                json!({ "id": id }),
                Some(&conv.ctx),
                None,
            )
            .await;
        if let (Outcome::Ok, Some(task)) = (&answer.outcome, &answer.task) {
            match task.status.state {
                a2a::TaskState::InputRequired | a2a::TaskState::Completed => return true,
                ref s if s.is_terminal() => return false,
                _ => {}
            }
        }
        if crate::trace::now_ms() >= deadline {
            // A client timeout is not a remote cancel (A2A-BEHAVIOURS.md §5): it just stops.
            return false;
        }
    }
}
