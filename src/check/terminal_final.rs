//! `terminal-is-final`: once a task is terminal anywhere, it stays that terminal state.
//!
//! Observations come from every answer the client got (task snapshots, or for a stream
//! without one the last state its events showed) and from the store's
//! save log. After the first terminal observation of a task, any later save with another
//! state, or any answer invoked later showing another state, is a violation.
//! Exercised: tasks seen terminal that were observed or written again afterwards.

use std::collections::BTreeMap;

use a2a::TaskState;

use crate::check::{
    Checker, Finding, Invariant, LiveNeeds, Report, Violation, ViolationKind, Without,
};
use crate::client::history::Outcome;
use crate::world::RunRecord;

impl Invariant {
    /// `terminal-is-final`.
    pub const TERMINAL_IS_FINAL: Invariant = Invariant::new("terminal-is-final");
}

/// How `terminal-is-final` breaks.
impl ViolationKind {
    /// `left-terminal`.
    pub const LEFT_TERMINAL: ViolationKind = ViolationKind::new("left-terminal");
}

/// The terminal-is-final checker.
pub struct TerminalIsFinal;

impl Checker for TerminalIsFinal {
    fn name(&self) -> Invariant {
        Invariant::TERMINAL_IS_FINAL
    }

    fn live(&self) -> LiveNeeds {
        LiveNeeds::Reports(Report::Saves, Without::Partial)
    }

    fn describe(&self) -> &'static str {
        "a task seen terminal is never seen again in another state"
    }

    fn check(&self, run: &RunRecord) -> Finding {
        // A save is exact: it both establishes a terminal state and is checked against one.
        // An answer reflects the task at some instant between invoke and completion: it is
        // checked at its invoke time (it contradicts only a state established before it was
        // asked) and establishes a terminal state at its completion.
        #[derive(PartialEq)]
        enum Role {
            Save,
            Observe,
            Establish,
        }
        let mut events: Vec<(u64, usize, &str, &TaskState, String, Role)> = Vec::new();
        for (i, s) in run.saves.iter().enumerate() {
            let label = format!("store save v{} by {}", s.version, s.replica);
            events.push((s.at_ms, i, &s.task_id, &s.state, label, Role::Save));
        }
        for op in &run.history {
            if op.outcome != Outcome::Ok {
                continue;
            }
            if let Some(t) = op.acknowledged() {
                let label = format!("{} answered by {}", op.kind.label(), op.replica_or("?"));
                events.push((
                    op.invoke_ms,
                    usize::MAX,
                    &t.id,
                    &t.state,
                    label.clone(),
                    Role::Observe,
                ));
                if t.state.is_terminal() {
                    events.push((
                        op.complete_ms,
                        usize::MAX,
                        &t.id,
                        &t.state,
                        label,
                        Role::Establish,
                    ));
                }
            }
        }
        events.sort_by_key(|e| (e.0, e.1));
        let mut terminal: BTreeMap<&str, (&TaskState, String, u64)> = BTreeMap::new();
        let mut violations = Vec::new();
        let mut exercised = 0;
        for (at, _, task, state, label, role) in events {
            if role != Role::Establish {
                if let Some((first, where_, when)) = terminal.get(task) {
                    exercised += 1;
                    if state != *first {
                        violations.push(
                            Violation::new(
                                ViolationKind::LEFT_TERMINAL,
                                format!(
                                    "task {task} was {first:?} ({where_} at {when} ms) and later {state:?} ({label} at {at} ms)"
                                ),
                            )
                            .task(task)
                            .at(*when)
                            .at(at),
                        );
                    }
                }
            }
            if role != Role::Observe && state.is_terminal() && !terminal.contains_key(task) {
                terminal.insert(task, (state, label, at));
            }
        }
        Finding {
            invariant: Invariant::TERMINAL_IS_FINAL,
            violations,
            exercised,
        }
    }
}
