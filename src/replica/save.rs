//! Reads and saves through the replica's task store: retries of calls that got no answer,
//! plain or compare-and-swap saves, the re-application of a change after a version conflict,
//! and the save of a turn's result.
//!
//! Knobs read: `store.transient_retries`, `store.versioned`, `push.outbox` (a save queues
//! the push its state calls for), `handler.conflict_reapply`, `handler.conflict_code`,
//! `handler.failed_write_on_stale_copy` and `handler.result_save`.

use std::time::Duration;

use a2a::{Task, TaskState};

use super::decide::save::{OnConflict, OnReread};
use super::decide::{self, Saved};
use super::{rpc, status, Refusal, Replica};
use crate::model::ResultSave;
use crate::store::{SaveError, SaveMode, TaskStore};
use crate::trace::event::failure_tone;

/// Wait between tries of a store call that got no answer.
const TRANSIENT_BACKOFF: Duration = Duration::from_millis(50);

impl Replica {
    /// Reads a task, trying again on no answer (`store.transient_retries`).
    pub(super) async fn load(&self, task_id: &str) -> Result<Option<(Task, u64)>, String> {
        let mut tries = 0;
        loop {
            match self.links.store.get(task_id).await {
                Err(e) if e.worth_retrying() && tries < self.profile.store.transient_retries => {
                    tries += 1;
                    let e = e.to_string();
                    self.record_as(
                        failure_tone(&e),
                        format!("store read of {task_id} failed ({e}); retry {tries}"),
                    );
                    tokio::time::sleep(TRANSIENT_BACKOFF).await;
                }
                other => return other.map_err(|e| e.to_string()),
            }
        }
    }

    /// Saves a task, trying again on no answer (`store.transient_retries`); a conflict is
    /// returned at once. A status not stamped yet gets the simulated time of this save
    /// (`wire.status_timestamp`), in the caller's copy too.
    pub(super) async fn persist(
        &self,
        task: &mut Task,
        mode: SaveMode,
        based_on: Option<u64>,
    ) -> Result<u64, SaveError> {
        // A stalled subscriber's full tap may hold the consumer before its next save.
        self.tap_gate(&task.id).await;
        // A consumer a blocking answer closed saves nothing more.
        self.consumer_gate(&task.id).await;
        if self.profile.wire().stamps_status() && task.status.timestamp.is_none() {
            task.status.timestamp = Some(crate::trace::wall_clock());
        }
        let task = &*task;
        let mut tries = 0;
        loop {
            // With an outbox, the push this state calls for is queued in the same write.
            let enqueue = self.profile.push.outbox && self.push_wanted(task);
            if let TaskStore::Local(state) = &self.links.store {
                // The shared store fires this point itself, on its host.
                crate::store::buggify_conflict(
                    state,
                    &self.faults.chaos,
                    &self.links.trace,
                    &task.id,
                    mode,
                );
            }
            let result = self
                .links
                .store
                .save_and_enqueue(task, mode, based_on, &self.host, enqueue)
                .await;
            if let Ok(v) = &result {
                self.tasks
                    .events
                    .borrow_mut()
                    .entry(task.id.clone())
                    .or_default()
                    .push((*v, task.clone()));
                self.tap_dispatched(&task.id);
            }
            match result {
                Err(SaveError::Unavailable(e))
                    if e.worth_retrying() && tries < self.profile.store.transient_retries =>
                {
                    tries += 1;
                    let e = e.to_string();
                    self.record_as(
                        failure_tone(&e),
                        format!("store save of {} failed ({e}); retry {tries}", task.id),
                    );
                    tokio::time::sleep(TRANSIENT_BACKOFF).await;
                }
                other => return other,
            }
        }
    }

    pub(super) fn save_mode(&self, version: Option<u64>) -> SaveMode {
        decide::save::save_mode(&self.profile, version)
    }

    /// Saves `task` based on `version`; on a version conflict, re-reads and applies `reapply`
    /// to the fresh copy, up to the profile's `conflict_reapply` times. A task found terminal
    /// on the re-read is not written: `Saved::Terminal` carries it.
    pub(super) async fn save_reapplying(
        &self,
        task: &mut Task,
        version: Option<u64>,
        reapply: impl Fn(&mut Task),
    ) -> Result<Saved, Refusal> {
        self.save_reapplying_unless(task, version, |_| false, |_| unreachable!(), reapply)
            .await
    }

    /// [`Replica::save_reapplying`], with `refused` asked of every fresh copy a conflict
    /// re-reads (before `reapply`): a refused copy ends the save with nothing written,
    /// answered with `refusal` of that copy.
    pub(super) async fn save_reapplying_unless(
        &self,
        task: &mut Task,
        version: Option<u64>,
        refused: impl Fn(&Task) -> bool,
        refusal: impl Fn(&Task) -> Refusal,
        reapply: impl Fn(&mut Task),
    ) -> Result<Saved, Refusal> {
        let mut version = version;
        let mut attempts = 0;
        loop {
            match self.persist(task, self.save_mode(version), version).await {
                Ok(v) => return Ok(Saved::Version(v)),
                Err(SaveError::Conflict { current }) => {
                    self.record(format!(
                        "conflict saving {} (based on {version:?}, now {current:?})",
                        task.id
                    ));
                    if let OnConflict::GiveUp {
                        reread_and_fail,
                        refusal,
                    } = decide::save::on_conflict(&self.profile, attempts)
                    {
                        // A best-effort FAILED write (on a stale copy it conflicts in turn
                        // and is skipped).
                        if !reread_and_fail {
                            self.record(format!(
                                "{}: FAILED write after the last conflict skipped (stale copy)",
                                task.id
                            ));
                        } else if let Ok(Some((mut fresh, v))) = self.load(&task.id).await {
                            if decide::save::fails_on_give_up(&fresh) {
                                fresh.status = status(TaskState::Failed);
                                let _ = self
                                    .persist(&mut fresh, self.save_mode(Some(v)), Some(v))
                                    .await;
                            }
                        }
                        return Err(refusal);
                    }
                    attempts += 1;
                    let read = self.load(&task.id).await;
                    match decide::save::on_reread(read, &task.id, &refused) {
                        OnReread::Terminal(fresh, v) => {
                            *task = (*fresh).clone();
                            return Ok(Saved::Terminal(fresh, v));
                        }
                        OnReread::Refused(fresh) => return Err(refusal(&fresh)),
                        OnReread::Reapply(mut fresh, v) => {
                            reapply(&mut fresh);
                            *task = *fresh;
                            version = Some(v);
                        }
                        OnReread::Fail(r) => return Err(r),
                    }
                }
                Err(SaveError::NotCancelable) => return Err(rpc(-32002, "task not cancelable")),
                Err(SaveError::Unavailable(e)) => return Err(rpc(-32603, e.to_string())),
            }
        }
    }

    /// Saves a turn's result (`handler.result_save`): like every other save, or overwriting
    /// the whole task with the turn's copy (unless it was canceled meanwhile, when the model
    /// checks).
    pub(super) async fn save_result(
        &self,
        task: &mut Task,
        version: u64,
        apply: impl Fn(&mut Task),
    ) -> Result<Saved, Refusal> {
        match self.profile.handler.result_save {
            ResultSave::AsStore => self.save_reapplying(task, Some(version), apply).await,
            ResultSave::OverwriteUnlessCanceled => match self.load(&task.id).await {
                Ok(Some((current, v))) if decide::save::result_dropped(&current) => {
                    Ok(Saved::Terminal(Box::new(current), v))
                }
                _ => self.overwrite_result(task, version).await,
            },
            ResultSave::Overwrite => self.overwrite_result(task, version).await,
        }
    }

    /// Saves `task` over whatever the store holds.
    async fn overwrite_result(&self, task: &mut Task, version: u64) -> Result<Saved, Refusal> {
        self.persist(task, SaveMode::Overwrite, Some(version))
            .await
            .map(Saved::Version)
            .map_err(|e| rpc(-32603, format!("{e:?}")))
    }
}
