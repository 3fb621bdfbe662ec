//! Replica behaviour profiles: the knobs that make a replica behave like a real system.
//!
//! Behaviours are code (in [`crate::replica`] and [`crate::store`]); a profile is data that
//! selects them, one TOML file per model under `models/`. Every knob must cite its source in
//! the profile's `[sources]` table (a section of `docs/A2A-BEHAVIOURS.md`, a seed, or
//! "choice: ..." where the sources are silent); loading refuses a profile that does not.
//!
//! Adding a model is one file in `models/` plus one line in [`BUILTIN`].

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::InputError;

mod cancel;
mod push;
mod store;
mod turn_shape;
mod wire;
pub use cancel::{CancelKnobs, CancelWrite, ParkedCancel, RemoteCancel, SecondCancel, StopRule};
pub use push::{PushKnobs, PushOn, PushValidate};
pub use store::{Placement, StoreKnobs};
pub use turn_shape::{Artifacts, ReplyIn, ResumedFollowUp, TaskOnlyContext, TurnIn};
pub use wire::{ErrorData, V03Wire, VersionCheck, VersionMatch, WireKnobs};

/// The profiles that ship with the tool, by name: `(name, TOML text)`.
#[rustfmt::skip]
pub const BUILTIN: &[(&str, &str)] = &[
    ("reference", include_str!("../../models/reference.toml")),
    ("a2a-python-1.1", include_str!("../../models/a2a-python-1.1.toml")),
    ("a2a-python-1.3-plain", include_str!("../../models/a2a-python-1.3-plain.toml")),
    ("a2a-python-1.3-versioned", include_str!("../../models/a2a-python-1.3-versioned.toml")),
    ("a2a-python-1.3-memory", include_str!("../../models/a2a-python-1.3-memory.toml")),
    ("rasa-3.17", include_str!("../../models/rasa-3.17.toml")),
    ("mastra", include_str!("../../models/mastra.toml")),
    ("cognigy", include_str!("../../models/cognigy.toml")),
];

/// Where `(contextId, messageId)` deduplication state lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DedupScope {
    /// No deduplication: a retried message runs again.
    None,
    /// In each replica's memory (Rasa): another pod, or a restarted one, runs it again.
    PerPod,
    /// In the shared store, with a lease on in-flight claims.
    Shared,
}

/// When a `contextId` that does not match the task's is noticed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MismatchRule {
    /// Refused with `-32602` before the executor runs (a2a-python 1.2+, #1270).
    RejectBeforeExecutor,
    /// Refused with `-32602` after the executor has run (a2a-python before 1.2).
    RejectAfterExecutor,
    /// Never compared (Mastra).
    Ignore,
}

/// What a replica does with a message whose taskId it cannot find.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnknownTask {
    /// `-32001` TaskNotFound (the spec, a2a-python, Mastra).
    NotFound,
    /// Start a new task for the conversation (Rasa: the conversation tracker is persistent,
    /// the A2A task is per pod).
    NewTask,
}

/// What a non-blocking follow-up to a task that is still working gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NonBlockingToWorking {
    /// It runs like any follow-up.
    Run,
    /// The current task is returned as success and the message is not processed (Mastra).
    ReturnCurrent,
}

/// What a non-blocking send (`returnImmediately`) answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NonBlockingAnswer {
    /// The task as the turn's working save left it (the default).
    Working,
    /// The task after the turn's first event: on a new task the submitted task holding
    /// the message, on a later turn the working task (a2a-sdk 1.x: the first event the
    /// consumer saves; the user message is saved with the working event).
    FirstEvent,
}

/// What a send gets that arrives while another turn of its task runs on the same replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueuedAnswer {
    /// It waits for the lock and is answered by its own turn (the default).
    Own,
    /// It joins the running turn's events and is answered with the task that turn ends
    /// in; its own turn runs later, in the background (a2a-sdk 1.3: one `ActiveTask` per
    /// task, every request subscribed to all of its events).
    RunningTurn,
}

/// Whether a message that reaches a replica's live task runner (queued behind a running
/// turn, or sent to a task whose last turn here left it waiting for input) still runs when
/// the stored task is already terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueuedTerminal {
    /// It is refused with `message_to_terminal_code` (the default).
    Refuse,
    /// It runs on the terminal task: saves working over it and makes its effect (a2a-sdk
    /// 1.3 without an event stream: `ActiveTask._run_producer` checks nothing).
    Run,
}

/// What a streaming send's first event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StreamStart {
    /// The task as the working save left it, on every stream (the default).
    Snapshot,
    /// The task only when the stream created it; a continuation's stream begins with the
    /// working status update (a2a-sdk 1.3: the consumer forwards the events the executor
    /// emits, and only a new task's first event is the Task).
    SnapshotOnNewTask,
}

/// What SubscribeToTask does for a task this replica does not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SubscribeUnknown {
    /// `-32001` TaskNotFound.
    Error,
    /// HTTP 200 with an empty event stream (Mastra).
    EmptyStream,
}

/// Where a subscriber's later events come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SubscribeSource {
    /// The store's event log, polled: any replica can follow any task (a2a-python cluster
    /// mode's DatabaseTaskEventStream; a per-process store's own log).
    StoreEvents,
    /// Only runs on this replica: a subscriber elsewhere gets the snapshot and nothing more.
    LocalOnly,
}

/// SubscribeToTask knobs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubscribeKnobs {
    /// A task this replica does not know, on any streaming call: a subscription, or a
    /// streaming send whose taskId the handler does not find.
    pub unknown_task: SubscribeUnknown,
    /// Where later events come from.
    pub source: SubscribeSource,
    /// How often the source is polled, in simulated ms.
    pub poll_ms: u64,
    /// Whether the stream ends at an interrupted state (input-required, auth-required);
    /// unset: [`SubscribeInterrupted::Ends`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<SubscribeInterrupted>,
    /// What a subscriber hears when the turn running here fails; unset:
    /// [`SubscribeFailure::Status`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<SubscribeFailure>,
    /// The JSON-RPC code for a subscription to a terminal task; unset: -32004
    /// (UnsupportedOperation, A2A-BEHAVIOURS.md §1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal_code: Option<i32>,
    /// Whether a subscription to a terminal task gets the task's snapshot and then the end
    /// of the stream instead of the `terminal_code` error; unset: the error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub terminal_snapshot: bool,
    /// Whether a subscription leaves this replica holding the task as it read it, which a
    /// later turn here builds on instead of the store (needs `handler.cache_snapshot`, the
    /// profile is refused without it); unset: it leaves nothing behind.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keeps_task: bool,
    /// Whether a subscription registers an ActiveTask on its replica that stays alive
    /// after the subscriber leaves, so a later message there reaches it as it reaches a
    /// task parked there ([`QueuedTerminal::Run`] then runs it whatever the store holds);
    /// unset: a subscription registers nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub registers_task: bool,
    /// With `source = "store-events"`: whether a subscription on a replica that holds the
    /// task (a turn of it runs there, or the last one parked it there) taps that replica's
    /// own ActiveTask instead of the shared stream, so it hears only the events of turns
    /// that run there, not those other replicas save; unset: it follows the shared stream.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held_taps_local: bool,
    /// What a subscription's tap on this replica's ActiveTask does once its reader has
    /// stopped reading (a `stall-readers` step) and `tap_queue` events are queued behind
    /// it; unset: not modelled, a stalled reader holds nothing up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalled_tap: Option<StalledTap>,
    /// The bound of a tap's queue, in events (a2a-sdk's `DEFAULT_MAX_QUEUE_SIZE`, 1,024);
    /// unset: 1,024. Needs `stalled_tap`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tap_queue: Option<u32>,
    /// How long after its read of the task a subscription taps the task's events, the
    /// snapshot written in between (a2a-python's legacy request handler: read, yield the
    /// snapshot, then tap the event queue). What is saved in between never reaches the
    /// stream, and a task that reached a state that ends a stream in between (its queue
    /// closed) ends the stream right after the snapshot, with no final event; unset: the
    /// tap opens with the read, nothing falls between.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tap_after_snapshot_ms: Option<u64>,
}

/// What a full tap does (`subscribe.stalled_tap`). The model counts one event per save of
/// the task on the tap's replica (the SDK also queues two request markers per request).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StalledTap {
    /// The dispatcher waits on the full tap: the incoming queue (as long again) fills
    /// behind it, and the task's next save waits until the reader reads, so once
    /// `2 * tap_queue + 1` events are queued the task stops for every caller (a2a-sdk
    /// 1.0.0-1.1.3).
    Blocks,
    /// The full tap is closed and dropped; its stream ends with no final state and the
    /// task goes on (a2a-sdk 1.1.4 and later: `evict_on_full`).
    Evicted,
}

/// Whether a subscription ends at an interrupted state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SubscribeInterrupted {
    /// The stream ends there, snapshot or update (the default).
    Ends,
    /// It stays open: only a terminal state ends it (a2a-sdk 1.3 without an event stream:
    /// a subscriber taps the replica's `ActiveTask`, whose queue closes only when the task
    /// finishes; a task parked input-required never does).
    StaysOpen,
    /// As `stays-open` where this replica holds the task (its turn runs or waits here);
    /// elsewhere the snapshot does not end the stream, a later interrupted or terminal
    /// state does, and a failed turn arrives as its FAILED status whatever `failure` says
    /// (a2a-sdk 1.3 with an event stream: `_subscribe_remote`).
    StaysOpenWhereHeld,
}

/// What a subscriber hears when the turn running on its replica fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SubscribeFailure {
    /// The FAILED status update, then the end of the stream (the default).
    Status,
    /// The failure itself, not the FAILED status: the stream ends before a final state
    /// (a2a-sdk 1.3 `ActiveTask` enqueues the producer's exception to subscribers, and
    /// `subscribe` raises it).
    Error,
}

/// What a replica answers when a turn fails after its business effect may have run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AfterEffect {
    /// A JSON-RPC error (`-32603`): the client reads it as "did not happen".
    RpcError,
    /// HTTP 503: the outcome is unknown and the client should retry with the same messageId.
    Unavailable,
}

/// How a turn saves its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResultSave {
    /// Like every other save: CAS on a versioned store, overwrite on a plain one.
    AsStore,
    /// Overwrite the whole task, unless it was canceled meanwhile (Mastra's skipIfCanceled).
    OverwriteUnlessCanceled,
    /// Overwrite the whole task with the turn's own copy, a cancel saved meanwhile too
    /// (Mastra before #20505).
    Overwrite,
}

/// How many saves a turn makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Saves {
    /// Two: the user message with the working status when the turn begins, then the
    /// artifact with the reply and the final status.
    PerStep,
    /// Four, one per event, each with its own conflict re-application: the user message
    /// (on turn 1 the submitted task holding it), working, the artifact, the final status
    /// (a2a-python's `EventConsumer`). When the artifact's conflict finds the task terminal,
    /// the artifact is dropped but the final status, already queued, is saved on the
    /// terminal copy with its version: the task is reopened (seen run on a2a-sdk 1.3.0).
    PerEvent,
}

/// Request handler knobs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandlerKnobs {
    /// The replica keeps its own snapshot of a task between requests and continues from it
    /// instead of re-reading the store (a2a-python 1.1 ActiveTask).
    pub cache_snapshot: bool,
    /// When a contextId/taskId mismatch is refused.
    pub context_mismatch: MismatchRule,
    /// JSON-RPC code for a message sent to a terminal task.
    pub message_to_terminal_code: i32,
    /// How many times a save that lost a version race is re-applied on a fresh read before
    /// the request fails.
    pub conflict_reapply: u32,
    /// What the client is told when a turn fails after its effect may have run.
    pub after_effect_failure: AfterEffect,
    /// How a turn saves its result.
    pub result_save: ResultSave,
    /// How many saves a turn makes: one per step, or one per event the executor emits.
    pub saves: Saves,
    /// What a message with an unknown taskId gets.
    pub unknown_task: UnknownTask,
    /// Requests for one task on one replica run one at a time.
    pub per_task_lock: bool,
    /// What a non-blocking follow-up to a working task gets.
    pub nonblocking_to_working: NonBlockingToWorking,
    /// What a non-blocking send answers with; unset: [`NonBlockingAnswer::Working`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonblocking_answer: Option<NonBlockingAnswer>,
    /// What a streaming send's first event is; unset: [`StreamStart::Snapshot`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_start: Option<StreamStart>,
    /// Where a turn's reply goes; unset: [`ReplyIn::History`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_in: Option<ReplyIn>,
    /// What contextId a message that names its task and no contextId joins; unset:
    /// [`TaskOnlyContext::Inherit`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_only_context: Option<TaskOnlyContext>,
    /// What a send gets that arrives while its task's turn runs here; unset:
    /// [`QueuedAnswer::Own`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_answer: Option<QueuedAnswer>,
    /// Whether a queued turn runs on a task the turn before it ended; unset:
    /// [`QueuedTerminal::Refuse`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_terminal: Option<QueuedTerminal>,
    /// JSON-RPC code when conflicts exhaust `conflict_reapply`.
    pub conflict_code: i32,
    /// When conflicts exhaust `conflict_reapply`, the best-effort FAILED write is made on the
    /// copy the last conflict proved stale, so it conflicts too and nothing is written: the
    /// task keeps the other writer's state although this turn's effect ran. Without it, the
    /// FAILED write is made on a fresh read and lands.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed_write_on_stale_copy: bool,
    /// A task left input-required this long (simulated ms) with no follow-up fails; 0: it
    /// waits forever. The timer lives in the replica that saved the turn.
    pub input_timeout_ms: u64,
    /// How the client puts the scripted turn in a user message; unset:
    /// [`TurnIn::DataPart`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_in: Option<TurnIn>,
    /// What artifact a turn leaves; unset: [`Artifacts::PerTurn`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Artifacts>,
    /// A user message whose messageId the task's history already holds is appended again;
    /// unset: false (the history holds each message once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appends_duplicates: Option<bool>,
    /// What a blocking follow-up to a task working on a resumed run gets; unset:
    /// [`ResumedFollowUp::Run`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_follow_up: Option<ResumedFollowUp>,
    /// After SIGTERM, how long (simulated ms) the server keeps sending a stream before it
    /// ends the body (a2a-python: sse-starlette's `shutdown_grace_period`, 0 by default);
    /// unset: the model does not say, and a run with a `drain` is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sse_grace_ms: Option<u64>,
    /// How often (simulated ms) the server looks whether SIGTERM came, counted from the
    /// first stream it served: a stream's grace period begins at the first look after
    /// SIGTERM (sse-starlette's shutdown watcher polls every 500 ms); unset: at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sse_exit_poll_ms: Option<u64>,
    /// A task parked on a replica (its last turn there left it input-required or
    /// auth-required, and the replica keeps it) is released from that replica's memory after
    /// this many simulated ms with no request and no subscriber for it there: a later request
    /// there reads the store, as on any other replica (a2a-sdk 1.3's opt-in
    /// `interrupted_task_timeout`); unset: it stays parked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parked_release_ms: Option<u64>,
    /// A blocking SendMessage is answered with the task after the turn's first event, and
    /// the consumer of its events is closed then: the run goes on (its effect happens), but
    /// nothing it emits later is saved, so the task never leaves `working`
    /// (a2aproject/a2a-java#351); unset: a blocking send consumes its turn to the end.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blocking_stops_consumer: bool,
    /// The executor runs as its own task beside the consumer that saves its events (a2a-sdk
    /// 1.x's ActiveTask: producer and consumer): when the consumer fails before the turn's
    /// effect (a save that conflicts past `conflict_reapply`, a store that does not answer),
    /// the client is answered with the error, but the executor goes on to its effect, and
    /// the events it emits after are dropped unsaved. Its think (the model call) begins as
    /// the request reaches it, while the consumer saves the user message and the working
    /// status (in the model, the effect still follows the working save: saves slower than
    /// the think delay it). A save whose re-read finds the task terminal cancels the
    /// executor, and one past its think has made its effect by then (the model makes it at
    /// the re-read). Unset: a failed save before the effect ends the turn there, with no
    /// effect, and the think begins once the working status is saved.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub executor_outlives_consumer: bool,
    /// With `executor_outlives_consumer`, the ActiveTask of a turn whose consumer failed on
    /// its TaskManager's context (`task_only_context = "generate"`) stays registered,
    /// finished, holding the FAILED copy the consumer saved, until the executor that runs on
    /// ends; then it is cleaned up. A cancel there meanwhile answers that copy as success,
    /// writes nothing and does not stop the executor; a message or subscription there is
    /// refused as for a terminal task (needs `cache_snapshot`). Unset: the ActiveTask is
    /// gone as its consumer ends, and a request there reads the store.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed_consumer_keeps_task: bool,
    /// A save before the turn's effect that conflicts, and whose re-read finds the task
    /// terminal (another replica canceled or completed it), answers the send with that
    /// terminal task: the consumer hands it to the request's subscription and cancels the
    /// executor (a2a-sdk 1.x `EventConsumer._process_event`); unset: the send is refused
    /// with `message_to_terminal_code`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub terminal_reread_answers_task: bool,
    /// A streaming turn stopped before its end (by a cancel, or a save's re-read that found
    /// the task terminal) sends the task it ends on as its stream's last event; unset: the
    /// stream ends with no final event.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stream_ends_with_terminal: bool,
    /// A task not terminal this long (simulated ms) after it was created fails, whatever
    /// messages came since: the timer is set per task when it starts and later messages do
    /// not extend it (Rasa's task timeout, 600 s by default). The timer lives in the replica
    /// that created the task; unset: no such timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_timeout_ms: Option<u64>,
    /// How many contexts one replica holds at once: a context is held while any of its
    /// tasks there is not terminal, so one waiting for input (or authorisation) keeps its
    /// slot; a first message of a new context beyond the cap is refused (Rasa's
    /// `max_contexts`); unset: no cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_contexts: Option<usize>,
}

/// Message deduplication knobs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DedupKnobs {
    /// Where dedup state lives.
    pub scope: DedupScope,
    /// How long a completed message is remembered, in simulated ms.
    pub ttl_ms: u64,
    /// How long an in-flight claim holds before another replica may take it over (shared
    /// scope only), in simulated ms.
    pub lease_ms: u64,
}

/// Takeover of tasks whose runner died.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecoveryKnobs {
    /// How often each replica sweeps the store for abandoned tasks, in simulated ms; 0: never.
    pub sweep_ms: u64,
    /// How long a working task's runner holds it before a sweep may take it over.
    pub runner_lease_ms: u64,
}

/// Business-effect knobs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerKnobs {
    /// Whether the executor passes an idempotency key (contextId + messageId) to the ledger.
    pub idempotency_key: bool,
}

/// Whether a replica checks a Bearer token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BearerRule {
    /// Open: no token is read; every caller is anonymous.
    Off,
    /// A token from the expected issuer for the agent's audience, or HTTP 401.
    Required,
}

/// Whose tasks a caller may touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OwnerScope {
    /// The store has no owner field: any caller reads, cancels, follows and configures any
    /// task whose id it knows (A2A-BEHAVIOURS.md §6.14).
    None,
    /// A task belongs to the verified token's subject (anonymous callers share one owner);
    /// another caller is told the task does not exist (`-32001`).
    TokenSubject,
}

/// What resumes a task the agent put in `auth-required` (A2A-BEHAVIOURS.md §1: an
/// interrupted state; the Cognigy seed: a message saying "yes" is not a credential).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuthResume {
    /// Any message to the task: the agent takes the client's answer as the authorisation
    /// and runs the action it paused, as it would after input-required.
    AnyMessage,
    /// Only an out-of-band grant for the task ([`crate::auth::Grants`]; the owner's, when
    /// tasks are scoped to owners). A message without one leaves the task auth-required.
    Grant,
}

/// Server-side authentication and authorisation knobs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthKnobs {
    /// Bearer token check on JSON-RPC calls.
    pub bearer: BearerRule,
    /// Bearer token check on the agent card as well.
    pub card_bearer: bool,
    /// Whose tasks a caller may touch.
    pub owner: OwnerScope,
    /// What resumes an `auth-required` task. Optional, so that profiles written before it
    /// keep loading: absent means `any-message` (see [`AuthKnobs::resume`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_required_resume: Option<AuthResume>,
}

impl AuthKnobs {
    /// What resumes an `auth-required` task: the knob, or `any-message` when a profile
    /// written before it leaves it out (its agent was never asked for authorisation).
    pub fn resume(&self) -> AuthResume {
        self.auth_required_resume.unwrap_or(AuthResume::AnyMessage)
    }
}

/// How long a client keeps an agent card before it fetches it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CardCache {
    /// For the client object's lifetime: fetched once, never again (Mastra's `A2AAgent`).
    Lifetime,
    /// For a fixed time, whatever the server says (Cognigy: 10 minutes).
    Ttl,
    /// As HTTP says: `Cache-Control: max-age`, then a conditional GET with the `ETag`.
    Http,
}

/// What a client checks of a card's signatures when it fetches one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CardVerify {
    /// Nothing: any card is accepted.
    None,
    /// Signatures, when there are any: an unsigned card is accepted (Mastra's JS client
    /// `verifyAgentCardSignatureIfPresent`).
    IfPresent,
    /// A signature from a trusted, unrevoked key is required.
    Required,
}

/// The client's agent-card bootstrap (issue 10; A2A-BEHAVIOURS.md §3 client, §5, §6.7).
/// Used only in runs that simulate the card (a scenario with a `[card]` table or `card`
/// steps, an experiment with `card-*` faults).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardKnobs {
    /// How long a fetched card is used.
    pub cache: CardCache,
    /// The fixed lifetime of a cached card (`cache = "ttl"`), simulated ms.
    pub ttl_ms: u64,
    /// Signature checks on a real fetch (a cache hit checks nothing).
    pub verify: CardVerify,
    /// The execution URL a card names must be on an origin the caller allows (the card's
    /// own origin, which is its credential's audience); otherwise the card is refused.
    pub pin_origins: bool,
    /// The card fetch carries the caller's credential (Cognigy's client node: "Use
    /// Authentication for Agent Discovery", off by default). Calls carry it either way.
    /// Optional, so that `[card]` groups written before it keep loading: absent means
    /// `true` (see [`CardKnobs::fetch_with_credential`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovery_credential: Option<bool>,
}

impl CardKnobs {
    /// Whether the card fetch carries the caller's credential: the knob, or `true` (the
    /// behaviour before the knob existed) when a profile leaves it out.
    pub fn fetch_with_credential(&self) -> bool {
        self.discovery_credential.unwrap_or(true)
    }
}

/// One replica behaviour model.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    pub description: String,
    pub store: StoreKnobs,
    pub handler: HandlerKnobs,
    pub cancel: CancelKnobs,
    pub subscribe: SubscribeKnobs,
    pub dedup: DedupKnobs,
    pub recovery: RecoveryKnobs,
    pub push: PushKnobs,
    pub ledger: LedgerKnobs,
    pub auth: AuthKnobs,
    /// The client's card bootstrap. Optional, so that profiles written before it keep
    /// loading; a run that simulates the card refuses a model without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<CardKnobs>,
    /// The JSON-RPC layer's details (error data, the version check). Optional: absent
    /// keeps the answers of profiles written before it ([`WireKnobs`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire: Option<WireKnobs>,
    /// Knob path (`store.placement`) → where the behaviour comes from.
    pub sources: BTreeMap<String, String>,
    /// How `a2a-chaos live` and `fidelity` run this model against the real implementation,
    /// and the known disagreements between the two. Not a behaviour knob: it changes no
    /// simulated run, and it is left out of the profile's serialisation (the fingerprint of
    /// a sweep's configuration).
    #[serde(default, skip_serializing)]
    pub fidelity: Option<FidelityKnobs>,
}

/// A profile's `[fidelity]` table: the real system it models and where they disagree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FidelityKnobs {
    /// The test peer under `tests/peers/` (`a2a-python` or `mastra`): the preset `live`
    /// and `fidelity` start when no `--peer` is given.
    pub peer: String,
    /// The SDK version the peer runs (`1.3.0`; for `mastra`, `@mastra/server`'s).
    pub sdk: String,
    /// The peer's task store: `plain`, `versioned` or `memory`.
    pub store: String,
    /// Known disagreements: `"scenario-name/invariant"` → why the simulated and the real
    /// verdicts differ. `a2a-chaos fidelity` fails on any disagreement not listed here.
    #[serde(default)]
    pub notes: BTreeMap<String, String>,
    /// Extra arguments the preset's replicas start with (`["--interrupted-task-timeout-s",
    /// "1"]`: the configuration a test model describes); not used with `--peer COMMAND` or
    /// another preset.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
}

/// The fields of [`Profile`] that are not knob groups.
const NOT_KNOBS: &[&str] = &["name", "description", "sources", "fidelity"];

impl Profile {
    /// The `[wire]` knobs, or their defaults when the profile has no such group.
    pub fn wire(&self) -> WireKnobs {
        self.wire.unwrap_or_default()
    }

    /// Refuses a run that drains a replica (a `drain` fault or step) on this model when it
    /// does not say what its streams do after SIGTERM (`handler.sse_grace_ms`).
    pub fn check_drain(&self, origin: &str) -> Result<(), InputError> {
        if self.handler.sse_grace_ms.is_some() {
            return Ok(());
        }
        Err(InputError::new(
            origin,
            format!(
                "model `{}` does not say how long its streams last after SIGTERM (handler.sse_grace_ms), which a run with a drain needs",
                self.name
            ),
        ))
    }

    /// The knob paths this profile sets (`store.placement`, `handler.saves`, ...), read from
    /// its own fields: every field of every knob group it has, an optional knob only when it
    /// is set. This is what `[sources]` must cite, exactly; so adding a field to a knob
    /// group adds the knob, with nothing else to list.
    pub fn knobs(&self) -> Vec<String> {
        let value = serde_json::to_value(self).expect("a profile serialises");
        let mut out = Vec::new();
        for (group, fields) in value.as_object().into_iter().flatten() {
            if NOT_KNOBS.contains(&group.as_str()) {
                continue;
            }
            for (field, v) in fields.as_object().into_iter().flatten() {
                if !v.is_null() {
                    out.push(format!("{group}.{field}"));
                }
            }
        }
        out
    }

    /// Parses and validates a profile; `origin` names the file in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Profile, InputError> {
        let profile: Profile =
            toml::from_str(text).map_err(|e| InputError::toml(origin, text, &e))?;
        // A model's name becomes part of file names (timelines, found scenarios).
        crate::names::check("name", &profile.name)
            .map_err(|m| InputError::new(origin, m.to_string()))?;
        let knobs = profile.knobs();
        for knob in &knobs {
            match profile.sources.get(knob) {
                Some(s) if !s.trim().is_empty() => {}
                _ => {
                    return Err(InputError::new(
                        origin,
                        format!(
                        "knob `{knob}` has no source: add `\"{knob}\" = \"...\"` under [sources]"
                    ),
                    ))
                }
            }
        }
        if profile.subscribe.keeps_task && !profile.handler.cache_snapshot {
            return Err(InputError::new(
                origin,
                "subscribe.keeps_task needs handler.cache_snapshot: without a cached snapshot there is nothing for a subscription to leave behind",
            ));
        }
        if profile.cancel.keeps_task && !profile.handler.cache_snapshot {
            return Err(InputError::new(
                origin,
                "cancel.keeps_task needs handler.cache_snapshot: without a cached snapshot there is nothing for a cancel to leave behind",
            ));
        }
        if profile.subscribe.tap_queue.is_some() && profile.subscribe.stalled_tap.is_none() {
            return Err(InputError::new(
                origin,
                "subscribe.tap_queue needs subscribe.stalled_tap: the bound matters only to a tap whose reader stalls",
            ));
        }
        if profile.push.dispatch_as_anonymous && profile.push.shared_configs {
            return Err(InputError::new(
                origin,
                "push.dispatch_as_anonymous is modelled for per-pod configs only: set push.shared_configs = false",
            ));
        }
        if profile.handler.failed_consumer_keeps_task
            && !(profile.handler.executor_outlives_consumer && profile.handler.cache_snapshot)
        {
            return Err(InputError::new(
                origin,
                "handler.failed_consumer_keeps_task needs handler.executor_outlives_consumer and handler.cache_snapshot: the ActiveTask is kept for the executor that runs on, holding its cached copy",
            ));
        }
        if profile.handler.executor_outlives_consumer && profile.cancel.fence_effects {
            return Err(InputError::new(
                origin,
                "handler.executor_outlives_consumer contradicts cancel.fence_effects: a fenced effect waits for a save, which a failed consumer never makes",
            ));
        }
        if let Some(extra) = profile.sources.keys().find(|k| !knobs.contains(k)) {
            return Err(InputError::new(
                origin,
                format!("[sources] names `{extra}`, which is not a knob"),
            ));
        }
        Ok(profile)
    }

    /// A built-in profile by name, or a profile file when `name` ends in `.toml`. A file may
    /// not take a built-in model's name unless it is that model's own file, unchanged: runs,
    /// results and reproduce commands name models, and one name must mean one model.
    pub fn load(name: &str) -> Result<Profile, InputError> {
        if name.ends_with(".toml") {
            let text = crate::input::read_text(Path::new(name), crate::input::FileKind::Model)?;
            let profile = Profile::parse(&text, name)?;
            if let Some((_, builtin)) = BUILTIN.iter().find(|(n, _)| *n == profile.name) {
                if text != *builtin {
                    return Err(InputError::new(
                        name,
                        format!(
                            "name = `{}` is a built-in model's name; give the profile a name of its own",
                            profile.name
                        ),
                    ));
                }
            }
            return Ok(profile);
        }
        match BUILTIN.iter().find(|(n, _)| *n == name) {
            Some((n, text)) => Profile::parse(text, &format!("models/{n}.toml")),
            None => Err(InputError::new(
                "model",
                format!(
                    "unknown model `{name}`; known: {} (or a path ending in .toml)",
                    names().join(", ")
                ),
            )),
        }
    }
}

/// Names of the built-in profiles.
pub fn names() -> Vec<&'static str> {
    BUILTIN.iter().map(|(n, _)| *n).collect()
}

#[cfg(test)]
mod tests;
