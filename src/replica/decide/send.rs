//! SendMessage and SendStreamingMessage, decided: the dedup claim (`[dedup]`), a turn of
//! the task already running here (`handler.queued_answer`, `handler.per_task_lock`,
//! `handler.context_mismatch`), what a send does with the task it read
//! (`handler.unknown_task`, `handler.message_to_terminal_code`, `handler.queued_terminal`,
//! `handler.nonblocking_to_working`, `handler.resumed_follow_up`, the busy rule of
//! `recovery.sweep_ms`), what it answers and when (`handler.blocking_stops_consumer`,
//! `handler.nonblocking_answer`), how the turn begins (`handler.saves`,
//! `handler.appends_duplicates`, `recovery.runner_lease_ms`, `handler.stream_start`) and
//! what its end leaves on the replica (`handler.cache_snapshot`).

use a2a::{Message, StreamResponse, Task, TaskState};
use serde_json::{json, Value};

use super::not_found;
use super::subscribe::status_update;
use crate::model::{
    DedupScope, MismatchRule, NonBlockingAnswer, NonBlockingToWorking, Profile, QueuedAnswer,
    QueuedTerminal, ResumedFollowUp, Saves, StreamStart, TaskOnlyContext, UnknownTask,
};
use crate::replica::{follow_up, rpc, Refusal};
use crate::store::Claim;

/// Where a send's `(contextId, messageId)` claim is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::replica) enum DedupAt {
    /// In this replica's own table (`dedup.scope = "per-pod"`).
    PerPod,
    /// In the shared store (`dedup.scope = "shared"`).
    Shared,
}

/// Where a send claims its message, and the claim's lease (ms): `None` when the model does
/// not deduplicate. A per-pod claim never runs out.
pub(in crate::replica) fn dedup_claim(profile: &Profile) -> Option<(DedupAt, u64)> {
    match profile.dedup.scope {
        DedupScope::None => None,
        DedupScope::PerPod => Some((DedupAt::PerPod, u64::MAX / 4)),
        DedupScope::Shared => Some((DedupAt::Shared, profile.dedup.lease_ms)),
    }
}

/// What a send does with the answer to its dedup claim.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::replica) enum OnClaim {
    /// The message is this send's: go on.
    Run,
    /// Another request holds it: refused (Rasa's HTTP 409).
    InFlight(Refusal),
    /// It completed as `task_id`: answered with that task as it stands.
    Replay { task_id: String },
    /// The claim got no answer.
    Fail(Refusal),
}

/// [`OnClaim`] for the claim of `message_id`.
pub(in crate::replica) fn on_claim(
    claim: Result<Claim, crate::store::StoreError>,
    message_id: &str,
) -> OnClaim {
    match claim {
        Ok(Claim::New) => OnClaim::Run,
        Ok(Claim::InFlight) => OnClaim::InFlight(Refusal::Http(
            409,
            format!("message {message_id} is in flight"),
        )),
        Ok(Claim::Done { task_id }) => OnClaim::Replay { task_id },
        Err(e) => OnClaim::Fail(rpc(-32603, e.to_string())),
    }
}

/// Whether a send that names a task may join a turn of it running here: answered with the
/// task that turn ends in, its own turn queued behind ([`QueuedAnswer::RunningTurn`]).
pub(in crate::replica) fn joins_running_turns(profile: &Profile) -> bool {
    profile.handler.queued_answer == Some(QueuedAnswer::RunningTurn)
}

/// Whether a send that names a task joins a turn of it running here
/// ([`QueuedAnswer::RunningTurn`]): the task's ActiveTask here runs a turn (`running`), or,
/// with `handler.per_task_lock`, its lock is held (`lock_held`, asked only then). `None`:
/// the send runs as usual. `Some(context_first)`: it joins, its contextId checked against
/// the task's first (`handler.context_mismatch = "reject-before-executor"`).
pub(in crate::replica) fn joins_running_turn(
    profile: &Profile,
    running: bool,
    lock_held: impl FnOnce() -> bool,
) -> Option<bool> {
    if !joins_running_turns(profile) {
        return None;
    }
    let busy = running || (profile.handler.per_task_lock && lock_held());
    busy.then_some(profile.handler.context_mismatch == MismatchRule::RejectBeforeExecutor)
}

/// What a send that joined a running turn gets once that turn ended.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::replica) struct Joined {
    /// The send's own turn, queued behind, runs next (in the background); a turn that
    /// failed takes its queue with it.
    pub queued_runs: bool,
    /// The send's answer: the task the joined turn ended in, or its refusal.
    pub answer: Result<Task, Refusal>,
}

/// [`Joined`], for the way the joined turn ended (`None`: it left no answer).
pub(in crate::replica) fn joined(last_end: Option<Result<Task, Refusal>>) -> Joined {
    let queued_runs = matches!(&last_end, Some(Ok(t)) if t.status.state != TaskState::Failed);
    let answer = match last_end {
        Some(ended) => ended,
        None => Err(rpc(-32603, "the running turn ended with no answer")),
    };
    Joined {
        queued_runs,
        answer,
    }
}

/// Whether `message` names a contextId other than its task's (`task_context`).
pub(in crate::replica) fn foreign_context(message: &Message, task_context: &str) -> bool {
    message
        .context_id
        .as_deref()
        .is_some_and(|c| c != task_context)
}

/// Whether a turn loses its consumer to the TaskManager's context
/// (`handler.task_only_context = "generate"`, a2a-sdk 1.x). A message that names only its
/// task runs under a new context (`request`). The TaskManager of the task's ActiveTask on
/// this replica holds the context of the last run here (`manager`), or, when none ran
/// here, takes the request's as it starts. The consumer first saves the user message on
/// the stored task (`task`'s context): when the TaskManager's context is another, that
/// save fails ("Context in event doesn't match TaskManager"), the client gets `-32602`
/// and the executor runs on. So a task-only follow-up fails on a replica that never ran
/// the task, and any turn fails on a replica whose last run was a task-only one, unless
/// its message is already saved (below). Seen
/// live: tests/fidelity/task-only-follow-up-context-*.toml and generation 4's batch.
///
/// A message the task read at the request's start already holds (`already_saved`: the
/// same message sent again, which another replica's run saved) is not saved again, so
/// nothing compares the contexts and the turn runs (a2a-sdk 1.3.0 `active_task.py`,
/// `_handle_task_modification_event`: the save sits under `if not
/// message_already_saved`). Seen live: generation 4's seed 136 of a2a-python-1.3-plain,
/// a duplicate sent to the replica whose last run was task-only, answered `Completed`.
pub(in crate::replica) fn manager_context_fails(
    profile: &Profile,
    manager: Option<&str>,
    request: &str,
    task: &str,
    already_saved: bool,
) -> bool {
    profile.handler.task_only_context == Some(TaskOnlyContext::Generate)
        && !already_saved
        && manager.unwrap_or(request) != task
}

/// What a message with a foreign contextId is refused with (`handler.context_mismatch`).
pub(in crate::replica) fn context_refusal() -> Refusal {
    rpc(-32602, "contextId does not match the task's")
}

/// The busy rule of a model with takeover (`recovery.sweep_ms` > 0): a client's turn to a
/// working task is refused; the takeover itself (`internal`) goes through.
pub(in crate::replica) fn busy(profile: &Profile, task: &Task, internal: bool) -> bool {
    profile.recovery.sweep_ms > 0 && task.status.state == TaskState::Working && !internal
}

/// The busy rule on the fresh copy a conflict of the working save of the turn carrying
/// `message_id` re-read: unless that copy holds the turn's own message.
pub(in crate::replica) fn busy_on_reread(
    profile: &Profile,
    fresh: &Task,
    internal: bool,
    message_id: &str,
) -> bool {
    let own = fresh
        .history
        .iter()
        .flatten()
        .any(|m| m.message_id == message_id);
    busy(profile, fresh, internal) && !own
}

/// What a send that names a task read of it, and of its request.
#[derive(Debug, Clone, Copy)]
pub(in crate::replica) struct TaskRead<'a> {
    /// The task as read: `None` when there is none, or it is another owner's.
    pub task: Option<&'a Task>,
    pub message: &'a Message,
    /// The send's turn waited behind a turn it joined.
    pub queued: bool,
    /// The task's ActiveTask here is alive: parked by its last turn here, or registered by
    /// a subscription here.
    pub held: bool,
    /// The send is the replica's own takeover.
    pub internal: bool,
    pub blocking: bool,
    pub streaming: bool,
}

/// What a send does with the task it read.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::replica) enum OnTask {
    /// There is no such task here: the conversation goes on in a new task on this replica
    /// (`handler.unknown_task = "new-task"`).
    NewTask,
    /// There is no such task: `-32001`.
    NotFound(Refusal),
    /// The message's contextId is another task's: refused before the executor runs.
    ForeignContext(Refusal),
    /// The task is terminal and the turn does not run anyway: the model's code.
    Terminal(Refusal),
    /// The busy rule refuses the turn: 409, retry later.
    Busy,
    /// A non-blocking follow-up to a working task is not processed: answered with the task.
    Current,
    /// A blocking follow-up to a task whose resumed run still works waits for that run and
    /// is answered with the task it leaves (the message not processed).
    AwaitResumedRun,
    /// The turn begins; `mismatch`: its contextId is another task's, refused after the run
    /// (`handler.context_mismatch = "reject-after-executor"`) or ignored.
    Start { mismatch: bool },
}

impl OnTask {
    /// Whether the send took the task's ActiveTask here (its idle timer stops): every
    /// outcome once the task is found and the contextId check passed.
    pub(in crate::replica) fn takes_active_task(&self) -> bool {
        !matches!(
            self,
            OnTask::NewTask | OnTask::NotFound(_) | OnTask::ForeignContext(_)
        )
    }
}

/// [`OnTask`] for a send to task `task_id` that read `read`.
pub(in crate::replica) fn on_task(profile: &Profile, task_id: &str, read: TaskRead) -> OnTask {
    let handler = &profile.handler;
    let Some(task) = read.task else {
        return match handler.unknown_task {
            UnknownTask::NewTask => OnTask::NewTask,
            _ => OnTask::NotFound(not_found(task_id)),
        };
    };
    let mismatch = foreign_context(read.message, &task.context_id);
    if mismatch && handler.context_mismatch == MismatchRule::RejectBeforeExecutor {
        return OnTask::ForeignContext(context_refusal());
    }
    // A turn queued behind another, or sent to a task whose ActiveTask is alive here, runs
    // on that ActiveTask, whatever the stored state, where the model says so.
    let runs_anyway =
        (read.queued || read.held) && handler.queued_terminal == Some(QueuedTerminal::Run);
    if task.status.state.is_terminal() && !runs_anyway {
        return OnTask::Terminal(rpc(
            handler.message_to_terminal_code,
            format!("task {task_id} is terminal"),
        ));
    }
    if busy(profile, task, read.internal) {
        return OnTask::Busy;
    }
    if !read.blocking
        && task.status.state == TaskState::Working
        && handler.nonblocking_to_working == NonBlockingToWorking::ReturnCurrent
    {
        return OnTask::Current;
    }
    if awaits_resumed_run(profile, task, read.blocking, read.streaming) {
        return OnTask::AwaitResumedRun;
    }
    OnTask::Start { mismatch }
}

/// Whether a follow-up to `task` (as read) waits for the task's resumed run instead of
/// running: a blocking, non-streaming send to a working task whose run was suspended, for
/// a model that waits for resumed runs (`handler.resumed_follow_up = "await-run"`).
pub(in crate::replica) fn awaits_resumed_run(
    profile: &Profile,
    task: &Task,
    blocking: bool,
    streaming: bool,
) -> bool {
    tracks_runs(profile)
        && blocking
        && !streaming
        && task.status.state == TaskState::Working
        && follow_up::suspended_run(task).is_some()
}

/// Whether the model tells runs apart: it waits for resumed runs.
pub(in crate::replica) fn tracks_runs(profile: &Profile) -> bool {
    profile.handler.resumed_follow_up == Some(ResumedFollowUp::AwaitRun)
}

/// When a SendMessage whose turn has begun is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::replica) enum SendAnswer {
    /// Once the turn has run to its end, with the task it ends in.
    AfterTurn,
    /// Now, the turn running on in the background: with the task as the turn first saved
    /// it (`first_saved`) or as it stands. `closes_consumer`: a blocking send answered at
    /// its first event closes the task's consumer here, so nothing later is saved.
    Now {
        first_saved: bool,
        closes_consumer: bool,
    },
}

/// [`SendAnswer`] for a send (`blocking` or `returnImmediately`) whose message names no
/// task (`new_task`) or one.
pub(in crate::replica) fn send_answer(
    profile: &Profile,
    blocking: bool,
    new_task: bool,
) -> SendAnswer {
    let closes_consumer = blocking && profile.handler.blocking_stops_consumer;
    if blocking && !closes_consumer {
        return SendAnswer::AfterTurn;
    }
    SendAnswer::Now {
        first_saved: profile.handler.nonblocking_answer == Some(NonBlockingAnswer::FirstEvent)
            && new_task,
        closes_consumer,
    }
}

/// How a turn saves the user message before it saves the task as working.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::replica) struct UserSave {
    /// The user message is its own save first (`handler.saves = "per-event"`), unless the
    /// history holds it already and duplicates are not appended.
    pub own_save: bool,
    /// The message is appended even when the history holds its id
    /// (`handler.appends_duplicates`).
    pub appends: bool,
}

/// [`UserSave`] for a turn whose message the task's history holds already (`held`) or not.
pub(in crate::replica) fn user_save(profile: &Profile, held: bool) -> UserSave {
    let appends = profile.handler.appends_duplicates == Some(true);
    UserSave {
        own_save: profile.handler.saves == Saves::PerEvent && (appends || !held),
        appends,
    }
}

/// The runner lease a working save marks the task with (`runnerUntilMs`), for a model with
/// takeover: until `now_ms` plus `recovery.runner_lease_ms`.
pub(in crate::replica) fn runner_until(profile: &Profile, now_ms: u64) -> Option<Value> {
    (profile.recovery.sweep_ms > 0).then(|| json!(now_ms + profile.recovery.runner_lease_ms))
}

/// The first event of a streaming turn, once it saved the task working: the task, or a
/// status update for a follow-up (`handler.stream_start = "snapshot-on-new-task"`).
pub(in crate::replica) fn first_stream_event(
    profile: &Profile,
    task: &Task,
    new_task: bool,
) -> StreamResponse {
    match profile.handler.stream_start {
        Some(StreamStart::SnapshotOnNewTask) if !new_task => status_update(task),
        _ => StreamResponse::Task(task.clone()),
    }
}

/// A turn that ran with a foreign contextId (`mismatch`) is refused after its run, with
/// `handler.context_mismatch = "reject-after-executor"`.
pub(in crate::replica) fn refused_after_run(profile: &Profile, mismatch: bool) -> Option<Refusal> {
    (mismatch && profile.handler.context_mismatch == MismatchRule::RejectAfterExecutor)
        .then(context_refusal)
}

/// What a turn's end leaves of its ActiveTask here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::replica) struct TurnEnded {
    /// The task waits for input here: its ActiveTask stays alive (parked).
    pub parked: bool,
    /// The ActiveTask finished with the turn and leaves the registry: its cached copy is
    /// forgotten, and the next request here reads the store.
    pub forget_cache: bool,
}

/// [`TurnEnded`] for a turn that ended `ended`; `finished_kept`: a cancel here left the
/// ActiveTask finished but registered (`cancel.keeps_task`).
pub(in crate::replica) fn turn_ended(
    profile: &Profile,
    ended: &Result<Task, Refusal>,
    finished_kept: bool,
) -> TurnEnded {
    let parked = ended.as_ref().is_ok_and(|t| {
        matches!(
            t.status.state,
            TaskState::InputRequired | TaskState::AuthRequired
        )
    });
    TurnEnded {
        parked,
        forget_cache: !parked && !finished_kept && profile.handler.cache_snapshot,
    }
}
