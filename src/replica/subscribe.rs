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

use a2a::{StreamResponse, Task};
use http::Response;
use serde_json::Value;
use tokio::sync::mpsc;

use super::decide::subscribe::{ends, Opening, Step};
use super::{decide, rpc, Caller, Replica};
use crate::faults::{KillPoint, Point};
use crate::model::SubscribeSource;
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
                if decide::subscribe::unknown_gets_empty_stream(&self.profile) {
                    self.record(format!("subscribe to unknown {task_id}: empty stream"));
                    let (_tx, rx) = mpsc::channel::<StreamResponse>(1);
                    return self.sse_response(id, rx);
                }
                return self.rpc_error(id, decide::not_found(&task_id));
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
        let kept = || self.kept_after_cancel(&task_id).is_some();
        match decide::subscribe::opening(&self.profile, &task_id, &task, kept) {
            // A terminal task's snapshot, then the end (Mastra `handleTaskResubscribe`).
            Opening::Snapshot => {
                self.record(format!(
                    "subscribe to terminal {task_id}: its snapshot, then the end"
                ));
                let (tx, rx) = mpsc::channel::<StreamResponse>(1);
                let _ = tx.send(StreamResponse::Task(task)).await;
                return self.sse_response(id, rx);
            }
            // A finished ActiveTask left here by a cancel refuses a subscriber whatever the
            // store holds (a2a-sdk 1.1.5 `ActiveTask.subscribe`: `_is_finished` is set).
            Opening::Refuse(refusal) => return self.rpc_error(id, refusal),
            Opening::Follow => {}
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
        // A turn starting here holds the task too: a2a-sdk registers its ActiveTask before
        // the consumer's first save (`_setup_active_task`'s `get_or_create`), and a
        // subscription that finds it taps it (1.3.0 `on_subscribe_to_task`: "this replica
        // runs the agent -> tap it"; generation 4's seed 265 of a2a-python-1.3-versioned:
        // a subscription that reached replica-1 with a turn there stayed open with that
        // turn's events, where the model tailed the store and ended on its first save).
        let held = self.holds(&task_id) || self.starts(&task_id);
        let plan = decide::subscribe::stream_plan(&self.profile, held);
        let source = plan.source;
        // Attached to this replica's ActiveTask: its idle release waits for the stream's end.
        let attached = plan.attaches.then(|| self.attach(&task_id));
        // The reader's tap on this replica's ActiveTask (`subscribe.stalled_tap`), and when
        // it opened: a `stall-readers` from then on stalls it.
        let opened_ms = now_ms();
        let tap = self.open_tap(&task_id, opened_ms);
        crate::activity::spawn(async move {
            let _attached = attached;
            if tx.send(StreamResponse::Task(task.clone())).await.is_err()
                || ends(&task.status.state, plan.snapshot_ends)
            {
                // An interrupted task has nothing more to say until the client answers.
                return;
            }
            me.faults
                .chaos
                .borrow_mut()
                .reached(&me.host, KillPoint::Stream);
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
                    .find(|(_, t)| ends(&t.status.state, plan.later_ends))
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
                    // A failure the plan cuts ends the stream before its status.
                    let Step { events, ends } = decide::subscribe::step(&plan, &last, &snapshot);
                    for event in events {
                        if tx.send(event).await.is_err() {
                            return;
                        }
                    }
                    if ends {
                        return;
                    }
                    last = snapshot;
                }
            }
        });
        self.sse_response(id, rx)
    }
}
