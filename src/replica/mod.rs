//! One A2A replica: JSON-RPC 1.0 over HTTP/1.1 and a scripted, deterministic agent.
//!
//! The server speaks the A2A 1.0 JSON-RPC binding on `POST /` (SendMessage, blocking and
//! `returnImmediately`; SendStreamingMessage and SubscribeToTask as server-sent events;
//! GetTask; CancelTask; CreateTaskPushNotificationConfig) and serves its card at
//! `/.well-known/agent-card.json`. Wire types are the official `a2a-lf` ones.
//!
//! The agent is a script. Turn `n` of a conversation:
//! 1. resolves the task (a new one for turn 1, the message's `taskId` after that),
//! 2. appends the user message and saves the task as working,
//! 3. thinks (its model call: simulated time drawn from the seed),
//! 4. performs one business effect on the ledger over the network (its tool call),
//! 5. composes its reply, writes artifact `turn-n`, and saves the task as input-required,
//!    or completed on the conversation's last turn.
//!
//! A turn whose message asks for an action that needs authorisation ([`NEEDS_AUTH_KEY`])
//! stops after step 3: the task is saved `auth-required` with no effect. The next message to
//! it answers that request; whether the answer resumes the turn, or only an out-of-band
//! grant does, is the profile's `auth.auth_required_resume`.
//!
//! In runs that simulate the agent card, the replicas answer `SendStreamingMessage` and
//! `SubscribeToTask` with `-32004` UnsupportedOperation once the publisher's latest card
//! says the agent does not stream.
//!
//! Every step takes simulated time, so a fault can land between the effect and the save.
//! How each step treats the store (snapshot cache, CAS, conflict re-application, dedup,
//! idempotency keys) is chosen by the replica's [`Profile`]. With `handler.saves =
//! "per-event"` (a2a-python) the two saves become four, one per event: the user message,
//! working, the artifact and the final status, each re-applied on its own after a conflict;
//! when the artifact's conflict finds the task terminal, the already queued final status is
//! still saved on the terminal copy, as a2a-python's event consumer does.
//!
//! # Where things live
//!
//! The folder follows the profile's knob groups; each file is one more `impl Replica`:
//! - this file: its [`Wiring`] and [`Timing`], [`TurnInfo`], the ports and headers, `serve`
//!   and `handle` (the HTTP entry), and the small helpers every part uses (reply ids, trace
//!   notes, task markers);
//! - `state`: [`Replica`] and its state grouped by concern (links, ids, per-task memory
//!   with the ActiveTask of each task, push configs, fault hooks), the per-task lock of
//!   `handler.per_task_lock`;
//! - `decide`: what the handlers decide, as data: pure functions from the knobs and what a
//!   handler read to what it does next (send, save, effect, timer, reply), which the
//!   handlers carry out in order; unit-tested with no network;
//! - `rpc`: JSON-RPC dispatch of the A2A methods, the `A2A-Version` check, error and result
//!   responses, response headers, the agent card (built by [`crate::protocol::agent_card`]) and server-sent events;
//! - `auth`: `[auth]`: bearer tokens, owner scoping, and the `auth-required` pause and
//!   its resumption ([`NEEDS_AUTH_KEY`]);
//! - `save`: reads and saves through the store (`[store]`, and the `[handler]` knobs that
//!   say how a save meets a conflict);
//! - `turn`: SendMessage and SendStreamingMessage: dedup claims (`[dedup]`), resolving the
//!   task, the working save, and the scripted turn (think, fence, effect, compose, result);
//! - `cancel`: CancelTask (`[cancel]`), and what a turn stopped by a cancel answers;
//! - `subscribe`: SubscribeToTask (`[subscribe]`) and its stream events;
//! - `push`: push-config registration, target checks, delivery and the outbox (`[push]`);
//! - `recovery`: the takeover sweeper and orphan retirement (`[recovery]`), and input-wait
//!   expiry (`handler.input_timeout_ms`);
//! - `parked`: the idle release of a parked task (`handler.parked_release_ms`);
//! - `timeout`: a new task's admission: the context cap (`handler.max_contexts`) and the
//!   per-task timeout armed when the task starts (`handler.task_timeout_ms`);
//! - `drain`: graceful shutdown after SIGTERM (a `drain` fault): refused connections, streams
//!   cut after `handler.sse_grace_ms`, the exit once no connection is left.

use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use a2a::{Message, Part, PartContent, Task, TaskState, TaskStatus};
use http::{Response, StatusCode};
use serde_json::{json, Value};

use crate::buggify::SharedChaos;
use crate::ground::push::SharedPush;
use crate::model::{Profile, ReplyIn, TaskOnlyContext};
use crate::net::{self, BoxBody};
use crate::store::{SharedState, StoreState, TaskStore};
use crate::trace::{Event, Tone, Trace};

pub use drain::DrainSignal;

mod agent;
mod artifact;
mod auth;
mod busy;
mod cancel;
mod consumer;
mod decide;
mod drain;
mod follow_up;
mod list;
mod parked;
mod push;
mod push_config;
mod queue;
mod recovery;
mod rpc;
mod save;
mod shape;
mod state;
mod subscribe;
mod tap;
mod timeout;
mod turn;
mod wire03;

pub use crate::protocol::{agent_card, parse_http_url};
pub use auth::{ask_for_authorised_action, needs_auth, Caller, NEEDS_AUTH_KEY};
pub use rpc::Refusal;
pub use shape::{AgentShape, EFFECT_KEY, MAX_PROGRESS, PROGRESS_KEY};
pub use state::{Replica, Seeds};

use state::{ActiveTask, TaskLock};

use rpc::rpc;

pub use crate::protocol::{REPLICA_HEADER, REPLICA_PORT as PORT};

/// Simulated-time settings shared by every replica of a run.
#[derive(Debug, Clone)]
pub struct Timing {
    /// How long the agent thinks (its model call) before the effect, drawn uniformly from
    /// this range (ms).
    pub think_ms: (u64, u64),
    /// How long it takes to compose its reply after the effect, before the save (ms).
    pub compose_ms: (u64, u64),
    /// Timeout of one call to the store.
    pub store_timeout: Duration,
    /// Timeout of one call to the ledger.
    pub ledger_timeout: Duration,
    /// Timeout of one push delivery.
    pub push_timeout: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            think_ms: (20, 60),
            compose_ms: (5, 15),
            store_timeout: Duration::from_millis(500),
            ledger_timeout: Duration::from_millis(500),
            push_timeout: Duration::from_millis(500),
        }
    }
}

/// What the scripted agent reads from a message: which turn of which conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnInfo {
    pub conversation: String,
    pub turn: u32,
    pub turns: u32,
}

impl TurnInfo {
    /// The data part a client puts in its message.
    pub fn to_part(&self) -> Part {
        Part::data(json!({
            "conversation": self.conversation,
            "turn": self.turn,
            "turns": self.turns,
        }))
    }

    /// Reads the turn from a message's first data part, else from a text part that is the
    /// turn as JSON (what a client sends a server that refuses data parts,
    /// [`crate::model::TurnIn::TextJson`]). `turn` and `turns` may be any JSON number with
    /// an integral value (`1`, `1.0`, `1e0`): JSON does not tell them apart, and
    /// protobuf-based clients (a2a-sdk's `Struct`) send every number as a double.
    pub fn from_message(message: &Message) -> Option<TurnInfo> {
        TurnInfo::scripted(message).map(|(turn, _)| turn)
    }

    /// The turn [`TurnInfo::from_message`] reads, with the object it read it from (where
    /// the rest of what the script asks of the turn rides: [`AgentShape`],
    /// [`NEEDS_AUTH_KEY`]).
    pub fn scripted(message: &Message) -> Option<(TurnInfo, Cow<'_, Value>)> {
        let data = message.parts.iter().find_map(|p| match &p.content {
            PartContent::Data(v) => Some((TurnInfo::from_data(v)?, Cow::Borrowed(v))),
            _ => None,
        });
        data.or_else(|| {
            message.parts.iter().find_map(|p| match &p.content {
                PartContent::Text(t) => {
                    let v = turn_in_text(t)?;
                    Some((TurnInfo::from_data(&v)?, Cow::Owned(v)))
                }
                _ => None,
            })
        })
    }

    /// Reads the turn from the scripted data part's object `{conversation, turn, turns}`
    /// (numbers as [`TurnInfo::from_message`] reads them).
    pub fn from_data(v: &Value) -> Option<TurnInfo> {
        Some(TurnInfo {
            conversation: v.get("conversation")?.as_str()?.to_string(),
            turn: integral(v.get("turn")?)?,
            turns: integral(v.get("turns")?)?,
        })
    }

    /// The turn a message without the data part is (plain text, as any A2A client sends):
    /// on a new task (`task` is `None`) turn 1 of a conversation of [`DEFAULT_TURNS`]; on an
    /// existing task its next turn, counting the distinct user messages already in the
    /// task's history other than this one. The conversation is named after the contextId
    /// (the message's, else the task's, else `context_id`). The same rule as the real
    /// peers' executors (`adapters/python/a2a_chaos_adapter.py` `turn_of`).
    pub fn for_plain(message: &Message, task: Option<&Task>, context_id: &str) -> TurnInfo {
        let conversation = message
            .context_id
            .clone()
            .or_else(|| task.map(|t| t.context_id.clone()))
            .unwrap_or_else(|| context_id.to_string());
        let earlier: std::collections::BTreeSet<&str> = task
            .and_then(|t| t.history.as_ref())
            .into_iter()
            .flatten()
            .filter(|m| m.role == a2a::Role::User && m.message_id != message.message_id)
            .map(|m| m.message_id.as_str())
            .collect();
        TurnInfo {
            conversation,
            turn: u32::try_from(earlier.len() + 1).unwrap_or(u32::MAX),
            turns: DEFAULT_TURNS,
        }
    }
}

/// How many turns a conversation of plain messages (no data part) has: the real peers'
/// default (`--turns`, `DEFAULT_TURNS` in `adapters/python/a2a_chaos_adapter.py`).
pub const DEFAULT_TURNS: u32 = 2;

/// A text part that is a turn as JSON (what a client sends a server that refuses data
/// parts, [`crate::model::TurnIn::TextJson`]): its object, else `None`.
pub(crate) fn turn_in_text(text: &str) -> Option<Value> {
    if !text.starts_with('{') {
        return None;
    }
    serde_json::from_str(text).ok()
}

/// A JSON number with an integral value that fits a `u32`: `1`, `1.0` and `1e0` alike.
fn integral(v: &Value) -> Option<u32> {
    if let Some(n) = v.as_u64() {
        return u32::try_from(n).ok();
    }
    let f = v.as_f64()?;
    (f.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&f)).then_some(f as u32)
}

/// What a replica process is connected to.
#[derive(Clone)]
pub struct Wiring {
    /// Its behaviour model.
    pub profile: Rc<Profile>,
    pub timing: Timing,
    /// Its task store (its own memory, or the `store` host).
    pub store: TaskStore,
    /// The run's resolver and push logs.
    pub push_world: SharedPush,
    pub trace: Trace,
    /// The run's fault points (BUGGIFY and kill points).
    pub chaos: SharedChaos,
    /// The agent card's publisher, in runs that simulate the card: the replica serves the
    /// streaming methods only while the card says the agent streams.
    pub card: Option<crate::card::CardAuthority>,
    /// The identity provider's out-of-band grants (`auth.auth_required_resume = "grant"`).
    pub grants: crate::auth::Grants,
    /// Its slot's graceful-shutdown state, shared with the driver (`replica/drain.rs`).
    pub drain: Rc<DrainSignal>,
}

impl Replica {
    /// A new task for a message that names none: a server-chosen id, the message's context
    /// (or a new one), submitted, owned by the caller when the model scopes tasks to owners.
    fn fresh_task(&self, message: &Message, caller: &Caller) -> Task {
        let mut task = Task {
            id: self.new_id("task"),
            context_id: message
                .context_id
                .clone()
                .unwrap_or_else(|| self.new_id("ctx")),
            status: status(TaskState::Submitted),
            artifacts: None,
            history: None,
            metadata: None,
        };
        if self.profile.auth.owner != crate::model::OwnerScope::None {
            set_marker(&mut task, "owner", Some(serde_json::json!(caller.owner())));
        }
        task
    }

    /// Records a plain note in the replica's lane.
    fn record(&self, what: impl Into<String>) {
        self.links.trace.record(&self.host, Event::plain(what));
    }

    /// Records a note with a tone (a refusal, a duplicate, a failure's cause).
    fn record_as(&self, tone: Tone, what: impl Into<String>) {
        self.links.trace.record(&self.host, Event::note(tone, what));
    }

    /// Serves this replica until the host is crashed.
    pub async fn serve(self: Rc<Self>) -> turmoil::Result {
        if self.profile.recovery.sweep_ms > 0 {
            let me = self.clone();
            crate::engine::spawn(me.sweep());
        }
        if self.profile.push.outbox {
            let me = self.clone();
            crate::engine::spawn(me.deliver_outbox());
        }
        // SIGTERM closes the listener; each open connection is counted until it closes.
        let (stop, drain) = (self.faults.drain.clone(), self.faults.drain.clone());
        net::serve_until(
            PORT,
            move |req| {
                let me = self.clone();
                async move { Ok(me.handle(req).await) }
            },
            async move {
                stop.begun().await;
            },
            move || drain.connection(),
        )
        .await
    }

    async fn handle(
        self: Rc<Self>,
        req: http::Request<hyper::body::Incoming>,
    ) -> Response<BoxBody> {
        let is_card =
            req.method() == http::Method::GET && req.uri().path() == "/.well-known/agent-card.json";
        if !is_card && (req.method() != http::Method::POST || req.uri().path() != "/") {
            return self.with_headers(net::json_response(
                StatusCode::NOT_FOUND,
                &json!({"error": "not found"}),
            ));
        }
        let caller = match self.authenticate(&req, is_card) {
            Ok(caller) => caller,
            Err(why) => {
                self.record_as(
                    Tone::Bad,
                    format!("refused {} {}: {why}", req.method(), req.uri().path()),
                );
                return self.with_headers(self.unauthorized(&why.to_string()));
            }
        };
        if is_card {
            return self.with_headers(self.card_response(req.headers()));
        }
        let version = req
            .headers()
            .get("a2a-version")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .trim()
            .to_string();
        let body = match net::read_request_or_drain(req.into_body()).await {
            Ok(b) => b,
            Err(net::BodyError::TooLarge { limit }) => {
                return self.with_headers(self.too_large(limit))
            }
            Err(net::BodyError::Call(e)) => {
                return self.rpc_error(Value::Null, rpc(-32600, e.to_string()))
            }
        };
        let self2 = self.clone();
        let resp = self2.dispatch(&version, &body, &caller).await;
        self.with_headers(resp)
    }
}

/// The replica's own bookkeeping in a task's metadata (one key, so it serialises the same
/// way every time): the effect intent of a fenced turn.
const MARKER_KEY: &str = "a2aChaos";

/// `Task.metadata` is a `HashMap` in `a2a-lf`; the replica only ever puts this one key in it,
/// so its JSON (and the trace) is the same on every run.
fn set_marker(task: &mut Task, field: &str, value: Option<Value>) {
    let map = task
        .metadata
        .get_or_insert_with(std::collections::HashMap::new);
    let entry = map
        .entry(MARKER_KEY.to_string())
        .or_insert_with(|| Value::Object(Default::default()));
    if let Value::Object(obj) = entry {
        match value {
            Some(v) => {
                obj.insert(field.to_string(), v);
            }
            None => {
                obj.remove(field);
            }
        }
        if obj.is_empty() {
            map.remove(MARKER_KEY);
        }
    }
    if task.metadata.as_ref().is_some_and(|m| m.is_empty()) {
        task.metadata = None;
    }
}

impl Replica {
    /// The user message as its task keeps it: a message that names its task and no
    /// contextId gets a context of its own when the model generates one
    /// (`handler.task_only_context = "generate"`); then the task's `taskId` and `contextId`
    /// where the client left them out and the model fills them in (`wire.history_ids`).
    fn with_task_ids(&self, mut message: Message, task: &Task) -> Message {
        // Only a message that names its task: a new task's first message without a
        // contextId starts the task in the context the task is given.
        if message.context_id.is_none()
            && message.task_id.is_some()
            && self.profile.handler.task_only_context == Some(TaskOnlyContext::Generate)
        {
            message.context_id = Some(generated_context_id(&message.message_id));
        }
        if self.profile.wire().fills_history_ids() {
            message.task_id.get_or_insert_with(|| task.id.clone());
            message
                .context_id
                .get_or_insert_with(|| task.context_id.clone());
        }
        message
    }

    /// The contextId of the agent's reply to `message` on `task`: the request's, which is
    /// the task's unless the model generated one for a message that named only its task.
    fn reply_context(&self, message: &Message, task: &Task) -> String {
        match (&message.context_id, self.profile.handler.task_only_context) {
            (Some(own), Some(TaskOnlyContext::Generate)) => own.clone(),
            _ => task.context_id.clone(),
        }
    }
}

/// The context a model that generates one (`handler.task_only_context = "generate"`) gives
/// a message that names only its task: derived from the messageId, so every replica and
/// every re-run of the turn gives the same one (a2a-sdk 1.3.0 draws a uuid4).
fn generated_context_id(message_id: &str) -> String {
    format!("ctx-of-{message_id}")
}

fn status(state: TaskState) -> TaskStatus {
    TaskStatus {
        state,
        message: None,
        timestamp: None,
    }
}

/// Where the model keeps the turn's reply as the status's message
/// ([`ReplyIn::Status`]), moves that message into the history, unless it is `keep`'s (a turn
/// re-applied on its own copy): a2a-sdk 1.x `TaskManager` archives the previous status
/// message on every status event and on every user message, each run of a turn with its own
/// reply, so the archive appends without deduplicating.
fn archive_reply(task: &mut Task, reply_in: ReplyIn, keep: Option<&str>) {
    if reply_in != ReplyIn::Status {
        return;
    }
    if let Some(old) = task.status.message.take() {
        if keep == Some(old.message_id.as_str()) {
            task.status.message = Some(old);
        } else {
            task.history.get_or_insert_with(Vec::new).push(old);
        }
    }
}

/// Sets a task's state as a status event does (the reply it replaces archived).
fn change_state(task: &mut Task, state: TaskState, reply_in: ReplyIn) {
    archive_reply(task, reply_in, None);
    task.status = status(state);
}

/// Appends a message to a task's history unless a message with its id is already there.
fn push_message(task: &mut Task, message: &Message) {
    let history = task.history.get_or_insert_with(Vec::new);
    if !history.iter().any(|m| m.message_id == message.message_id) {
        history.push(message.clone());
    }
}

/// Appends a user message to a task's history, the reply before it archived first (a2a-sdk
/// `TaskManager.update_with_message`).
pub(super) fn push_user(task: &mut Task, message: &Message, reply_in: ReplyIn) {
    archive_reply(task, reply_in, None);
    push_message(task, message);
}

/// [`push_user`], or with `again` the message appended even when the history holds its id
/// (the model's `handler.appends_duplicates`). Re-applied on a fresh copy after a conflict,
/// it still appends once: the copy does not hold the save that lost.
pub(super) fn push_user_again(task: &mut Task, message: &Message, reply_in: ReplyIn, again: bool) {
    if again {
        archive_reply(task, reply_in, None);
        task.history
            .get_or_insert_with(Vec::new)
            .push(message.clone());
    } else {
        push_user(task, message, reply_in);
    }
}

/// Ends a turn in `state` with its reply, in the history or as the status's message.
pub(super) fn reply_with(task: &mut Task, reply: &Message, state: TaskState, reply_in: ReplyIn) {
    match reply_in {
        ReplyIn::History => {
            push_message(task, reply);
            task.status = status(state);
        }
        ReplyIn::Status => {
            // Another turn's reply, when this one is re-applied on a copy that turn saved.
            archive_reply(task, reply_in, Some(&reply.message_id));
            task.status = status(state);
            task.status.message = Some(reply.clone());
        }
        ReplyIn::Suspend => {
            let suspended = state == TaskState::InputRequired;
            task.status = status(state);
            if suspended {
                task.status.message = Some(reply.clone());
            }
        }
    }
}

/// A fresh per-pod memory store for a replica of a model with `placement = "memory"`.
pub fn memory_store() -> SharedState {
    Rc::new(RefCell::new(StoreState::default()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Client;
    use a2a::Role;

    #[test]
    fn turn_info_round_trips_through_a_message() {
        let info = TurnInfo {
            conversation: "c1".into(),
            turn: 2,
            turns: 4,
        };
        let msg = Message::new(Role::User, vec![Part::text("hi"), info.to_part()]);
        assert_eq!(TurnInfo::from_message(&msg), Some(info));
    }

    #[test]
    fn turn_numbers_may_be_any_integral_json_number() {
        let with = |data: Value| Message::new(Role::User, vec![Part::data(data)]);
        for (turn, turns) in [(json!(1), json!(2)), (json!(1.0), json!(2.0))] {
            let msg = with(json!({"conversation": "c", "turn": turn, "turns": turns}));
            let info = TurnInfo::from_message(&msg).expect("an integral turn");
            assert_eq!((info.turn, info.turns), (1, 2));
        }
        let parsed: Value =
            serde_json::from_str(r#"{"conversation":"c","turn":1e0,"turns":2}"#).expect("JSON");
        assert!(TurnInfo::from_message(&with(parsed)).is_some());
        for bad in [json!(1.5), json!("1"), json!(-1), json!(null)] {
            let msg = with(json!({"conversation": "c", "turn": bad, "turns": 2}));
            assert_eq!(TurnInfo::from_message(&msg), None, "{bad}");
        }
    }

    #[test]
    fn a_turn_sent_as_text_json_reads_as_the_data_part_does() {
        let info = TurnInfo {
            conversation: "c1".into(),
            turn: 2,
            turns: 3,
        };
        let turn = Client::turn_message(&info, "m1", "ctx-1", None);
        let mut wire = serde_json::to_value(&turn).expect("JSON");
        crate::client::turn_as_text(&mut wire);
        let text: Message = serde_json::from_value(wire).expect("a message");
        assert_eq!(text.parts.len(), 1);
        assert!(matches!(&text.parts[0].content, PartContent::Text(t) if t.starts_with('{')));
        assert_eq!(TurnInfo::from_message(&text), Some(info));
        // Text that is not the turn's JSON is a plain message.
        let plain = Message::new(Role::User, vec![Part::text("{not json")]);
        assert_eq!(TurnInfo::from_message(&plain), None);
    }

    #[test]
    fn a_plain_message_is_the_next_turn_of_its_task() {
        let mut first = Message::new(Role::User, vec![Part::text("hi")]);
        first.message_id = "m1".into();
        let new = TurnInfo::for_plain(&first, None, "ctx-1");
        assert_eq!(
            (new.conversation.as_str(), new.turn, new.turns),
            ("ctx-1", 1, 2)
        );
        let mut task = Task {
            id: "t".into(),
            context_id: "ctx-1".into(),
            status: status(TaskState::InputRequired),
            artifacts: None,
            history: Some(vec![first.clone()]),
            metadata: None,
        };
        let mut second = Message::new(Role::User, vec![Part::text("more")]);
        second.message_id = "m2".into();
        assert_eq!(TurnInfo::for_plain(&second, Some(&task), "").turn, 2);
        // A retry of a message already in the history is the same turn.
        task.history.as_mut().unwrap().push(second.clone());
        assert_eq!(TurnInfo::for_plain(&second, Some(&task), "").turn, 2);
    }

    #[test]
    fn urls_split_into_host_port_and_path() {
        assert_eq!(
            parse_http_url("http://webhook:7200/hook/t1"),
            Some(("webhook".into(), 7200, "/hook/t1".into()))
        );
        assert_eq!(parse_http_url("https://x/"), None);
    }
}
