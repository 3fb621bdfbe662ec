//! `no-lost-writes`: every acknowledged turn survives.
//!
//! A turn the client saw `ok` (its artifact `turn-N` and its message) must be present in the
//! final authoritative task (the shared store's copy, or the memory of a live pod) and in
//! every later successful read or write answer of that task. A streamed turn counts as
//! acknowledged when its events showed the turn's artifact and a final state, snapshot or
//! not (a continuation's stream has none). Exercised: acknowledged turns
//! whose conversation saw another operation after the turn began (a concurrent or later
//! writer, a later read) or a fault after the ack (a lost reply aside), where a stale snapshot, an overwrite or a
//! dead pod could lose them.

use crate::check::{turn_label, Checker, Finding, Invariant, Violation, ViolationKind};
use crate::client::history::{OpKind, Outcome};
use crate::faults::Action;
use crate::world::RunRecord;

impl Invariant {
    /// `no-lost-writes`.
    pub const NO_LOST_WRITES: Invariant = Invariant::new("no-lost-writes");
}

/// How `no-lost-writes` breaks.
impl ViolationKind {
    /// `missing-from-a-read`.
    pub const MISSING_FROM_A_READ: ViolationKind = ViolationKind::new("missing-from-a-read");
    /// `task-lost`.
    pub const TASK_LOST: ViolationKind = ViolationKind::new("task-lost");
    /// `missing-from-the-final-task`.
    pub const MISSING_FROM_THE_FINAL_TASK: ViolationKind =
        ViolationKind::new("missing-from-the-final-task");
}

/// The no-lost-writes checker.
pub struct NoLostWrites;

impl Checker for NoLostWrites {
    fn name(&self) -> Invariant {
        Invariant::NO_LOST_WRITES
    }

    fn describe(&self) -> &'static str {
        "every turn acknowledged ok is in the final task and in every later successful read"
    }

    fn check(&self, run: &RunRecord) -> Finding {
        let mut violations = Vec::new();
        let mut exercised = 0;
        for ack in &run.history {
            let (
                OpKind::Send {
                    conversation,
                    turn,
                    message_id,
                    ..
                },
                Outcome::Ok,
                Some(view),
            ) = (&ack.kind, &ack.outcome, ack.acknowledged())
            else {
                continue;
            };
            let artifact = format!("turn-{turn}");
            if !view.artifacts.contains(&artifact) {
                // A non-blocking answer: nothing was promised yet beyond the message.
                continue;
            }
            let by = ack.replica_or("?");
            let what = turn_label(conversation, *turn);
            let later: Vec<_> = run
                .history
                .iter()
                .filter(|o| o.invoke_ms > ack.complete_ms && o.outcome == Outcome::Ok)
                .filter(|o| o.task.as_ref().is_some_and(|t| t.id == view.id))
                .collect();
            // Exercised: another operation on the conversation ran after this turn began (a
            // concurrent or later writer, or a later read), or a fault struck after the ack.
            let touched = run.history.iter().any(|o| {
                o.id != ack.id
                    && o.kind.conversation() == conversation
                    && o.complete_ms > ack.invoke_ms
            });
            // A lost reply after the ack loses no stored write, so it does not count.
            let struck = run
                .faults
                .iter()
                .any(|(at, f)| *at > ack.complete_ms && !matches!(f, Action::DropNextReply(_)));
            if touched || struck {
                exercised += 1;
            }
            for read in later {
                let seen = read.task.as_ref().expect("filtered");
                if !seen.artifacts.contains(&artifact) {
                    let from = read.replica_or("?");
                    violations.push(
                        Violation::new(
                            ViolationKind::MISSING_FROM_A_READ,
                            format!(
                                "{what}, acknowledged by {by} at {} ms, is missing from a later answer ({} at {} ms from {from}): task {} has artifacts [{}]",
                                ack.complete_ms,
                                read.kind.label(),
                                read.complete_ms,
                                seen.id,
                                seen.artifacts.join(", ")
                            ),
                        )
                        .about(conversation, *turn)
                        .task(&seen.id)
                        .host(&by)
                        .host(&from)
                        .at(ack.complete_ms)
                        .at(read.complete_ms),
                    );
                }
            }
            match run.final_tasks.get(&view.id) {
                None => violations.push(
                    Violation::new(
                        ViolationKind::TASK_LOST,
                        format!(
                            "{what}, acknowledged by {by} at {} ms, is lost: task {} no longer exists anywhere at the end of the run",
                            ack.complete_ms, view.id
                        ),
                    )
                    .about(conversation, *turn)
                    .task(&view.id)
                    .host(&by)
                    .at(ack.complete_ms),
                ),
                Some(task) => {
                    let names = crate::store::artifact_names(task);
                    let has_message = task
                        .history
                        .iter()
                        .flatten()
                        .any(|m| &m.message_id == message_id);
                    if !names.contains(&artifact) || !has_message {
                        violations.push(
                            Violation::new(
                                ViolationKind::MISSING_FROM_THE_FINAL_TASK,
                                format!(
                                    "{what}, acknowledged by {by} at {} ms, is missing from the final task {} (artifacts [{}]{})",
                                    ack.complete_ms,
                                    view.id,
                                    names.join(", "),
                                    if has_message { "" } else { "; its message is gone from the history" }
                                ),
                            )
                            .about(conversation, *turn)
                            .task(&view.id)
                            .host(&by)
                            .at(ack.complete_ms),
                        );
                    }
                }
            }
        }
        Finding {
            invariant: Invariant::NO_LOST_WRITES,
            violations,
            exercised,
        }
    }
}
