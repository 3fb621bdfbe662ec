//! `wait-honoured`: a task waiting for input is failed by the server only after it has waited,
//! with no message, at least as long as it already waited before for an earlier answer.
//!
//! A server may give up on a conversation whose user went away (Cognigy fails an input wait
//! after 5 minutes with no follow-up, A2A-BEHAVIOURS.md §5): such an idle timeout restarts
//! with every message, so it never fires sooner after the last answer than an earlier answer
//! took to come. A timeout that later messages do not extend (Rasa's per-task timeout, set
//! when the task starts, §4) does: the user answered the first question after 5 minutes and
//! the second only 1 minute after it was asked, yet the task failed. Read from the saves
//! alone, with no knob: a wait begins at a save that leaves the task input-required or
//! auth-required, a message ends it (the next save's history is longer), and a save that
//! makes the task FAILED with no new message in its history is the server giving up on the
//! wait. A save that only took the message in (the state unchanged, no new artifact: a2a-sdk
//! saves a turn's user message on its own before the turn's events) begins no new wait. A
//! FAILED save that holds a message the client sent during the wait, one the wait's first
//! save did not hold, is that message's turn failing, not the wait given up on, even when
//! its history is no longer (built on an older copy, it lacks what others saved since:
//! a2a-sdk 1.1.5 fails a task-only follow-up whose TaskManager holds another context, seen
//! live in fidelity --generate seed 176 of a2a-python-1.1). A timeout saves no message the
//! server never took in, so it cannot look like one. Exercised: waits the server gave up on.

use std::collections::BTreeMap;

use a2a::TaskState;

use crate::check::{
    Checker, Finding, Invariant, LiveNeeds, Report, Violation, ViolationKind, Without,
};
use crate::client::history::OpKind;
use crate::store::SaveRecord;
use crate::world::RunRecord;

impl Invariant {
    /// `wait-honoured`.
    pub const WAIT_HONOURED: Invariant = Invariant::new("wait-honoured");
}

/// How `wait-honoured` breaks.
impl ViolationKind {
    /// `cut-short`.
    pub const CUT_SHORT: ViolationKind = ViolationKind::new("cut-short");
}

/// The wait-honoured checker.
pub struct WaitHonoured;

fn waiting(state: &TaskState) -> bool {
    matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}

impl Checker for WaitHonoured {
    fn name(&self) -> Invariant {
        Invariant::WAIT_HONOURED
    }

    fn live(&self) -> LiveNeeds {
        LiveNeeds::Reports(Report::Saves, Without::FailOnly)
    }

    fn describe(&self) -> &'static str {
        "a task waiting for input is failed by the server only after waiting, with no message, as long as an earlier answer took"
    }

    fn check(&self, run: &RunRecord) -> Finding {
        let mut by_task: BTreeMap<&str, Vec<&SaveRecord>> = BTreeMap::new();
        for s in &run.saves {
            by_task.entry(&s.task_id).or_default().push(s);
        }
        let conversation_of: BTreeMap<&str, &str> = run
            .conversations
            .iter()
            .map(|(c, t)| (t.as_str(), c.as_str()))
            .collect();
        // When the client last sent each message (a retry during a wait answers it too).
        let mut sent_at: BTreeMap<&str, u64> = BTreeMap::new();
        for op in &run.history {
            if let OpKind::Send { message_id, .. } = &op.kind {
                let at = sent_at.entry(message_id).or_insert(op.invoke_ms);
                *at = (*at).max(op.invoke_ms);
            }
        }
        let mut violations = Vec::new();
        let mut exercised = 0;
        for (task, saves) in by_task {
            // The wait in progress: when it began and the history it began with.
            let mut wait: Option<(u64, &[String])> = None;
            // The longest wait an answer ended, and when that answer came.
            let mut longest: Option<(u64, u64)> = None;
            let mut before: Option<&SaveRecord> = None;
            for s in saves {
                let previous = before.replace(s);
                if let Some((since, held)) = wait {
                    if s.history.len() > held.len() {
                        let took = s.at_ms.saturating_sub(since);
                        if longest.is_none_or(|(l, _)| took > l) {
                            longest = Some((took, s.at_ms));
                        }
                        wait = None;
                        // A save that only took the message in (the state as it was, no
                        // artifact of an answer: a2a-sdk saves the user message on its own
                        // first) ends the wait without asking again: the turn runs, and a
                        // FAILED save next is that turn failing, not the wait given up on.
                        if previous
                            .is_some_and(|p| p.state == s.state && p.artifacts == s.artifacts)
                        {
                            continue;
                        }
                    } else if s.state == TaskState::Failed {
                        wait = None;
                        let answered = s.history.iter().any(|m| {
                            !held.contains(m)
                                && sent_at.get(m.as_str()).is_some_and(|&at| at >= since)
                        });
                        if answered {
                            continue;
                        }
                        exercised += 1;
                        let idle = s.at_ms.saturating_sub(since);
                        let Some((survived, answered_at)) = longest.filter(|(l, _)| idle < *l)
                        else {
                            continue;
                        };
                        let who = conversation_of
                            .get(task)
                            .map(|c| format!(" ({c})"))
                            .unwrap_or_default();
                        let mut v = Violation::new(
                            ViolationKind::CUT_SHORT,
                            format!(
                                "task {task}{who} waited for input from {since} ms and {} failed it at {} ms, after {idle} ms with no message, though an earlier answer that came {survived} ms into its wait (at {answered_at} ms) was taken: a timeout the conversation's messages did not extend",
                                s.replica, s.at_ms
                            ),
                        )
                        .task(task)
                        .host(&s.replica)
                        .at(since)
                        .at(s.at_ms);
                        if let Some(c) = conversation_of.get(task) {
                            v = v.names_turn(c);
                        }
                        violations.push(v);
                        continue;
                    } else if waiting(&s.state) {
                        continue;
                    } else {
                        wait = None;
                    }
                }
                if waiting(&s.state) {
                    wait = Some((s.at_ms, &s.history));
                }
            }
        }
        Finding {
            invariant: Invariant::WAIT_HONOURED,
            violations,
            exercised,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SaveMode;

    fn record() -> crate::world::RunRecord {
        let mut run = crate::check::fixtures::one_turn_record();
        run.saves.clear();
        run
    }

    fn save(at_ms: u64, state: TaskState, artifacts: &[&str], history: &[&str]) -> SaveRecord {
        SaveRecord {
            at_ms,
            task_id: "t1".into(),
            context_id: "c".into(),
            mode: SaveMode::Overwrite,
            before: None,
            based_on: None,
            version: at_ms,
            state,
            replica: crate::host::Host::Replica(0),
            artifacts: artifacts.iter().map(|a| a.to_string()).collect(),
            history: history.iter().map(|m| m.to_string()).collect(),
        }
    }

    /// A turn answered after 500 ms of waiting, then a task failed 20 ms into the next wait:
    /// a timeout the messages did not extend. The same failure right after a save that only
    /// took a message in (a2a-sdk's own save of the user message) is that turn failing.
    #[test]
    fn a_failed_turn_after_its_message_save_is_no_timeout() {
        use TaskState::{Failed, InputRequired as Ask, Working};
        let asked = |at| save(at, Ask, &["a1"], &["m1"]);
        let mut cut = record();
        cut.saves = vec![
            asked(0),
            save(500, Working, &["a1"], &["m1", "m2"]),
            save(600, Ask, &["a1", "a2"], &["m1", "m2"]),
            save(620, Failed, &["a1", "a2"], &["m1", "m2"]),
        ];
        let found = WaitHonoured.check(&cut);
        assert_eq!((found.violations.len(), found.exercised), (1, 1));

        let mut turn_failed = record();
        turn_failed.saves = vec![
            asked(0),
            // The user message saved on its own, the task still input-required.
            save(500, Ask, &["a1"], &["m1", "m2"]),
            save(502, Failed, &["a1"], &["m1", "m2"]),
        ];
        let found = WaitHonoured.check(&turn_failed);
        assert_eq!((found.violations.len(), found.exercised), (0, 0));

        // A save that answers and asks again at once (one save a turn) still begins a wait.
        let mut whole_turns = record();
        whole_turns.saves = vec![
            asked(0),
            save(500, Ask, &["a1", "a2"], &["m1", "m2"]),
            save(520, Failed, &["a1", "a2"], &["m1", "m2"]),
        ];
        let found = WaitHonoured.check(&whole_turns);
        assert_eq!((found.violations.len(), found.exercised), (1, 1));
    }

    /// A FAILED save built on an older copy (no longer than the history the wait began
    /// with) that holds a message the client sent during the wait is that message's turn
    /// failing (a2a-sdk 1.1.5's context check, fidelity seed 176 of a2a-python-1.1). A
    /// message sent before the wait began, back in an old copy, answers nothing.
    #[test]
    fn a_failed_save_that_holds_a_message_sent_during_the_wait_is_no_timeout() {
        use TaskState::{Failed, InputRequired as Ask};
        let with_sends = |sends: &[(&str, u64)]| {
            let mut run = record();
            let template = run.history[0].clone();
            run.history = sends
                .iter()
                .map(|&(id, at)| {
                    let mut op = template.clone();
                    if let OpKind::Send { message_id, .. } = &mut op.kind {
                        *message_id = id.to_string();
                    }
                    op.invoke_ms = at;
                    op
                })
                .collect();
            run.saves = vec![
                save(0, Ask, &["a1"], &["m1"]),
                save(500, Ask, &["a1", "a2"], &["m1", "m2"]),
                // Built on the first copy, with m3 in place of m2.
                save(520, Failed, &["a1"], &["m1", "m3"]),
            ];
            run
        };
        let found = WaitHonoured.check(&with_sends(&[("m1", 0), ("m2", 400), ("m3", 510)]));
        assert_eq!((found.violations.len(), found.exercised), (0, 0));
        let found = WaitHonoured.check(&with_sends(&[("m1", 0), ("m3", 10), ("m2", 400)]));
        assert_eq!((found.violations.len(), found.exercised), (1, 1));
    }
}
