//! `terminal-is-final`: once a task is terminal anywhere, it stays that terminal state.
//!
//! Observations come from every answer the client got (task snapshots and stream states)
//! and from the store's save log. After the first terminal observation of a task, any later
//! save with another state, or any later answer showing another state, is a violation.
//! Exercised: tasks seen terminal that were observed or written again afterwards.

use std::collections::BTreeMap;

use a2a::TaskState;

use crate::check::{Checker, Finding, Violation};
use crate::cluster::RunRecord;
use crate::history::Outcome;

/// The terminal-is-final checker.
pub struct TerminalIsFinal;

impl Checker for TerminalIsFinal {
    fn describe(&self) -> &'static str {
        "a task seen terminal is never seen again in another state"
    }

    fn check(&self, run: &RunRecord) -> Finding {
        // (time, order, task, state, where)
        let mut seen: Vec<(u64, u64, String, TaskState, String)> = Vec::new();
        for (i, s) in run.saves.iter().enumerate() {
            seen.push((
                s.at_ms,
                i as u64,
                s.task_id.clone(),
                s.state.clone(),
                format!("store save v{} by {}", s.version, s.replica),
            ));
        }
        for op in &run.history {
            if op.outcome != Outcome::Ok {
                continue;
            }
            if let Some(t) = &op.task {
                let label = format!("{} answered by {}", op.kind.label(), op.replica.as_deref().unwrap_or("?"));
                // An answer reflects the task no later than its completion; order it there.
                seen.push((op.complete_ms, u64::MAX, t.id.clone(), t.state.clone(), label));
            }
        }
        seen.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let mut terminal: BTreeMap<String, (TaskState, String, u64)> = BTreeMap::new();
        let mut violations = Vec::new();
        let mut exercised = 0;
        for (at, _, task, state, label) in seen {
            if let Some((first, where_, when)) = terminal.get(&task) {
                exercised += 1;
                if state != *first {
                    violations.push(Violation {
                        invariant: "",
                        detail: format!(
                            "task {task} was {first:?} ({where_} at {when} ms) and later {state:?} ({label} at {at} ms)"
                        ),
                    });
                }
            } else if state.is_terminal() {
                terminal.insert(task, (state, label, at));
            }
        }
        Finding {
            invariant: "terminal-is-final",
            violations,
            exercised,
        }
    }
}
