//! `liveness`: after everything is healed, every task settles and every accepted message is
//! processed.
//!
//! At the end of a run (for generated workloads, the liveness bound after the heal), every
//! task must be waiting for input or terminal: one still `working` or `submitted` was
//! abandoned (its runner died and nothing took over). And a message accepted without
//! waiting (`returnImmediately` answered `ok`) must have been processed: its turn's artifact
//! is in the final task, unless the task was canceled or failed. A model whose one artifact
//! holds only its last run's text (Mastra's `response.txt`, `handler.artifacts = run-text`)
//! keeps no record of a turn another run's text replaced: there, the message's effect at the
//! ledger, on that task, shows it was processed too (even when its run died before saving:
//! what such a model keeps of a turn is its effect). Exercised: tasks in flight
//! when a fault struck or when everything was healed, tasks unsettled at the end, and
//! accepted non-blocking messages.

use std::collections::BTreeMap;

use a2a::TaskState;

use crate::check::{
    turn_label, Checker, Class, Finding, Invariant, LiveNeeds, Report, Violation, ViolationKind,
    Without,
};
use crate::client::history::{OpKind, Outcome};
use crate::faults::{kill, Action};
use crate::model::Artifacts;
use crate::store::SaveRecord;
use crate::world::RunRecord;

impl Invariant {
    /// `liveness`.
    pub const LIVENESS: Invariant = Invariant::new("liveness");
}

/// How `liveness` breaks.
impl ViolationKind {
    /// `unsettled`.
    pub const UNSETTLED: ViolationKind = ViolationKind::new("unsettled");
    /// `never-processed`.
    pub const NEVER_PROCESSED: ViolationKind = ViolationKind::new("never-processed");
}

/// The liveness checker.
pub struct Liveness;

use crate::protocol::at_rest as settled;

impl Checker for Liveness {
    fn name(&self) -> Invariant {
        Invariant::LIVENESS
    }

    fn live(&self) -> LiveNeeds {
        LiveNeeds::Reports(Report::Saves, Without::Partial)
    }

    fn class(&self) -> Class {
        Class::Eventually
    }

    fn describe(&self) -> &'static str {
        "after the heal, every task settles (input-required or terminal) and every accepted message is processed"
    }

    fn check(&self, run: &RunRecord) -> Finding {
        let mut violations = Vec::new();
        let mut exercised = 0;
        // A task was in flight if, at a fault or at the heal, its latest save left it
        // unsettled.
        let mut moments: Vec<u64> = run.faults.iter().map(|(at, _)| *at).collect();
        moments.push(run.healed_at_ms);
        let mut saves: BTreeMap<&str, Vec<&SaveRecord>> = BTreeMap::new();
        for s in &run.saves {
            saves.entry(&s.task_id).or_default().push(s);
        }
        let in_flight = |task: &str| {
            let Some(list) = saves.get(task) else {
                return false;
            };
            moments.iter().any(|m| {
                list.iter()
                    .rev()
                    .find(|s| s.at_ms <= *m)
                    .is_some_and(|s| !settled(&s.state))
            })
        };
        for (id, task) in &run.final_tasks {
            // A task still unsettled at the end was tested too, whenever it got stuck.
            if in_flight(id) || !settled(&task.status.state) {
                exercised += 1;
            }
            if settled(&task.status.state) {
                continue;
            }
            let mut times = Vec::new();
            let mut hosts = Vec::new();
            let why = match saves.get(id.as_str()).and_then(|l| l.last()) {
                Some(SaveRecord {
                    version: v,
                    replica,
                    at_ms: at,
                    ..
                }) => {
                    times.push(*at);
                    hosts.push(replica);
                    let killed = run
                        .faults
                        .iter()
                        .find(|(k, what)| {
                            *k >= *at && matches!(what, Action::Kill(kill::Kill(h)) if h == replica)
                        })
                        .map(|(k, _)| {
                            times.push(*k);
                            format!(
                                "; {replica} was killed at {k} ms and nothing took the task over"
                            )
                        })
                        .unwrap_or_default();
                    format!("its last save was v{v} by {replica} at {at} ms{killed}")
                }
                None => "it was never saved".into(),
            };
            // A run that ended early ended because nothing could move the task any more.
            let end = match run.settled_at_ms {
                Some(_) => ", when nothing left in flight could move it",
                None => "",
            };
            let mut v = Violation::new(
                ViolationKind::UNSETTLED,
                format!(
                    "task {id} is still {:?} at the end of the run ({} ms after everything was healed{end}): {why}",
                    task.status.state,
                    run.sim_ms.saturating_sub(run.healed_at_ms)
                ),
            )
            .task(id);
            for h in hosts {
                v = v.host(h);
            }
            for at in times {
                v = v.at(at);
            }
            violations.push(v);
        }
        for op in &run.history {
            let (
                OpKind::Send {
                    conversation,
                    turn,
                    message_id,
                    blocking: false,
                    ..
                },
                Outcome::Ok,
                Some(view),
            ) = (&op.kind, &op.outcome, &op.task)
            else {
                continue;
            };
            let Some(task) = run.final_tasks.get(&view.id) else {
                continue;
            };
            exercised += 1;
            if matches!(
                task.status.state,
                TaskState::Canceled | TaskState::Failed | TaskState::Rejected
            ) {
                continue;
            }
            let names = crate::store::artifact_names(task);
            let in_text = names.contains(&format!("turn-{turn}"));
            let ran = run.profile.handler.artifacts == Some(Artifacts::RunText)
                && run.effects.iter().any(|e| {
                    e.request.task_id == view.id
                        && e.request.conversation == *conversation
                        && e.request.turn == *turn
                        && e.request.message_id == *message_id
                });
            if !in_text && !ran {
                let by = op.replica_or("?");
                violations.push(
                    Violation::new(
                        ViolationKind::NEVER_PROCESSED,
                        format!(
                            "{} (message {message_id}) was accepted by {by} at {} ms without waiting, but never processed: task {} ended {:?} with artifacts [{}]",
                            turn_label(conversation, *turn),
                            op.complete_ms,
                            view.id,
                            task.status.state,
                            names.join(", ")
                        ),
                    )
                    .about(conversation, *turn)
                    .task(&view.id)
                    .host(&by)
                    .at(op.complete_ms),
                );
            }
        }
        Finding {
            invariant: Invariant::LIVENESS,
            violations,
            exercised,
        }
    }
}
