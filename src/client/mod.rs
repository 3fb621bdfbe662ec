//! The A2A client used by workloads and scenarios: JSON-RPC 1.0 through the router.
//!
//! Every call is recorded in the [`History`] with its outcome. Outcomes are classified
//! conservatively: anything that leaves the client unsure whether the server acted is
//! `info` (a timeout, a broken connection, a gateway error from the router, a cut stream).
//!
//! In runs that simulate the agent card, every call first asks the client's
//! [`CardClient`] where to go: the execution URL of the card it holds, where the call then
//! carries the principal's bearer token as every call does. A call the card client refuses (no card passes its checks, or the card
//! says the agent does not stream) is a `fail` that sent nothing; a streaming send to an
//! agent whose card says it does not stream becomes a plain `SendMessage`.
//!
//! A client may speak the A2A 0.3 wire instead ([`Dialect::V03`], a scenario's
//! `client-wire = "0.3"`): every call is written as 1.0 and translated on its way out
//! (slash method names, 0.3 params, no `A2A-Version` header), and a `kind`-tagged 0.3 answer
//! is read back as 1.0 (`protocol::v03`), so the history and the checkers see the same
//! operations whichever wire carried them.

pub mod history;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use a2a::{Message, Part, Role, Task, TaskState};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::auth::{Grants, DEFAULT_PRINCIPAL};
use crate::card::cache::{CardClient, Route};
use crate::client::history::{History, Op, OpKind, Outcome, TaskView};
use crate::host::Host;
use crate::model::TurnIn;
use crate::net::{self, Call};
use crate::replica::{TurnInfo, REPLICA_HEADER};
use crate::router::{self, CONTEXT_HEADER, TARGET_HEADER};
use crate::trace::{now_ms, Event, Reply, Trace};

/// Rewrites a message for [`TurnIn::TextJson`]: its turn's data part becomes its one text
/// part, the turn as JSON (`{"conversation":"c1","turn":1,"turns":2}`). A message without
/// the data part is left as it is.
pub(crate) fn turn_as_text(message: &mut Value) {
    let Some(parts) = message.get_mut("parts").and_then(Value::as_array_mut) else {
        return;
    };
    let Some(turn) = parts.iter().find_map(|p| p.get("data")).cloned() else {
        return;
    };
    *parts = vec![json!({ "text": turn.to_string() })];
}

/// The JSON-RPC wire a client speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Dialect {
    /// A2A 1.0 (the default): PascalCase methods, `A2A-Version: 1.0`.
    #[default]
    #[serde(rename = "1.0")]
    V1,
    /// A2A 0.3: slash methods, no version header, `kind`-tagged shapes.
    #[serde(rename = "0.3")]
    V03,
}

/// What a `send`'s message carries besides its text (`parts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Parts {
    /// The scripted data part `{conversation, turn, turns}`: the agent reads its turn there.
    Data,
    /// The text alone.
    Text,
    /// The text and a small file (inline bytes, `text/plain`).
    File,
}

impl Parts {
    /// `message` (a turn's, as [`Client::turn_message`] builds it) with these parts: its
    /// text, then the data part, nothing, or a file.
    pub fn apply(self, message: &mut Message) {
        match self {
            Parts::Data => {}
            Parts::Text => message.parts.truncate(1),
            Parts::File => {
                message.parts.truncate(1);
                let mut file = Part::raw(b"notes for this turn\n".to_vec());
                file.filename = Some("notes.txt".into());
                file.media_type = Some("text/plain".into());
                message.parts.push(file);
            }
        }
    }
}

/// How to reach the cluster.
pub struct Client {
    pub history: History,
    pub trace: Trace,
    pub timeout: Duration,
    next_rpc_id: Cell<u64>,
    /// The card bootstrap, in runs that simulate the agent card.
    cards: Option<CardClient>,
    /// The identity provider's consent records, where the user authorises a task's paused
    /// action out of band ([`Client::authorize`]).
    grants: Grants,
    /// How a user message carries its turn (the model's `handler.turn_in`).
    turn_in: Cell<TurnIn>,
    /// The wire it speaks.
    dialect: Cell<Dialect>,
    /// Where a scenario keeps conversation → task id ([`Client::learn_tasks_into`]): a
    /// streamed turn's task is known from its first event, as a real client knows it, so
    /// a step can cancel or subscribe to the turn while it runs.
    task_sink: RefCell<Option<TaskIds>>,
}

/// Conversation → task id, shared with a scenario's driver.
pub type TaskIds = Rc<RefCell<BTreeMap<String, String>>>;

/// What a call returned.
pub struct Answer {
    pub outcome: Outcome,
    pub task: Option<Task>,
}

impl Client {
    /// A client recording into `history`, with a timeout per call.
    pub fn new(history: History, trace: Trace, timeout: Duration) -> Rc<Self> {
        Client::with_cards(history, trace, timeout, None, Grants::default())
    }

    /// A client that bootstraps from the agent card when `cards` is set.
    pub fn with_cards(
        history: History,
        trace: Trace,
        timeout: Duration,
        cards: Option<CardClient>,
        grants: Grants,
    ) -> Rc<Self> {
        Rc::new(Client {
            history,
            trace,
            timeout,
            next_rpc_id: Cell::new(1),
            cards,
            grants,
            turn_in: Cell::new(TurnIn::DataPart),
            dialect: Cell::new(Dialect::V1),
            task_sink: RefCell::new(None),
        })
    }

    /// From now on, the task a turn's stream names is written to `tasks` under the turn's
    /// conversation at its first event (unless one is there, or the turn was sent on a
    /// foreign contextId or with a named task id).
    pub fn learn_tasks_into(&self, tasks: TaskIds) {
        *self.task_sink.borrow_mut() = Some(tasks);
    }

    /// Writes the task a turn's stream has named to the sink, if there is one and the
    /// conversation has none yet (called at every event: nothing is cloned once it has).
    fn learn_task(&self, kind: &OpKind, task: Option<&Task>) {
        let sink = self.task_sink.borrow();
        let (
            Some(sink),
            Some(task),
            OpKind::Send {
                conversation,
                foreign_context: false,
                omitted_context: false,
                named_task: false,
                ..
            },
        ) = (sink.as_ref(), task, kind)
        else {
            return;
        };
        let mut tasks = sink.borrow_mut();
        if !tasks.contains_key(conversation) {
            tasks.insert(conversation.clone(), task.id.clone());
        }
    }

    /// Sends every turn as `turn_in` says (default: a data part).
    pub fn set_turn_in(&self, turn_in: TurnIn) {
        self.turn_in.set(turn_in);
    }

    /// Speaks `dialect` from now on (default: 1.0).
    pub fn set_dialect(&self, dialect: Dialect) {
        self.dialect.set(dialect);
    }

    /// The user `principal` authorises the paused action of `conversation`'s task
    /// `task_id` at the identity provider: out of band, not an A2A call and not a message.
    pub fn authorize(&self, principal: &str, conversation: &str, task_id: &str) {
        self.grants.grant(task_id, principal, now_ms());
        self.trace.record(
            Host::Client,
            Event::plain(format!(
                "authorize {conversation} ({task_id}) as {principal}, out of band"
            )),
        );
    }

    /// Where a call goes: the router (`None`), or the route the card names. `Err` is the
    /// `fail` of a call the card client refused to send.
    async fn route(
        &self,
        op_id: u64,
        principal: &str,
        kind: &OpKind,
        method: &str,
        streaming: bool,
    ) -> Result<Option<Route>, Outcome> {
        let Some(cards) = &self.cards else {
            return Ok(None);
        };
        cards
            .route(op_id, now_ms(), principal, &kind.label(), method, streaming)
            .await
            .map(Some)
            .map_err(|why| Outcome::Fail {
                code: 0,
                message: format!("not sent: {why}"),
            })
    }

    /// Records a call the card client refused to send.
    fn refused(
        &self,
        op_id: u64,
        principal: &str,
        kind: OpKind,
        invoke_ms: u64,
        outcome: Outcome,
    ) -> Answer {
        self.trace.record(
            Host::Client,
            Event::Answered {
                op: kind.label(),
                reply: Reply::NotSent,
                events: None,
                via: None,
            },
        );
        self.history.complete(Op {
            id: op_id,
            kind,
            principal: principal.to_string(),
            invoke_ms,
            complete_ms: now_ms(),
            outcome: outcome.clone(),
            replica: None,
            task: None,
            stream_states: Vec::new(),
            streamed: None,
            stream_snapshot_first: false,
            stream_redelivered: None,
        });
        Answer {
            outcome,
            task: None,
        }
    }

    /// The user message for a turn.
    pub fn turn_message(
        info: &TurnInfo,
        message_id: &str,
        context_id: &str,
        task_id: Option<&str>,
    ) -> Message {
        Message {
            message_id: message_id.to_string(),
            context_id: Some(context_id.to_string()),
            task_id: task_id.map(str::to_string),
            role: Role::User,
            parts: vec![
                Part::text(format!("turn {} of {}", info.turn, info.conversation)),
                info.to_part(),
            ],
            metadata: None,
            extensions: None,
            reference_task_ids: None,
        }
    }

    fn call(
        &self,
        principal: &str,
        method: &str,
        params: Value,
        context: Option<&str>,
        target: Option<&Host>,
        route: Option<&Route>,
    ) -> Call {
        let id = self.next_rpc_id.get();
        self.next_rpc_id.set(id + 1);
        let mut params = params;
        if self.turn_in.get() == TurnIn::TextJson {
            if let Some(message) = params.get_mut("message") {
                turn_as_text(message);
            }
        }
        let v03 = self.dialect.get() == Dialect::V03;
        let (method, params) = match crate::protocol::v03::v03_method(method) {
            Some(name) if v03 => (name, crate::protocol::v03::params_to_v03(method, &params)),
            _ => (method, params),
        };
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (host, port, path) = match route {
            Some(r) => (r.host.as_str(), r.port, r.path.as_str()),
            None => ("router", router::PORT, "/"),
        };
        let mut call = Call::post_json(
            host,
            port,
            path,
            serde_json::to_vec(&body).expect("requests serialise"),
            self.timeout,
        );
        if !v03 {
            call = call.header("a2a-version", "1.0");
        }
        if let Some(c) = context {
            call = call.header(CONTEXT_HEADER, c);
        }
        if let Some(t) = target {
            call = call.header(TARGET_HEADER, t.to_string());
        }
        if let Some(a) = crate::auth::authorization_for(principal) {
            call = call.header("authorization", a);
        }
        call
    }

    /// A unary JSON-RPC call as the default principal, recorded as `kind`.
    pub async fn unary(
        &self,
        kind: OpKind,
        method: &str,
        params: Value,
        context: Option<&str>,
        target: Option<&Host>,
    ) -> Answer {
        self.unary_as(DEFAULT_PRINCIPAL, kind, method, params, context, target)
            .await
    }

    /// A unary JSON-RPC call as `principal` (with its bearer token; none for
    /// [`crate::auth::ANONYMOUS`]), recorded as `kind`.
    pub async fn unary_as(
        &self,
        principal: &str,
        kind: OpKind,
        method: &str,
        params: Value,
        context: Option<&str>,
        target: Option<&Host>,
    ) -> Answer {
        let op_id = self.history.invoke();
        let invoke_ms = now_ms();
        let route = match self.route(op_id, principal, &kind, method, false).await {
            Ok(r) => r,
            Err(outcome) => return self.refused(op_id, principal, kind, invoke_ms, outcome),
        };
        let call = self.call(principal, method, params, context, target, route.as_ref());
        let (outcome, replica, task) = match net::send(&call).await {
            Err(e) => (Outcome::Info { why: e.to_string() }, None, None),
            Ok(reply) => {
                let replica = reply
                    .headers
                    .get(REPLICA_HEADER)
                    .and_then(|v| v.to_str().ok())
                    .map(Host::parse);
                let (outcome, task) = classify(reply.status.as_u16(), &reply.body);
                (outcome, replica, task)
            }
        };
        self.trace.record(
            Host::Client,
            Event::Answered {
                op: kind.label(),
                reply: reply_of(&outcome),
                events: None,
                via: via(route.as_ref()),
            },
        );
        self.history.complete(Op {
            id: op_id,
            kind,
            principal: principal.to_string(),
            invoke_ms,
            complete_ms: now_ms(),
            outcome: outcome.clone(),
            replica,
            task: task.as_ref().map(TaskView::of),
            stream_states: Vec::new(),
            streamed: None,
            stream_snapshot_first: false,
            stream_redelivered: None,
        });
        Answer { outcome, task }
    }

    /// A streaming call (SSE) as the default principal, recorded as `kind`: `ok` when the
    /// stream ends at a terminal or interrupted state, `info` when it is cut or times out
    /// first.
    pub async fn stream(
        &self,
        kind: OpKind,
        method: &str,
        params: Value,
        context: Option<&str>,
        target: Option<&Host>,
        stream_timeout: Duration,
    ) -> Answer {
        self.stream_as(
            DEFAULT_PRINCIPAL,
            kind,
            method,
            params,
            context,
            target,
            stream_timeout,
        )
        .await
    }

    /// A streaming call as `principal`; see [`Client::stream`].
    #[allow(clippy::too_many_arguments)]
    pub async fn stream_as(
        &self,
        principal: &str,
        kind: OpKind,
        method: &str,
        params: Value,
        context: Option<&str>,
        target: Option<&Host>,
        stream_timeout: Duration,
    ) -> Answer {
        if let (Some(cards), "SendStreamingMessage") = (&self.cards, method) {
            // A client that knows the agent does not stream sends the message instead.
            if cards.streams(principal).await == Some(false) {
                return self
                    .unary_as(principal, kind, "SendMessage", params, context, target)
                    .await;
            }
        }
        let op_id = self.history.invoke();
        let invoke_ms = now_ms();
        let route = match self.route(op_id, principal, &kind, method, true).await {
            Ok(r) => r,
            Err(outcome) => return self.refused(op_id, principal, kind, invoke_ms, outcome),
        };
        let call = self.call(principal, method, params, context, target, route.as_ref());
        let mut states = Vec::new();
        let mut redelivered = None;
        let mut snapshot_first = None;
        let mut task: Option<Task> = None;
        let mut streamed: Option<Task> = None;
        let mut replica = None;
        let outcome = match tokio::time::timeout(stream_timeout, async {
            let head = net::send_streaming(&call)
                .await
                .map_err(|e| Outcome::Info { why: e.to_string() })?;
            replica = head
                .headers
                .get(REPLICA_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(Host::parse);
            let is_sse = head
                .headers
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("text/event-stream"));
            if !is_sse {
                let body = net::read_body(head.body, net::BODY_BYTES_MAX)
                    .await
                    .map_err(|e| Outcome::Info { why: e.to_string() })?;
                let (outcome, t) = classify(head.status.as_u16(), &body);
                task = t;
                return Err(outcome);
            }
            let mut reader = crate::protocol::sse::Reader::new(head.body);
            let mut previous: Option<String> = None;
            loop {
                match reader.next_event().await {
                    Ok(Some(data)) => {
                        let value: Value =
                            serde_json::from_str(&data).map_err(|e| Outcome::Info {
                                why: format!("bad event: {e}"),
                            })?;
                        if snapshot_first.is_none() {
                            let r = &value["result"];
                            snapshot_first = Some(r.get("task").is_some() || r["kind"] == "task");
                        }
                        let seen = states.len();
                        apply_event(&value["result"], &mut task, &mut streamed, &mut states);
                        // The same event again, byte for byte (one stream's events share
                        // their JSON-RPC id): a redelivery, whatever state it carries.
                        if redelivered.is_none()
                            && states.len() > seen
                            && previous.as_deref() == Some(data.as_str())
                        {
                            redelivered = states.last().cloned();
                        }
                        previous = Some(data);
                        self.learn_task(&kind, task.as_ref().or(streamed.as_ref()));
                    }
                    Ok(None) => return Ok(()),
                    Err(e) => return Err(Outcome::Info { why: e.to_string() }),
                }
            }
        })
        .await
        {
            Err(_) => Outcome::Info {
                why: "stream timed out".into(),
            },
            Ok(Err(outcome)) => outcome,
            Ok(Ok(())) => match states.last() {
                Some(s)
                    if s.is_terminal()
                        || *s == TaskState::InputRequired
                        || *s == TaskState::AuthRequired =>
                {
                    Outcome::Ok
                }
                _ => Outcome::Info {
                    why: crate::client::history::ENDED_BEFORE_FINAL.into(),
                },
            },
        };
        self.trace.record(
            Host::Client,
            Event::Answered {
                op: kind.label(),
                reply: reply_of(&outcome),
                events: Some(states.len()),
                via: via(route.as_ref()),
            },
        );
        self.history.complete(Op {
            id: op_id,
            kind,
            principal: principal.to_string(),
            invoke_ms,
            complete_ms: now_ms(),
            outcome: outcome.clone(),
            replica,
            task: task.as_ref().map(TaskView::of),
            streamed: streamed.as_ref().map(TaskView::of),
            stream_states: states,
            stream_snapshot_first: snapshot_first.unwrap_or(false),
            stream_redelivered: redelivered,
        });
        Answer { outcome, task }
    }
}

/// ` via ORIGIN` for a call routed by the card; nothing otherwise (traces of runs without
/// the card stay as they were).
fn via(route: Option<&Route>) -> Option<String> {
    route.map(|r| r.origin.clone())
}

/// How the trace line of a call says it ended.
fn reply_of(outcome: &Outcome) -> Reply {
    match outcome {
        Outcome::Ok => Reply::Ok,
        Outcome::Fail { code, .. } => Reply::Fail { code: *code },
        Outcome::Info { why } => Reply::Info { why: why.clone() },
    }
}

/// Folds one stream event into the running view of the task: into `task` once a Task
/// snapshot arrived, otherwise into `streamed`, a task built from what the events name
/// (a continuation's stream never sends a snapshot).
fn apply_event(
    result: &Value,
    task: &mut Option<Task>,
    streamed: &mut Option<Task>,
    states: &mut Vec<TaskState>,
) {
    let translated = as_v1(result);
    let result = translated.as_ref().unwrap_or(result);
    if let Some(t) = result.get("task").and_then(|v| Task::deserialize(v).ok()) {
        states.push(t.status.state.clone());
        *task = Some(t);
        *streamed = None;
        return;
    }
    if let Some(s) = result.get("statusUpdate") {
        if let Ok(status) = serde_json::from_value::<a2a::TaskStatus>(s["status"].clone()) {
            states.push(status.state.clone());
            if let Some(t) = task.as_mut().or_else(|| named(s, streamed)) {
                t.status = status;
            }
        }
    } else if let Some(a) = result.get("artifactUpdate") {
        if let Ok(artifact) = serde_json::from_value::<a2a::Artifact>(a["artifact"].clone()) {
            if let Some(t) = task.as_mut().or_else(|| named(a, streamed)) {
                t.artifacts.get_or_insert_with(Vec::new).push(artifact);
            }
        }
    }
}

/// The task a snapshot-less stream is about, started from the first event that names it
/// (`taskId`, `contextId`); its state is unspecified until a status update sets it.
fn named<'a>(event: &Value, streamed: &'a mut Option<Task>) -> Option<&'a mut Task> {
    if streamed.is_none() {
        let id = event["taskId"].as_str()?;
        *streamed = Some(Task {
            id: id.to_string(),
            context_id: event["contextId"].as_str().unwrap_or_default().to_string(),
            status: a2a::TaskStatus {
                state: TaskState::Unspecified,
                message: None,
                timestamp: None,
            },
            artifacts: None,
            history: None,
            metadata: None,
        });
    }
    streamed.as_mut()
}

/// A 0.3 result or event (recognised by its `kind` tag, which no 1.0 result has) in its
/// 1.0 form; `None` for a 1.0 one.
fn as_v1(result: &Value) -> Option<Value> {
    result
        .get("kind")
        .is_some()
        .then(|| crate::protocol::v03::result_to_v1(result))
}

/// Classifies an HTTP answer from the router.
fn classify(status: u16, body: &[u8]) -> (Outcome, Option<Task>) {
    if status >= 500 {
        // The router could not get an answer from the replica: it may have acted.
        return (
            Outcome::Info {
                why: format!("HTTP {status} from the router"),
            },
            None,
        );
    }
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return (
                Outcome::Info {
                    why: format!("unreadable answer: {e}"),
                },
                None,
            )
        }
    };
    if status != 200 {
        let message = value["error"]["message"].as_str().unwrap_or("").to_string();
        return (
            Outcome::Fail {
                code: i64::from(status),
                message,
            },
            None,
        );
    }
    if let Some(err) = value.get("error") {
        return (
            Outcome::Fail {
                code: err["code"].as_i64().unwrap_or(0),
                message: err["message"].as_str().unwrap_or("").to_string(),
            },
            None,
        );
    }
    let translated = as_v1(&value["result"]);
    let result = translated.as_ref().unwrap_or(&value["result"]);
    let task = result
        .get("task")
        .or(Some(result))
        .and_then(|v| Task::deserialize(v).ok());
    (Outcome::Ok, task)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fold(events: &[Value]) -> (Option<Task>, Option<Task>, Vec<TaskState>) {
        let (mut task, mut streamed, mut states) = (None, None, Vec::new());
        for e in events {
            apply_event(e, &mut task, &mut streamed, &mut states);
        }
        (task, streamed, states)
    }

    fn status(state: &str) -> Value {
        json!({"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": state}}})
    }

    fn artifact(name: &str) -> Value {
        json!({"artifactUpdate": {"taskId": "t1", "contextId": "c1",
            "artifact": {"artifactId": name, "name": name, "parts": [{"text": name}]}}})
    }

    #[test]
    fn a_continuation_stream_without_a_snapshot_still_shows_its_turn() {
        let (task, streamed, states) = fold(&[
            status("TASK_STATE_WORKING"),
            artifact("turn-2"),
            status("TASK_STATE_COMPLETED"),
        ]);
        assert!(task.is_none(), "no whole task was ever sent");
        let view = TaskView::of(&streamed.expect("the events named the task"));
        assert_eq!(view.id, "t1");
        assert_eq!(view.context_id, "c1");
        assert_eq!(view.state, TaskState::Completed);
        assert_eq!(view.artifacts, ["turn-2"]);
        assert_eq!(states, [TaskState::Working, TaskState::Completed]);
    }

    #[test]
    fn a_snapshot_makes_the_stream_a_whole_task() {
        let snapshot = json!({"task": {"id": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_SUBMITTED"}}});
        let (task, streamed, _) = fold(&[
            snapshot,
            artifact("turn-1"),
            status("TASK_STATE_INPUT_REQUIRED"),
        ]);
        assert!(streamed.is_none());
        let view = TaskView::of(&task.expect("the snapshot"));
        assert_eq!(view.state, TaskState::InputRequired);
        assert_eq!(view.artifacts, ["turn-1"]);
    }
}
