//! Per-call expectations: `[[expect.call]]` (what one call answered) and `[[expect.task]]`
//! (the state a conversation's task ends in).
//!
//! Many hazards are about what a single call answered, not only about an invariant: a
//! continuation sent to the pod that lost the task is refused `-32001`; a cancel of a
//! finished task is refused `-32002`; a retry returns the first answer. A call is named by
//! its conversation, its method and (for a send) its turn, and by which attempt it was among
//! the calls that match, in the order they were made:
//!
//! ```toml
//! [[expect.call]]
//! conversation = "c1"
//! turn = 2
//! attempt = 2            # the second send of turn 2 (default 1)
//! outcome = "fail"       # ok | fail | info
//! code = -32001          # the JSON-RPC error code (a fail)
//!
//! [[expect.call]]
//! conversation = "c1"
//! method = "cancel"
//! state = "canceled"     # the state of the task the answer showed
//!
//! [[expect.task]]
//! conversation = "c1"
//! state = "completed"    # the conversation's task at the end of the run
//! ```
//!
//! `stream-states = ["working", "completed"]` names every state a stream carried, in order.
//! The judging is in [`crate::sim`] (`judge`): each expectation that does not hold is a
//! problem of its own, saying what the call answered instead.

use serde::{Deserialize, Serialize};

/// Which kind of call an expectation names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CallMethod {
    /// SendMessage or SendStreamingMessage (a turn).
    #[default]
    Send,
    /// GetTask.
    Get,
    /// CancelTask.
    Cancel,
    /// SubscribeToTask.
    Subscribe,
    /// CreateTaskPushNotificationConfig.
    SetPush,
}

/// How a call ended, as `[expect]` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CallOutcome {
    /// Answered with a result.
    Ok,
    /// Refused with an error: the client was told it did not happen.
    Fail,
    /// No answer the client could act on (lost, timed out, cut off).
    Info,
}

/// What one call must have answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CallExpect {
    pub conversation: String,
    #[serde(default, skip_serializing_if = "is_send")]
    pub method: CallMethod,
    /// The turn, for a send; without it, any send of the conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// Which of the matching calls, from 1, in the order they were made (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<CallOutcome>,
    /// The JSON-RPC error code of a refusal (implies `outcome = "fail"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i64>,
    /// The state of the task the answer showed (`completed`, `input-required`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Every state a stream carried, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_states: Option<Vec<String>>,
}

fn is_send(m: &CallMethod) -> bool {
    *m == CallMethod::Send
}

impl CallExpect {
    /// `send c1#2 (attempt 2)`: the call, in words.
    pub fn label(&self) -> String {
        let method = match self.method {
            CallMethod::Send => "send",
            CallMethod::Get => "get",
            CallMethod::Cancel => "cancel",
            CallMethod::Subscribe => "subscribe",
            CallMethod::SetPush => "set-push",
        };
        let turn = self.turn.map(|t| format!("#{t}")).unwrap_or_default();
        let attempt = self.attempt.unwrap_or(1);
        format!(
            "{method} {}{turn}{}",
            self.conversation,
            if attempt == 1 {
                String::new()
            } else {
                format!(" (attempt {attempt})")
            }
        )
    }
}

/// The state a conversation's task must end in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TaskExpect {
    pub conversation: String,
    /// `completed`, `canceled`, ...; `lost` when the task must exist nowhere at the end.
    pub state: String,
}

/// The task states `[expect]` may name, and `lost`.
pub const STATE_WORDS: &[&str] = &[
    "submitted",
    "working",
    "input-required",
    "auth-required",
    "completed",
    "canceled",
    "failed",
    "rejected",
];
