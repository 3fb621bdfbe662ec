//! The `[cancel]` knob group: which runs a cancel stops, what it reads and writes, and what
//! it answers.

use serde::{Deserialize, Serialize};

/// Which runs a cancel on the replica that runs them stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopRule {
    /// Every run stops at its next await (a2a-python).
    Always,
    /// Only streaming runs are aborted; blocking and non-blocking runs go on (Mastra).
    StreamingOnly,
}

/// What a cancel of an already canceled task answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SecondCancel {
    /// `-32002` TaskNotCancelable.
    Error,
    /// The canceled task, as the spec's "cancel is idempotent" asks.
    Idempotent,
}

/// What a cancel reads on the replica where the task is parked (its last turn there left
/// it waiting for input, and a2a-sdk keeps its `ActiveTask` alive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ParkedCancel {
    /// The stored task, as on any other replica (the default; a2a-sdk 1.3 calls
    /// `TaskManager.invalidate()` before it reads).
    Store,
    /// The copy this replica kept from the end of its last turn: the cancel skips the
    /// terminal check, writes CANCELED built on that copy over whatever the store holds
    /// (losing later writes by other replicas) and answers it, even when another replica
    /// canceled the task already (a2a-sdk 1.1.5 `ActiveTask.cancel`: `get_task()` answers
    /// the cached `_current_task`).
    Cached,
    /// The stored task decides whether it is cancelable (a terminal one is refused), but
    /// CANCELED is written built on this replica's copy, over whatever the store holds
    /// (a2a-sdk 1.3 `on_cancel_task` checks the store, then `_cancel_local` has the
    /// executor's cancel event saved by the `ActiveTask`'s `TaskManager`, on its cached
    /// task).
    CachedAfterCheck,
}

/// How a cancel writes a task that no turn runs or waits on at its replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RemoteCancel {
    /// As a status change: the reply in the status moves to the history (`reply_in`), the
    /// status is CANCELED with no message (the default).
    Archive,
    /// The stored task with only its state set to CANCELED: the status keeps its message,
    /// the history is untouched (a2a-sdk 1.3 `DefaultRequestHandlerV2._write_cancel`).
    StateOnly,
}

/// Cancel knobs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CancelKnobs {
    /// Which local runs a cancel stops.
    pub stops_executor: StopRule,
    /// What a second cancel answers.
    pub second_cancel: SecondCancel,
    /// The executor records an effect intent with CAS before its effect, and a cancel waits
    /// until no effect is pending before it writes CANCELED with CAS.
    pub fence_effects: bool,
    /// What a cancel reads on the replica where the task is parked; unset:
    /// [`ParkedCancel::Store`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parked_task: Option<ParkedCancel>,
    /// How a cancel writes a task that no turn runs or waits on at this replica; unset:
    /// [`RemoteCancel::Archive`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_write: Option<RemoteCancel>,
    /// What a shared versioned store writes for a cancel; unset:
    /// [`CancelWrite::OntoStored`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_write: Option<CancelWrite>,
    /// Whether a cancel written on a replica leaves that replica's ActiveTask for the task
    /// (one the cancel registered, or one running a turn there; not one parked there
    /// waiting for input) behind, finished, holding it as CANCELED: a later cancel
    /// there answers that copy as success (stale: what other replicas saved since is not
    /// in it), and a later message or subscription there is refused as for a terminal task
    /// (needs `handler.cache_snapshot`, the profile is refused without it); unset: the
    /// cancel leaves nothing behind.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keeps_task: bool,
    /// Whether a cancel of a task that is not terminal answers success with the task as it
    /// stands and writes nothing, the run going on (the executor's cancel emits no event).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub writes_nothing: bool,
    /// Whether a cancel on the replica where a turn of the task is starting (its consumer
    /// saving the request's first events: the user message, the working status) stops that
    /// turn and waits for those saves to end, then reads the task again before it writes
    /// (and answers the task as it then stands if it ended terminal). a2a-sdk 1.3.0
    /// `ActiveTask.cancel` cancels the executor, then awaits `_is_finished` while the
    /// consumer drains what was queued; seen live on generation 4's seed 19 of
    /// a2a-python-1.3-versioned: the cancel's write came after the starting turn's second
    /// conflict. Unset: the cancel writes at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub waits_for_consumer: bool,
}

/// What a shared versioned store writes for a cancel (which skips the version check).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CancelWrite {
    /// CANCELED onto the stored task: what other replicas wrote stays (the default).
    OntoStored,
    /// The cancel's own copy of the task, whole: built on an older version, it undoes what
    /// others wrote since (a2a-sdk 1.3.0 `VersionedDatabaseTaskStore._save_once` merges the
    /// given task for a CANCELED save).
    WholeTask,
}
