//! Saves, decided: the write mode (`store.versioned`), what a version conflict leads to
//! (`handler.conflict_reapply`, `handler.conflict_code`, `handler.failed_write_on_stale_copy`),
//! what its re-read leads to (the task terminal, the busy rule, re-applied), and how a save
//! made before the turn's effect ends a send (`handler.terminal_reread_answers_task`,
//! `handler.message_to_terminal_code`, `handler.executor_outlives_consumer`).

use a2a::{Task, TaskState};

use super::{after_effect, not_found};
use crate::model::Profile;
use crate::replica::{rpc, Refusal};
use crate::store::SaveMode;

/// The outcome of a save that may have found the task terminal.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::replica) enum Saved {
    Version(u64),
    /// The task as re-read, terminal, and its version.
    Terminal(Box<Task>, u64),
}

/// How a save based on `version` is written: compare-and-swap on a versioned store, else
/// over whatever the store holds.
pub(in crate::replica) fn save_mode(profile: &Profile, version: Option<u64>) -> SaveMode {
    if profile.store.versioned {
        SaveMode::Cas(version)
    } else {
        SaveMode::Overwrite
    }
}

/// What a save does after a version conflict, `attempts` re-applications in.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::replica) enum OnConflict {
    /// Re-read the task and apply the change again to the fresh copy.
    Reread,
    /// No more re-applications: answer `refusal`, after a best-effort FAILED write, which
    /// re-reads the task first (`reread_and_fail`) or, made on the stale copy, conflicts in
    /// turn and is skipped.
    GiveUp {
        reread_and_fail: bool,
        refusal: Refusal,
    },
}

/// [`OnConflict`] for a save that has re-applied its change `attempts` times.
pub(in crate::replica) fn on_conflict(profile: &Profile, attempts: u32) -> OnConflict {
    if attempts < profile.handler.conflict_reapply {
        return OnConflict::Reread;
    }
    OnConflict::GiveUp {
        reread_and_fail: !profile.handler.failed_write_on_stale_copy,
        refusal: rpc(
            profile.handler.conflict_code,
            "concurrent task modification",
        ),
    }
}

/// Whether the best-effort FAILED write after the last conflict writes the copy it re-read:
/// not over a task already terminal.
pub(in crate::replica) fn fails_on_give_up(fresh: &Task) -> bool {
    !fresh.status.state.is_terminal()
}

/// What a conflict's re-read leads to.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::replica) enum OnReread {
    /// The task is terminal: nothing is written, the save ends with it.
    Terminal(Box<Task>, u64),
    /// The fresh copy is refused (the busy rule of a turn's working save): nothing is written.
    Refused(Box<Task>),
    /// Apply the change to the fresh copy and save it based on its version.
    Reapply(Box<Task>, u64),
    /// The re-read found no task, or failed: the save is answered with this refusal.
    Fail(Refusal),
}

/// [`OnReread`] for what a conflict's re-read of `task_id` found (`Err`: the store did not
/// answer). `refused` is asked of a fresh copy that is not terminal.
pub(in crate::replica) fn on_reread(
    read: Result<Option<(Task, u64)>, String>,
    task_id: &str,
    refused: impl FnOnce(&Task) -> bool,
) -> OnReread {
    match read {
        Ok(Some((fresh, v))) if fresh.status.state.is_terminal() => {
            OnReread::Terminal(Box::new(fresh), v)
        }
        Ok(Some((fresh, _))) if refused(&fresh) => OnReread::Refused(Box::new(fresh)),
        Ok(Some((fresh, v))) => OnReread::Reapply(Box::new(fresh), v),
        Ok(None) => OnReread::Fail(not_found(task_id)),
        Err(e) => OnReread::Fail(rpc(-32603, e)),
    }
}

/// Whether a result saved with `handler.result_save = "overwrite-unless-canceled"` is
/// dropped because the task, as re-read, was canceled meanwhile.
pub(in crate::replica) fn result_dropped(current: &Task) -> bool {
    current.status.state == TaskState::Canceled
}

/// How a save made before the turn's effect ends the send, when it does not land.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::replica) enum BeforeEffect {
    /// It landed: the turn goes on from this version.
    Landed(u64),
    /// Its re-read found the task terminal, and the send is answered with that task
    /// (`handler.terminal_reread_answers_task`), once its dedup claim is given up.
    AnswerTerminal(Box<Task>),
    /// The send is refused, once its dedup claim is given up. `orphan_runs`: the consumer
    /// failed after the request read the task, and the executor outlives it
    /// (`handler.executor_outlives_consumer`): it runs on to its effect in the background.
    Refuse { refusal: Refusal, orphan_runs: bool },
}

/// [`BeforeEffect`] for a save before the effect that ended `saved`; `read`: the request
/// read the task from the store (not a new task), so its executor had started.
pub(in crate::replica) fn before_effect(
    profile: &Profile,
    saved: Result<Saved, Refusal>,
    read: bool,
) -> BeforeEffect {
    match saved {
        Ok(Saved::Version(v)) => BeforeEffect::Landed(v),
        Ok(Saved::Terminal(t, _)) if profile.handler.terminal_reread_answers_task => {
            BeforeEffect::AnswerTerminal(t)
        }
        Ok(Saved::Terminal(t, _)) => BeforeEffect::Refuse {
            refusal: rpc(
                profile.handler.message_to_terminal_code,
                format!("task {} is {:?}", t.id, t.status.state),
            ),
            orphan_runs: false,
        },
        Err(r) => BeforeEffect::Refuse {
            refusal: after_effect(profile, r),
            orphan_runs: read && profile.handler.executor_outlives_consumer,
        },
    }
}
