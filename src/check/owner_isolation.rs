//! `owner-isolation`: no principal reads, cancels, follows, configures or continues another
//! principal's task.
//!
//! A conversation's task belongs to the principal whose first turn created it. Every later
//! call on that task by another principal (a second user who learned the id, or an
//! anonymous caller) must be refused: an `ok` GetTask, CancelTask, push-config or
//! continuation, or any event on a SubscribeToTask stream, is a leak. Ground truth covers
//! the case the answer hides: a foreign cancel whose reply was lost, while the store shows
//! the task canceled during it and its owner never asked. Task stores without an owner field
//! serve any caller's task id (A2A-BEHAVIOURS.md §6.14; seeds mastra and rasa). Exercised:
//! another principal's calls on a task that a replica answered.

use a2a::TaskState;

use crate::check::{owners, Checker, Finding, Invariant, Violation, ViolationKind};
use crate::client::history::{Op, OpKind, Outcome};
use crate::world::RunRecord;

impl Invariant {
    /// `owner-isolation`.
    pub const OWNER_ISOLATION: Invariant = Invariant::new("owner-isolation");
}

/// How `owner-isolation` breaks.
impl ViolationKind {
    /// `foreign-subscribe`.
    pub const FOREIGN_SUBSCRIBE: ViolationKind = ViolationKind::new("foreign-subscribe");
    /// `foreign-read`.
    pub const FOREIGN_READ: ViolationKind = ViolationKind::new("foreign-read");
    /// `foreign-cancel`.
    pub const FOREIGN_CANCEL: ViolationKind = ViolationKind::new("foreign-cancel");
    /// `foreign-push-config`.
    pub const FOREIGN_PUSH_CONFIG: ViolationKind = ViolationKind::new("foreign-push-config");
    /// `foreign-turn`.
    pub const FOREIGN_TURN: ViolationKind = ViolationKind::new("foreign-turn");
    /// `foreign-cancel-landed`.
    pub const FOREIGN_CANCEL_LANDED: ViolationKind = ViolationKind::new("foreign-cancel-landed");
}

/// The owner-isolation checker.
pub struct OwnerIsolation;

impl Checker for OwnerIsolation {
    fn name(&self) -> Invariant {
        Invariant::OWNER_ISOLATION
    }

    fn describe(&self) -> &'static str {
        "no principal reads, cancels, subscribes to, configures or continues another's task"
    }

    fn check(&self, run: &RunRecord) -> Finding {
        let owners = owners(&run.history);
        let mut violations = Vec::new();
        let mut exercised = 0;
        for op in &run.history {
            let conversation = op.kind.conversation();
            let (Some(owner), Some(task_id)) = (
                owners.get(conversation),
                run.conversations.get(conversation),
            ) else {
                continue;
            };
            if op.principal == *owner || matches!(op.kind, OpKind::Send { turn: 1, .. }) {
                continue;
            }
            if op.replica.is_some() {
                exercised += 1;
            }
            let who = &op.principal;
            let on = op.replica_or("a replica");
            let leaked = match (&op.kind, &op.outcome) {
                (OpKind::Subscribe { .. }, _) if !op.stream_states.is_empty() => Some((
                    ViolationKind::FOREIGN_SUBSCRIBE,
                    format!(
                        "{on} streamed {} event(s) of {owner}'s task {task_id} to {who}",
                        op.stream_states.len()
                    ),
                    None,
                )),
                (OpKind::Get { .. }, Outcome::Ok) => Some((
                    ViolationKind::FOREIGN_READ,
                    format!("{on} served {owner}'s task {task_id} to {who} (GetTask)"),
                    None,
                )),
                (OpKind::Cancel { .. }, Outcome::Ok) => Some((
                    ViolationKind::FOREIGN_CANCEL,
                    format!("{on} canceled {owner}'s task {task_id} for {who}"),
                    None,
                )),
                (OpKind::SetPush { .. }, Outcome::Ok) => Some((
                    ViolationKind::FOREIGN_PUSH_CONFIG,
                    format!("{on} took {who}'s push config for {owner}'s task {task_id}"),
                    None,
                )),
                (OpKind::Send { turn, .. }, Outcome::Ok) => Some((
                    ViolationKind::FOREIGN_TURN,
                    format!("{on} ran turn {turn} from {who} on {owner}'s task {task_id}"),
                    None,
                )),
                (OpKind::Cancel { .. }, Outcome::Info { .. }) => {
                    foreign_cancel_landed(run, op, owner, task_id).map(|at| {
                        (
                            ViolationKind::FOREIGN_CANCEL_LANDED,
                            format!(
                                "{who}'s cancel of {owner}'s task {task_id} got no answer, yet the store canceled the task at {at} ms and {owner} never asked"
                            ),
                            Some(at),
                        )
                    })
                }
                _ => None,
            };
            if let Some((kind, detail, at)) = leaked {
                let mut v = Violation::new(kind, detail).task(task_id).host(&on);
                if let Some(at) = at {
                    v = v.at(at);
                }
                violations.push(v);
            }
        }
        Finding {
            invariant: Invariant::OWNER_ISOLATION,
            violations,
            exercised,
        }
    }
}

/// When the store canceled `task_id` during `cancel` with no cancel from its owner sent
/// before then, the time it did.
fn foreign_cancel_landed(run: &RunRecord, cancel: &Op, owner: &str, task_id: &str) -> Option<u64> {
    let at = run
        .saves
        .iter()
        .find(|s| {
            s.task_id == task_id
                && s.state == TaskState::Canceled
                && (cancel.invoke_ms..=cancel.complete_ms).contains(&s.at_ms)
        })?
        .at_ms;
    let owner_asked = run.history.iter().any(|o| {
        matches!(&o.kind, OpKind::Cancel { conversation } if conversation == cancel.kind.conversation())
            && o.principal == owner
            && o.invoke_ms <= at
    });
    (!owner_asked).then_some(at)
}
