//! A blocking follow-up to a task whose resumed run still works, as the model's
//! `handler.resumed_follow_up` says: run like any other follow-up (the default), or wait
//! until the task leaves working and answer with it, the message not processed (Mastra:
//! `handleMessageSend` calls `waitForClaimedResume` when the task is working with a
//! `suspendedRunId`, or when another request claimed the suspended run first).
//!
//! A turn that suspends its run (ends input-required) marks the task with `suspendedRun`,
//! the run's id (the turn that started it); a turn that ends the run clears the mark, as
//! Mastra's `applySuspensionToTask` and `clearSuspensionMetadata` do with `suspendedRunId`.
//! A turn resumes the run its task's mark names, or starts a run of its own ([`run_of`]):
//! follow-ups that reach a working task before its run first suspends each start one.

use std::time::Duration;

use a2a::{Task, TaskState};
use serde_json::json;

use super::{decide, set_marker, Replica, TurnInfo, MARKER_KEY};

/// The mark a suspended run leaves in its task.
const MARK: &str = "suspendedRun";

/// The longest a follow-up waits for a resumed run (simulated): Mastra waits with no bound;
/// ten minutes is past every scenario's end.
const LONGEST_WAIT: Duration = Duration::from_secs(600);

impl Replica {
    /// A follow-up that waits for its task's resumed run
    /// ([`decide::send::OnTask::AwaitResumedRun`]) waits until the task leaves working
    /// (polling the store every `subscribe.poll_ms`) and answers with it, or with `last`
    /// when the store no longer answers.
    pub(super) async fn await_resumed_run(&self, info: &TurnInfo, mut last: Task) -> Task {
        self.record(format!(
            "{}#{}: {} is working on a resumed run; waits for it, message not processed",
            info.conversation, info.turn, last.id
        ));
        let poll = Duration::from_millis(self.profile.subscribe.poll_ms.max(1));
        let mut waited = Duration::ZERO;
        while last.status.state == TaskState::Working && waited < LONGEST_WAIT {
            tokio::time::sleep(poll).await;
            waited += poll;
            match self.load(&last.id).await {
                Ok(Some((task, _))) => last = task,
                _ => break,
            }
        }
        last
    }
}

/// The run turn `info` belongs to, on `task` as loaded: the suspended run its mark names, or a
/// run of its own (its turn's number). Models that do not wait for resumed runs keep one run
/// per task (0).
pub(super) fn run_of(replica: &Replica, task: &Task, info: &TurnInfo) -> u32 {
    if !tracks_runs(replica) {
        return 0;
    }
    suspended_run(task).unwrap_or(info.turn)
}

/// Marks a turn's result: a run that suspends (`next` is input-required) leaves its id, one
/// that ends clears the mark. Only for models that wait for resumed runs.
pub(super) fn mark_run(replica: &Replica, task: &mut Task, next: &TaskState, run: u32) {
    if !tracks_runs(replica) {
        return;
    }
    let mark = (*next == TaskState::InputRequired).then_some(json!(run));
    set_marker(task, MARK, mark);
}

/// Whether the model tells runs apart: it waits for resumed runs
/// (`handler.resumed_follow_up = "await-run"`).
fn tracks_runs(replica: &Replica) -> bool {
    decide::send::tracks_runs(&replica.profile)
}

/// The run `task`'s mark names.
pub(super) fn suspended_run(task: &Task) -> Option<u32> {
    let mark = task.metadata.as_ref()?.get(MARKER_KEY)?.get(MARK)?;
    mark.as_u64().and_then(|r| u32::try_from(r).ok())
}
