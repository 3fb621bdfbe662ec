//! CancelTask, and what a turn stopped by a cancel answers.
//!
//! Knobs read: `cancel.second_cancel`, `cancel.stops_executor`, `cancel.fence_effects`,
//! `cancel.parked_task`, `cancel.remote_write`, `cancel.store_write`, `cancel.keeps_task`,
//! `cancel.writes_nothing`, `cancel.waits_for_consumer`,
//! `store.placement` and `store.versioned` (how the cancel is written),
//! `handler.failed_consumer_keeps_task` (a finished ActiveTask answers),
//! `handler.cache_snapshot` (what the replica keeps of a task it canceled).

use std::rc::Rc;
use std::time::Duration;

use a2a::Task;

use super::decide::cancel::{CancelReads, CancelSave, Fence, Keeps, OnRead, OnSaved};
use super::{decide, rpc, Caller, Refusal, Replica};
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
        // Whether this cancel waited for a turn starting here (`cancel.waits_for_consumer`).
        let mut waited = false;
        loop {
            let (stored, stored_version) = match self.load_for(caller, task_id).await {
                Ok(Some(found)) => found,
                Ok(None) => return Err(decide::not_found(task_id)),
                Err(e) => return Err(rpc(-32603, e)),
            };
            if let Some(kept) = self.kept_after_cancel(task_id) {
                // a2a-sdk 1.1.5 `ActiveTask.cancel` on a finished ActiveTask: it waits for
                // nothing, stops nothing, and answers its cached task, terminal, without a
                // store check.
                self.record(if kept.status.state == a2a::TaskState::Canceled {
                    format!(
                        "cancel of {task_id}: answered by the ActiveTask an earlier cancel left here"
                    )
                } else {
                    format!(
                        "cancel of {task_id}: answered {:?} by the finished ActiveTask of a failed consumer",
                        kept.status.state
                    )
                });
                return Ok(kept);
            }
            // The stored task (read above for the owner check either way), or this
            // replica's own copy of a task parked here.
            let copy = self.held_copy(task_id);
            let stored_terminal = stored.status.state.is_terminal();
            let (task, version) = match (
                decide::cancel::reads(&self.profile, copy.is_some(), stored_terminal),
                copy,
            ) {
                (CancelReads::Parked, Some(copy)) => copy,
                _ => (stored, stored_version),
            };
            match decide::cancel::on_read(&self.profile, task_id, &task) {
                OnRead::AlreadyCanceled => return Ok(task),
                // a2a-sdk 1.3.0 checked the task before it waited: what the wait ended in
                // is the answer (`ActiveTask.cancel` returns the terminal task it re-read).
                OnRead::NotCancelable(_) if waited => return Ok(task),
                OnRead::NotCancelable(refusal) => return Err(refusal),
                OnRead::Unwritten => {
                    // a2a-python 1.1.0-1.1.3 (#1170): the executor's cancel emits nothing, so
                    // nothing is written; the answer is the task as it stands.
                    self.record(format!(
                        "cancel of {task_id}: nothing written, answered {:?}",
                        task.status.state
                    ));
                    return Ok(task);
                }
                OnRead::Write => {}
            }
            if self.profile.cancel.waits_for_consumer && self.stop_starting_turns(task_id).await {
                waited = true;
                continue;
            }
            let local = self.holds(task_id);
            // Parked here: waiting for input, no turn running (the one that parked it done).
            let mut parked_here = false;
            if let Some(active) = self.tasks.active.borrow().get(task_id) {
                parked_here = active.parked.get() && !active.running.get();
                // This replica writes the cancel: its parked task is done with here.
                active.parked.set(false);
                active.registered.set(false);
                let (running, streaming) = (active.running.get(), active.streaming.get());
                if decide::cancel::stops_run(&self.profile, running, streaming) {
                    active.canceled.set(true);
                }
            }
            let mut canceled = decide::cancel::canceled_copy(&self.profile, &task, local);
            let how = decide::cancel::save(&self.profile, version);
            let mode = match how {
                CancelSave::Fenced(mode) => {
                    match decide::cancel::fence(&self.profile, &task, now_ms(), deadline) {
                        Fence::Write => mode,
                        Fence::Wait => {
                            tokio::time::sleep(CANCEL_POLL).await;
                            continue;
                        }
                        Fence::GiveUp(refusal) => return Err(refusal),
                    }
                }
                CancelSave::Once(mode) => mode,
            };
            let saved = self.persist(&mut canceled, mode, Some(version)).await;
            return match decide::cancel::on_saved(&self.profile, how, &saved) {
                OnSaved::Canceled(v) => {
                    self.record(format!("canceled {task_id} v{v}"));
                    if let CancelSave::Once(_) = how {
                        self.cache_cancel(task_id, &canceled, v, parked_here);
                    }
                    self.push(&canceled).await;
                    Ok(canceled)
                }
                OnSaved::Retry => continue,
                // The task changed, or became terminal, since it was read: a cancel that
                // lost to another cancel answers the canceled task, anything else is not
                // cancelable (a2a-sdk 1.3.0 `_cancel_remote`: the store's refusal of a
                // CANCELED save over a terminal task is a ConcurrentTaskModificationError,
                // and the reload's CANCELED task is returned).
                OnSaved::Reread => {
                    let reread = self.load(task_id).await.ok().flatten().map(|(t, _)| t);
                    decide::cancel::lost(task_id, reread)
                }
                OnSaved::Fail(refusal) => Err(refusal),
            };
        }
    }

    /// Stops the turns of the task starting here (their consumer saving the request's first
    /// events) and waits until each runs or ends; whether there was one. a2a-sdk 1.3.0
    /// `ActiveTask.cancel` cancels the executor, then awaits `_is_finished`: the consumer
    /// drains what was queued before the cancel's own read and write.
    async fn stop_starting_turns(&self, task_id: &str) -> bool {
        let Some(active) = self.tasks.active.borrow().get(task_id).cloned() else {
            return false;
        };
        if active.starting.get() == 0 {
            return false;
        }
        self.record(format!(
            "cancel of {task_id}: waits for the turn starting here"
        ));
        loop {
            let started = active.started.notified();
            if active.starting.get() == 0 {
                return true;
            }
            // Again each time: a turn that began starting meanwhile cleared it.
            active.canceled.set(true);
            started.await;
        }
    }

    /// With `handler.cache_snapshot`, a cancel written here through the task's ActiveTask
    /// leaves its cached copy CANCELED, so a later message here finds the task terminal
    /// (a2a-sdk 1.1.5: the cancel event goes through the ActiveTask's TaskManager). With
    /// `cancel.keeps_task`, the ActiveTask that wrote the cancel stays registered, finished,
    /// with that copy ([`Self::kept_after_cancel`]): one the cancel registered, or one
    /// running a turn here whose sender waits for it; one parked here waiting for input,
    /// or running a turn nobody waits on (a non-blocking send's), is cleaned up instead, and
    /// the replica keeps no copy (live runs of a2a-sdk 1.1.5, `cancel.keeps_task`'s source).
    fn cache_cancel(&self, task_id: &str, canceled: &Task, version: u64, was_parked: bool) {
        let unwatched = self.active(task_id).unwatched.get();
        match decide::cancel::keeps(&self.profile, was_parked, unwatched) {
            Keeps::Nothing => {}
            Keeps::Forget => {
                // The ActiveTask finishes and is cleaned up: a later request here starts a
                // fresh one, which reads the store.
                *self.active(task_id).cached.borrow_mut() = None;
            }
            Keeps::KeepFinished => {
                let active = self.active(task_id);
                *active.cached.borrow_mut() = Some((canceled.clone(), version));
                active.finished_kept.set(true);
            }
            Keeps::Replace => {
                if let Some(active) = self.tasks.active.borrow().get(task_id) {
                    let mut cached = active.cached.borrow_mut();
                    if cached.is_some() {
                        *cached = Some((canceled.clone(), version));
                    }
                }
            }
        }
    }

    /// The copy held by a finished ActiveTask still registered on this replica
    /// ([`super::state::ActiveTask::finished_kept`]): the CANCELED one an earlier cancel
    /// left (`cancel.keeps_task`), or the FAILED one of a consumer that failed while its
    /// executor runs on (`handler.failed_consumer_keeps_task`).
    pub(super) fn kept_after_cancel(&self, task_id: &str) -> Option<Task> {
        let active = self.tasks.active.borrow();
        let active = active.get(task_id)?;
        if !active.finished_kept.get() {
            return None;
        }
        let cached = active.cached.borrow();
        cached.as_ref().map(|(task, _)| task.clone())
    }

    /// Whether the task is parked here: its last turn here left it waiting for input.
    fn is_parked(&self, task_id: &str) -> bool {
        self.tasks
            .active
            .borrow()
            .get(task_id)
            .is_some_and(|a| a.parked.get())
    }

    /// The copy of the task this replica's ActiveTask holds, which a cancel reads where the
    /// model says so ([`CancelReads::Parked`]): the task as this replica last saved it, when
    /// it is parked here; with `subscribe.keeps_task`, the task as a subscription here read
    /// it, when no turn of it runs here. a2a-sdk 1.1.5: a subscription's ActiveTask stays in
    /// the registry after the subscriber leaves, and `ActiveTask.cancel` reads its
    /// TaskManager's copy, so a task another replica failed since is canceled over
    /// (a2a-python-1.1 seed 228 of generation 4, live: the second cancel answered `ok
    /// Canceled` and the FAILED task became CANCELED).
    fn held_copy(&self, task_id: &str) -> Option<(Task, u64)> {
        if self.is_parked(task_id) {
            return self.parked_copy(task_id);
        }
        if !self.profile.subscribe.keeps_task {
            return None;
        }
        let active = self.tasks.active.borrow();
        let active = active.get(task_id)?;
        if active.running.get() || active.finished_kept.get() {
            return None;
        }
        let cached = active.cached.borrow();
        cached.clone()
    }

    /// The task as this replica last saved it, and that save's version.
    fn parked_copy(&self, task_id: &str) -> Option<(Task, u64)> {
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
