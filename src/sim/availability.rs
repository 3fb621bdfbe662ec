//! Availability beside safety: how many turns a run's client could not get done.
//!
//! The invariants say what must never happen; a design can keep them all by refusing work.
//! A replica that answers `-32001` (TaskNotFound) to a continuation of a task that exists
//! (its store is another pod's memory, or the task was not saved yet) loses nothing and runs
//! nothing twice, yet the user's conversation is stuck. So every run also counts, per turn
//! (a logical operation, whatever retries carried it):
//!
//! - **refused continuations**: turns one of whose attempts was answered `-32001` although
//!   the conversation's task exists at the end of the run (in the store, or a live pod);
//!   an attempt by another principal than the conversation's first, sent on a foreign
//!   contextId or naming another task id (a scenario's `task_id`) is left out (refusing it
//!   is right);
//! - **failed turns**: turns no attempt got an `ok` for, at least one attempt being refused
//!   with an error (a turn whose every answer was lost is unknown, not failed), and turns
//!   answered `ok` with the task `FAILED`.
//!
//! They are printed per run (`check`, `live`) and per sweep combination (`run`), carried in
//! `--json` and the sweep journal, and `[expect]` can bound them
//! (`max-refused-continuations`, `max-failed-turns`, per run). `runs.csv` and `summary.csv`
//! keep their columns.

use std::collections::BTreeMap;

use a2a::TaskState;
use serde::{Deserialize, Serialize};

use crate::client::history::{OpKind, Outcome};
use crate::world::RunRecord;

/// JSON-RPC `TaskNotFoundError`.
const TASK_NOT_FOUND: i64 = -32001;

/// What one run's client could not get done, by turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Availability {
    /// Turns sent (each retry of a turn counted once).
    pub turns: u64,
    /// Turns refused `-32001` although their task exists.
    pub refused_continuations: u64,
    /// Turns refused with an error and never answered `ok`, or answered with a FAILED task.
    pub failed_turns: u64,
}

/// The counts of several runs, added up (a sweep combination's, a check's).
impl std::iter::Sum for Availability {
    fn sum<I: Iterator<Item = Availability>>(runs: I) -> Availability {
        runs.fold(Availability::default(), |a, b| Availability {
            turns: a.turns + b.turns,
            refused_continuations: a.refused_continuations + b.refused_continuations,
            failed_turns: a.failed_turns + b.failed_turns,
        })
    }
}

impl Availability {
    /// The counts of `record` (see the module's header).
    pub fn of(record: &RunRecord) -> Availability {
        #[derive(Default)]
        struct Turn {
            ok: bool,
            failed_task: bool,
            refused: bool,
            not_found: bool,
        }
        let mut turns: BTreeMap<(&str, u32), Turn> = BTreeMap::new();
        let mut owners: BTreeMap<&str, &str> = BTreeMap::new();
        for op in &record.history {
            let OpKind::Send {
                conversation,
                turn,
                foreign_context,
                named_task,
                ..
            } = &op.kind
            else {
                continue;
            };
            let owner = *owners
                .entry(conversation.as_str())
                .or_insert(op.principal.as_str());
            if *foreign_context || *named_task || owner != op.principal {
                continue;
            }
            let t = turns.entry((conversation.as_str(), *turn)).or_default();
            match &op.outcome {
                Outcome::Ok => {
                    t.ok = true;
                    t.failed_task |= op
                        .task
                        .as_ref()
                        .is_some_and(|v| v.state == TaskState::Failed);
                }
                Outcome::Fail { code, .. } => {
                    t.refused = true;
                    t.not_found |= *code == TASK_NOT_FOUND;
                }
                Outcome::Info { .. } => {}
            }
        }
        let exists = |conversation: &str| {
            record
                .conversations
                .get(conversation)
                .is_some_and(|task| record.final_tasks.contains_key(task))
        };
        let mut out = Availability {
            turns: turns.len() as u64,
            ..Availability::default()
        };
        for ((conversation, _), t) in &turns {
            if t.not_found && exists(conversation) {
                out.refused_continuations += 1;
            }
            if (t.refused && !t.ok) || t.failed_task {
                out.failed_turns += 1;
            }
        }
        out
    }

    /// `availability: 12 turns; 1 refused although its task exists (8.3%); 1 failed (8.3%)`
    /// (refused: `-32001` to a continuation).
    pub fn describe(&self) -> String {
        let share = |n: u64| {
            if self.turns == 0 || n == 0 {
                String::new()
            } else {
                format!(" ({:.1}%)", 100.0 * n as f64 / self.turns as f64)
            }
        };
        format!(
            "availability: {} turns; {} refused although {} task exists{}; {} failed{}",
            self.turns,
            self.refused_continuations,
            if self.refused_continuations == 1 {
                "its"
            } else {
                "their"
            },
            share(self.refused_continuations),
            self.failed_turns,
            share(self.failed_turns)
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::Script;
    use crate::sim::{judge, Sim};

    /// A continuation sent to the pod that does not hold the task in its memory is refused
    /// `-32001` while the task exists on the other pod: nothing is lost, nothing runs twice,
    /// and the turn is not done. The same continuation on a shared store is done.
    #[test]
    fn a_continuation_refused_by_the_other_pods_memory_is_counted_and_bounded() {
        let scenario = |model: &str| {
            format!(
                r#"name = "continuation-on-the-other-pod"
model = "{model}"
replicas = 2
routing = "round-robin"

[[step]]
send = {{ conversation = "c1", turn = 1, to = "replica-0" }}
[[step]]
send = {{ conversation = "c1", turn = 2, to = "replica-1" }}

[expect]
max-refused-continuations = 0
allow-unexercised = true
"#
            )
        };
        let run = |model: &str| {
            let script = Script::parse(&scenario(model), "inline.toml").unwrap();
            let checked = Sim::from_scenario(&script).unwrap().check();
            (
                checked.summary.availability,
                judge(
                    &script.file.expect,
                    &checked.summary,
                    checked.record.as_ref(),
                ),
            )
        };
        let (memory, judged) = run("a2a-python-1.3-memory");
        assert_eq!(memory.turns, 2);
        assert_eq!(memory.refused_continuations, 1, "{memory:?}");
        assert_eq!(memory.failed_turns, 1, "{memory:?}");
        assert!(!judged.met, "the bound of 0 is exceeded");
        assert!(judged.problems.iter().any(|p| p.kind() == "unavailable"));
        let (shared, judged) = run("a2a-python-1.3-versioned");
        assert_eq!(shared.refused_continuations, 0, "{shared:?}");
        assert_eq!(shared.failed_turns, 0, "{shared:?}");
        assert!(judged.met, "{:?}", judged.problems);
    }
}
