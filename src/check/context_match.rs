//! `context-match`: a message's context is its task's. A message that names a task and a
//! different contextId is refused, and refused before anything runs; a message that names
//! its task and no contextId joins the task's context.
//!
//! The A2A specification requires the mismatch to be rejected (A2A-BEHAVIOURS.md §1,
//! multi-turn). a2a-python before 1.2 rejected it only after the executor had run, business
//! effect included (#1270); Mastra never compares the two and accepts the message
//! (A2A-BEHAVIOURS.md §6.10). A violation is an `ok` answer to such a message, or a business
//! effect of it at the ledger while it was in flight.
//!
//! The specification also says "Agents MUST infer `contextId` from the task if only
//! `taskId` is provided" (A2A 1.0 §3.4.3), which is how the official clients send
//! follow-ups. a2a-sdk 1.3.0 generates a new context for such a request instead
//! (a2aproject/a2a-python#1206): the message and the agent's reply enter the task's history
//! under a context that is not the task's. A violation is such a message in its task's
//! final history with another contextId (`not-inherited`).
//!
//! Exercised: messages with a foreign contextId a replica answered, and messages without
//! one that the final task holds.

use crate::check::{
    turn_label, Checker, Finding, Invariant, LiveNeeds, Report, Violation, ViolationKind, Without,
};
use crate::client::history::{OpKind, Outcome};
use crate::world::RunRecord;

impl Invariant {
    /// `context-match`.
    pub const CONTEXT_MATCH: Invariant = Invariant::new("context-match");
}

/// How `context-match` breaks.
impl ViolationKind {
    /// `accepted`.
    pub const ACCEPTED: ViolationKind = ViolationKind::new("accepted");
    /// `effect-before-refusal`.
    pub const EFFECT_BEFORE_REFUSAL: ViolationKind = ViolationKind::new("effect-before-refusal");
    /// `not-inherited`.
    pub const NOT_INHERITED: ViolationKind = ViolationKind::new("not-inherited");
}

/// The context-match checker.
pub struct ContextMatch;

impl Checker for ContextMatch {
    fn name(&self) -> Invariant {
        Invariant::CONTEXT_MATCH
    }

    fn live(&self) -> LiveNeeds {
        LiveNeeds::Reports(Report::Effects, Without::FailOnly)
    }

    fn describe(&self) -> &'static str {
        "a message whose contextId is not its task's is refused before the executor runs; one with its taskId and no contextId joins the task's context"
    }

    fn check(&self, run: &RunRecord) -> Finding {
        let mut violations = Vec::new();
        let mut exercised = 0;
        for op in &run.history {
            let OpKind::Send {
                conversation,
                turn,
                message_id,
                foreign_context: true,
                ..
            } = &op.kind
            else {
                continue;
            };
            if op.replica.is_some() {
                exercised += 1;
            }
            let what = turn_label(conversation, *turn);
            let on = op.replica_or("a replica");
            if op.outcome == Outcome::Ok {
                violations.push(
                    Violation::new(
                        ViolationKind::ACCEPTED,
                        format!("{on} accepted {what} sent with another conversation's contextId"),
                    )
                    .names_turn(conversation)
                    .host(&on),
                );
            }
            for e in run.effects.iter().filter(|e| {
                e.applied
                    && &e.request.message_id == message_id
                    && (op.invoke_ms..=op.complete_ms).contains(&e.at_ms)
            }) {
                violations.push(
                    Violation::new(
                        ViolationKind::EFFECT_BEFORE_REFUSAL,
                        format!(
                            "{what}, sent with another conversation's contextId, ran its business effect on {} at {} ms before the answer ({})",
                            e.request.replica,
                            e.at_ms,
                            match &op.outcome {
                                Outcome::Fail { code, message } => format!("{code} {message}"),
                                other => other.word().to_string(),
                            }
                        ),
                    )
                    .about(conversation, *turn)
                    .host(&e.request.replica)
                    .at(e.at_ms),
                );
            }
        }
        for op in &run.history {
            let OpKind::Send {
                conversation,
                turn,
                message_id,
                omitted_context: true,
                ..
            } = &op.kind
            else {
                continue;
            };
            let task = run
                .conversations
                .get(conversation)
                .or(op.acknowledged().map(|t| &t.id))
                .and_then(|id| run.final_tasks.get(id));
            let Some((task, held)) = task.and_then(|t| {
                let m = t
                    .history
                    .iter()
                    .flatten()
                    .find(|m| &m.message_id == message_id)?;
                Some((t, m))
            }) else {
                continue;
            };
            exercised += 1;
            if let Some(other) = held.context_id.as_deref().filter(|c| *c != task.context_id) {
                violations.push(
                    Violation::new(
                        ViolationKind::NOT_INHERITED,
                        format!(
                            "{}, sent with its taskId and no contextId, is in {}'s history under context {other}, not the task's {}",
                            turn_label(conversation, *turn),
                            task.id,
                            task.context_id
                        ),
                    )
                    .names_turn(conversation)
                    .host(op.replica_or("a replica")),
                );
            }
        }
        Finding {
            invariant: Invariant::CONTEXT_MATCH,
            violations,
            exercised,
        }
    }
}
