//! The client operations of a recorded history: turns assigned to messages, answers read
//! as outcomes and task views, the final tasks (see [`super`] for the rules).

use std::collections::{BTreeMap, BTreeSet};

use a2a::TaskState;
use serde_json::{json, Value};

use crate::client::history::{Op, OpKind, Outcome, TaskView};
use crate::client::Parts;
use crate::host::Host;
use crate::replica::{AgentShape, TurnInfo};

use super::Exchange;
use crate::live::wire::{self, Item, Method, WireTask};

/// The a2a-chaos data part of a message: `(conversation, turn)`.
fn data_turn(message: &Value) -> Option<(String, u32)> {
    message.get("parts")?.as_array()?.iter().find_map(|p| {
        let d = p.get("data")?;
        let c = d.get("conversation")?.as_str()?;
        let t = d.get("turn")?.as_f64()?;
        Some((c.to_string(), t as u32))
    })
}

pub(super) fn is_turn_name(name: &str) -> bool {
    name.strip_prefix("turn-")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[derive(Default)]
pub(super) struct Builder {
    /// messageId → (conversation, turn).
    pub(super) turns: BTreeMap<String, (String, u32)>,
    /// task id → conversation.
    pub(super) task_conversation: BTreeMap<String, String>,
    /// conversation → its first task.
    pub(super) conversations: BTreeMap<String, String>,
    /// Artifacts are named `turn-N` (the project's convention).
    pub(super) named: bool,
    pub(super) replicas: BTreeSet<String>,
    /// The latest snapshot of each task seen so far (a stream of updates builds on it).
    last_seen: BTreeMap<String, WireTask>,
}

impl Builder {
    pub(super) fn assign_turns(&mut self, exchanges: &[Exchange]) {
        let mut counted: BTreeMap<String, u32> = BTreeMap::new();
        for x in exchanges {
            if !matches!(wire::method(x.method()), Method::Send | Method::Stream) {
                continue;
            }
            let m = x.message();
            let id = m
                .get("messageId")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if self.turns.contains_key(&id) {
                continue;
            }
            let turn = data_turn(m).unwrap_or_else(|| {
                let conversation = m
                    .get("contextId")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .or_else(|| x.answer_context())
                    .unwrap_or_else(|| format!("message-{id}"));
                let n = counted.entry(conversation.clone()).or_insert(0);
                *n += 1;
                (conversation, *n)
            });
            self.turns.insert(id, turn);
        }
    }

    /// Gives each effect the conversation and turn of the message that carried it (by its
    /// `message_id`), so effects are keyed by the client's message, not by the adapter's
    /// count; a note says how many were renumbered.
    pub(super) fn key_effects_by_message(
        &self,
        effects: &mut [crate::ground::ledger::Effect],
        notes: &mut Vec<String>,
    ) {
        let mut renumbered = 0;
        for e in effects.iter_mut() {
            let Some((conversation, turn)) = self.turns.get(&e.request.message_id) else {
                continue;
            };
            if (&e.request.conversation, e.request.turn) != (conversation, *turn) {
                renumbered += 1;
                e.request.conversation = conversation.clone();
                e.request.turn = *turn;
            }
        }
        if renumbered > 0 {
            notes.push(format!(
                "{renumbered} effect(s) reported another turn number than their message's here \
                 (an adapter counts turns per task, this history per context); each is keyed \
                 by its message"
            ));
        }
    }

    /// What a stream of updates without a snapshot builds on: the task as last seen in an
    /// earlier answer, else nothing but its ids (the project's client keeps no task then;
    /// here the deltas still show the turn's own artifact and state).
    fn seed(&self, task_id: String, context_id: String) -> WireTask {
        self.last_seen.get(&task_id).cloned().unwrap_or(WireTask {
            id: task_id,
            context_id,
            ..WireTask::default()
        })
    }

    /// A task as the checkers see it.
    fn view(&self, t: &WireTask, own_turn: Option<u32>) -> TaskView {
        let state = t.state.clone().unwrap_or(TaskState::Unspecified);
        let artifacts = if self.named {
            t.artifacts.clone()
        } else {
            let unfinished = matches!(state, TaskState::Submitted | TaskState::Working);
            let mut names = Vec::new();
            for (id, user) in &t.history {
                let Some((_, n)) = self.turns.get(id).filter(|_| *user) else {
                    continue;
                };
                let name = format!("turn-{n}");
                if (unfinished && own_turn == Some(*n)) || names.contains(&name) {
                    continue;
                }
                names.push(name);
            }
            names
        };
        TaskView {
            id: t.id.clone(),
            context_id: t.context_id.clone(),
            state,
            artifacts,
            history: t.history.iter().map(|(id, _)| id.clone()).collect(),
        }
    }

    /// The client ops, and the extra per-event observations of streams.
    pub(super) fn ops(&mut self, exchanges: &[Exchange]) -> (Vec<Op>, Vec<Op>) {
        let mut ops = Vec::new();
        let mut extra = Vec::new();
        for x in exchanges {
            let method = wire::method(x.method());
            let task_of_request = wire::request_task(&x.body);
            let kind = match method {
                Method::Send | Method::Stream => {
                    let m = x.message();
                    let id = m.get("messageId").and_then(Value::as_str).unwrap_or("");
                    let (conversation, turn) = self.turns.get(id).cloned().unwrap_or_default();
                    let blocking = !(x.body.pointer("/params/configuration/returnImmediately")
                        == Some(&Value::Bool(true))
                        || x.body.pointer("/params/configuration/blocking")
                            == Some(&Value::Bool(false)));
                    OpKind::Send {
                        conversation,
                        turn,
                        message_id: id.to_string(),
                        blocking,
                        foreign_context: false,
                        // A follow-up that names its task and no context: the server must
                        // infer the context (context-match checks that it did).
                        omitted_context: m.get("taskId").is_some_and(|t| !t.is_null())
                            && m.get("contextId").is_none_or(Value::is_null),
                        named_task: false,
                        needs_auth: false,
                        reply: None,
                        parts: parts_of(m),
                        shape: shape_of(m),
                    }
                }
                Method::Other => continue,
                other => {
                    let task = task_of_request.clone().unwrap_or_default();
                    let conversation = self.task_conversation.get(&task).cloned().unwrap_or(task);
                    match other {
                        Method::Get => OpKind::Get { conversation },
                        Method::Cancel => OpKind::Cancel { conversation },
                        Method::Subscribe => OpKind::Subscribe { conversation },
                        _ => OpKind::SetPush { conversation },
                    }
                }
            };
            let own_turn = match &kind {
                OpKind::Send { turn, .. } => Some(*turn),
                _ => None,
            };
            let (outcome, task, states, snapshot_first, observed) = self.answer(x, own_turn);
            if let (OpKind::Send { conversation, .. }, Some(t)) = (&kind, &task) {
                self.task_conversation
                    .entry(t.id.clone())
                    .or_insert_with(|| conversation.clone());
                self.conversations
                    .entry(conversation.clone())
                    .or_insert_with(|| t.id.clone());
            }
            let name = x.answered_by.clone().or(x.replica.clone());
            if let Some(r) = &name {
                self.replicas.insert(r.clone());
            }
            // The recorded history is text: the replica it names becomes a host here.
            let replica = name.as_deref().map(Host::parse);
            let id = ops.len() as u64;
            for (invoke, at, view) in observed {
                extra.push(Op {
                    id: 1_000_000 + extra.len() as u64,
                    kind: OpKind::Get {
                        conversation: kind.conversation().to_string(),
                    },
                    principal: crate::auth::DEFAULT_PRINCIPAL.into(),
                    invoke_ms: invoke,
                    complete_ms: at,
                    outcome: Outcome::Ok,
                    replica: replica.clone(),
                    task: Some(view),
                    streamed: None,
                    stream_states: Vec::new(),
                    stream_snapshot_first: false,
                    stream_redelivered: None,
                });
            }
            let complete_ms = x
                .ended
                .as_ref()
                .map(|(at, _, _)| *at)
                .or(x.answered_ms)
                .unwrap_or(x.at_ms);
            ops.push(Op {
                id,
                kind,
                principal: crate::auth::DEFAULT_PRINCIPAL.into(),
                invoke_ms: x.at_ms,
                complete_ms,
                outcome,
                replica,
                task,
                // A stream of updates already builds on the task as last seen.
                streamed: None,
                stream_states: states,
                stream_snapshot_first: snapshot_first,
                stream_redelivered: redelivered(&x.events),
            });
        }
        (ops, extra)
    }

    /// How an exchange ended for its client: the outcome, the task it showed last, the
    /// states a stream carried, whether its first event was a snapshot, and each streamed
    /// state as an observation `(at, view)`.
    #[allow(clippy::type_complexity)]
    fn answer(
        &mut self,
        x: &Exchange,
        own_turn: Option<u32>,
    ) -> (
        Outcome,
        Option<TaskView>,
        Vec<TaskState>,
        bool,
        Vec<(u64, u64, TaskView)>,
    ) {
        let info = |why: &str| {
            (
                Outcome::Info { why: why.into() },
                None,
                Vec::new(),
                false,
                Vec::new(),
            )
        };
        if x.dropped || x.ended.as_ref().is_some_and(|e| e.2) {
            return info("the reply was dropped before the client saw it");
        }
        if let Some(e) = &x.error {
            return info(e);
        }
        if x.answered_ms.is_none() {
            return info("no answer was recorded");
        }
        if !x.stream {
            let Some(answer) = &x.answer else {
                return if x.status >= 500 || x.status == 0 {
                    info(&format!("HTTP {}", x.status))
                } else {
                    (
                        Outcome::Fail {
                            code: i64::from(x.status),
                            message: format!("HTTP {}", x.status),
                        },
                        None,
                        Vec::new(),
                        false,
                        Vec::new(),
                    )
                };
            };
            if let Some(err) = answer.get("error") {
                return (refusal(err), None, Vec::new(), false, Vec::new());
            }
            if x.status >= 500 {
                return info(&format!("HTTP {}", x.status));
            }
            let wire_task = answer.get("result").and_then(|r| {
                wire::items(r).into_iter().find_map(|i| match i {
                    Item::Task(t) => Some(t),
                    _ => None,
                })
            });
            let task = wire_task.as_ref().map(|t| self.view(t, own_turn));
            if let Some(t) = wire_task {
                self.last_seen.insert(t.id.clone(), t);
            }
            return (Outcome::Ok, task, Vec::new(), false, Vec::new());
        }
        // A stream: a snapshot, then updates applied to it, as the project's client does.
        let mut current: Option<WireTask> = None;
        let mut states = Vec::new();
        let mut observed = Vec::new();
        let mut first = None;
        let mut failed = None;
        let mut last_at = x.at_ms;
        for (at, event) in &x.events {
            if let Some(err) = event.get("error") {
                failed = Some(refusal(err));
                continue;
            }
            let Some(result) = event.get("result") else {
                continue;
            };
            let previous = std::mem::replace(&mut last_at, *at);
            for item in wire::items(result) {
                first.get_or_insert(matches!(item, Item::Task(_)));
                let snapshot = matches!(item, Item::Task(_));
                match item {
                    Item::Task(t) => {
                        if let Some(s) = &t.state {
                            states.push(s.clone());
                        }
                        current = Some(t);
                    }
                    Item::Status {
                        task_id,
                        context_id,
                        state,
                    } => {
                        let t = current.get_or_insert_with(|| self.seed(task_id, context_id));
                        if let Some(s) = state {
                            states.push(s.clone());
                            t.state = Some(s);
                            // The state held at some instant after the previous event.
                            observed.push(((previous + 1).min(*at), *at, self.view(t, own_turn)));
                        }
                    }
                    Item::Artifact {
                        task_id,
                        context_id,
                        name,
                    } => {
                        let t = current.get_or_insert_with(|| self.seed(task_id, context_id));
                        if !t.artifacts.contains(&name) {
                            t.artifacts.push(name);
                        }
                    }
                    Item::Message => {}
                }
                if let (true, Some(t)) = (snapshot, current.as_ref()) {
                    if t.state.is_some() {
                        observed.push(((previous + 1).min(*at), *at, self.view(t, own_turn)));
                    }
                }
            }
        }
        let task = current.as_ref().map(|t| self.view(t, own_turn));
        if let Some(t) = current {
            self.last_seen.insert(t.id.clone(), t);
        }
        let outcome = if let Some(f) = failed {
            f
        } else {
            match &x.ended {
                None => Outcome::Info {
                    why: "the stream was still open when the recording stopped".into(),
                },
                Some((_, Some(e), _)) => Outcome::Info { why: e.clone() },
                Some(_) => match states.last() {
                    Some(s) if crate::protocol::at_rest(s) => Outcome::Ok,
                    _ => Outcome::Info {
                        why: crate::client::history::ENDED_BEFORE_FINAL.into(),
                    },
                },
            }
        };
        (outcome, task, states, first.unwrap_or(false), observed)
    }

    /// The `final-task` lines; a task that replicas hold in different copies is noted,
    /// and the last copy in the file is taken.
    pub(super) fn final_tasks(
        &self,
        finals: &[(String, Value)],
        notes: &mut Vec<String>,
    ) -> BTreeMap<String, a2a::Task> {
        let mut out: BTreeMap<String, (String, TaskView)> = BTreeMap::new();
        for (replica, value) in finals {
            let Some(t) = wire::items(value).into_iter().find_map(|i| match i {
                Item::Task(t) => Some(t),
                _ => None,
            }) else {
                notes.push(format!(
                    "a final task from {replica} is not a task; skipped"
                ));
                continue;
            };
            let view = self.view(&t, None);
            if let Some((other, before)) = out.get(&view.id) {
                if before.artifacts != view.artifacts || before.state != view.state {
                    notes.push(format!(
                        "task {} differs between {other} ({:?} [{}]) and {replica} ({:?} [{}]); the copy of {replica} is taken",
                        view.id, before.state, before.artifacts.join(", "), view.state, view.artifacts.join(", ")
                    ));
                }
            }
            out.insert(view.id.clone(), (replica.clone(), view));
        }
        out.into_values()
            .map(|(_, v)| (v.id.clone(), task_of(&v)))
            .collect()
    }

    /// Without final tasks: each task as everything ever seen of it (every artifact and
    /// message, the last state), so the final-task part of no-lost-writes finds nothing.
    pub(super) fn seen_union(&self, history: &[Op]) -> BTreeMap<String, a2a::Task> {
        let mut out: BTreeMap<String, TaskView> = BTreeMap::new();
        for view in history.iter().filter_map(|o| o.task.as_ref()) {
            let all = out.entry(view.id.clone()).or_insert_with(|| view.clone());
            all.state = view.state.clone();
            for a in &view.artifacts {
                if !all.artifacts.contains(a) {
                    all.artifacts.push(a.clone());
                }
            }
            for m in &view.history {
                if !all.history.contains(m) {
                    all.history.push(m.clone());
                }
            }
        }
        out.into_values()
            .map(|v| (v.id.clone(), task_of(&v)))
            .collect()
    }
}

/// The state carried by the first event of a stream that repeats the event before it
/// exactly (a redelivery), if any; a new event in the same state is not one. Only events
/// that carry a state count (a repeated artifact update is not caught), and an event line
/// recorded twice with the same time is read once by [`super::recording::deduplicate`]
/// first, so a redelivery within one millisecond is lost to this check.
fn redelivered(events: &[(u64, Value)]) -> Option<TaskState> {
    events.windows(2).find_map(|pair| {
        let (before, event) = (pair[0].1.get("result")?, pair[1].1.get("result")?);
        if before != event {
            return None;
        }
        wire::items(event).into_iter().find_map(|item| match item {
            Item::Task(t) => t.state,
            Item::Status { state, .. } => state,
            _ => None,
        })
    })
}

/// A JSON-RPC error object as a `fail` outcome.
fn refusal(err: &Value) -> Outcome {
    Outcome::Fail {
        code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
        message: err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .into(),
    }
}

/// A 1.0 task with a view's id, state, artifact names and message ids.
fn task_of(v: &TaskView) -> a2a::Task {
    let artifacts: Vec<Value> = v
        .artifacts
        .iter()
        .enumerate()
        .map(|(i, n)| json!({"artifactId": format!("a{i}"), "name": n, "parts": []}))
        .collect();
    let history: Vec<Value> = v
        .history
        .iter()
        .map(|m| json!({"messageId": m, "role": "ROLE_USER", "parts": []}))
        .collect();
    serde_json::from_value(json!({
        "id": v.id, "contextId": v.context_id,
        "status": {"state": v.state},
        "artifacts": artifacts, "history": history,
    }))
    .expect("a task built from a view reads back")
}

/// What a recorded message carried besides its text, in either wire: the scripted data
/// part (read as the replicas read it, [`TurnInfo::from_data`]), a file (1.0's `raw` or
/// `url`, 0.3's `file`), or nothing else.
fn parts_of(message: &Value) -> Parts {
    let parts = parts(message);
    let has = |key: &str| parts.iter().any(|p| p.get(key).is_some());
    if scripted_data(message).is_some() {
        Parts::Data
    } else if has("raw") || has("url") || has("file") {
        Parts::File
    } else {
        Parts::Text
    }
}

/// What a recorded message asked of the agent ([`AgentShape`]): read from its scripted data
/// part, as the replicas read it; the default shape without one.
fn shape_of(message: &Value) -> AgentShape {
    scripted_data(message).map_or_else(AgentShape::default, AgentShape::from_data)
}

/// A recorded message's parts, in either wire.
fn parts(message: &Value) -> &[Value] {
    message
        .get("parts")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// A recorded message's scripted data part: the first whose data reads as a turn
/// ([`TurnInfo::from_data`], as the replicas read it).
fn scripted_data(message: &Value) -> Option<&Value> {
    parts(message)
        .iter()
        .filter_map(|p| p.get("data"))
        .find(|d| TurnInfo::from_data(d).is_some())
}
