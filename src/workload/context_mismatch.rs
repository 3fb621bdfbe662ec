//! `context-mismatch`: at one turn after the first, a conversation first sends that turn on
//! its own task but with another conversation's contextId (a confused or malicious client),
//! once, with a messageId of its own; then the turn itself (A2A-BEHAVIOURS.md §6.10). A
//! server must refuse the mismatched send before anything runs (the `context-match`
//! invariant).
//!
//! Turned on by `context-mismatch-rate` (the probability per conversation; only with 2 turns
//! or more).
//!
//! Draws, when the conversation is drawn: `random_bool(context-mismatch-rate)` (only when
//! the rate is above 0 and there are 2 turns or more), then the turn in `2..=turns`. The
//! mismatched send draws nothing.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::{
    context_id, message_id, Behaviour, Conversation, Hook, Knob, Plan, Swarm, WorkloadSpec,
};
use crate::client::history::OpKind;
use crate::client::{Client, Parts};
use crate::replica::TurnInfo;

/// The `context-mismatch` behaviour.
pub struct ContextMismatch;

/// The knobs it reads.
const KNOBS: &[Knob] = &[Knob::rate(
    "context-mismatch-rate",
    0.0,
    Swarm::Drawn {
        name: "context-mismatch",
        always: true,
    },
    "Probability that a conversation, at one turn after the first, first sends that turn with another conversation's contextId on its own taskId (a confused or malicious client), once, then the turn itself (A2A-BEHAVIOURS.md §6.10).",
)];

impl Behaviour for ContextMismatch {
    fn name(&self) -> &'static str {
        "context-mismatch"
    }

    fn knobs(&self) -> &'static [Knob] {
        KNOBS
    }

    fn draw(&self, spec: &WorkloadSpec, rng: &mut ChaCha8Rng) -> Option<Box<dyn Plan>> {
        let rate = spec.rate("context-mismatch-rate");
        let at = (rate > 0.0 && spec.turns >= 2 && rng.random_bool(rate))
            .then(|| rng.random_range(2..=spec.turns))?;
        Some(Box::new(MismatchAt(at)))
    }
}

/// Sends the turn with this number with a foreign contextId first.
struct MismatchAt(u32);

impl Plan for MismatchAt {
    fn before_send<'a>(&'a self, conv: &'a mut Conversation, turn: u32) -> Option<Hook<'a>> {
        if turn != self.0 {
            return None;
        }
        let id = conv.task_id.clone()?;
        Some(Box::pin(mismatched_send(conv, turn, id)))
    }
}

/// Turn `turn` of the conversation, sent once on its own task but with another
/// conversation's contextId (and a messageId of its own).
async fn mismatched_send(conv: &Conversation, turn: u32, task_id: String) {
    let (seed, name) = (conv.seed, &conv.name);
    let info = TurnInfo {
        conversation: name.clone(),
        turn,
        turns: conv.spec.turns,
    };
    let ctx = context_id(seed, &format!("{name}-elsewhere"));
    let mid = format!("{}-mismatch", message_id(seed, name, turn));
    let message = Client::turn_message(&info, &mid, &ctx, Some(&task_id));
    let kind = OpKind::Send {
        conversation: name.clone(),
        turn,
        message_id: mid,
        blocking: true,
        foreign_context: true,
        omitted_context: false,
        named_task: false,
        needs_auth: false,
        reply: None,
        parts: Parts::Data,
        shape: crate::replica::AgentShape::default(),
    };
    conv.client
        .unary(
            kind,
            "SendMessage",
            json!({ "message": message }),
            Some(&ctx),
            None,
        )
        .await;
}
