//! Reading A2A JSON-RPC as it crosses a real socket, in both wires: 1.0 (`SendMessage`,
//! `GetTask`, results as `{"task": …}`, `{"statusUpdate": …}`, `TASK_STATE_*` states) and
//! 0.3 (`message/send`, `tasks/get`, `kind`-tagged results, `input-required` states).
//!
//! What the recording proxy and `check-history` need of a message or an answer, and
//! nothing more: which method, which task and context, which states, artifacts and
//! messages.

use a2a::TaskState;
use serde_json::Value;

/// What a JSON-RPC method does, in either wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// SendMessage / message/send.
    Send,
    /// SendStreamingMessage / message/stream.
    Stream,
    /// GetTask / tasks/get.
    Get,
    /// CancelTask / tasks/cancel.
    Cancel,
    /// SubscribeToTask / tasks/resubscribe.
    Subscribe,
    /// CreateTaskPushNotificationConfig / tasks/pushNotificationConfig/set.
    SetPush,
    /// Anything else (listing tasks, the extended card, ...).
    Other,
}

/// The method named `name`.
pub fn method(name: &str) -> Method {
    match name {
        "SendMessage" | "message/send" => Method::Send,
        "SendStreamingMessage" | "message/stream" => Method::Stream,
        "GetTask" | "tasks/get" => Method::Get,
        "CancelTask" | "tasks/cancel" => Method::Cancel,
        "SubscribeToTask" | "TaskSubscription" | "tasks/resubscribe" => Method::Subscribe,
        "CreateTaskPushNotificationConfig"
        | "SetTaskPushNotificationConfig"
        | "tasks/pushNotificationConfig/set" => Method::SetPush,
        _ => Method::Other,
    }
}

/// Whether `name` is a 0.3 method (`message/send`): its names have a slash.
pub fn is_v03(name: &str) -> bool {
    name.contains('/')
}

/// A task state in either wire: `TASK_STATE_INPUT_REQUIRED` or `input-required`.
pub fn state(name: &str) -> Option<TaskState> {
    let plain = name
        .strip_prefix("TASK_STATE_")
        .unwrap_or(name)
        .to_ascii_lowercase()
        .replace('_', "-");
    Some(match plain.as_str() {
        "submitted" => TaskState::Submitted,
        "working" => TaskState::Working,
        "input-required" => TaskState::InputRequired,
        "auth-required" => TaskState::AuthRequired,
        "completed" => TaskState::Completed,
        "canceled" | "cancelled" => TaskState::Canceled,
        "failed" => TaskState::Failed,
        "rejected" => TaskState::Rejected,
        _ => return None,
    })
}

/// A task as an answer showed it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WireTask {
    pub id: String,
    pub context_id: String,
    pub state: Option<TaskState>,
    /// Artifact names (an unnamed artifact by its id), in order.
    pub artifacts: Vec<String>,
    /// The messageIds of its history, in order, with whether each is the user's.
    pub history: Vec<(String, bool)>,
}

/// One thing an answer or a stream event carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A whole task (a snapshot).
    Task(WireTask),
    /// A task's new state.
    Status {
        task_id: String,
        context_id: String,
        state: Option<TaskState>,
    },
    /// A new or grown artifact.
    Artifact {
        task_id: String,
        context_id: String,
        name: String,
    },
    /// A message (a direct answer, or an agent message on a stream).
    Message,
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

fn task_of(v: &Value) -> WireTask {
    let artifacts = v
        .get("artifacts")
        .and_then(Value::as_array)
        .map(|list| list.iter().map(artifact_name).collect())
        .unwrap_or_default();
    let history = v
        .get("history")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|m| (text(m, "messageId"), is_user(m)))
                .collect()
        })
        .unwrap_or_default();
    WireTask {
        id: text(v, "id"),
        context_id: text(v, "contextId"),
        state: status_of(v),
        artifacts,
        history,
    }
}

fn artifact_name(a: &Value) -> String {
    a.get("name")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| text(a, "artifactId"))
}

/// Whether a message is the user's: `ROLE_USER` (1.0) or `user` (0.3).
pub fn is_user(m: &Value) -> bool {
    matches!(
        m.get("role").and_then(Value::as_str),
        Some("ROLE_USER" | "user")
    )
}

fn status_of(v: &Value) -> Option<TaskState> {
    v.pointer("/status/state")
        .and_then(Value::as_str)
        .and_then(state)
}

fn update(v: &Value, artifact: bool) -> Item {
    let (task_id, context_id) = (text(v, "taskId"), text(v, "contextId"));
    if artifact {
        Item::Artifact {
            task_id,
            context_id,
            name: v.get("artifact").map(artifact_name).unwrap_or_default(),
        }
    } else {
        Item::Status {
            task_id,
            context_id,
            state: status_of(v),
        }
    }
}

/// What a JSON-RPC `result` (or one stream event's `result`) carries, in either wire.
pub fn items(result: &Value) -> Vec<Item> {
    if let Some(t) = result.get("task") {
        return vec![Item::Task(task_of(t))];
    }
    if result.get("message").is_some() {
        return vec![Item::Message];
    }
    if let Some(u) = result.get("statusUpdate") {
        return vec![update(u, false)];
    }
    if let Some(u) = result.get("artifactUpdate") {
        return vec![update(u, true)];
    }
    match result.get("kind").and_then(Value::as_str) {
        Some("task") => vec![Item::Task(task_of(result))],
        Some("message") => vec![Item::Message],
        Some("status-update") => vec![update(result, false)],
        Some("artifact-update") => vec![update(result, true)],
        // A 1.0 GetTask or CancelTask answers with the task itself.
        _ if result.get("id").is_some() && result.get("status").is_some() => {
            vec![Item::Task(task_of(result))]
        }
        _ => Vec::new(),
    }
}

/// The (task id, context id) pairs a result names.
pub fn task_refs(result: &Value) -> Vec<(String, String)> {
    items(result)
        .into_iter()
        .filter_map(|i| match i {
            Item::Task(t) => Some((t.id, t.context_id)),
            Item::Status {
                task_id,
                context_id,
                ..
            }
            | Item::Artifact {
                task_id,
                context_id,
                ..
            } => Some((task_id, context_id)),
            Item::Message => None,
        })
        .filter(|(t, _)| !t.is_empty())
        .collect()
}

/// The task id a request is about: `params.id` (GetTask, CancelTask, SubscribeToTask),
/// `params.taskId` (push configs), or the message's `taskId`.
pub fn request_task(body: &Value) -> Option<String> {
    let params = body.get("params")?;
    [
        "/id",
        "/taskId",
        "/message/taskId",
        "/pushNotificationConfig/taskId",
    ]
    .iter()
    .find_map(|p| params.pointer(p).and_then(Value::as_str))
    .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_wires_read_alike() {
        assert_eq!(method("message/send"), method("SendMessage"));
        assert_eq!(state("TASK_STATE_INPUT_REQUIRED"), state("input-required"));
        let v1 = json!({"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"},
                 "artifacts": [{"artifactId": "a", "name": "turn-1", "parts": []}],
                 "history": [{"messageId": "m1", "role": "ROLE_USER", "parts": []}]}});
        let v03 = json!({"kind": "task", "id": "t", "contextId": "c", "status": {"state": "completed"},
                  "artifacts": [{"artifactId": "a", "name": "turn-1", "parts": []}],
                  "history": [{"messageId": "m1", "role": "user", "parts": [], "kind": "message"}]});
        assert_eq!(items(&v1), items(&v03));
        let s1 = json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}});
        let s03 = json!({"kind": "status-update", "taskId": "t", "contextId": "c", "status": {"state": "working"}, "final": false});
        assert_eq!(items(&s1), items(&s03));
        assert_eq!(task_refs(&s1), vec![("t".to_string(), "c".to_string())]);
    }
}
