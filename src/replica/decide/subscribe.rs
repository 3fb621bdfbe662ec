//! SubscribeToTask, decided: what an unknown task gets (`subscribe.unknown_task`), what a
//! task as read gets first (a snapshot and the end, a refusal, or a stream that follows
//! it: `subscribe.terminal_snapshot`, `subscribe.terminal_code`, `cancel.keeps_task`), the
//! stream's plan where the replica holds the task or not (`subscribe.interrupted`,
//! `subscribe.failure`, `subscribe.source`, `subscribe.held_taps_local`,
//! `subscribe.registers_task`, `subscribe.keeps_task`), and which updates each later
//! version brings, and whether the stream ends there.

use a2a::{StreamResponse, Task, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent};

use crate::model::{
    Profile, SubscribeFailure, SubscribeInterrupted, SubscribeSource, SubscribeUnknown,
};
use crate::replica::{rpc, Refusal};

/// Whether a streaming call about a task that is not found gets HTTP 200 and an empty
/// event stream (Mastra), rather than `-32001`.
pub(in crate::replica) fn unknown_gets_empty_stream(profile: &Profile) -> bool {
    profile.subscribe.unknown_task == SubscribeUnknown::EmptyStream
}

/// What a subscription to a task, as read, gets first.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::replica) enum Opening {
    /// The terminal task's snapshot, then the end (`subscribe.terminal_snapshot`).
    Snapshot,
    /// Refused: the task is terminal, or a finished ActiveTask a cancel left here refuses
    /// it whatever the store holds (`subscribe.terminal_code`, default `-32004`).
    Refuse(Refusal),
    /// A stream: the snapshot, then the task's later versions.
    Follow,
}

/// [`Opening`] for a subscription to `task_id`, read as `task`; `kept_after_cancel`, asked
/// only of a task that is not terminal: a cancel here left its ActiveTask finished but
/// registered.
pub(in crate::replica) fn opening(
    profile: &Profile,
    task_id: &str,
    task: &Task,
    kept_after_cancel: impl FnOnce() -> bool,
) -> Opening {
    let terminal = task.status.state.is_terminal();
    if terminal && profile.subscribe.terminal_snapshot {
        return Opening::Snapshot;
    }
    if terminal || kept_after_cancel() {
        let code = profile.subscribe.terminal_code.unwrap_or(-32004);
        return Opening::Refuse(rpc(code, format!("task {task_id} is terminal")));
    }
    Opening::Follow
}

/// How a subscription's stream follows its task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::replica) struct StreamPlan {
    /// An interrupted snapshot (input- or auth-required) ends the stream.
    pub snapshot_ends: bool,
    /// A later interrupted state ends it.
    pub later_ends: bool,
    /// A failed turn cuts it: the stream ends without the failure's status.
    pub failure_cuts: bool,
    /// Where the later versions come from.
    pub source: SubscribeSource,
    /// The subscription attaches to this replica's ActiveTask (its idle release waits for
    /// the stream's end).
    pub attaches: bool,
}

/// The [`StreamPlan`] of a subscription on a replica that holds the task (`held_here`: a
/// turn of it runs here, or the last one parked it here) or not.
pub(in crate::replica) fn stream_plan(profile: &Profile, held_here: bool) -> StreamPlan {
    let subscribe = &profile.subscribe;
    let cuts = subscribe.failure == Some(SubscribeFailure::Error);
    let (snapshot_ends, later_ends, failure_cuts) = match subscribe.interrupted {
        None | Some(SubscribeInterrupted::Ends) => (true, true, cuts),
        Some(SubscribeInterrupted::StaysOpen) => (false, false, cuts),
        Some(SubscribeInterrupted::StaysOpenWhereHeld) if held_here => (false, false, cuts),
        Some(SubscribeInterrupted::StaysOpenWhereHeld) => (false, true, false),
    };
    // a2a-sdk 1.3.0 on_subscribe_to_task with an event stream: "this replica runs the
    // agent -> tap it": the local ActiveTask's own events, never the shared stream's.
    let source = match subscribe.source {
        SubscribeSource::StoreEvents if held_here && subscribe.held_taps_local => {
            SubscribeSource::LocalOnly
        }
        source => source,
    };
    StreamPlan {
        snapshot_ends,
        later_ends,
        failure_cuts,
        source,
        attaches: held_here || subscribe.registers_task,
    }
}

/// Whether a stream that reached a task in `state` ends there: a terminal state, or, with
/// `at_interrupted`, one waiting for input or authorisation.
pub(in crate::replica) fn ends(state: &TaskState, at_interrupted: bool) -> bool {
    state.is_terminal()
        || (at_interrupted && matches!(state, TaskState::InputRequired | TaskState::AuthRequired))
}

/// What a stream does with a later version of its task.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::replica) struct Step {
    /// The events it sends, in order.
    pub events: Vec<StreamResponse>,
    /// It ends after them.
    pub ends: bool,
}

/// [`Step`] for the version `next` of a task the stream last saw as `last`: its updates, up
/// to a failure's status where the plan cuts it (the stream then ends without it).
pub(in crate::replica) fn step(plan: &StreamPlan, last: &Task, next: &Task) -> Step {
    let state = &next.status.state;
    let cut = plan.failure_cuts && *state == TaskState::Failed;
    let mut events = Vec::new();
    for update in diff(last, next) {
        if cut && matches!(update, StreamResponse::StatusUpdate(_)) {
            return Step { events, ends: true };
        }
        events.push(update);
    }
    Step {
        events,
        ends: ends(state, plan.later_ends),
    }
}

/// The updates that take a subscriber from `old` to `new`: new artifacts, then the status.
pub(in crate::replica) fn diff(old: &Task, new: &Task) -> Vec<StreamResponse> {
    let mut out = Vec::new();
    let known = old.artifacts.as_ref().map_or(0, Vec::len);
    for artifact in new.artifacts.iter().flatten().skip(known) {
        out.push(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: new.id.clone(),
            context_id: new.context_id.clone(),
            artifact: artifact.clone(),
            append: Some(false),
            last_chunk: Some(true),
            metadata: None,
        }));
    }
    if old.status.state != new.status.state {
        out.push(status_update(new));
    }
    out
}

/// The stream event announcing `task`'s current status.
pub(in crate::replica) fn status_update(task: &Task) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task.id.clone(),
        context_id: task.context_id.clone(),
        status: task.status.clone(),
        metadata: None,
    })
}
