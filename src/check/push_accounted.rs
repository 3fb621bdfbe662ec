//! `push-accounted`: every task that reached a final state with a push config registered
//! has its notification delivered, or a delivery failure the system recorded.
//!
//! Task completion and push delivery are separate promises (A2A-BEHAVIOURS.md §4: "task
//! completed ≠ push delivered"). A delivery is a 2xx answer at the webhook for that task and
//! state; a recorded failure is one the sending replica reported. Neither means the
//! notification vanished without a trace: a config registered on a pod that never ran the
//! task (§6.9), or a sender that drops refused targets silently. A push still queued in a
//! durable outbox when the run ends counts as recorded: the system knows it owes it (an
//! in-memory pending push does not: it dies with its pod). Exercised: tasks with a
//! registered push config that reached a terminal state.

use std::collections::BTreeSet;

use crate::check::{Checker, Class, Finding, Invariant, Violation, ViolationKind};
use crate::client::history::{OpKind, Outcome};
use crate::world::RunRecord;

impl Invariant {
    /// `push-accounted`.
    pub const PUSH_ACCOUNTED: Invariant = Invariant::new("push-accounted");
}

/// How `push-accounted` breaks.
impl ViolationKind {
    /// `unaccounted`.
    pub const UNACCOUNTED: ViolationKind = ViolationKind::new("unaccounted");
}

/// The push-accounted checker.
pub struct PushAccounted;

impl Checker for PushAccounted {
    fn name(&self) -> Invariant {
        Invariant::PUSH_ACCOUNTED
    }

    fn class(&self) -> Class {
        Class::Eventually
    }

    fn describe(&self) -> &'static str {
        "a final task with a push config has a delivery, or a delivery failure the system recorded"
    }

    fn check(&self, run: &RunRecord) -> Finding {
        let mut violations = Vec::new();
        let mut exercised = 0;
        let mut configured: BTreeSet<(&str, String)> = BTreeSet::new();
        for op in &run.history {
            if let (OpKind::SetPush { conversation }, Outcome::Ok) = (&op.kind, &op.outcome) {
                if let Some(task) = run.conversations.get(conversation) {
                    configured.insert((task, op.replica_or("")));
                }
            }
        }
        let delivered: BTreeSet<(String, String)> = run
            .deliveries
            .iter()
            .filter(|d| (200..300).contains(&d.status))
            .filter_map(|d| {
                let v: serde_json::Value = serde_json::from_str(&d.body).ok()?;
                let task = v.pointer("/statusUpdate/taskId")?.as_str()?.to_string();
                let state = v
                    .pointer("/statusUpdate/status/state")?
                    .as_str()?
                    .to_string();
                Some((task, state))
            })
            .collect();
        let mut seen = BTreeSet::new();
        for (task_id, registered_on) in &configured {
            if !seen.insert(*task_id) {
                continue;
            }
            let Some(task) = run.final_tasks.get(*task_id) else {
                continue;
            };
            if !task.status.state.is_terminal() {
                continue;
            }
            exercised += 1;
            let state = serde_json::to_value(&task.status.state)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let ok = delivered.contains(&(task_id.to_string(), state.clone()));
            let reported = run
                .push_reports
                .iter()
                .any(|r| r.task_id == *task_id && r.state == task.status.state)
                || run
                    .push_pending
                    .iter()
                    .any(|(t, s)| t == task_id && *s == task.status.state);
            if !ok && !reported {
                violations.push(
                    Violation::new(
                        ViolationKind::UNACCOUNTED,
                        format!(
                            "task {task_id} ended {:?} with a push config registered on {registered_on}, but no notification reached the webhook and no replica recorded a failure",
                            task.status.state
                        ),
                    )
                    .task(task_id)
                    .host(registered_on),
                );
            }
        }
        Finding {
            invariant: Invariant::PUSH_ACCOUNTED,
            violations,
            exercised,
        }
    }
}
