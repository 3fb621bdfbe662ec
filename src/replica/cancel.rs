//! CancelTask, and what a turn stopped by a cancel answers.
//!
//! Knobs read: `cancel.second_cancel`, `cancel.stops_executor`, `cancel.fence_effects`,
//! `cancel.parked_task`, `cancel.remote_write`, `cancel.store_write`, `cancel.keeps_task`,
//! `cancel.writes_nothing`,
//! `store.placement` and `store.versioned` (how the cancel is written),
//! `handler.cache_snapshot` (what the replica keeps of a task it canceled).

use std::rc::Rc;
use std::time::Duration;

use a2a::{Task, TaskState};

use super::{change_state, rpc, set_marker, Caller, Refusal, Replica, MARKER_KEY};
use crate::model::{
    CancelWrite, ParkedCancel, Placement, RemoteCancel, ReplyIn, SecondCancel, StopRule,
};
use crate::store::{SaveError, SaveMode};
use crate::trace::now_ms;

/// How long a fenced cancel waits for a pending effect before giving up.
const CANCEL_WAIT_MS: u64 = 5000;

/// How often a fenced cancel re-reads a task with a pending effect.
const CANCEL_POLL: Duration = Duration::from_millis(20);

impl Replica {
    /// CancelTask (A2A-BEHAVIOURS.md §2.2): unknown → -32001; terminal → -32002 (or the
    /// canceled task, when the model makes cancel idempotent); a local run is told to stop
    /// at its next await (as the model's stop rule allows); the store is written CANCELED.
    /// With `fence_effects`, the cancel waits while an effect is pending and writes with CAS.
    pub async fn cancel(self: &Rc<Self>, caller: &Caller, task_id: &str) -> Result<Task, Refusal> {
        let deadline = now_ms() + CANCEL_WAIT_MS;
        loop {
            let (stored, stored_version) = match self.load_for(caller, task_id).await {
                Ok(Some(found)) => found,
                Ok(None) => return Err(rpc(-32001, format!("task {task_id} not found"))),
                Err(e) => return Err(rpc(-32603, e)),
            };
            if let Some(kept) = self.kept_after_cancel(task_id) {
                // a2a-sdk 1.1.5 `ActiveTask.cancel` on a finished ActiveTask: it waits for
                // nothing, and answers its cached task, terminal, without a store check.
                self.record(format!(
                    "cancel of {task_id}: answered by the ActiveTask an earlier cancel left here"
                ));
                return Ok(kept);
            }
            // The stored task (read above for the owner check either way), or this
            // replica's own copy of a task parked here.
            let checked = self.profile.cancel.parked_task == Some(ParkedCancel::CachedAfterCheck);
            let (task, version) = match self.parked_copy(task_id) {
                Some(copy) if !(checked && stored.status.state.is_terminal()) => copy,
                _ => (stored, stored_version),
            };
            if task.status.state.is_terminal() {
                if task.status.state == TaskState::Canceled
                    && self.profile.cancel.second_cancel == SecondCancel::Idempotent
                {
                    return Ok(task);
                }
                return Err(rpc(
                    -32002,
                    format!("task {task_id} is {:?}", task.status.state),
                ));
            }
            if self.profile.cancel.writes_nothing {
                // a2a-python 1.1.0-1.1.3 (#1170): the executor's cancel emits nothing, so
                // nothing is written; the answer is the task as it stands.
                self.record(format!(
                    "cancel of {task_id}: nothing written, answered {:?}",
                    task.status.state
                ));
                return Ok(task);
            }
            let local = self.holds(task_id);
            // Parked here: waiting for input, no turn running (the one that parked it done).
            let mut parked_here = false;
            if let Some(active) = self.tasks.active.borrow().get(task_id) {
                parked_here = active.parked.get() && !active.running.get();
                // This replica writes the cancel: its parked task is done with here.
                active.parked.set(false);
                active.registered.set(false);
                let stops = match self.profile.cancel.stops_executor {
                    StopRule::Always => true,
                    StopRule::StreamingOnly => active.streaming.get(),
                };
                if active.running.get() && stops {
                    active.canceled.set(true);
                }
            }
            let mut canceled = task.clone();
            if !local && self.profile.cancel.remote_write == Some(RemoteCancel::StateOnly) {
                canceled.status.state = TaskState::Canceled;
            } else {
                change_state(
                    &mut canceled,
                    TaskState::Canceled,
                    self.profile.handler.reply_in.unwrap_or(ReplyIn::History),
                );
            }
            if self.profile.cancel.fence_effects {
                if pending_until(&task).is_some_and(|until| now_ms() < until) {
                    if now_ms() >= deadline {
                        return Err(self.after_effect(rpc(-32603, "an effect is still pending")));
                    }
                    tokio::time::sleep(CANCEL_POLL).await;
                    continue;
                }
                set_marker(&mut canceled, "effectPending", None);
                set_marker(&mut canceled, "runnerUntilMs", None);
                match self
                    .persist(&mut canceled, SaveMode::Cas(Some(version)), Some(version))
                    .await
                {
                    Ok(v) => {
                        self.record(format!("canceled {task_id} v{v}"));
                        self.push(&canceled).await;
                        return Ok(canceled);
                    }
                    Err(SaveError::Conflict { .. }) | Err(SaveError::NotCancelable) => continue,
                    Err(SaveError::Unavailable(e)) => return Err(self.after_effect(rpc(-32603, e))),
                }
            }
            let mode = match (self.profile.store.placement, self.profile.store.versioned) {
                (Placement::Shared, true)
                    if self.profile.cancel.store_write == Some(CancelWrite::WholeTask) =>
                {
                    SaveMode::CancelWhole
                }
                (Placement::Shared, true) => SaveMode::Cancel,
                (_, true) => SaveMode::Cas(Some(version)),
                (_, false) => SaveMode::Overwrite,
            };
            return match self.persist(&mut canceled, mode, Some(version)).await {
                Ok(v) => {
                    self.record(format!("canceled {task_id} v{v}"));
                    self.cache_cancel(task_id, &canceled, v, parked_here);
                    self.push(&canceled).await;
                    Ok(canceled)
                }
                // The task changed, or became terminal, since it was read: a cancel that
                // lost to another cancel answers the canceled task, anything else is not
                // cancelable (a2a-sdk 1.3.0 `_cancel_remote`: the store's refusal of a
                // CANCELED save over a terminal task is a ConcurrentTaskModificationError,
                // and the reload's CANCELED task is returned).
                Err(SaveError::Conflict { .. }) | Err(SaveError::NotCancelable) => {
                    match self.load(task_id).await {
                        Ok(Some((t, _))) if t.status.state == TaskState::Canceled => Ok(t),
                        _ => Err(rpc(
                            -32002,
                            format!("task {task_id} changed while canceling"),
                        )),
                    }
                }
                Err(SaveError::Unavailable(e)) => Err(rpc(-32603, e)),
            };
        }
    }

    /// With `handler.cache_snapshot`, a cancel written here through the task's ActiveTask
    /// leaves its cached copy CANCELED, so a later message here finds the task terminal
    /// (a2a-sdk 1.1.5: the cancel event goes through the ActiveTask's TaskManager). With
    /// `cancel.keeps_task`, the ActiveTask that wrote the cancel stays registered, finished,
    /// with that copy ([`Self::kept_after_cancel`]): one the cancel registered, or one
    /// running a turn here; one parked here waiting for input is cleaned up instead, and
    /// the replica keeps no copy (live runs of a2a-sdk 1.1.5, `cancel.keeps_task`'s source).
    fn cache_cancel(&self, task_id: &str, canceled: &Task, version: u64, was_parked: bool) {
        if !self.profile.handler.cache_snapshot {
            return;
        }
        if self.profile.cancel.keeps_task {
            let active = self.active(task_id);
            if was_parked {
                // The parked ActiveTask finishes and is cleaned up: a later request here
                // starts a fresh one, which reads the store.
                *active.cached.borrow_mut() = None;
            } else {
                *active.cached.borrow_mut() = Some((canceled.clone(), version));
                active.finished_kept.set(true);
            }
            return;
        }
        if let Some(active) = self.tasks.active.borrow().get(task_id) {
            let mut cached = active.cached.borrow_mut();
            if cached.is_some() {
                *cached = Some((canceled.clone(), version));
            }
        }
    }

    /// The CANCELED copy held by the finished ActiveTask an earlier cancel left on this
    /// replica (`cancel.keeps_task`), if there is one.
    pub(super) fn kept_after_cancel(&self, task_id: &str) -> Option<Task> {
        let active = self.tasks.active.borrow();
        let active = active.get(task_id)?;
        if !active.finished_kept.get() {
            return None;
        }
        let cached = active.cached.borrow();
        cached.as_ref().map(|(task, _)| task.clone())
    }

    /// With `cancel.parked_task` one of the cached kinds, the task as this replica last
    /// saved it, and that save's version, when the task is parked here.
    fn parked_copy(&self, task_id: &str) -> Option<(Task, u64)> {
        if matches!(
            self.profile.cancel.parked_task,
            None | Some(ParkedCancel::Store)
        ) {
            return None;
        }
        let parked = self
            .tasks
            .active
            .borrow()
            .get(task_id)
            .is_some_and(|a| a.parked.get());
        if !parked {
            return None;
        }
        let events = self.tasks.events.borrow();
        let (version, task) = events.get(task_id)?.last()?;
        Some((task.clone(), *version))
    }

    pub(super) async fn canceled_result(&self, task: &Task) -> Result<Task, Refusal> {
        self.record(format!("executor for {} stopped by cancel", task.id));
        match self.load(&task.id).await {
            Ok(Some((t, _))) => Ok(t),
            _ => Ok(task.clone()),
        }
    }
}

/// Until when a task's pending effect holds off a cancel, if one is pending.
fn pending_until(task: &Task) -> Option<u64> {
    task.metadata
        .as_ref()?
        .get(MARKER_KEY)?
        .pointer("/effectPending/untilMs")?
        .as_u64()
}
