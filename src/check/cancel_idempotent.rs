//! `cancel-idempotent`: canceling a task that is already canceled succeeds.
//!
//! The A2A specification says cancel "is idempotent" (§3.3.1); a2a-python and Mastra answer
//! a second cancel with `-32002` TaskNotCancelable (A2A-BEHAVIOURS.md §6.11), so a client
//! that retries a cancel whose reply was lost is told it failed. Only that refusal counts:
//! a `-32603` while the store is unreachable is unavailability, not non-idempotence.
//! Exercised: cancels sent after the task was already seen canceled.

use a2a::TaskState;

use crate::check::{Checker, Finding, Invariant, Violation, ViolationKind};
use crate::client::history::{OpKind, Outcome};
use crate::world::RunRecord;

impl Invariant {
    /// `cancel-idempotent`.
    pub const CANCEL_IDEMPOTENT: Invariant = Invariant::new("cancel-idempotent");
}

/// How `cancel-idempotent` breaks.
impl ViolationKind {
    /// `second-cancel-refused`.
    pub const SECOND_CANCEL_REFUSED: ViolationKind = ViolationKind::new("second-cancel-refused");
}

/// The cancel-idempotent checker.
pub struct CancelIdempotent;

impl Checker for CancelIdempotent {
    fn name(&self) -> Invariant {
        Invariant::CANCEL_IDEMPOTENT
    }

    fn describe(&self) -> &'static str {
        "a cancel of a task already canceled returns the canceled task, not an error"
    }

    fn check(&self, run: &RunRecord) -> Finding {
        let mut violations = Vec::new();
        let mut exercised = 0;
        for op in &run.history {
            let OpKind::Cancel { conversation } = &op.kind else {
                continue;
            };
            let Some(task_id) = run.conversations.get(conversation) else {
                continue;
            };
            // Canceled before this cancel was sent: an earlier answer or save said so.
            let canceled_at = run
                .saves
                .iter()
                .filter(|s| &s.task_id == task_id && s.state == TaskState::Canceled)
                .map(|s| s.at_ms)
                .chain(run.history.iter().filter_map(|o| {
                    let t = o.task.as_ref()?;
                    (o.outcome == Outcome::Ok && &t.id == task_id && t.state == TaskState::Canceled)
                        .then_some(o.complete_ms)
                }))
                .min();
            let Some(at) = canceled_at.filter(|at| *at < op.invoke_ms) else {
                continue;
            };
            exercised += 1;
            // Idempotency is about the answer to a repeated cancel (TaskNotCancelable), not
            // about availability: a -32603 while the store is cut off is not a refusal.
            if let Outcome::Fail {
                code: code @ -32002,
                message,
            } = &op.outcome
            {
                let by = op.replica_or("?");
                violations.push(
                    Violation::new(
                        ViolationKind::SECOND_CANCEL_REFUSED,
                        format!(
                            "a second cancel of task {task_id} (canceled at {at} ms) was refused by {by} with {code} {message}"
                        ),
                    )
                    .task(task_id)
                    .host(&by)
                    .at(at),
                );
            }
        }
        Finding {
            invariant: Invariant::CANCEL_IDEMPOTENT,
            violations,
            exercised,
        }
    }
}
