//! SubscribeToTask: a task snapshot, then the updates of each later version (from the
//! store's event log, or from the versions this replica saved itself), and the status-update
//! events the streaming methods send.
//!
//! Knobs read: `subscribe.unknown_task`, `subscribe.poll_ms`, `subscribe.source`,
//! `subscribe.interrupted`, `subscribe.failure`, `subscribe.terminal_code`,
//! `subscribe.terminal_snapshot`, `subscribe.stalled_tap` (through [`super::tap`]),
//! `subscribe.tap_after_snapshot_ms`, `subscribe.keeps_task`, `subscribe.registers_task`, `subscribe.held_taps_local`, and
//! `cancel.keeps_task` (a finished ActiveTask a cancel left here).

use std::rc::Rc;
use std::time::Duration;

use a2a::{StreamResponse, Task, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent};
use http::Response;
use serde_json::Value;
use tokio::sync::mpsc;

use super::{rpc, Caller, Replica};
use crate::faults::{KillPoint, Point};
use crate::model::{SubscribeFailure, SubscribeInterrupted, SubscribeSource, SubscribeUnknown};
use crate::net::BoxBody;
use crate::trace::now_ms;

impl Replica {
    /// The versions of `task_id` after `seen` that `source` holds now, oldest first (none
    /// when the store does not answer: the next poll asks again).
    async fn events_since(
        &self,
        source: SubscribeSource,
        task_id: &str,
        seen: u64,
    ) -> Vec<(u64, Task)> {
        match source {
            SubscribeSource::StoreEvents => self
                .links
                .store
                .events_after(task_id, seen)
                .await
                .unwrap_or_default(),
            SubscribeSource::LocalOnly => self
                .tasks
                .events
                .borrow()
                .get(task_id)
                .map(|evs| evs.iter().filter(|(v, _)| *v > seen).cloned().collect())
                .unwrap_or_default(),
        }
    }

    /// The cached copy of this replica's ActiveTask for the task while it is alive (a turn
    /// of the task runs here, or the last one parked it here), with `handler.cache_snapshot`.
    fn live_cached_copy(&self, task_id: &str) -> Option<(Task, u64)> {
        let active = self.tasks.active.borrow();
        let active = active.get(task_id)?;
        let alive = active.running.get() || active.parked.get();
        if !alive || active.finished_kept.get() {
            return None;
        }
        let cached = active.cached.borrow();
        cached.clone()
    }

    /// SubscribeToTask: a Task snapshot first, then each later version from the store's event
    /// log (polled), ending at a terminal or interrupted state.
    pub(super) async fn subscribe(
        self: Rc<Self>,
        id: Value,
        task_id: String,
        caller: &Caller,
    ) -> Response<BoxBody> {
        let (task, version) = match self.load_for(caller, &task_id).await {
            Ok(Some(found)) => found,
            Ok(None) => {
                if self.profile.subscribe.unknown_task == SubscribeUnknown::EmptyStream {
                    self.record(format!("subscribe to unknown {task_id}: empty stream"));
                    let (_tx, rx) = mpsc::channel::<StreamResponse>(1);
                    return self.sse_response(id, rx);
                }
                return self.rpc_error(id, rpc(-32001, format!("task {task_id} not found")));
            }
            Err(e) => return self.rpc_error(id, rpc(-32603, e)),
        };
        // Where this replica's ActiveTask for the task is alive (a turn runs here, or the
        // last one parked the task here), the subscription attaches to it and starts from
        // its cached copy, whatever the store holds now (a2a-sdk 1.1.5 on_subscribe_to_task:
        // the registry's ActiveTask; `subscribe(include_initial_task=True)` yields
        // `_task_manager.get_task()`).
        let (task, version) = if self.profile.subscribe.keeps_task {
            self.live_cached_copy(&task_id).unwrap_or((task, version))
        } else {
            (task, version)
        };
        // A terminal task's snapshot, then the end (Mastra `handleTaskResubscribe`).
        if task.status.state.is_terminal() && self.profile.subscribe.terminal_snapshot {
            self.record(format!(
                "subscribe to terminal {task_id}: its snapshot, then the end"
            ));
            let (tx, rx) = mpsc::channel::<StreamResponse>(1);
            let _ = tx.send(StreamResponse::Task(task)).await;
            return self.sse_response(id, rx);
        }
        // A finished ActiveTask left here by a cancel refuses a subscriber whatever the
        // store holds (a2a-sdk 1.1.5 `ActiveTask.subscribe`: `_is_finished` is set).
        if task.status.state.is_terminal() || self.kept_after_cancel(&task_id).is_some() {
            let code = self.profile.subscribe.terminal_code.unwrap_or(-32004);
            return self.rpc_error(id, rpc(code, format!("task {task_id} is terminal")));
        }
        if self.profile.subscribe.registers_task {
            // a2a-sdk 1.3.0 on_subscribe_to_task without an event stream:
            // `get_or_create(create_task_if_missing=False)` starts an ActiveTask here.
            self.active(&task_id).registered.set(true);
        }
        if self.profile.subscribe.keeps_task {
            // The subscription's ActiveTask stays here with the task as read now; a replica
            // that already holds one keeps its own copy.
            let active = self.active(&task_id);
            let mut cached = active.cached.borrow_mut();
            if cached.is_none() {
                *cached = Some((task.clone(), version));
            }
        }
        let (tx, rx) = mpsc::channel::<StreamResponse>(16);
        let me = self.clone();
        let held_here = self.holds(&task_id);
        let cuts = self.profile.subscribe.failure == Some(SubscribeFailure::Error);
        // Whether an interrupted snapshot, and a later interrupted state, end the stream, and
        // whether a failed turn cuts it.
        let (snapshot_ends, later_ends, failure_cuts) = match self.profile.subscribe.interrupted {
            None | Some(SubscribeInterrupted::Ends) => (true, true, cuts),
            Some(SubscribeInterrupted::StaysOpen) => (false, false, cuts),
            Some(SubscribeInterrupted::StaysOpenWhereHeld) if held_here => (false, false, cuts),
            Some(SubscribeInterrupted::StaysOpenWhereHeld) => (false, true, false),
        };
        // a2a-sdk 1.3.0 on_subscribe_to_task with an event stream: "this replica runs the
        // agent -> tap it": the local ActiveTask's own events, never the shared stream's.
        let source = match self.profile.subscribe.source {
            SubscribeSource::StoreEvents if held_here && self.profile.subscribe.held_taps_local => {
                SubscribeSource::LocalOnly
            }
            source => source,
        };
        // Attached to this replica's ActiveTask: its idle release waits for the stream's end.
        let attached =
            (held_here || self.profile.subscribe.registers_task).then(|| self.attach(&task_id));
        // The reader's tap on this replica's ActiveTask (`subscribe.stalled_tap`), and when
        // it opened: a `stall-readers` from then on stalls it.
        let opened_ms = now_ms();
        let tap = self.open_tap(&task_id, opened_ms);
        crate::activity::spawn(async move {
            let _attached = attached;
            let ends = |state: &TaskState, at_interrupted: bool| {
                state.is_terminal()
                    || (at_interrupted
                        && matches!(state, TaskState::InputRequired | TaskState::AuthRequired))
            };
            if tx.send(StreamResponse::Task(task.clone())).await.is_err()
                || ends(&task.status.state, snapshot_ends)
            {
                // An interrupted task has nothing more to say until the client answers.
                return;
            }
            me.faults
                .chaos
                .borrow_mut()
                .reached(&me.name, KillPoint::Stream);
            let mut seen = version;
            let mut last = task;
            if let Some(ms) = me.profile.subscribe.tap_after_snapshot_ms {
                // The tap opens only now: what was saved since the read is not in it, and a
                // task whose stream-ending state fell in between left a closed queue.
                tokio::time::sleep(Duration::from_millis(ms)).await;
                let missed = me.events_since(source, &task_id, seen).await;
                if let Some((v, _)) = missed.last() {
                    seen = *v;
                }
                if let Some((v, closed)) = missed
                    .iter()
                    .find(|(_, t)| ends(&t.status.state, later_ends))
                {
                    me.record(format!(
                        "subscribe to {task_id}: tapped {ms} ms after its snapshot, after v{v} ({:?}) closed the queue: the stream ends",
                        closed.status.state
                    ));
                    return;
                }
            }
            let poll = Duration::from_millis(me.profile.subscribe.poll_ms.max(1));
            loop {
                tokio::time::sleep(poll).await;
                if me.reader_stalled(opened_ms) {
                    // Its reader reads nothing more: the stream ends only if its tap is
                    // evicted.
                    me.stalled_stream(tap.as_ref()).await;
                    return;
                }
                if me.faults.chaos.borrow_mut().buggify(Point::SlowEventPoll) {
                    let ms = me.faults.chaos.borrow_mut().draw_ms(1000, 3000);
                    {
                        let mut chaos = me.faults.chaos.borrow_mut();
                        chaos.poll_slowed_until_ms = chaos.poll_slowed_until_ms.max(now_ms() + ms);
                    }
                    me.record(format!(
                        "buggify: event poll of {task_id} takes {ms} ms more"
                    ));
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                for (v, snapshot) in me.events_since(source, &task_id, seen).await {
                    seen = v;
                    let state = snapshot.status.state.clone();
                    let cut = failure_cuts && state == TaskState::Failed;
                    for update in diff(&last, &snapshot) {
                        if cut && matches!(update, StreamResponse::StatusUpdate(_)) {
                            // The failure, not its status: the stream ends without it.
                            return;
                        }
                        if tx.send(update).await.is_err() {
                            return;
                        }
                    }
                    last = snapshot;
                    if ends(&state, later_ends) {
                        return;
                    }
                }
            }
        });
        self.sse_response(id, rx)
    }
}

/// The updates that take a subscriber from `old` to `new`: new artifacts, then the status.
fn diff(old: &Task, new: &Task) -> Vec<StreamResponse> {
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
pub(super) fn status_update(task: &Task) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task.id.clone(),
        context_id: task.context_id.clone(),
        status: task.status.clone(),
        metadata: None,
    })
}
