//! CancelTask, decided: which copy of the task a cancel reads (`cancel.parked_task`), what
//! it answers without writing (`cancel.second_cancel`, `cancel.writes_nothing`), whether it
//! stops a turn running here (`cancel.stops_executor`), the CANCELED copy it writes
//! (`cancel.remote_write`, `handler.reply_in`) and how (`cancel.fence_effects`,
//! `store.placement`, `store.versioned`, `cancel.store_write`), the answer for each store
//! outcome, and what the replica keeps of the task it canceled (`handler.cache_snapshot`,
//! `cancel.keeps_task`).

use a2a::{Task, TaskState};

use super::after_effect;
use crate::model::{
    CancelWrite, ParkedCancel, Placement, Profile, RemoteCancel, ReplyIn, SecondCancel, StopRule,
};
use crate::replica::{change_state, rpc, set_marker, Refusal, MARKER_KEY};
use crate::store::{SaveError, SaveMode};

/// Which copy of the task a cancel reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::replica) enum CancelReads {
    /// The stored task.
    Stored,
    /// The copy this replica saved last, of a task parked here.
    Parked,
}

/// [`CancelReads`]: `held_here`, this replica's ActiveTask holds a copy of the task (parked
/// here, or read by a subscription here); `stored_terminal`, the stored task is terminal.
pub(in crate::replica) fn reads(
    profile: &Profile,
    held_here: bool,
    stored_terminal: bool,
) -> CancelReads {
    let parked_copy = match profile.cancel.parked_task {
        None | Some(ParkedCancel::Store) => false,
        // The cached copy answers, whatever the store holds.
        Some(ParkedCancel::Cached) => true,
        // The store decides whether the task is cancelable: a terminal one is refused.
        Some(ParkedCancel::CachedAfterCheck) => !stored_terminal,
    };
    if parked_copy && held_here {
        CancelReads::Parked
    } else {
        CancelReads::Stored
    }
}

/// What a cancel does with the task it read.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::replica) enum OnRead {
    /// The task is canceled already and cancel is idempotent: answered with it.
    AlreadyCanceled,
    /// The task is terminal: `-32002` TaskNotCancelable.
    NotCancelable(Refusal),
    /// The cancel writes nothing and answers the task as it stands
    /// (`cancel.writes_nothing`, a2a-python#1170).
    Unwritten,
    /// The cancel writes CANCELED.
    Write,
}

/// [`OnRead`] for a cancel of `task_id` that read `task`.
pub(in crate::replica) fn on_read(profile: &Profile, task_id: &str, task: &Task) -> OnRead {
    let state = &task.status.state;
    if state.is_terminal() {
        if *state == TaskState::Canceled && profile.cancel.second_cancel == SecondCancel::Idempotent
        {
            return OnRead::AlreadyCanceled;
        }
        return OnRead::NotCancelable(rpc(-32002, format!("task {task_id} is {state:?}")));
    }
    if profile.cancel.writes_nothing {
        return OnRead::Unwritten;
    }
    OnRead::Write
}

/// Whether a cancel on the replica that runs a turn of the task (`running`, a streaming
/// run or not) tells it to stop at its next await (`cancel.stops_executor`).
pub(in crate::replica) fn stops_run(profile: &Profile, running: bool, streaming: bool) -> bool {
    let stops = match profile.cancel.stops_executor {
        StopRule::Always => true,
        StopRule::StreamingOnly => streaming,
    };
    running && stops
}

/// The CANCELED copy a cancel writes, built on `task` as read; `held_here`: a turn of the
/// task runs here, or waits on it here. A fenced cancel also clears the turn's markers.
pub(in crate::replica) fn canceled_copy(profile: &Profile, task: &Task, held_here: bool) -> Task {
    let mut canceled = task.clone();
    if !held_here && profile.cancel.remote_write == Some(RemoteCancel::StateOnly) {
        canceled.status.state = TaskState::Canceled;
    } else {
        let reply_in = profile.handler.reply_in.unwrap_or(ReplyIn::History);
        change_state(&mut canceled, TaskState::Canceled, reply_in);
    }
    if profile.cancel.fence_effects {
        set_marker(&mut canceled, "effectPending", None);
        set_marker(&mut canceled, "runnerUntilMs", None);
    }
    canceled
}

/// How a cancel writes its copy, read at `version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::replica) enum CancelSave {
    /// Fenced (`cancel.fence_effects`): it waits while an effect is pending, then writes
    /// with compare-and-swap, trying again from the read on a conflict.
    Fenced(SaveMode),
    /// Written once in this mode: the store's cancel (onto the stored task, or the whole
    /// copy) on a shared versioned store, else compare-and-swap or an overwrite.
    Once(SaveMode),
}

/// [`CancelSave`] for a cancel that read the task at `version`.
pub(in crate::replica) fn save(profile: &Profile, version: u64) -> CancelSave {
    if profile.cancel.fence_effects {
        return CancelSave::Fenced(SaveMode::Cas(Some(version)));
    }
    CancelSave::Once(match (profile.store.placement, profile.store.versioned) {
        (Placement::Shared, true) if profile.cancel.store_write == Some(CancelWrite::WholeTask) => {
            SaveMode::CancelWhole
        }
        (Placement::Shared, true) => SaveMode::Cancel,
        (_, true) => SaveMode::Cas(Some(version)),
        (_, false) => SaveMode::Overwrite,
    })
}

/// What a fenced cancel does about the task's effect intent.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::replica) enum Fence {
    /// No effect is pending: write.
    Write,
    /// An effect is pending: read again shortly.
    Wait,
    /// An effect is still pending at the cancel's deadline: refused, outcome unknown.
    GiveUp(Refusal),
}

/// [`Fence`] for a fenced cancel of `task` (as read) at `now_ms`, which gives up at
/// `deadline_ms`.
pub(in crate::replica) fn fence(
    profile: &Profile,
    task: &Task,
    now_ms: u64,
    deadline_ms: u64,
) -> Fence {
    if pending_until(task).is_none_or(|until| now_ms >= until) {
        return Fence::Write;
    }
    if now_ms >= deadline_ms {
        return Fence::GiveUp(after_effect(
            profile,
            rpc(-32603, "an effect is still pending"),
        ));
    }
    Fence::Wait
}

/// Until when a task's pending effect holds off a cancel, if one is pending.
pub(in crate::replica) fn pending_until(task: &Task) -> Option<u64> {
    task.metadata
        .as_ref()?
        .get(MARKER_KEY)?
        .pointer("/effectPending/untilMs")?
        .as_u64()
}

/// What a cancel's write leads to.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::replica) enum OnSaved {
    /// It landed, at this version: answered with the CANCELED copy (pushed).
    Canceled(u64),
    /// A fenced write lost to another write: read again and start over.
    Retry,
    /// The task changed, or became terminal, since it was read: read it again to answer
    /// ([`lost`]).
    Reread,
    /// The store did not answer.
    Fail(Refusal),
}

/// [`OnSaved`] for a cancel written as `how` that ended `result`.
pub(in crate::replica) fn on_saved(
    profile: &Profile,
    how: CancelSave,
    result: &Result<u64, SaveError>,
) -> OnSaved {
    match (how, result) {
        (_, Ok(v)) => OnSaved::Canceled(*v),
        (CancelSave::Fenced(_), Err(SaveError::Conflict { .. } | SaveError::NotCancelable)) => {
            OnSaved::Retry
        }
        (CancelSave::Once(_), Err(SaveError::Conflict { .. } | SaveError::NotCancelable)) => {
            OnSaved::Reread
        }
        (CancelSave::Fenced(_), Err(SaveError::Unavailable(e))) => {
            OnSaved::Fail(after_effect(profile, rpc(-32603, e.to_string())))
        }
        (CancelSave::Once(_), Err(SaveError::Unavailable(e))) => {
            OnSaved::Fail(rpc(-32603, e.to_string()))
        }
    }
}

/// The answer of a cancel of `task_id` whose write was refused, from the task as read again
/// (`None`: not found, or the read failed): a cancel that lost to another cancel answers
/// the canceled task, anything else is not cancelable (a2a-sdk 1.3.0 `_cancel_remote`).
pub(in crate::replica) fn lost(task_id: &str, reread: Option<Task>) -> Result<Task, Refusal> {
    match reread {
        Some(t) if t.status.state == TaskState::Canceled => Ok(t),
        _ => Err(rpc(
            -32002,
            format!("task {task_id} changed while canceling"),
        )),
    }
}

/// What the replica keeps of a task it canceled (its ActiveTask's cached copy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::replica) enum Keeps {
    /// Nothing changes (the model caches no snapshot).
    Nothing,
    /// The ActiveTask finishes and is cleaned up (a parked one, or one whose running turn
    /// nobody waits on): its copy is forgotten, and a later request here reads the store.
    Forget,
    /// The ActiveTask stays registered, finished, holding the CANCELED copy
    /// (`cancel.keeps_task`): a later cancel here answers it.
    KeepFinished,
    /// A cached copy, where there is one, becomes the CANCELED one.
    Replace,
}

/// [`Keeps`] for a cancel written here; `was_parked`: the task was parked here;
/// `unwatched`: the turn running here was answered before it ended (a non-blocking send's),
/// so no request waits on its ActiveTask. a2a-sdk 1.1.5 cleans an ActiveTask up once it is
/// finished and no subscriber is left (`_run_consumer`, `_maybe_cleanup`): live, a second
/// cancel 300 ms after the first, on the replica running a non-blocking turn, answered
/// `-32002` from the store, where after a blocking turn it answered the kept copy
/// (generation 6's seed 51 of a2a-python-1.1, and two scripts of the same pair).
pub(in crate::replica) fn keeps(profile: &Profile, was_parked: bool, unwatched: bool) -> Keeps {
    match (profile.handler.cache_snapshot, profile.cancel.keeps_task) {
        (false, _) => Keeps::Nothing,
        (true, true) if was_parked || unwatched => Keeps::Forget,
        (true, true) => Keeps::KeepFinished,
        (true, false) => Keeps::Replace,
    }
}
