//! `context-match`: a message that names a task and a different contextId is refused, and
//! refused before anything runs.
//!
//! The A2A specification requires the mismatch to be rejected (A2A-BEHAVIOURS.md §1,
//! multi-turn). a2a-python before 1.2 rejected it only after the executor had run, business
//! effect included (#1270); Mastra never compares the two and accepts the message
//! (A2A-BEHAVIOURS.md §6.10). A violation is an `ok` answer to such a message, or a business
//! effect of it at the ledger while it was in flight. Exercised: such messages a replica
//! answered.

use crate::check::{turn_label, Checker, Finding, Invariant, Violation, ViolationKind};
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
}

/// The context-match checker.
pub struct ContextMatch;

impl Checker for ContextMatch {
    fn name(&self) -> Invariant {
        Invariant::CONTEXT_MATCH
    }

    fn describe(&self) -> &'static str {
        "a message whose contextId is not its task's is refused before the executor runs"
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
        Finding {
            invariant: Invariant::CONTEXT_MATCH,
            violations,
            exercised,
        }
    }
}
