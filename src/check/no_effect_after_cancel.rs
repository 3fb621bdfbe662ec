//! `no-effect-after-cancel`: no business effect of a task starts after its cancel was
//! acknowledged.
//!
//! A cancel is acknowledged when the client got an `ok` answer showing the task CANCELED, or
//! still running or waiting (a success that canceled nothing: a2a-python#1170);
//! an effect starts when the replica sends it to the ledger (the ledger records the replica's
//! simulated send time). An effect already in flight when the cancel is acknowledged is
//! allowed; one that starts afterwards is the "HTTP 200 but the work went on" hazard
//! (A2A-BEHAVIOURS.md §6.4). Exercised: acknowledged cancels of tasks that had a turn in
//! progress while the cancel was in flight: the task's last save before the cancel left it
//! working, a send of its conversation overlapped the cancel, or an effect of it started
//! after the cancel was sent. (A recorded history without saves has only the last two.)

use a2a::TaskState;

use crate::check::{
    turn_label, Checker, Finding, Invariant, LiveNeeds, Report, Violation, ViolationKind, Without,
};
use crate::client::history::{OpKind, Outcome};
use crate::world::RunRecord;

impl Invariant {
    /// `no-effect-after-cancel`.
    pub const NO_EFFECT_AFTER_CANCEL: Invariant = Invariant::new("no-effect-after-cancel");
}

/// How `no-effect-after-cancel` breaks.
impl ViolationKind {
    /// `effect-after-cancel`.
    pub const EFFECT_AFTER_CANCEL: ViolationKind = ViolationKind::new("effect-after-cancel");
}

/// The no-effect-after-cancel checker.
pub struct NoEffectAfterCancel;

impl Checker for NoEffectAfterCancel {
    fn name(&self) -> Invariant {
        Invariant::NO_EFFECT_AFTER_CANCEL
    }

    fn live(&self) -> LiveNeeds {
        LiveNeeds::Reports(Report::Effects, Without::FailOnly)
    }

    fn describe(&self) -> &'static str {
        "no effect of a task starts after its cancel was acknowledged"
    }

    fn check(&self, run: &RunRecord) -> Finding {
        let mut violations = Vec::new();
        let mut exercised = 0;
        for cancel in &run.history {
            let (OpKind::Cancel { conversation }, Outcome::Ok, Some(view)) =
                (&cancel.kind, &cancel.outcome, &cancel.task)
            else {
                continue;
            };
            // Another terminal state is a task that was over before the cancel came.
            if view.state != TaskState::Canceled && view.state.is_terminal() {
                continue;
            }
            let told = if view.state == TaskState::Canceled {
                "was canceled".to_string()
            } else {
                format!("was told canceled, the answer showing it {:?}", view.state)
            };
            // A send of the task in flight while the cancel was: sent before the cancel was
            // answered, answered after it was sent. One answered in the very ms the client
            // then sent the cancel, or sent in the ms the cancel was answered, is a script's
            // step before or after it: counting those made the verdict hang on how a ms
            // rounds (found-a2a-python-1.1-114 in CI: `unknown` live once).
            let racing = run.history.iter().any(|o| {
                matches!(&o.kind, OpKind::Send { conversation: c, .. } if c == conversation)
                    && o.invoke_ms < cancel.complete_ms
                    && o.complete_ms > cancel.invoke_ms
            });
            let effects: Vec<_> = run
                .effects
                .iter()
                .filter(|e| e.applied && e.request.task_id == view.id)
                .collect();
            // The turn was in progress when the cancel was sent: the task's last save
            // before it left the task working (a cancel that stopped it counts; one that
            // came after the turn had ended tests nothing).
            let working = run
                .saves
                .iter()
                .rfind(|s| s.task_id == view.id && s.at_ms <= cancel.invoke_ms)
                .is_some_and(|s| matches!(s.state, TaskState::Working | TaskState::Submitted));
            if racing
                || working
                || effects
                    .iter()
                    .any(|e| e.request.sent_ms >= cancel.invoke_ms)
            {
                exercised += 1;
            }
            for e in effects
                .iter()
                .filter(|e| e.request.sent_ms > cancel.complete_ms)
            {
                violations.push(
                    Violation::new(
                        ViolationKind::EFFECT_AFTER_CANCEL,
                        format!(
                            "task {} {told} (acknowledged by {} at {} ms), yet {} on {} started its effect at {} ms",
                            view.id,
                            cancel.replica_or("?"),
                            cancel.complete_ms,
                            turn_label(&e.request.conversation, e.request.turn),
                            e.request.replica,
                            e.request.sent_ms
                        ),
                    )
                    .names_turn(&e.request.conversation)
                    .task(&view.id)
                    .host(&e.request.replica)
                    .at(cancel.complete_ms)
                    .at(e.request.sent_ms),
                );
            }
        }
        Finding {
            invariant: Invariant::NO_EFFECT_AFTER_CANCEL,
            violations,
            exercised,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real run of the reference model: a turn that parks the task, a cancel, and the
    /// next turn, refused.
    fn turn_then_cancel() -> RunRecord {
        crate::check::fixtures::record_of(
            "[[step]]\nsend = { conversation = \"c1\", turn = 1 }\n\
             [[step]]\ncancel = { conversation = \"c1\" }\n\
             [[step]]\nsend = { conversation = \"c1\", turn = 2 }\n",
        )
    }

    fn times(run: &mut RunRecord, send_done: u64, cancel_sent: u64) {
        for op in &mut run.history {
            match op.kind {
                OpKind::Send { turn: 1, .. } => op.complete_ms = send_done,
                OpKind::Cancel { .. } => op.invoke_ms = cancel_sent,
                _ => {}
            }
        }
    }

    #[test]
    fn a_cancel_sent_after_the_turn_was_answered_tests_nothing() {
        let mut run = turn_then_cancel();
        let cancel = run
            .history
            .iter()
            .find(|o| matches!(o.kind, OpKind::Cancel { .. }))
            .expect("a cancel")
            .clone();
        assert_eq!(cancel.outcome, Outcome::Ok);
        // Answered in the ms the cancel was sent: over before it, whatever the rounding.
        times(&mut run, cancel.invoke_ms, cancel.invoke_ms);
        let finding = NoEffectAfterCancel.check(&run);
        assert_eq!((finding.exercised, finding.violations.len()), (0, 0));
        // Still unanswered when the cancel was sent: the two raced.
        times(&mut run, cancel.invoke_ms + 1, cancel.invoke_ms);
        assert_eq!(NoEffectAfterCancel.check(&run).exercised, 1);
    }
}
