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

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use a2a::{
    Artifact, Message, Part, PartContent, Role, SendMessageRequest, StreamResponse, Task,
    TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use bytes::Bytes;
use http::{Response, StatusCode};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::buggify::SharedChaos;
use crate::faults::{KillPoint, Point};
use crate::ground::ledger::{self, EffectRequest};
use crate::ground::push::{Egress, PushReport, SharedPush};
use crate::model::{
    AfterEffect, AuthResume, BearerRule, DedupScope, MismatchRule, NonBlockingToWorking,
    OwnerScope, Placement, Profile, PushOn, PushValidate, ResultSave, Saves, SecondCancel,
    StopRule, SubscribeSource, SubscribeUnknown, UnknownTask,
};
use crate::net::{self, BoxBody, ChannelBody};
use crate::store::{Claim, SaveError, SaveMode, SharedState, StoreState, TaskStore};
use crate::trace::event::failure_tone;
use crate::trace::{now_ms, Event, Tone, Trace};

/// Port every replica serves on.
pub const PORT: u16 = 9000;

/// How long an effect intent holds off a fenced cancel (the pod may have died mid-effect).
const EFFECT_LEASE_MS: u64 = 2500;

/// How often each replica looks for outbox entries to deliver.
const OUTBOX_POLL: Duration = Duration::from_millis(100);

/// How long a claimed outbox entry is held before another replica may try it.
const OUTBOX_LEASE_MS: u64 = 4000;

/// How long a fenced cancel waits for a pending effect before giving up.
const CANCEL_WAIT_MS: u64 = 5000;

/// How often a fenced cancel re-reads a task with a pending effect.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// Wait between tries of a store call that got no answer.
const TRANSIENT_BACKOFF: Duration = Duration::from_millis(50);

/// Response header naming the replica that answered (read by the client's history).
pub const REPLICA_HEADER: &str = "x-a2a-chaos-replica";

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

    /// Reads the turn from a message's first data part.
    pub fn from_message(message: &Message) -> Option<TurnInfo> {
        message.parts.iter().find_map(|p| match &p.content {
            PartContent::Data(v) => Some(TurnInfo {
                conversation: v.get("conversation")?.as_str()?.to_string(),
                turn: u32::try_from(v.get("turn")?.as_u64()?).ok()?,
                turns: u32::try_from(v.get("turns")?.as_u64()?).ok()?,
            }),
            _ => None,
        })
    }
}

/// The data-part key by which a turn asks for an action that needs the user's authorisation
/// (a payment, a booking): the agent answers it with `auth-required` until authorised.
pub const NEEDS_AUTH_KEY: &str = "needsAuthorization";

/// Whether a message's turn asks for an action that needs authorisation.
pub fn needs_auth(message: &Message) -> bool {
    message.parts.iter().any(|p| match &p.content {
        PartContent::Data(v) => v.get(NEEDS_AUTH_KEY).and_then(Value::as_bool) == Some(true),
        _ => false,
    })
}

/// Marks a turn's message as asking for an action that needs authorisation.
pub fn ask_for_authorised_action(message: &mut Message) {
    for p in &mut message.parts {
        if let PartContent::Data(Value::Object(map)) = &mut p.content {
            map.insert(NEEDS_AUTH_KEY.to_string(), Value::Bool(true));
            return;
        }
    }
}

/// An A2A error answer: a JSON-RPC error, or an HTTP status (Rasa's 409 for a duplicate in
/// flight).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Rpc(i32, String),
    Http(u16, String),
}

/// Who made a request, as the replica's `[auth]` knobs see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// A client: the verified token's subject, or `None` when the model reads no token
    /// (every such caller is the same anonymous owner).
    Client(Option<String>),
    /// The replica itself (a takeover re-running a turn): sees every task.
    Internal,
}

impl Caller {
    /// The owner a task this caller creates gets.
    fn owner(&self) -> &str {
        match self {
            Caller::Client(p) => p.as_deref().unwrap_or(""),
            Caller::Internal => "",
        }
    }
}

fn rpc(code: i32, message: impl Into<String>) -> Refusal {
    Refusal::Rpc(code, message.into())
}

/// Per-task state a replica keeps while it works on a task.
#[derive(Default)]
struct ActiveTask {
    /// Requests for one task on one replica run one at a time.
    lock: Arc<tokio::sync::Mutex<()>>,
    /// The snapshot kept between requests (profiles with `cache_snapshot`).
    cached: RefCell<Option<(Task, u64)>>,
    /// Set by a cancel; the executor stops at its next await.
    canceled: Cell<bool>,
    /// True while the executor runs a turn of this task here.
    running: Cell<bool>,
    /// True while that turn is a streaming run.
    streaming: Cell<bool>,
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
}

/// One replica process.
pub struct Replica {
    pub name: String,
    profile: Rc<Profile>,
    timing: Timing,
    store: TaskStore,
    /// Per-pod dedup table (profiles with `dedup.scope = "per-pod"`).
    local_dedup: SharedState,
    active: RefCell<BTreeMap<String, Rc<ActiveTask>>>,
    /// Per-pod push configs (models without `push.shared_configs`): task → URLs.
    push_configs: RefCell<BTreeMap<String, Vec<String>>>,
    /// The run's resolver and push logs.
    push_world: SharedPush,
    /// Versions of tasks this replica saved itself (the local registry a subscriber on this
    /// replica can follow when the model has no shared event stream).
    local_events: RefCell<BTreeMap<String, Vec<(u64, Task)>>>,
    rng: RefCell<ChaCha8Rng>,
    id_prefix: String,
    next_id: Cell<u64>,
    trace: Trace,
    chaos: SharedChaos,
    card: Option<crate::card::CardAuthority>,
    grants: crate::auth::Grants,
}

impl Replica {
    /// A replica process. `boot` counts its restarts, so ids never repeat across boots.
    pub fn new(index: usize, boot: u32, seed: u64, wiring: Wiring) -> Self {
        let Wiring {
            profile,
            timing,
            store,
            push_world,
            trace,
            chaos,
            card,
            grants,
        } = wiring;
        let stream =
            crate::trace::derive_seed(seed, "replica", ((index as u64) << 32) | u64::from(boot));
        Replica {
            name: format!("replica-{index}"),
            profile,
            timing,
            store,
            local_dedup: Rc::default(),
            active: RefCell::default(),
            push_configs: RefCell::default(),
            push_world,
            local_events: RefCell::default(),
            rng: RefCell::new(ChaCha8Rng::seed_from_u64(stream)),
            id_prefix: format!("{:04x}-r{index}b{boot}", seed & 0xffff),
            next_id: Cell::new(1),
            trace,
            chaos,
            card,
            grants,
        }
    }

    /// Whether the agent streams: what its card says (the publisher's latest revision, in
    /// runs that simulate the card), and always otherwise.
    fn streams(&self) -> bool {
        self.card.as_ref().is_none_or(|c| c.streams())
    }

    fn new_id(&self, kind: &str) -> String {
        let n = self.next_id.get();
        self.next_id.set(n + 1);
        format!("{kind}-{}-{n}", self.id_prefix)
    }

    fn active(&self, task_id: &str) -> Rc<ActiveTask> {
        self.active
            .borrow_mut()
            .entry(task_id.to_string())
            .or_default()
            .clone()
    }

    /// Takes the task's lock, when the model serialises requests per task; otherwise a
    /// guard of a fresh lock, which never waits.
    async fn lock(&self, active: &ActiveTask) -> tokio::sync::OwnedMutexGuard<()> {
        if self.profile.handler.per_task_lock {
            active.lock.clone().lock_owned().await
        } else {
            Arc::new(tokio::sync::Mutex::new(())).lock_owned().await
        }
    }

    /// Records a plain note in the replica's lane.
    fn record(&self, what: impl Into<String>) {
        self.trace.record(&self.name, Event::plain(what));
    }

    /// Records a note with a tone (a refusal, a duplicate, a failure's cause).
    fn record_as(&self, tone: Tone, what: impl Into<String>) {
        self.trace.record(&self.name, Event::note(tone, what));
    }

    /// Reads a task, trying again on no answer (`store.transient_retries`).
    async fn load(&self, task_id: &str) -> Result<Option<(Task, u64)>, String> {
        let mut tries = 0;
        loop {
            match self.store.get(task_id).await {
                Err(e) if tries < self.profile.store.transient_retries => {
                    tries += 1;
                    self.record_as(
                        failure_tone(&e),
                        format!("store read of {task_id} failed ({e}); retry {tries}"),
                    );
                    tokio::time::sleep(TRANSIENT_BACKOFF).await;
                }
                other => return other,
            }
        }
    }

    /// Saves a task, trying again on no answer (`store.transient_retries`); a conflict is
    /// returned at once.
    async fn persist(
        &self,
        task: &Task,
        mode: SaveMode,
        based_on: Option<u64>,
    ) -> Result<u64, SaveError> {
        let mut tries = 0;
        loop {
            // With an outbox, the push this state calls for is queued in the same write.
            let enqueue = self.profile.push.outbox && self.push_wanted(task);
            if let TaskStore::Local(state) = &self.store {
                // The shared store fires this point itself, on its host.
                crate::store::buggify_conflict(state, &self.chaos, &self.trace, &task.id, mode);
            }
            let result = self
                .store
                .save_and_enqueue(task, mode, based_on, &self.name, enqueue)
                .await;
            if let Ok(v) = &result {
                self.local_events
                    .borrow_mut()
                    .entry(task.id.clone())
                    .or_default()
                    .push((*v, task.clone()));
            }
            match result {
                Err(SaveError::Unavailable(e)) if tries < self.profile.store.transient_retries => {
                    tries += 1;
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

    /// The refusal a client gets when a turn fails after its effect may have run.
    fn after_effect(&self, refusal: Refusal) -> Refusal {
        match (self.profile.handler.after_effect_failure, refusal) {
            (AfterEffect::Unavailable, Refusal::Rpc(code, message)) => Refusal::Http(
                503,
                format!("outcome unknown, retry with the same messageId ({code}: {message})"),
            ),
            (_, r) => r,
        }
    }

    fn save_mode(&self, version: Option<u64>) -> SaveMode {
        if self.profile.store.versioned {
            SaveMode::Cas(version)
        } else {
            SaveMode::Overwrite
        }
    }

    /// Serves this replica until the host is crashed.
    pub async fn serve(self: Rc<Self>) -> turmoil::Result {
        if self.profile.recovery.sweep_ms > 0 {
            let me = self.clone();
            tokio::task::spawn_local(me.sweep());
        }
        if self.profile.push.outbox {
            let me = self.clone();
            tokio::task::spawn_local(me.deliver_outbox());
        }
        net::serve(PORT, move |req| {
            let me = self.clone();
            async move { Ok(me.handle(req).await) }
        })
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
                let mut resp = net::json_response(
                    StatusCode::UNAUTHORIZED,
                    &json!({"error": {"code": 401, "message": format!("unauthorized: {why}")}}),
                );
                resp.headers_mut().insert(
                    http::header::WWW_AUTHENTICATE,
                    http::HeaderValue::from_static("Bearer"),
                );
                return self.with_headers(resp);
            }
        };
        if is_card {
            return self.with_headers(net::json_response(StatusCode::OK, &self.card()));
        }
        let version = req
            .headers()
            .get("a2a-version")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .trim()
            .to_string();
        let body = match net::read_request(req.into_body()).await {
            Ok(b) => b,
            Err(e) => return self.rpc_error(Value::Null, rpc(-32600, e.to_string())),
        };
        let self2 = self.clone();
        let resp = self2.dispatch(&version, &body, &caller).await;
        self.with_headers(resp)
    }

    /// The `[auth]` check of a request: the caller, or why it gets a 401. A model that
    /// checks no token (or not on the card) reads none: its callers are anonymous.
    fn authenticate(
        &self,
        req: &http::Request<hyper::body::Incoming>,
        is_card: bool,
    ) -> Result<Caller, crate::auth::AuthError> {
        let auth = &self.profile.auth;
        if auth.bearer == BearerRule::Off || (is_card && !auth.card_bearer) {
            return Ok(Caller::Client(None));
        }
        let header = req
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        crate::auth::verify(header, crate::auth::ISSUER, crate::auth::AGENT_AUDIENCE)
            .map(|claims| Caller::Client(Some(claims.subject)))
    }

    /// Whether `caller` may touch `task` (`auth.owner`). A task of another owner is
    /// answered as not found, so its existence does not leak either.
    fn may_touch(&self, caller: &Caller, task: &Task) -> bool {
        match (self.profile.auth.owner, caller) {
            (OwnerScope::None, _) | (_, Caller::Internal) => true,
            (OwnerScope::TokenSubject, _) => owner_of(task) == caller.owner(),
        }
    }

    /// Loads a task for `caller`: `None` when it does not exist or is another owner's.
    async fn load_for(
        &self,
        caller: &Caller,
        task_id: &str,
    ) -> Result<Option<(Task, u64)>, String> {
        Ok(self.load(task_id).await?.filter(|(task, _)| {
            let ok = self.may_touch(caller, task);
            if !ok {
                self.record(format!("{task_id} belongs to another owner: not found"));
            }
            ok
        }))
    }

    fn with_headers(&self, mut resp: Response<BoxBody>) -> Response<BoxBody> {
        let h = resp.headers_mut();
        h.insert("a2a-version", http::HeaderValue::from_static("1.0"));
        h.insert(
            REPLICA_HEADER,
            http::HeaderValue::from_str(&self.name).expect("replica names are ASCII"),
        );
        resp
    }

    fn card(&self) -> Value {
        // On a real socket (`a2a-chaos serve`) the card names the address it answers on.
        let url = net::real().and_then(|n| n.addr(&self.name)).map_or_else(
            || "http://router:8080/".to_string(),
            |a| format!("http://{a}/"),
        );
        agent_card(
            &format!(
                "Scripted agent on {} (model {})",
                self.name, self.profile.name
            ),
            env!("CARGO_PKG_VERSION"),
            &url,
            self.streams(),
            self.profile.push.supported,
        )
    }

    fn rpc_error(&self, id: Value, refusal: Refusal) -> Response<BoxBody> {
        match refusal {
            Refusal::Rpc(code, message) => net::json_response(
                StatusCode::OK,
                &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
            ),
            Refusal::Http(status, message) => net::json_response(
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32600, "message": message}}),
            ),
        }
    }

    fn rpc_ok(&self, id: Value, result: Value) -> Response<BoxBody> {
        net::json_response(
            StatusCode::OK,
            &json!({"jsonrpc": "2.0", "id": id, "result": result}),
        )
    }

    async fn dispatch(
        self: Rc<Self>,
        version: &str,
        body: &Bytes,
        caller: &Caller,
    ) -> Response<BoxBody> {
        let request: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => return self.rpc_error(Value::Null, rpc(-32700, format!("parse error: {e}"))),
        };
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        if !matches!(id, Value::String(_) | Value::Number(_) | Value::Null) {
            return self.rpc_error(Value::Null, rpc(-32600, "invalid request: bad id"));
        }
        let (Some(method), Some("2.0")) = (
            request.get("method").and_then(Value::as_str),
            request.get("jsonrpc").and_then(Value::as_str),
        ) else {
            return self.rpc_error(
                id,
                rpc(-32600, "invalid request: jsonrpc 2.0 and method required"),
            );
        };
        if !matches!(id, Value::String(_) | Value::Number(_) | Value::Null) {
            return self.rpc_error(Value::Null, rpc(-32600, "invalid request: bad id"));
        }
        let params = request.get("params").cloned().unwrap_or(Value::Null);
        if version != "1.0" {
            // An absent or empty header means 0.3 (A2A-BEHAVIOURS.md §1); 1.0-only servers
            // refuse 1.0 methods without it (a2a-python 1.3, seen run).
            return self.rpc_error(
                id,
                rpc(
                    -32009,
                    format!("A2A-Version `{version}` is not supported; send 1.0"),
                ),
            );
        }
        if a2a::jsonrpc::methods::is_streaming(method) && !self.streams() {
            // The card turned streaming off: a client still holding the older card is
            // told so, and nothing runs (A2A-BEHAVIOURS.md §1: -32004 UnsupportedOperation).
            self.record_as(
                Tone::Bad,
                format!("refused {method}: the agent card says the agent does not stream"),
            );
            return self.rpc_error(
                id,
                rpc(
                    a2a::errors::error_code::UNSUPPORTED_OPERATION,
                    format!("{method} is not supported: the agent card says capabilities.streaming = false"),
                ),
            );
        }
        match method {
            "SendMessage" => match serde_json::from_value::<SendMessageRequest>(params) {
                Ok(p) => {
                    let blocking = !p
                        .configuration
                        .as_ref()
                        .and_then(|c| c.return_immediately)
                        .unwrap_or(false);
                    // The turn runs as its own task: a caller that hangs up (a client
                    // timeout, a dropped connection) does not stop the work, as it does
                    // not in a real server.
                    let work = tokio::task::spawn_local(self.clone().send(
                        p.message,
                        blocking,
                        caller.clone(),
                    ));
                    match work.await {
                        Ok(Ok(task)) => self.rpc_ok(id, json!({ "task": task })),
                        Ok(Err(r)) => self.rpc_error(id, r),
                        Err(e) => self.rpc_error(id, rpc(-32603, format!("turn aborted: {e}"))),
                    }
                }
                Err(e) => self.rpc_error(id, rpc(-32602, format!("invalid params: {e}"))),
            },
            "SendStreamingMessage" => match serde_json::from_value::<SendMessageRequest>(params) {
                Ok(p) => {
                    self.clone()
                        .send_streaming(id, p.message, caller.clone())
                        .await
                }
                Err(e) => self.rpc_error(id, rpc(-32602, format!("invalid params: {e}"))),
            },
            "GetTask" => match serde_json::from_value::<a2a::GetTaskRequest>(params) {
                Ok(p) => match self.load_for(caller, &p.id).await {
                    Ok(Some((task, _))) => {
                        self.rpc_ok(id, serde_json::to_value(task).expect("tasks serialise"))
                    }
                    Ok(None) => self.rpc_error(id, rpc(-32001, format!("task {} not found", p.id))),
                    Err(e) => self.rpc_error(id, rpc(-32603, e)),
                },
                Err(e) => self.rpc_error(id, rpc(-32602, format!("invalid params: {e}"))),
            },
            "CancelTask" => match serde_json::from_value::<a2a::CancelTaskRequest>(params) {
                Ok(p) => {
                    let (me, caller) = (self.clone(), caller.clone());
                    let work =
                        tokio::task::spawn_local(async move { me.cancel(&caller, &p.id).await });
                    match work.await {
                        Ok(Ok(task)) => {
                            self.rpc_ok(id, serde_json::to_value(task).expect("tasks serialise"))
                        }
                        Ok(Err(r)) => self.rpc_error(id, r),
                        Err(e) => self.rpc_error(id, rpc(-32603, format!("cancel aborted: {e}"))),
                    }
                }
                Err(e) => self.rpc_error(id, rpc(-32602, format!("invalid params: {e}"))),
            },
            "SubscribeToTask" => {
                match serde_json::from_value::<a2a::SubscribeToTaskRequest>(params) {
                    Ok(p) => self.clone().subscribe(id, p.id, caller).await,
                    Err(e) => self.rpc_error(id, rpc(-32602, format!("invalid params: {e}"))),
                }
            }
            "CreateTaskPushNotificationConfig" => {
                match serde_json::from_value::<a2a::TaskPushNotificationConfig>(params) {
                    Ok(cfg) if !cfg.task_id.is_empty() => {
                        match self.register_push(&cfg, caller).await {
                            Ok(()) => self
                                .rpc_ok(id, serde_json::to_value(cfg).expect("configs serialise")),
                            Err(r) => self.rpc_error(id, r),
                        }
                    }
                    Ok(_) => self.rpc_error(id, rpc(-32602, "invalid params: taskId required")),
                    Err(e) => self.rpc_error(id, rpc(-32602, format!("invalid params: {e}"))),
                }
            }
            other => self.rpc_error(id, rpc(-32601, format!("method `{other}` not found"))),
        }
    }

    // ---------------------------------------------------------------- send

    /// SendMessage: runs a whole turn (blocking) or returns after the working save.
    pub async fn send(
        self: Rc<Self>,
        message: Message,
        blocking: bool,
        caller: Caller,
    ) -> Result<Task, Refusal> {
        let turn = self.clone().begin(message, blocking, None, &caller).await?;
        match turn {
            Begun::Replay(task) => Ok(*task),
            Begun::Turn(turn) => {
                if blocking {
                    self.finish(turn, None).await
                } else {
                    let snapshot = turn.task.clone();
                    tokio::task::spawn_local(async move {
                        let _ = self.finish(turn, None).await;
                    });
                    Ok(snapshot)
                }
            }
        }
    }

    async fn send_streaming(
        self: Rc<Self>,
        id: Value,
        message: Message,
        caller: Caller,
    ) -> Response<BoxBody> {
        let (tx, rx) = mpsc::channel::<StreamResponse>(16);
        let begun = {
            let (me, tx) = (self.clone(), tx.clone());
            tokio::task::spawn_local(
                async move { me.begin(message, true, Some(&tx), &caller).await },
            )
        };
        let turn = match begun.await {
            Ok(Ok(t)) => t,
            Ok(Err(r)) => return self.rpc_error(id, r),
            Err(e) => return self.rpc_error(id, rpc(-32603, format!("turn aborted: {e}"))),
        };
        match turn {
            Begun::Replay(task) => {
                let _ = tx.send(StreamResponse::Task(*task)).await;
            }
            Begun::Turn(turn) => {
                self.chaos
                    .borrow_mut()
                    .reached(&self.name, KillPoint::Stream);
                let me = self.clone();
                let tx2 = tx.clone();
                tokio::task::spawn_local(async move {
                    let _ = me.finish(turn, Some(&tx2)).await;
                });
            }
        }
        drop(tx);
        sse_response(id, rx)
    }

    async fn begin(
        self: Rc<Self>,
        message: Message,
        blocking: bool,
        sink: Option<&mpsc::Sender<StreamResponse>>,
        caller: &Caller,
    ) -> Result<Begun, Refusal> {
        let Some(info) = TurnInfo::from_message(&message) else {
            return Err(rpc(
                -32602,
                "invalid params: the scripted agent needs a data part {conversation, turn, turns}",
            ));
        };
        // Deduplication by (contextId, messageId), where the model has it.
        let dedup_key = format!(
            "{}/{}",
            message.context_id.as_deref().unwrap_or(""),
            message.message_id
        );
        let dedup_store = match self.profile.dedup.scope {
            DedupScope::None => None,
            DedupScope::PerPod => Some(TaskStore::Local(self.local_dedup.clone())),
            DedupScope::Shared => Some(self.store.clone()),
        };
        if let Some(dedup) = &dedup_store {
            let lease = match self.profile.dedup.scope {
                DedupScope::Shared => self.profile.dedup.lease_ms,
                _ => u64::MAX / 4,
            };
            match dedup.claim(&dedup_key, lease).await {
                Ok(Claim::New) => {}
                Ok(Claim::InFlight) => {
                    self.record_as(
                        Tone::Warn,
                        format!(
                            "{}#{}: duplicate in flight, 409",
                            info.conversation, info.turn
                        ),
                    );
                    return Err(Refusal::Http(
                        409,
                        format!("message {} is in flight", message.message_id),
                    ));
                }
                Ok(Claim::Done { task_id }) => {
                    self.record_as(
                        Tone::Warn,
                        format!(
                            "{}#{}: duplicate of a done message, replay {task_id}",
                            info.conversation, info.turn
                        ),
                    );
                    return match self.load_for(caller, &task_id).await {
                        Ok(Some((task, _))) => Ok(Begun::Replay(Box::new(task))),
                        Ok(None) => Err(rpc(-32001, format!("task {task_id} not found"))),
                        Err(e) => Err(rpc(-32603, e)),
                    };
                }
                Err(e) => return Err(rpc(-32603, e)),
            }
        }
        let release = || release_claim(dedup_store.as_ref(), &dedup_key);

        // Resolve the task.
        let (task, version, active, guard, mismatch) = match &message.task_id {
            None => {
                let task = self.fresh_task(&message, caller);
                let active = self.active(&task.id);
                let guard = self.lock(&active).await;
                (task, None, active, guard, false)
            }
            Some(task_id) => {
                let active = self.active(task_id);
                let guard = self.lock(&active).await;
                let cached = if self.profile.handler.cache_snapshot {
                    active.cached.borrow().clone()
                } else {
                    None
                };
                let loaded = match cached {
                    Some(c) => Some(c),
                    None => match self.load(task_id).await {
                        Ok(found) => found,
                        Err(e) => {
                            release().await;
                            return Err(rpc(-32603, e));
                        }
                    },
                };
                // Another owner's task is not found (the cached snapshot included).
                let loaded = loaded.filter(|(task, _)| self.may_touch(caller, task));
                let Some((task, version)) = loaded else {
                    if self.profile.handler.unknown_task == UnknownTask::NewTask {
                        // The conversation goes on in a new task on this pod.
                        drop(guard);
                        let task = self.fresh_task(&message, caller);
                        self.record(format!(
                            "{}#{}: task {task_id} unknown here; new task {}",
                            info.conversation, info.turn, task.id
                        ));
                        let active = self.active(&task.id);
                        let guard = self.lock(&active).await;
                        return self
                            .clone()
                            .start(
                                message,
                                info,
                                task,
                                None,
                                active,
                                guard,
                                false,
                                sink,
                                dedup_store,
                                dedup_key,
                            )
                            .await;
                    }
                    release().await;
                    self.record(format!(
                        "{}#{}: task {task_id} not found",
                        info.conversation, info.turn
                    ));
                    return Err(rpc(-32001, format!("task {task_id} not found")));
                };
                let mismatch = message
                    .context_id
                    .as_ref()
                    .is_some_and(|c| *c != task.context_id);
                if mismatch
                    && self.profile.handler.context_mismatch == MismatchRule::RejectBeforeExecutor
                {
                    release().await;
                    return Err(rpc(-32602, "contextId does not match the task's"));
                }
                if task.status.state.is_terminal() {
                    release().await;
                    return Err(rpc(
                        self.profile.handler.message_to_terminal_code,
                        format!("task {task_id} is terminal"),
                    ));
                }
                if self.profile.recovery.sweep_ms > 0
                    && task.status.state == TaskState::Working
                    && *caller != Caller::Internal
                {
                    // Another turn of this task is in flight, or waits for the takeover
                    // because its runner died or lost its effect's answer: running this one
                    // over it would let it complete the task while the earlier, accepted
                    // turn is never processed. Busy: retry later. (The takeover itself is
                    // the replica's own caller and goes through.)
                    release().await;
                    self.record(format!(
                        "{}#{}: {task_id} has a turn in flight; busy, 409",
                        info.conversation, info.turn
                    ));
                    return Err(Refusal::Http(
                        409,
                        format!("task {task_id} has a turn in flight; retry"),
                    ));
                }
                if !blocking
                    && task.status.state == TaskState::Working
                    && self.profile.handler.nonblocking_to_working
                        == NonBlockingToWorking::ReturnCurrent
                {
                    release().await;
                    self.record(format!(
                        "{}#{}: {task_id} is working; non-blocking follow-up not processed",
                        info.conversation, info.turn
                    ));
                    return Ok(Begun::Replay(Box::new(task)));
                }
                (task, Some(version), active, guard, mismatch)
            }
        };

        self.start(
            message,
            info,
            task,
            version,
            active,
            guard,
            mismatch,
            sink,
            dedup_store,
            dedup_key,
        )
        .await
    }

    /// Appends the user message and saves the task as working: the turn has begun.
    #[allow(clippy::too_many_arguments)]
    async fn start(
        self: Rc<Self>,
        message: Message,
        info: TurnInfo,
        mut task: Task,
        version: Option<u64>,
        active: Rc<ActiveTask>,
        guard: tokio::sync::OwnedMutexGuard<()>,
        mismatch: bool,
        sink: Option<&mpsc::Sender<StreamResponse>>,
        dedup_store: Option<TaskStore>,
        dedup_key: String,
    ) -> Result<Begun, Refusal> {
        // A message to a task that waits for authorisation answers that request (the
        // request is a marker in the task, so a takeover of the answer knows it too).
        let answering_auth = auth_pending(&task);
        let mut version = version;
        let user_message = message.clone();
        if self.profile.handler.saves == Saves::PerEvent {
            // The user message is its own save, the state unchanged (on turn 1, the
            // submitted task holding it), before the working event.
            push_message(&mut task, &message);
            let saved = self
                .save_reapplying(&mut task, version, |fresh| {
                    push_message(fresh, &user_message)
                })
                .await;
            version = Some(
                self.saved_before_effect(saved, dedup_store.as_ref(), &dedup_key)
                    .await?,
            );
        }
        // Append the user message and save the task as working.
        let runner = (self.profile.recovery.sweep_ms > 0)
            .then(|| json!(now_ms() + self.profile.recovery.runner_lease_ms));
        push_message(&mut task, &message);
        task.status = status(TaskState::Working);
        if runner.is_some() {
            set_marker(&mut task, "runnerUntilMs", runner.clone());
        }
        let saved = self
            .save_reapplying(&mut task, version, |fresh| {
                push_message(fresh, &user_message);
                fresh.status = status(TaskState::Working);
                if runner.is_some() {
                    set_marker(fresh, "runnerUntilMs", runner.clone());
                }
            })
            .await;
        let version = self
            .saved_before_effect(saved, dedup_store.as_ref(), &dedup_key)
            .await?;
        self.record(format!(
            "{}#{}: working on {} v{version}",
            info.conversation, info.turn, task.id
        ));
        if self.profile.push.on == PushOn::EverySave {
            self.push(&task).await;
        }
        if let Some(tx) = sink {
            let _ = tx.send(StreamResponse::Task(task.clone())).await;
        }
        active.canceled.set(false);
        active.running.set(true);
        active.streaming.set(sink.is_some());
        Ok(Begun::Turn(Box::new(Turn {
            info,
            message,
            task,
            version,
            active,
            _guard: guard,
            mismatch,
            dedup: dedup_store.map(|d| (d, dedup_key)),
            answering_auth,
        })))
    }

    /// A new task for a message that names none: a server-chosen id, the message's context
    /// (or a new one), submitted.
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
        if self.profile.auth.owner != OwnerScope::None {
            set_marker(&mut task, "owner", Some(json!(caller.owner())));
        }
        task
    }

    /// The outcome of a save made before the turn's effect: its version, or, once the
    /// dedup claim is released, the refusal. A task found terminal is refused with the
    /// model's code; a failed save may have landed (its answer lost), and a takeover could
    /// still run the turn, so it is answered as [`Replica::after_effect`] says.
    async fn saved_before_effect(
        &self,
        saved: Result<Saved, Refusal>,
        dedup_store: Option<&TaskStore>,
        dedup_key: &str,
    ) -> Result<u64, Refusal> {
        let refusal = match saved {
            Ok(Saved::Version(v)) => return Ok(v),
            Ok(Saved::Terminal(t, _)) => rpc(
                self.profile.handler.message_to_terminal_code,
                format!("task {} is {:?}", t.id, t.status.state),
            ),
            Err(r) => self.after_effect(r),
        };
        release_claim(dedup_store, dedup_key).await;
        Err(refusal)
    }

    /// Saves `task` based on `version`; on a version conflict, re-reads and applies `reapply`
    /// to the fresh copy, up to the profile's `conflict_reapply` times. A task found terminal
    /// on the re-read is not written: `Saved::Terminal` carries it.
    async fn save_reapplying(
        &self,
        task: &mut Task,
        version: Option<u64>,
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
                    if attempts >= self.profile.handler.conflict_reapply {
                        // A second conflict: -32603 and a best-effort FAILED write.
                        if let Ok(Some((mut fresh, v))) = self.load(&task.id).await {
                            if !fresh.status.state.is_terminal() {
                                fresh.status = status(TaskState::Failed);
                                let _ =
                                    self.persist(&fresh, self.save_mode(Some(v)), Some(v)).await;
                            }
                        }
                        return Err(rpc(
                            self.profile.handler.conflict_code,
                            "concurrent task modification",
                        ));
                    }
                    attempts += 1;
                    match self.load(&task.id).await {
                        Ok(Some((mut fresh, v))) => {
                            if fresh.status.state.is_terminal() {
                                *task = fresh.clone();
                                return Ok(Saved::Terminal(Box::new(fresh), v));
                            }
                            reapply(&mut fresh);
                            *task = fresh;
                            version = Some(v);
                        }
                        Ok(None) => return Err(rpc(-32001, format!("task {} not found", task.id))),
                        Err(e) => return Err(rpc(-32603, e)),
                    }
                }
                Err(SaveError::NotCancelable) => return Err(rpc(-32002, "task not cancelable")),
                Err(SaveError::Unavailable(e)) => return Err(rpc(-32603, e)),
            }
        }
    }

    /// Saves a turn's result (`handler.result_save`): like every other save, or overwriting
    /// the whole task unless it was canceled meanwhile.
    async fn save_result(
        &self,
        task: &mut Task,
        version: u64,
        apply: impl Fn(&mut Task),
    ) -> Result<Saved, Refusal> {
        match self.profile.handler.result_save {
            ResultSave::AsStore => self.save_reapplying(task, Some(version), apply).await,
            ResultSave::OverwriteUnlessCanceled => match self.load(&task.id).await {
                Ok(Some((current, v))) if current.status.state == TaskState::Canceled => {
                    Ok(Saved::Terminal(Box::new(current), v))
                }
                _ => self
                    .persist(task, SaveMode::Overwrite, Some(version))
                    .await
                    .map(Saved::Version)
                    .map_err(|e| rpc(-32603, format!("{e:?}"))),
            },
        }
    }

    async fn finish(
        self: Rc<Self>,
        turn: Box<Turn>,
        sink: Option<&mpsc::Sender<StreamResponse>>,
    ) -> Result<Task, Refusal> {
        let Turn {
            info,
            message,
            mut task,
            version,
            active,
            _guard,
            mismatch,
            dedup,
            answering_auth,
        } = *turn;
        let result = self
            .run_turn(
                &info,
                &message,
                &mut task,
                (version, answering_auth),
                &active,
                sink,
            )
            .await;
        active.running.set(false);
        if let Some((store, key)) = dedup {
            let done = result.as_ref().ok().map(|t| t.id.clone());
            let _ = store.finish(&key, done, self.profile.dedup.ttl_ms).await;
        }
        let task = result?;
        if mismatch && self.profile.handler.context_mismatch == MismatchRule::RejectAfterExecutor {
            return Err(rpc(-32602, "contextId does not match the task's"));
        }
        Ok(task)
    }

    async fn run_turn(
        self: &Rc<Self>,
        info: &TurnInfo,
        message: &Message,
        task: &mut Task,
        (version, answering_auth): (u64, bool),
        active: &ActiveTask,
        sink: Option<&mpsc::Sender<StreamResponse>>,
    ) -> Result<Task, Refusal> {
        let mut version = version;
        let fenced = self.profile.cancel.fence_effects;

        // Think (the model call).
        tokio::time::sleep(self.draw(self.timing.think_ms)).await;
        if active.canceled.get() {
            return self.canceled_result(task).await;
        }

        // The action needs the user's authorisation (the turn asked for one, or the task
        // waits for one): without it, the task asks for it and nothing runs.
        if (needs_auth(message) || answering_auth) && !self.authorised(task, answering_auth) {
            return self
                .ask_for_auth(info, message, task, (version, active), sink)
                .await;
        }

        // Fence: record the effect intent with CAS, so a cancel that landed first stops the
        // effect, and a cancel that lands later waits for it.
        if fenced {
            let marker = json!({
                "turn": info.turn,
                "messageId": message.message_id,
                "untilMs": now_ms() + EFFECT_LEASE_MS,
            });
            set_marker(task, "effectPending", Some(marker.clone()));
            match self
                .save_reapplying(task, Some(version), |t| {
                    set_marker(t, "effectPending", Some(marker.clone()))
                })
                .await
            {
                Ok(Saved::Version(v)) => version = v,
                Ok(Saved::Terminal(t, _)) => {
                    self.record(format!(
                        "{}#{}: {} became {:?} before the effect; no effect",
                        info.conversation, info.turn, t.id, t.status.state
                    ));
                    return Ok(*t);
                }
                // The working save landed: a takeover may still run this turn.
                Err(r) => return Err(self.after_effect(r)),
            }
        }

        // The business effect (the tool call).
        let effect = EffectRequest {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            conversation: info.conversation.clone(),
            turn: info.turn,
            message_id: message.message_id.clone(),
            replica: self.name.clone(),
            key: self
                .profile
                .ledger
                .idempotency_key
                .then(|| format!("{}/{}", task.context_id, message.message_id)),
            sent_ms: now_ms(),
        };
        self.chaos
            .borrow_mut()
            .reached(&self.name, KillPoint::Effect);
        if let Err(e) = ledger::perform(&effect, self.timing.ledger_timeout).await {
            self.record_as(
                failure_tone(&e),
                format!(
                    "{}#{}: effect outcome unknown: {e}",
                    info.conversation, info.turn
                ),
            );
            if self.profile.handler.after_effect_failure == AfterEffect::RpcError {
                // The executor raised: the task is failed (best effort).
                task.status = status(TaskState::Failed);
                let _ = self
                    .persist(task, self.save_mode(Some(version)), Some(version))
                    .await;
            }
            return Err(self.after_effect(rpc(-32603, format!("business effect failed: {e}"))));
        }

        self.chaos
            .borrow_mut()
            .reached(&self.name, KillPoint::AfterEffect);

        // Compose the reply: a step between the effect and the save.
        tokio::time::sleep(self.draw(self.timing.compose_ms)).await;
        if self.chaos.borrow_mut().buggify(Point::DelayBeforeSave) {
            let ms = self.chaos.borrow_mut().draw_ms(200, 1500);
            self.record(format!(
                "buggify: {}#{} waits {ms} ms more before its save",
                info.conversation, info.turn
            ));
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        if active.canceled.get() && !fenced {
            // Stopped at its next await: the effect ran, its result is never saved.
            return self.canceled_result(task).await;
        }

        // Write the artifact and the reply; input-required until the last turn.
        let artifact = Artifact {
            artifact_id: format!("{}-turn-{}", task.id, info.turn),
            name: Some(format!("turn-{}", info.turn)),
            description: None,
            parts: vec![Part::text(format!("result of turn {}", info.turn))],
            metadata: None,
            extensions: None,
        };
        let reply = Message {
            message_id: format!("{}-reply", message.message_id),
            context_id: Some(task.context_id.clone()),
            task_id: Some(task.id.clone()),
            role: Role::Agent,
            parts: vec![Part::text(format!("done turn {}", info.turn))],
            metadata: None,
            extensions: None,
            reference_task_ids: None,
        };
        let next_state = if info.turn >= info.turns {
            TaskState::Completed
        } else {
            TaskState::InputRequired
        };
        // Idempotent: re-applied on a fresh copy after a conflict, it adds nothing twice.
        let apply = |t: &mut Task| {
            let artifacts = t.artifacts.get_or_insert_with(Vec::new);
            if !artifacts
                .iter()
                .any(|a| a.artifact_id == artifact.artifact_id)
            {
                artifacts.push(artifact.clone());
            }
            push_message(t, &reply);
            set_marker(t, "effectPending", None);
            set_marker(t, "runnerUntilMs", None);
            set_marker(t, "authPending", None);
            t.status = status(next_state.clone());
        };
        if self.profile.handler.saves == Saves::PerEvent {
            // The artifact is its own save, before the reply and the final status.
            let add_artifact = |t: &mut Task| {
                let artifacts = t.artifacts.get_or_insert_with(Vec::new);
                if !artifacts
                    .iter()
                    .any(|a| a.artifact_id == artifact.artifact_id)
                {
                    artifacts.push(artifact.clone());
                }
            };
            add_artifact(task);
            match self.save_result(task, version, add_artifact).await {
                Ok(Saved::Version(v)) => {
                    version = v;
                    self.record(format!(
                        "{}#{}: saved artifact turn-{} on {} v{version}",
                        info.conversation, info.turn, info.turn, task.id
                    ));
                    if self.profile.push.on == PushOn::EverySave {
                        self.push(task).await;
                    }
                }
                Ok(Saved::Terminal(t, v)) => {
                    // The consumer drops the artifact event and answers with the terminal
                    // task, but the executor has already queued its final status: that event
                    // is still applied to the terminal copy just re-read and saved on its
                    // version, so the CAS passes and the task is reopened (seen run on
                    // a2a-sdk 1.3.0: EventConsumer._process_event returns, and run() goes on
                    // to the next queued event).
                    self.record(format!(
                        "{}#{}: {} became {:?}; artifact not saved, the queued status is",
                        info.conversation, info.turn, t.id, t.status.state
                    ));
                    let mut fresh = (*t).clone();
                    push_message(&mut fresh, &reply);
                    fresh.status = status(next_state.clone());
                    let saved = self.persist(&fresh, self.save_mode(Some(v)), Some(v)).await;
                    if saved.is_ok() && self.profile.push.on == PushOn::EverySave {
                        self.push(&fresh).await;
                    }
                    return Ok(*t);
                }
                Err(r) => return Err(self.after_effect(r)),
            }
        }
        apply(task);
        let saved = self.save_result(task, version, apply).await;
        let version = match saved {
            Ok(Saved::Version(v)) => v,
            Ok(Saved::Terminal(t, _)) => {
                self.record(format!(
                    "{}#{}: {} became {:?}; result not saved",
                    info.conversation, info.turn, t.id, t.status.state
                ));
                return Ok(*t);
            }
            Err(r) => return Err(self.after_effect(r)),
        };
        self.record(format!(
            "{}#{}: saved {} v{version} as {:?}",
            info.conversation, info.turn, task.id, task.status.state
        ));
        if self.profile.handler.cache_snapshot {
            *active.cached.borrow_mut() = Some((task.clone(), version));
        }
        if let Some(tx) = sink {
            let _ = tx
                .send(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                    task_id: task.id.clone(),
                    context_id: task.context_id.clone(),
                    artifact: artifact.clone(),
                    append: Some(false),
                    last_chunk: Some(true),
                    metadata: None,
                }))
                .await;
            let _ = tx.send(status_update(task)).await;
        }
        self.push(task).await;
        if next_state == TaskState::InputRequired && self.profile.handler.input_timeout_ms > 0 {
            let (me, id) = (self.clone(), task.id.clone());
            let messages = task.history.as_ref().map_or(0, Vec::len);
            tokio::task::spawn_local(async move { me.expire_input(&id, messages).await });
        }
        Ok(task.clone())
    }

    /// Whether the paused action of `task` may run now (`auth.auth_required_resume`): with
    /// `any-message`, when this message answers the request (the agent takes the answer as
    /// the authorisation); with `grant`, only when the identity provider holds a grant for
    /// the task (the owner's, when tasks are scoped to owners), whatever the message says.
    fn authorised(&self, task: &Task, answering: bool) -> bool {
        match self.profile.auth.resume() {
            AuthResume::AnyMessage => answering,
            AuthResume::Grant => {
                let owner =
                    (self.profile.auth.owner == OwnerScope::TokenSubject).then(|| owner_of(task));
                self.grants.granted(&task.id, owner)
            }
        }
    }

    /// Pauses the turn: the task goes to `auth-required`, asking the user to authorise the
    /// action out of band; no effect, no artifact.
    async fn ask_for_auth(
        self: &Rc<Self>,
        info: &TurnInfo,
        message: &Message,
        task: &mut Task,
        (version, active): (u64, &ActiveTask),
        sink: Option<&mpsc::Sender<StreamResponse>>,
    ) -> Result<Task, Refusal> {
        let request = TaskStatus {
            state: TaskState::AuthRequired,
            message: Some(Message {
                message_id: format!("{}-auth-required", message.message_id),
                context_id: Some(task.context_id.clone()),
                task_id: Some(task.id.clone()),
                role: Role::Agent,
                parts: vec![Part::text(format!(
                    "turn {} needs your authorisation: grant it at the identity provider, then answer",
                    info.turn
                ))],
                metadata: None,
                extensions: None,
                reference_task_ids: None,
            }),
            timestamp: None,
        };
        let pending = json!({"turn": info.turn, "messageId": message.message_id});
        let apply = |t: &mut Task| {
            set_marker(t, "effectPending", None);
            set_marker(t, "runnerUntilMs", None);
            set_marker(t, "authPending", Some(pending.clone()));
            t.status = request.clone();
        };
        apply(task);
        let version = match self.save_reapplying(task, Some(version), apply).await {
            Ok(Saved::Version(v)) => v,
            Ok(Saved::Terminal(t, _)) => return Ok(*t),
            Err(r) => return Err(r),
        };
        self.record(format!(
            "{}#{}: {} v{version} needs authorisation: auth-required",
            info.conversation, info.turn, task.id
        ));
        if self.profile.handler.cache_snapshot {
            *active.cached.borrow_mut() = Some((task.clone(), version));
        }
        if let Some(tx) = sink {
            let _ = tx.send(status_update(task)).await;
        }
        self.push(task).await;
        Ok(task.clone())
    }

    /// Fails a task still waiting for input `handler.input_timeout_ms` after its turn saved
    /// it, if no message came since (Cognigy: an input wait fails after 5 minutes).
    async fn expire_input(self: &Rc<Self>, task_id: &str, messages: usize) {
        tokio::time::sleep(Duration::from_millis(self.profile.handler.input_timeout_ms)).await;
        let Ok(Some((mut task, version))) = self.load(task_id).await else {
            return;
        };
        if task.status.state != TaskState::InputRequired
            || task.history.as_ref().map_or(0, Vec::len) != messages
        {
            return;
        }
        task.status = TaskStatus {
            state: TaskState::Failed,
            message: Some(Message {
                message_id: format!("{task_id}-input-timeout-v{version}"),
                context_id: Some(task.context_id.clone()),
                task_id: Some(task_id.to_string()),
                role: Role::Agent,
                parts: vec![Part::text("no input came in time")],
                metadata: None,
                extensions: None,
                reference_task_ids: None,
            }),
            timestamp: None,
        };
        if let Ok(v) = self
            .persist(&task, self.save_mode(Some(version)), Some(version))
            .await
        {
            self.record(format!("{task_id} waited too long for input: failed v{v}"));
            self.push(&task).await;
        }
    }

    /// A duration drawn uniformly from `[lo, hi]` ms with this replica's generator.
    fn draw(&self, (lo, hi): (u64, u64)) -> Duration {
        Duration::from_millis(self.rng.borrow_mut().random_range(lo..=hi))
    }

    async fn canceled_result(&self, task: &Task) -> Result<Task, Refusal> {
        self.record(format!("executor for {} stopped by cancel", task.id));
        match self.load(&task.id).await {
            Ok(Some((t, _))) => Ok(t),
            _ => Ok(task.clone()),
        }
    }

    /// CreateTaskPushNotificationConfig: `-32003` when the model has no push; `-32001` for
    /// an unknown task; `-32602` when validation at registration refuses the URL.
    async fn register_push(
        &self,
        cfg: &a2a::TaskPushNotificationConfig,
        caller: &Caller,
    ) -> Result<(), Refusal> {
        let knobs = &self.profile.push;
        if !knobs.supported {
            return Err(rpc(-32003, "push notifications are not supported"));
        }
        match self.load_for(caller, &cfg.task_id).await {
            Ok(Some(_)) => {}
            Ok(None) => return Err(rpc(-32001, format!("task {} not found", cfg.task_id))),
            Err(e) => return Err(rpc(-32603, e)),
        }
        if matches!(
            knobs.validate,
            PushValidate::Registration | PushValidate::RegistrationAndSend
        ) {
            if let Err(why) = self.check_target(&cfg.url) {
                self.record_as(
                    Tone::Bad,
                    format!("push config for {} refused: {why}", cfg.task_id),
                );
                return Err(rpc(-32602, format!("push URL refused: {why}")));
            }
        }
        if knobs.shared_configs {
            self.store
                .add_push(&cfg.task_id, &cfg.url)
                .await
                .map_err(|e| rpc(-32603, e))?;
        } else {
            let mut configs = self.push_configs.borrow_mut();
            let urls = configs.entry(cfg.task_id.clone()).or_default();
            if !urls.contains(&cfg.url) {
                urls.push(cfg.url.clone());
            }
        }
        self.record(format!("push config for {} -> {}", cfg.task_id, cfg.url));
        Ok(())
    }

    /// Resolves a URL's host once and refuses private, loopback and link-local targets.
    fn check_target(&self, url: &str) -> Result<crate::ground::push::Address, String> {
        let (host, _, _) =
            crate::ground::push::parse_url(url).ok_or_else(|| format!("not an http URL: {url}"))?;
        let address = self
            .push_world
            .borrow_mut()
            .resolver
            .resolve(&host)
            .ok_or_else(|| format!("{host} does not resolve"))?;
        if address.private {
            return Err(format!("{host} resolves to private address {}", address.ip));
        }
        Ok(address)
    }

    /// Pushes `task`'s state, inline (awaited by the turn) or in the background, as the
    /// model does.
    async fn push(self: &Rc<Self>, task: &Task) {
        if self.profile.push.outbox {
            // Queued with the save that produced this state (see `persist`).
            return;
        }
        if self.profile.push.inline {
            self.push_now(task).await;
        } else {
            let (me, task) = (self.clone(), task.clone());
            tokio::task::spawn_local(async move { me.push_now(&task).await });
        }
    }

    /// Pushes `task`'s state to every URL registered for it, if the model pushes this state.
    fn push_wanted(&self, task: &Task) -> bool {
        let state = &task.status.state;
        let wanted = match self.profile.push.on {
            PushOn::EverySave => true,
            PushOn::TerminalOrInterrupted => {
                state.is_terminal()
                    || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
            }
        };
        wanted && self.profile.push.supported
    }

    /// Delivers what the outbox holds: claims unheld entries (a lease), delivers each once,
    /// and removes it when delivered or out of retries; a failed one is tried again, by any
    /// replica, when its lease runs out.
    async fn deliver_outbox(self: Rc<Self>) {
        loop {
            tokio::time::sleep(OUTBOX_POLL).await;
            let Ok(entries) = self.store.claim_outbox(OUTBOX_LEASE_MS).await else {
                continue;
            };
            // Each claimed entry is delivered on its own, so a slow receiver holds up
            // nobody else; the lease outlasts one attempt (the push timeout).
            for (id, entry) in entries {
                let me = self.clone();
                tokio::task::spawn_local(async move { me.deliver_entry(id, entry).await });
            }
        }
    }

    async fn deliver_entry(&self, id: u64, entry: crate::store::OutboxEntry) {
        let (delivered, outcome) = self.deliver(&entry.task, &entry.url, 0).await;
        let last = delivered
            || outcome.starts_with("refused")
            || entry.attempts > self.profile.push.retries;
        self.record_as(
            failure_tone(&outcome),
            format!(
                "outbox push {:?} of {} to {} (try {}): {outcome}",
                entry.task.status.state, entry.task.id, entry.url, entry.attempts
            ),
        );
        if delivered || self.profile.push.log_failures {
            self.push_world.borrow_mut().reports.push(PushReport {
                at_ms: now_ms(),
                replica: self.name.clone(),
                task_id: entry.task.id.clone(),
                state: entry.task.status.state.clone(),
                url: entry.url.clone(),
                outcome,
                delivered,
            });
        }
        if last {
            let _ = self.store.ack_outbox(id).await;
        }
    }

    async fn push_now(&self, task: &Task) {
        let state = &task.status.state;
        if !self.push_wanted(task) {
            return;
        }
        let urls = if self.profile.push.shared_configs {
            self.store.push_urls(&task.id).await.unwrap_or_default()
        } else {
            self.push_configs
                .borrow()
                .get(&task.id)
                .cloned()
                .unwrap_or_default()
        };
        for url in urls {
            let mut tries = 0;
            loop {
                let (delivered, outcome) = self.deliver(task, &url, 0).await;
                if delivered || self.profile.push.log_failures {
                    self.push_world.borrow_mut().reports.push(PushReport {
                        at_ms: now_ms(),
                        replica: self.name.clone(),
                        task_id: task.id.clone(),
                        state: state.clone(),
                        url: url.clone(),
                        outcome: outcome.clone(),
                        delivered,
                    });
                }
                self.record_as(
                    failure_tone(&outcome),
                    format!("push {:?} of {} to {url}: {outcome}", state, task.id),
                );
                if delivered || outcome.starts_with("refused") || tries >= self.profile.push.retries
                {
                    break;
                }
                tries += 1;
            }
        }
    }

    /// One delivery attempt (following redirects if the model does): (delivered, outcome).
    fn deliver<'a>(
        &'a self,
        task: &'a Task,
        url: &'a str,
        depth: u32,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = (bool, String)> + 'a>> {
        Box::pin(async move {
            let knobs = &self.profile.push;
            let Some((host, port, path)) = crate::ground::push::parse_url(url) else {
                return (false, format!("failed: not an http URL: {url}"));
            };
            let checked = if matches!(
                knobs.validate,
                PushValidate::Send | PushValidate::RegistrationAndSend
            ) {
                match self.check_target(url) {
                    Ok(a) => Some(a),
                    Err(why) => return (false, format!("refused: {why}")),
                }
            } else {
                None
            };
            // The address the connection goes to: the checked one when pinned, else a fresh
            // answer (the rebinding window).
            let address = match (checked, knobs.pin_dns) {
                (Some(a), true) => Some(a),
                _ => self.push_world.borrow_mut().resolver.resolve(&host),
            };
            let Some(address) = address else {
                return (false, format!("failed: {host} does not resolve"));
            };
            self.push_world.borrow_mut().egress.push(Egress {
                at_ms: now_ms(),
                replica: self.name.clone(),
                task_id: task.id.clone(),
                url: url.to_string(),
                address: address.clone(),
            });
            let Some(target) = address.host else {
                return (false, format!("failed: nothing answers at {}", address.ip));
            };
            let body = serde_json::to_vec(&json!({"statusUpdate": {
                "taskId": task.id, "contextId": task.context_id, "status": task.status
            }}))
            .expect("push bodies serialise");
            let timeout = Duration::from_millis(knobs.timeout_ms);
            let call = net::Call::post_json(target, port, &path, body, timeout);
            match net::send(&call).await {
                Ok(r) if r.status.is_success() => {
                    (true, format!("delivered ({})", r.status.as_u16()))
                }
                Ok(r) if r.status.is_redirection() && knobs.follow_redirects && depth < 5 => {
                    match r.headers.get("location").and_then(|v| v.to_str().ok()) {
                        Some(next) => {
                            let next = next.to_string();
                            self.deliver(task, &next, depth + 1).await
                        }
                        None => (
                            false,
                            format!("failed: HTTP {} without a location", r.status.as_u16()),
                        ),
                    }
                }
                Ok(r) => (false, format!("failed: HTTP {}", r.status.as_u16())),
                Err(e) => (false, format!("failed: {e}")),
            }
        })
    }

    /// Takes over abandoned tasks: a working task whose runner lease ran out has its last
    /// user message run again here (the message is in the task's history; the ledger key
    /// and the expired dedup lease make a second run safe). A task with no message to run is
    /// moved to input-required, asking the client to send it again.
    async fn sweep(self: Rc<Self>) {
        let every = Duration::from_millis(self.profile.recovery.sweep_ms);
        loop {
            tokio::time::sleep(every).await;
            let Ok(tasks) = self.store.abandoned().await else {
                continue;
            };
            for (mut task, version) in tasks {
                let last_user = task
                    .history
                    .iter()
                    .flatten()
                    .rev()
                    .find(|m| m.role == Role::User && TurnInfo::from_message(m).is_some())
                    .cloned();
                if let Some(mut message) = last_user {
                    self.record(format!(
                        "taking over abandoned {} v{version}: running {} again",
                        task.id, message.message_id
                    ));
                    message.task_id = Some(task.id.clone());
                    let me = self.clone();
                    let abandoned = task.id.clone();
                    tokio::task::spawn_local(async move {
                        if let Ok(done) = me.clone().send(message, true, Caller::Internal).await {
                            if done.id != abandoned {
                                // The message already completed as another task (a retry
                                // of a first turn created it): this one is an orphan.
                                me.retire(&abandoned, &done.id).await;
                            }
                        }
                    });
                    continue;
                }
                set_marker(&mut task, "runnerUntilMs", None);
                set_marker(&mut task, "effectPending", None);
                task.status = TaskStatus {
                    state: TaskState::InputRequired,
                    message: Some(Message {
                        message_id: format!("{}-interrupted-v{version}", task.id),
                        context_id: Some(task.context_id.clone()),
                        task_id: Some(task.id.clone()),
                        role: Role::Agent,
                        parts: vec![Part::text(
                            "interrupted: please send your last message again",
                        )],
                        metadata: None,
                        extensions: None,
                        reference_task_ids: None,
                    }),
                    timestamp: None,
                };
                if let Ok(v) = self
                    .store
                    .save(
                        &task,
                        SaveMode::Cas(Some(version)),
                        Some(version),
                        &self.name,
                    )
                    .await
                {
                    self.record(format!(
                        "took over abandoned {} v{v}: input-required",
                        task.id
                    ));
                }
            }
        }
    }

    /// Settles an orphan: a task whose only message completed as task `instead` (the
    /// first attempt's answer was lost and its retry created that one). It is marked failed,
    /// naming the task that holds the conversation, so nothing waits on it forever.
    async fn retire(&self, orphan: &str, instead: &str) {
        let Ok(Some((mut task, version))) = self.load(orphan).await else {
            return;
        };
        if task.status.state.is_terminal() {
            return;
        }
        set_marker(&mut task, "runnerUntilMs", None);
        set_marker(&mut task, "effectPending", None);
        task.status = TaskStatus {
            state: TaskState::Failed,
            message: Some(Message {
                message_id: format!("{orphan}-superseded-v{version}"),
                context_id: Some(task.context_id.clone()),
                task_id: Some(task.id.clone()),
                role: Role::Agent,
                parts: vec![Part::text(format!(
                    "superseded: this message completed as task {instead}"
                ))],
                metadata: None,
                extensions: None,
                reference_task_ids: None,
            }),
            timestamp: None,
        };
        if let Ok(v) = self
            .persist(&task, SaveMode::Cas(Some(version)), Some(version))
            .await
        {
            self.record(format!(
                "retired orphan {orphan} v{v}: superseded by {instead}"
            ));
        }
    }

    // ---------------------------------------------------------------- cancel

    /// CancelTask (A2A-BEHAVIOURS.md §2.2): unknown → -32001; terminal → -32002 (or the
    /// canceled task, when the model makes cancel idempotent); a local run is told to stop
    /// at its next await (as the model's stop rule allows); the store is written CANCELED.
    /// With `fence_effects`, the cancel waits while an effect is pending and writes with CAS.
    pub async fn cancel(self: &Rc<Self>, caller: &Caller, task_id: &str) -> Result<Task, Refusal> {
        let deadline = now_ms() + CANCEL_WAIT_MS;
        loop {
            let (task, version) = match self.load_for(caller, task_id).await {
                Ok(Some(found)) => found,
                Ok(None) => return Err(rpc(-32001, format!("task {task_id} not found"))),
                Err(e) => return Err(rpc(-32603, e)),
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
            if let Some(active) = self.active.borrow().get(task_id) {
                let stops = match self.profile.cancel.stops_executor {
                    StopRule::Always => true,
                    StopRule::StreamingOnly => active.streaming.get(),
                };
                if active.running.get() && stops {
                    active.canceled.set(true);
                }
            }
            let mut canceled = task.clone();
            canceled.status = status(TaskState::Canceled);
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
                    .persist(&canceled, SaveMode::Cas(Some(version)), Some(version))
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
                (Placement::Shared, true) => SaveMode::Cancel,
                (_, true) => SaveMode::Cas(Some(version)),
                (_, false) => SaveMode::Overwrite,
            };
            return match self.persist(&canceled, mode, Some(version)).await {
                Ok(v) => {
                    self.record(format!("canceled {task_id} v{v}"));
                    self.push(&canceled).await;
                    Ok(canceled)
                }
                Err(SaveError::Conflict { .. }) => match self.load(task_id).await {
                    Ok(Some((t, _))) if t.status.state == TaskState::Canceled => Ok(t),
                    _ => Err(rpc(
                        -32002,
                        format!("task {task_id} changed while canceling"),
                    )),
                },
                Err(SaveError::NotCancelable) => {
                    Err(rpc(-32002, format!("task {task_id} is not cancelable")))
                }
                Err(SaveError::Unavailable(e)) => Err(rpc(-32603, e)),
            };
        }
    }

    // ---------------------------------------------------------------- subscribe

    /// SubscribeToTask: a Task snapshot first, then each later version from the store's event
    /// log (polled), ending at a terminal or interrupted state.
    async fn subscribe(
        self: Rc<Self>,
        id: Value,
        task_id: String,
        caller: &Caller,
    ) -> Response<BoxBody> {
        let (task, version) = match self.load_for(caller, &task_id).await {
            Ok(Some(found)) => found,
            Ok(None) => {
                if self.profile.subscribe.unknown_task == SubscribeUnknown::EmptyStream {
                    self.record(format!("subscribe to unknown {task_id}: empty stream"));
                    let (_tx, rx) = mpsc::channel::<StreamResponse>(1);
                    return sse_response(id, rx);
                }
                return self.rpc_error(id, rpc(-32001, format!("task {task_id} not found")));
            }
            Err(e) => return self.rpc_error(id, rpc(-32603, e)),
        };
        if task.status.state.is_terminal() {
            return self.rpc_error(id, rpc(-32004, format!("task {task_id} is terminal")));
        }
        let (tx, rx) = mpsc::channel::<StreamResponse>(16);
        let me = self.clone();
        tokio::task::spawn_local(async move {
            let interrupted = matches!(
                task.status.state,
                TaskState::InputRequired | TaskState::AuthRequired
            );
            if tx.send(StreamResponse::Task(task.clone())).await.is_err() || interrupted {
                // An interrupted task has nothing more to say until the client answers.
                return;
            }
            me.chaos.borrow_mut().reached(&me.name, KillPoint::Stream);
            let mut seen = version;
            let mut last = task;
            let poll = Duration::from_millis(me.profile.subscribe.poll_ms.max(1));
            loop {
                tokio::time::sleep(poll).await;
                if me.chaos.borrow_mut().buggify(Point::SlowEventPoll) {
                    let ms = me.chaos.borrow_mut().draw_ms(1000, 3000);
                    {
                        let mut chaos = me.chaos.borrow_mut();
                        chaos.poll_slowed_until_ms = chaos.poll_slowed_until_ms.max(now_ms() + ms);
                    }
                    me.record(format!(
                        "buggify: event poll of {task_id} takes {ms} ms more"
                    ));
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                let events = match me.profile.subscribe.source {
                    SubscribeSource::StoreEvents => {
                        match me.store.events_after(&task_id, seen).await {
                            Ok(events) => events,
                            Err(_) => continue,
                        }
                    }
                    SubscribeSource::LocalOnly => me
                        .local_events
                        .borrow()
                        .get(&task_id)
                        .map(|evs| evs.iter().filter(|(v, _)| *v > seen).cloned().collect())
                        .unwrap_or_default(),
                };
                for (v, snapshot) in events {
                    seen = v;
                    for update in diff(&last, &snapshot) {
                        if tx.send(update).await.is_err() {
                            return;
                        }
                    }
                    let state = snapshot.status.state.clone();
                    last = snapshot;
                    if state.is_terminal()
                        || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
                    {
                        return;
                    }
                }
            }
        });
        sse_response(id, rx)
    }
}

/// The updates that take a subscriber from `old` to `new`: new artifacts, then the status.
fn diff(old: &Task, new: &Task) -> Vec<StreamResponse> {
    let mut out = Vec::new();
    let known = old.artifacts.as_ref().map_or(0, Vec::len);
    for artifact in new.artifacts.iter().flatten().skip(known) {
        out.push(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: new.id.clone(),
            context_id: new.context_id.clone(),
            artifact: artifact.clone(),
            append: Some(false),
            last_chunk: Some(true),
            metadata: None,
        }));
    }
    if old.status.state != new.status.state {
        out.push(status_update(new));
    }
    out
}

enum Begun {
    /// A deduplicated message: the task it produced before.
    Replay(Box<Task>),
    /// A turn that has saved its working state and still has to run.
    Turn(Box<Turn>),
}

struct Turn {
    info: TurnInfo,
    message: Message,
    task: Task,
    version: u64,
    active: Rc<ActiveTask>,
    _guard: tokio::sync::OwnedMutexGuard<()>,
    mismatch: bool,
    dedup: Option<(TaskStore, String)>,
    /// The task waited for authorisation when the message came: it answers that request.
    answering_auth: bool,
}

/// The outcome of a save that may have found the task terminal.
enum Saved {
    Version(u64),
    /// The task as re-read, terminal, and its version.
    Terminal(Box<Task>, u64),
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

/// The scripted agent's card: one JSON-RPC 1.0 interface at `url` and one skill.
pub fn agent_card(
    description: &str,
    version: &str,
    url: &str,
    streaming: bool,
    push: bool,
) -> Value {
    json!({
        "name": "a2a-chaos scripted agent",
        "description": description,
        "version": version,
        "supportedInterfaces": [{
            "url": url,
            "protocolBinding": "JSONRPC",
            "protocolVersion": "1.0"
        }],
        "capabilities": { "streaming": streaming, "pushNotifications": push },
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{
            "id": "scripted-turn",
            "name": "Scripted turn",
            "description": "Performs one business effect per turn and writes artifact turn-N.",
            "tags": ["simulation"]
        }]
    })
}

/// The owner recorded on a task (`""`: anonymous, or a model without owners).
fn owner_of(task: &Task) -> &str {
    task.metadata
        .as_ref()
        .and_then(|m| m.get(MARKER_KEY))
        .and_then(|m| m.get("owner"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Whether a task waits for the authorisation of a paused action (the agent asked for it and
/// has not run it since).
fn auth_pending(task: &Task) -> bool {
    task.metadata
        .as_ref()
        .and_then(|m| m.get(MARKER_KEY))
        .and_then(|m| m.get("authPending"))
        .is_some()
}

/// Until when a task's pending effect holds off a cancel, if one is pending.
fn pending_until(task: &Task) -> Option<u64> {
    task.metadata
        .as_ref()?
        .get(MARKER_KEY)?
        .pointer("/effectPending/untilMs")?
        .as_u64()
}

/// Gives up a dedup claim (the request did not run), so a retry may take it.
async fn release_claim(dedup: Option<&TaskStore>, key: &str) {
    if let Some(d) = dedup {
        let _ = d.finish(key, None, 0).await;
    }
}

/// Appends a message to a task's history unless a message with its id is already there.
fn push_message(task: &mut Task, message: &Message) {
    let history = task.history.get_or_insert_with(Vec::new);
    if !history.iter().any(|m| m.message_id == message.message_id) {
        history.push(message.clone());
    }
}

fn status(state: TaskState) -> TaskStatus {
    TaskStatus {
        state,
        message: None,
        timestamp: None,
    }
}

/// A server-sent-events response carrying each stream event as a JSON-RPC result.
fn sse_response(id: Value, mut rx: mpsc::Receiver<StreamResponse>) -> Response<BoxBody> {
    let (tx, body) = ChannelBody::channel(16);
    tokio::task::spawn_local(async move {
        while let Some(event) = rx.recv().await {
            let line = json!({"jsonrpc": "2.0", "id": id, "result": event});
            let chunk = format!("data: {line}\n\n");
            if tx.send(Bytes::from(chunk)).await.is_err() {
                return;
            }
        }
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(body)
        .expect("static response parts are valid")
}

/// Splits `http://host:port/path` into its parts.
pub fn parse_http_url(url: &str) -> Option<(String, u16, String)> {
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, p.parse().ok()?),
        None => (authority, 80),
    };
    (!host.is_empty()).then(|| (host.to_string(), port, path))
}

/// A fresh per-pod memory store for a replica of a model with `placement = "memory"`.
pub fn memory_store() -> SharedState {
    Rc::new(RefCell::new(StoreState::default()))
}

/// The stream event announcing `task`'s current status.
fn status_update(task: &Task) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task.id.clone(),
        context_id: task.context_id.clone(),
        status: task.status.clone(),
        metadata: None,
    })
}
#[cfg(test)]
mod tests {
    use super::*;

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
    fn urls_split_into_host_port_and_path() {
        assert_eq!(
            parse_http_url("http://webhook:7200/hook/t1"),
            Some(("webhook".into(), 7200, "/hook/t1".into()))
        );
        assert_eq!(parse_http_url("https://x/"), None);
    }
}
