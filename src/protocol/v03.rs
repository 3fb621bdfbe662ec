//! The A2A 0.3 JSON-RPC wire, translated at the edge to and from 1.0.
//!
//! A replica's handlers speak 1.0 only. A model that serves 0.3 (`wire.v03`) has its 0.3
//! requests translated here before they reach the 1.0 dispatch, and the 1.0 answers
//! translated back on their way out ([`crate::replica`]'s `rpc` edge); a simulated client
//! that speaks 0.3 translates the other way ([`crate::client`]). Nothing else knows 0.3.
//!
//! What 0.3 is, as a2a-sdk 1.3.0's `compat/v0_3/` (`jsonrpc_adapter.py`, `conversions.py`)
//! reads and writes it, and as Mastra (`@mastra/server` 1.69.0, natively 0.3) serves it:
//!
//! - slash method names (`message/send`, `message/stream`, `tasks/get`, `tasks/cancel`,
//!   `tasks/resubscribe`, `tasks/pushNotificationConfig/{set,get,list,delete}`; no list of
//!   tasks), no `A2A-Version` header (absent or empty means 0.3);
//! - bare results tagged with `kind`: `"task"`, `"message"`, `"status-update"` (with
//!   `final`), `"artifact-update"`; SendMessage's 1.0 `{task}`/`{message}` wrapper is gone;
//! - lower-case states (`working`, `input-required`, ..., `unknown` for unspecified) and
//!   roles (`user`, `agent`);
//! - parts tagged with `kind`: `{kind: text, text}`, `{kind: data, data: {...}}` (a
//!   non-object value as `{value: v}` with `metadata.data_part_compat`), `{kind: file, file:
//!   {uri | bytes, mimeType, name}}`;
//! - `configuration.blocking` (not `returnImmediately`), `pushNotificationConfig` (not
//!   `taskPushNotificationConfig`), `historyLength: 0` meaning all;
//! - a push config as `{taskId, pushNotificationConfig: {id, url, token, authentication:
//!   {schemes: [..], credentials}}}`; get and delete name it `{id: taskId,
//!   pushNotificationConfigId}`; list answers a bare array.

use serde_json::{json, Map, Value};

/// The 0.3 method names and the 1.0 methods they are served by.
pub const METHODS: &[(&str, &str)] = &[
    ("message/send", "SendMessage"),
    ("message/stream", "SendStreamingMessage"),
    ("tasks/get", "GetTask"),
    ("tasks/cancel", "CancelTask"),
    ("tasks/resubscribe", "SubscribeToTask"),
    (
        "tasks/pushNotificationConfig/set",
        "CreateTaskPushNotificationConfig",
    ),
    (
        "tasks/pushNotificationConfig/get",
        "GetTaskPushNotificationConfig",
    ),
    (
        "tasks/pushNotificationConfig/list",
        "ListTaskPushNotificationConfigs",
    ),
    (
        "tasks/pushNotificationConfig/delete",
        "DeleteTaskPushNotificationConfig",
    ),
];

/// The 0.3 task states and their 1.0 names (a2a-sdk 1.3.0 `_COMPAT_TO_CORE_TASK_STATE`).
const STATES: &[(&str, &str)] = &[
    ("submitted", "TASK_STATE_SUBMITTED"),
    ("working", "TASK_STATE_WORKING"),
    ("input-required", "TASK_STATE_INPUT_REQUIRED"),
    ("completed", "TASK_STATE_COMPLETED"),
    ("canceled", "TASK_STATE_CANCELED"),
    ("failed", "TASK_STATE_FAILED"),
    ("rejected", "TASK_STATE_REJECTED"),
    ("auth-required", "TASK_STATE_AUTH_REQUIRED"),
    ("unknown", "TASK_STATE_UNSPECIFIED"),
];

/// The error codes a 0.3 client knows (A2A 0.3 §8: JSON-RPC's and `-32001`..`-32007`).
const V03_CODES: &[i64] = &[
    -32700, -32600, -32601, -32602, -32603, -32001, -32002, -32003, -32004, -32005, -32006, -32007,
];

/// When a 0.3 `status-update` event says `final: true`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Final {
    /// On a terminal state only (a2a-sdk 1.3.0 `to_compat_task_status_update_event`).
    Terminal,
    /// On a terminal or interrupted state, where the stream ends (Mastra 1.69.0
    /// `handleTaskResubscribe`: `final: streamEnded`).
    AtRest,
}

/// The 1.0 method a 0.3 method name is served by.
pub fn v1_method(method: &str) -> Option<&'static str> {
    METHODS.iter().find(|(v03, _)| *v03 == method).map(|m| m.1)
}

/// The 0.3 name of a 1.0 method, when 0.3 has it (it has no ListTasks).
pub fn v03_method(method: &str) -> Option<&'static str> {
    METHODS.iter().find(|(_, v1)| *v1 == method).map(|m| m.0)
}

/// A 1.0 state's 0.3 name (`unknown` for anything else).
pub fn state_to_v03(state: &str) -> &'static str {
    STATES
        .iter()
        .find(|(_, v1)| *v1 == state)
        .map_or("unknown", |s| s.0)
}

/// A 0.3 state's 1.0 name.
pub fn state_to_v1(state: &str) -> Option<&'static str> {
    STATES.iter().find(|(v03, _)| *v03 == state).map(|s| s.1)
}

/// Whether a 0.3 client knows an error code; a2a-sdk 1.3.0 answers the others (`-32009`)
/// as `-32603` on its 0.3 endpoint (`jsonrpc_adapter.py` `_to_v03_jsonrpc_error`).
pub fn known_code(code: i64) -> bool {
    V03_CODES.contains(&code)
}

/// Copies the fields `keys` of `from` that are set into `to`, under the same names.
fn copy(from: &Value, to: &mut Map<String, Value>, keys: &[&str]) {
    for k in keys {
        if let Some(v) = from.get(*k).filter(|v| !v.is_null()) {
            to.insert((*k).to_string(), v.clone());
        }
    }
}

/// Why a 0.3 request cannot be read as 1.0: the sentence a server answers with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum V03Error {
    /// A value that must be an object is not (`what`: `message`, `params`, ...).
    #[error("{what} must be an object")]
    NotAnObject { what: &'static str },
    /// A required string field is missing or not a string.
    #[error("{what}.{key} is required (a string)")]
    MissingString {
        what: &'static str,
        key: &'static str,
    },
    /// `message.parts` is not an array.
    #[error("message.parts must be an array")]
    PartsNotAnArray,
    /// A file part with neither `uri` nor `bytes`.
    #[error("file part's file needs uri or bytes")]
    FileWithoutContent,
    /// A part `kind` 0.3 does not have (`None`: no kind at all).
    #[error("part kind {0:?} is not text, data or file")]
    PartKind(Option<String>),
    /// A `message.role` 0.3 does not have.
    #[error("message.role {0:?} is not user or agent")]
    Role(Option<String>),
    /// A 1.0 method 0.3 has no request for.
    #[error("{0} has no 0.3 form")]
    NoV03Form(String),
}

fn object(v: &Value, what: &'static str) -> Result<(), V03Error> {
    if v.is_object() {
        Ok(())
    } else {
        Err(V03Error::NotAnObject { what })
    }
}

fn string<'a>(v: &'a Value, key: &'static str, what: &'static str) -> Result<&'a str, V03Error> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or(V03Error::MissingString { what, key })
}

// ---- 1.0 -> 0.3 -------------------------------------------------------------------------

/// A 1.0 part in its 0.3 form (a2a-sdk 1.3.0 `to_compat_part`).
pub fn part_to_v03(p: &Value) -> Value {
    let mut out = Map::new();
    let mut metadata = p.get("metadata").filter(|m| m.is_object()).cloned();
    if let Some(text) = p.get("text") {
        out.insert("kind".into(), json!("text"));
        out.insert("text".into(), text.clone());
    } else if let Some(data) = p.get("data") {
        out.insert("kind".into(), json!("data"));
        if data.is_object() {
            out.insert("data".into(), data.clone());
        } else {
            out.insert("data".into(), json!({ "value": data }));
            let m = metadata.get_or_insert_with(|| json!({}));
            m["data_part_compat"] = json!(true);
        }
    } else {
        let mut file = Map::new();
        if let Some(url) = p.get("url") {
            file.insert("uri".into(), url.clone());
        } else if let Some(raw) = p.get("raw") {
            file.insert("bytes".into(), raw.clone());
        }
        if let Some(m) = p.get("mediaType") {
            file.insert("mimeType".into(), m.clone());
        }
        if let Some(n) = p.get("filename") {
            file.insert("name".into(), n.clone());
        }
        out.insert("kind".into(), json!("file"));
        out.insert("file".into(), Value::Object(file));
    }
    if let Some(m) = metadata {
        out.insert("metadata".into(), m);
    }
    Value::Object(out)
}

fn parts_to_v03(parts: Option<&Value>) -> Value {
    Value::Array(
        parts
            .and_then(Value::as_array)
            .map(|ps| ps.iter().map(part_to_v03).collect())
            .unwrap_or_default(),
    )
}

/// A 1.0 message in its 0.3 form.
pub fn message_to_v03(m: &Value) -> Value {
    let mut out = Map::new();
    out.insert("kind".into(), json!("message"));
    copy(m, &mut out, &["messageId"]);
    let role = if m["role"] == "ROLE_AGENT" {
        "agent"
    } else {
        "user"
    };
    out.insert("role".into(), json!(role));
    out.insert("parts".into(), parts_to_v03(m.get("parts")));
    copy(
        m,
        &mut out,
        &[
            "contextId",
            "taskId",
            "referenceTaskIds",
            "metadata",
            "extensions",
        ],
    );
    Value::Object(out)
}

fn status_to_v03(s: &Value) -> Value {
    let mut out = Map::new();
    out.insert(
        "state".into(),
        json!(state_to_v03(s["state"].as_str().unwrap_or(""))),
    );
    if let Some(m) = s.get("message").filter(|m| m.is_object()) {
        out.insert("message".into(), message_to_v03(m));
    }
    copy(s, &mut out, &["timestamp"]);
    Value::Object(out)
}

fn artifact_to_v03(a: &Value) -> Value {
    let mut out = Map::new();
    copy(a, &mut out, &["artifactId", "name", "description"]);
    out.insert("parts".into(), parts_to_v03(a.get("parts")));
    copy(a, &mut out, &["metadata", "extensions"]);
    Value::Object(out)
}

fn nonempty_array(v: Option<&Value>) -> Option<&Vec<Value>> {
    v.and_then(Value::as_array).filter(|a| !a.is_empty())
}

/// A 1.0 task in its 0.3 form (a2a-sdk 1.3.0 `to_compat_task`: empty history and
/// artifacts left out).
pub fn task_to_v03(t: &Value) -> Value {
    let mut out = Map::new();
    out.insert("kind".into(), json!("task"));
    copy(t, &mut out, &["id", "contextId"]);
    out.insert("status".into(), status_to_v03(&t["status"]));
    if let Some(h) = nonempty_array(t.get("history")) {
        out.insert(
            "history".into(),
            Value::Array(h.iter().map(message_to_v03).collect()),
        );
    }
    if let Some(a) = nonempty_array(t.get("artifacts")) {
        out.insert(
            "artifacts".into(),
            Value::Array(a.iter().map(artifact_to_v03).collect()),
        );
    }
    copy(t, &mut out, &["metadata"]);
    Value::Object(out)
}

/// A 1.0 push config in its 0.3 `TaskPushNotificationConfig` form.
pub fn push_config_to_v03(c: &Value) -> Value {
    let mut inner = Map::new();
    inner.insert("url".into(), c.get("url").cloned().unwrap_or(json!("")));
    copy(c, &mut inner, &["id", "token"]);
    if let Some(a) = c.get("authentication").filter(|a| a.is_object()) {
        let mut auth = Map::new();
        let schemes = a
            .get("scheme")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        auth.insert(
            "schemes".into(),
            json!(schemes.into_iter().collect::<Vec<_>>()),
        );
        copy(a, &mut auth, &["credentials"]);
        inner.insert("authentication".into(), Value::Object(auth));
    }
    json!({ "taskId": c.get("taskId").cloned().unwrap_or(json!("")), "pushNotificationConfig": inner })
}

/// One 1.0 stream event (`{task}`, `{message}`, `{statusUpdate}`, `{artifactUpdate}`) as
/// the bare, `kind`-tagged 0.3 event.
pub fn event_to_v03(e: &Value, fin: Final) -> Value {
    if let Some(t) = e.get("task") {
        return task_to_v03(t);
    }
    if let Some(m) = e.get("message") {
        return message_to_v03(m);
    }
    if let Some(s) = e.get("statusUpdate") {
        let status = status_to_v03(&s["status"]);
        let state = status["state"].as_str().unwrap_or("");
        let terminal = matches!(state, "completed" | "canceled" | "failed" | "rejected");
        let at_rest = terminal || matches!(state, "input-required" | "auth-required");
        let mut out = Map::new();
        out.insert("kind".into(), json!("status-update"));
        copy(s, &mut out, &["taskId", "contextId"]);
        out.insert("status".into(), status);
        let last = match fin {
            Final::Terminal => terminal,
            Final::AtRest => at_rest,
        };
        out.insert("final".into(), json!(last));
        copy(s, &mut out, &["metadata"]);
        return Value::Object(out);
    }
    if let Some(a) = e.get("artifactUpdate") {
        let mut out = Map::new();
        out.insert("kind".into(), json!("artifact-update"));
        copy(a, &mut out, &["taskId", "contextId"]);
        out.insert("artifact".into(), artifact_to_v03(&a["artifact"]));
        out.insert(
            "append".into(),
            json!(a["append"].as_bool().unwrap_or(false)),
        );
        out.insert(
            "lastChunk".into(),
            json!(a["lastChunk"].as_bool().unwrap_or(false)),
        );
        copy(a, &mut out, &["metadata"]);
        return Value::Object(out);
    }
    e.clone()
}

/// A 1.0 method's result in its 0.3 form.
pub fn result_to_v03(v1_method: &str, r: &Value, fin: Final) -> Value {
    match v1_method {
        "SendMessage" | "SendStreamingMessage" | "SubscribeToTask" => event_to_v03(r, fin),
        "GetTask" | "CancelTask" => task_to_v03(r),
        "CreateTaskPushNotificationConfig" | "GetTaskPushNotificationConfig" => {
            push_config_to_v03(r)
        }
        "ListTaskPushNotificationConfigs" => Value::Array(
            r["configs"]
                .as_array()
                .map(|cs| cs.iter().map(push_config_to_v03).collect())
                .unwrap_or_default(),
        ),
        _ => r.clone(),
    }
}

/// A 1.0 request's params in their 0.3 form (what a 0.3 client sends).
pub fn params_to_v03(v1_method: &str, p: &Value) -> Value {
    match v1_method {
        "SendMessage" | "SendStreamingMessage" => {
            let mut out = Map::new();
            out.insert("message".into(), message_to_v03(&p["message"]));
            if let Some(c) = p.get("configuration").filter(|c| c.is_object()) {
                let mut cfg = Map::new();
                copy(c, &mut cfg, &["acceptedOutputModes", "historyLength"]);
                if let Some(ri) = c.get("returnImmediately").and_then(Value::as_bool) {
                    cfg.insert("blocking".into(), json!(!ri));
                }
                if let Some(push) = c.get("taskPushNotificationConfig") {
                    cfg.insert(
                        "pushNotificationConfig".into(),
                        push_config_to_v03(push)["pushNotificationConfig"].clone(),
                    );
                }
                out.insert("configuration".into(), Value::Object(cfg));
            }
            copy(p, &mut out, &["metadata"]);
            Value::Object(out)
        }
        "CreateTaskPushNotificationConfig" => push_config_to_v03(p),
        "GetTaskPushNotificationConfig" | "DeleteTaskPushNotificationConfig" => {
            json!({ "id": p["taskId"], "pushNotificationConfigId": p["id"] })
        }
        "ListTaskPushNotificationConfigs" => json!({ "id": p["taskId"] }),
        _ => p.clone(),
    }
}

// ---- 0.3 -> 1.0 -------------------------------------------------------------------------

/// A 0.3 part in its 1.0 form (a2a-sdk 1.3.0 `to_core_part`); `Err` for a part 0.3 does
/// not allow.
pub fn part_to_v1(p: &Value) -> Result<Value, V03Error> {
    object(p, "part")?;
    let mut out = Map::new();
    let mut metadata = p.get("metadata").filter(|m| m.is_object()).cloned();
    match p["kind"].as_str() {
        Some("text") => {
            out.insert("text".into(), json!(string(p, "text", "text part")?));
        }
        Some("data") => {
            let data = &p["data"];
            object(data, "data part's data")?;
            let compat = metadata
                .as_mut()
                .and_then(Value::as_object_mut)
                .and_then(|m| m.remove("data_part_compat"))
                .is_some_and(|v| v == json!(true));
            let value = if compat {
                data["value"].clone()
            } else {
                data.clone()
            };
            out.insert("data".into(), value);
        }
        Some("file") => {
            let f = &p["file"];
            object(f, "file part's file")?;
            if let Some(uri) = f.get("uri").and_then(Value::as_str) {
                out.insert("url".into(), json!(uri));
            } else if let Some(b) = f.get("bytes").and_then(Value::as_str) {
                out.insert("raw".into(), json!(b));
            } else {
                return Err(V03Error::FileWithoutContent);
            }
            if let Some(m) = f.get("mimeType").filter(|m| !m.is_null()) {
                out.insert("mediaType".into(), m.clone());
            }
            if let Some(n) = f.get("name").filter(|n| !n.is_null()) {
                out.insert("filename".into(), n.clone());
            }
        }
        other => return Err(V03Error::PartKind(other.map(str::to_string))),
    }
    if let Some(m) = metadata.filter(|m| m.as_object().is_some_and(|o| !o.is_empty())) {
        out.insert("metadata".into(), m);
    }
    Ok(Value::Object(out))
}

fn parts_to_v1(parts: &Value) -> Result<Value, V03Error> {
    let ps = parts.as_array().ok_or(V03Error::PartsNotAnArray)?;
    ps.iter().map(part_to_v1).collect::<Result<_, _>>()
}

/// A 0.3 message in its 1.0 form; `Err` when it is not a 0.3 message.
pub fn message_to_v1(m: &Value) -> Result<Value, V03Error> {
    object(m, "message")?;
    let mut out = Map::new();
    out.insert(
        "messageId".into(),
        json!(string(m, "messageId", "message")?),
    );
    let role = match m["role"].as_str() {
        Some("user") => "ROLE_USER",
        Some("agent") => "ROLE_AGENT",
        other => return Err(V03Error::Role(other.map(str::to_string))),
    };
    out.insert("role".into(), json!(role));
    out.insert("parts".into(), parts_to_v1(&m["parts"])?);
    copy(
        m,
        &mut out,
        &[
            "contextId",
            "taskId",
            "referenceTaskIds",
            "metadata",
            "extensions",
        ],
    );
    Ok(Value::Object(out))
}

/// A 0.3 push config (`PushNotificationConfig`) as the fields of a 1.0
/// `TaskPushNotificationConfig` for `task_id`.
fn push_config_to_v1(task_id: &Value, c: &Value) -> Result<Value, V03Error> {
    object(c, "pushNotificationConfig")?;
    let mut out = Map::new();
    out.insert("taskId".into(), task_id.clone());
    out.insert(
        "url".into(),
        json!(string(c, "url", "pushNotificationConfig")?),
    );
    copy(c, &mut out, &["id", "token"]);
    if let Some(a) = c.get("authentication").filter(|a| a.is_object()) {
        let mut auth = Map::new();
        let scheme = a["schemes"]
            .as_array()
            .and_then(|s| s.first())
            .and_then(Value::as_str)
            .unwrap_or("");
        auth.insert("scheme".into(), json!(scheme));
        copy(a, &mut auth, &["credentials"]);
        out.insert("authentication".into(), Value::Object(auth));
    }
    Ok(Value::Object(out))
}

/// `historyLength` as 1.0 reads it: 0.3's `0` means all, so it is left out (a2a-sdk
/// 1.3.0 `to_core_get_task_request`).
fn history_length(from: &Value, to: &mut Map<String, Value>) {
    if let Some(n) = from
        .get("historyLength")
        .filter(|n| !n.is_null() && n.as_i64() != Some(0))
    {
        to.insert("historyLength".into(), n.clone());
    }
}

/// A 0.3 request's params in their 1.0 form, for the 1.0 method `v1_method`; `Err` when
/// they are not what 0.3 allows (a2a-sdk answers `-32600`: it validates the whole request).
pub fn params_to_v1(v1_method: &str, p: &Value) -> Result<Value, V03Error> {
    object(p, "params")?;
    let task_id = || -> Result<Value, V03Error> { Ok(json!(string(p, "id", "params")?)) };
    Ok(match v1_method {
        "SendMessage" | "SendStreamingMessage" => {
            let mut out = Map::new();
            out.insert("message".into(), message_to_v1(&p["message"])?);
            if let Some(c) = p.get("configuration").filter(|c| !c.is_null()) {
                object(c, "configuration")?;
                let mut cfg = Map::new();
                copy(c, &mut cfg, &["acceptedOutputModes"]);
                history_length(c, &mut cfg);
                if let Some(b) = c.get("blocking").and_then(Value::as_bool) {
                    cfg.insert("returnImmediately".into(), json!(!b));
                }
                if let Some(push) = c.get("pushNotificationConfig").filter(|v| !v.is_null()) {
                    cfg.insert(
                        "taskPushNotificationConfig".into(),
                        push_config_to_v1(&json!(""), push)?,
                    );
                }
                out.insert("configuration".into(), Value::Object(cfg));
            }
            copy(p, &mut out, &["metadata"]);
            Value::Object(out)
        }
        "GetTask" => {
            let mut out = Map::new();
            out.insert("id".into(), task_id()?);
            history_length(p, &mut out);
            Value::Object(out)
        }
        "CancelTask" => {
            let mut out = Map::new();
            out.insert("id".into(), task_id()?);
            copy(p, &mut out, &["metadata"]);
            Value::Object(out)
        }
        "SubscribeToTask" => json!({ "id": task_id()? }),
        "CreateTaskPushNotificationConfig" => {
            let t = json!(string(p, "taskId", "params")?);
            push_config_to_v1(&t, &p["pushNotificationConfig"])?
        }
        "GetTaskPushNotificationConfig" | "DeleteTaskPushNotificationConfig" => {
            let t = task_id()?;
            // Without a config id, the task's default config (whose id is the task id).
            let id = p
                .get("pushNotificationConfigId")
                .and_then(Value::as_str)
                .map_or_else(|| t.clone(), |s| json!(s));
            json!({ "taskId": t, "id": id })
        }
        "ListTaskPushNotificationConfigs" => json!({ "taskId": task_id()? }),
        other => return Err(V03Error::NoV03Form(other.to_string())),
    })
}

fn status_to_v1(s: &Value) -> Value {
    let mut out = Map::new();
    let state = state_to_v1(s["state"].as_str().unwrap_or("")).unwrap_or("TASK_STATE_UNSPECIFIED");
    out.insert("state".into(), json!(state));
    if let Some(m) = s.get("message").filter(|m| m.is_object()) {
        if let Ok(m) = message_to_v1(m) {
            out.insert("message".into(), m);
        }
    }
    copy(s, &mut out, &["timestamp"]);
    Value::Object(out)
}

fn artifact_to_v1(a: &Value) -> Value {
    let mut out = Map::new();
    copy(a, &mut out, &["artifactId", "name", "description"]);
    let parts = a["parts"].as_array().map_or_else(Vec::new, |ps| {
        ps.iter().filter_map(|p| part_to_v1(p).ok()).collect()
    });
    out.insert("parts".into(), Value::Array(parts));
    copy(a, &mut out, &["metadata", "extensions"]);
    Value::Object(out)
}

/// A 0.3 task in its 1.0 form.
pub fn task_to_v1(t: &Value) -> Value {
    let mut out = Map::new();
    copy(t, &mut out, &["id", "contextId"]);
    out.insert("status".into(), status_to_v1(&t["status"]));
    if let Some(a) = t["artifacts"].as_array() {
        out.insert(
            "artifacts".into(),
            Value::Array(a.iter().map(artifact_to_v1).collect()),
        );
    }
    if let Some(h) = t["history"].as_array() {
        let msgs = h.iter().filter_map(|m| message_to_v1(m).ok()).collect();
        out.insert("history".into(), Value::Array(msgs));
    }
    copy(t, &mut out, &["metadata"]);
    Value::Object(out)
}

/// A 0.3 result or stream event in its 1.0 form, by its `kind` (a task as `{task}`, as
/// SendMessage and the stream events carry it; GetTask's reader takes either); a push
/// config, a list of them and anything else as they are in 1.0.
pub fn result_to_v1(r: &Value) -> Value {
    match r["kind"].as_str() {
        Some("task") => json!({ "task": task_to_v1(r) }),
        Some("message") => match message_to_v1(r) {
            Ok(m) => json!({ "message": m }),
            Err(_) => r.clone(),
        },
        Some("status-update") => {
            let mut s = Map::new();
            copy(r, &mut s, &["taskId", "contextId", "metadata"]);
            s.insert("status".into(), status_to_v1(&r["status"]));
            json!({ "statusUpdate": s })
        }
        Some("artifact-update") => {
            let mut a = Map::new();
            copy(
                r,
                &mut a,
                &["taskId", "contextId", "append", "lastChunk", "metadata"],
            );
            a.insert("artifact".into(), artifact_to_v1(&r["artifact"]));
            json!({ "artifactUpdate": a })
        }
        _ => {
            if let Some(cfg) = r.get("pushNotificationConfig") {
                return push_config_to_v1(&r["taskId"], cfg).unwrap_or_else(|_| r.clone());
            }
            if let Some(list) = r.as_array() {
                let configs: Vec<Value> = list.iter().map(result_to_v1).collect();
                return json!({ "configs": configs });
            }
            r.clone()
        }
    }
}

/// The 0.3 fields a2a-sdk 1.3.0 adds to a 1.0 card (`response_helpers.agent_card_to_dict`
/// merging `conversions.to_compat_agent_card`) once the card declares a 0.3 interface: a
/// second `supportedInterfaces` entry, JSON-RPC `protocolVersion: "0.3"` at the 1.0 URL (the
/// SDK adds the 0.3 fields only for an interface whose version is empty or in [0.3, 1.0);
/// `enable_v0_3_compat` alone leaves the card 1.0-only, so a deployer that wants 0.3 clients
/// to find the agent declares one, as tests/conformance/sdk_peer.py `--v03-compat` does);
/// then `url`, `preferredTransport` and `protocolVersion` of that interface, and each
/// security scheme and requirement also in its 0.3 form (`{type: http, scheme,
/// bearerFormat}`, `{name: []}`), merged into the 1.0 objects. Measured against the SDK
/// peer in docs/CONFORMANCE.md. A card with no interface is left as it is.
pub fn card_with_v03_interface(card: &mut Value) {
    let Some(url) = card.pointer("/supportedInterfaces/0/url").cloned() else {
        return;
    };
    if let Some(list) = card["supportedInterfaces"].as_array_mut() {
        list.push(json!({"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}));
    }
    if let Some(schemes) = card
        .get_mut("securitySchemes")
        .and_then(Value::as_object_mut)
    {
        for scheme in schemes.values_mut() {
            let http = scheme["httpAuthSecurityScheme"].clone();
            if let (Some(obj), Some(h)) = (scheme.as_object_mut(), http.as_object()) {
                obj.insert("type".into(), json!("http"));
                for key in ["scheme", "bearerFormat", "description"] {
                    if let Some(v) = h.get(key) {
                        obj.insert(key.into(), v.clone());
                    }
                }
            }
        }
    }
    let security: Vec<Value> = card["securityRequirements"]
        .as_array()
        .map(|reqs| {
            reqs.iter()
                .map(|r| {
                    let names = r["schemes"].as_object().cloned().unwrap_or_default();
                    Value::Object(names.into_iter().map(|(k, _)| (k, json!([]))).collect())
                })
                .collect()
        })
        .unwrap_or_default();
    if let Some(obj) = card.as_object_mut() {
        obj.insert("url".into(), url);
        obj.insert("preferredTransport".into(), json!("JSONRPC"));
        obj.insert("protocolVersion".into(), json!("0.3"));
        if !security.is_empty() {
            obj.insert("security".into(), Value::Array(security));
        }
    }
}

/// The card of a natively 0.3 server, in the shape Mastra (`@mastra/server` 1.69.0,
/// `getAgentCardByIdHandler`) serves it, measured on tests/peers/mastra in
/// docs/CONFORMANCE.md: the 0.3 fields only (no `supportedInterfaces`): `url` (the 1.0
/// card's interface URL), `protocolVersion: "0.3.0"`, `additionalInterfaces: []`,
/// `supportsAuthenticatedExtendedCard: false`, `security` and `securitySchemes` (empty when
/// the card declares none; in 0.3 form otherwise), capabilities with
/// `stateTransitionHistory: false` and `extensions: []`, text-only input and output modes.
/// Name, description, version and skills are the 1.0 card's; Mastra's `provider` (itself)
/// is left out.
pub fn card_native(v1: &Value) -> Value {
    let mut compat = v1.clone();
    card_with_v03_interface(&mut compat);
    let mut schemes = Map::new();
    if let Some(list) = v1["securitySchemes"].as_object() {
        for (name, scheme) in list {
            let h = &scheme["httpAuthSecurityScheme"];
            let mut s = Map::new();
            s.insert("type".into(), json!("http"));
            copy(h, &mut s, &["scheme", "bearerFormat", "description"]);
            schemes.insert(name.clone(), Value::Object(s));
        }
    }
    json!({
        "name": v1["name"],
        "description": v1["description"],
        "url": compat["url"],
        "version": v1["version"],
        "protocolVersion": "0.3.0",
        "additionalInterfaces": [],
        "supportsAuthenticatedExtendedCard": false,
        "security": compat.get("security").cloned().unwrap_or_else(|| json!([])),
        "securitySchemes": schemes,
        "capabilities": {
            "streaming": v1.pointer("/capabilities/streaming").cloned().unwrap_or(json!(false)),
            "pushNotifications": v1.pointer("/capabilities/pushNotifications").cloned().unwrap_or(json!(false)),
            "stateTransitionHistory": false,
            "extensions": []
        },
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": v1["skills"],
    })
}

#[cfg(test)]
#[path = "v03_tests.rs"]
mod tests;
