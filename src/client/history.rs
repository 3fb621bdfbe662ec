//! The client-side history of a run: every operation as invoke, then `ok`, `fail` or `info`.
//!
//! As in Jepsen, `info` means the outcome is unknown (a timeout, a lost reply, a connection
//! cut, a gateway error): the operation may or may not have taken effect, and every checker
//! must allow for both. A `fail` is a definite refusal (a JSON-RPC error, HTTP 409).

use std::cell::RefCell;
use std::rc::Rc;

use a2a::{Task, TaskState};

use crate::client::Parts;
use crate::host::Host;
use crate::replica::AgentShape;

/// What an operation asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpKind {
    /// Turn `turn` of `conversation`, with its messageId.
    Send {
        conversation: String,
        turn: u32,
        message_id: String,
        blocking: bool,
        /// Sent with a contextId other than the conversation's (A2A-BEHAVIOURS.md §6.10).
        foreign_context: bool,
        /// Sent with its taskId and no contextId, as official clients send follow-ups: the
        /// server must infer the context from the task (A2A 1.0, multi-turn).
        omitted_context: bool,
        /// Sent with a taskId the scenario named (`task_id`), not the conversation's task:
        /// its refusal says nothing of the conversation's task.
        named_task: bool,
        /// The turn asks for an action that needs the user's authorisation.
        needs_auth: bool,
        /// An answer on the turn's task with this text instead of the turn's own message
        /// (its messageId is the turn's with `-replyN`).
        reply: Option<String>,
        /// What the message carried besides its text.
        parts: Parts,
        /// What the message asked of the agent: its business effect or none, and its
        /// progress updates ([`AgentShape`]).
        shape: AgentShape,
    },
    /// GetTask of the conversation's task.
    Get { conversation: String },
    /// CancelTask of the conversation's task.
    Cancel { conversation: String },
    /// SubscribeToTask of the conversation's task.
    Subscribe { conversation: String },
    /// CreateTaskPushNotificationConfig for the conversation's task.
    SetPush { conversation: String },
}

impl OpKind {
    /// The conversation the operation belongs to.
    pub fn conversation(&self) -> &str {
        match self {
            OpKind::Send { conversation, .. }
            | OpKind::Get { conversation }
            | OpKind::Cancel { conversation }
            | OpKind::Subscribe { conversation }
            | OpKind::SetPush { conversation } => conversation,
        }
    }

    /// A short name for tables and traces.
    pub fn label(&self) -> String {
        match self {
            OpKind::Send {
                conversation, turn, ..
            } => format!("send {conversation}#{turn}"),
            OpKind::Get { conversation } => format!("get {conversation}"),
            OpKind::Cancel { conversation } => format!("cancel {conversation}"),
            OpKind::Subscribe { conversation } => format!("subscribe {conversation}"),
            OpKind::SetPush { conversation } => format!("set-push {conversation}"),
        }
    }
}

/// The [`Outcome::Info`] of a stream whose server ended it cleanly (the body ended, no
/// error) before a final state: the last state it carried was not at rest.
pub const ENDED_BEFORE_FINAL: &str = "stream ended before a final state";

/// How an operation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It happened, and this is what the server said.
    Ok,
    /// It did not happen: a JSON-RPC error code, or an HTTP status.
    Fail { code: i64, message: String },
    /// Unknown: it may or may not have happened.
    Info { why: String },
}

impl Outcome {
    /// `ok`, `fail` or `info`.
    pub fn word(&self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Fail { .. } => "fail",
            Outcome::Info { .. } => "info",
        }
    }

    /// Whether this is a stream its server ended cleanly before a final state
    /// ([`ENDED_BEFORE_FINAL`]).
    pub fn ended_before_final(&self) -> bool {
        matches!(self, Outcome::Info { why } if why == ENDED_BEFORE_FINAL)
    }
}

/// What a response said about a task: enough to check writes without keeping whole tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskView {
    pub id: String,
    pub context_id: String,
    pub state: TaskState,
    /// Artifact names, in order.
    pub artifacts: Vec<String>,
    /// messageIds in the task's history, in order.
    pub history: Vec<String>,
}

impl TaskView {
    /// The view of a task.
    pub fn of(task: &Task) -> TaskView {
        TaskView {
            id: task.id.clone(),
            context_id: task.context_id.clone(),
            state: task.status.state.clone(),
            artifacts: crate::store::artifact_names(task),
            history: task
                .history
                .iter()
                .flatten()
                .map(|m| m.message_id.clone())
                .collect(),
        }
    }
}

/// One completed operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    /// Position in invoke order.
    pub id: u64,
    pub kind: OpKind,
    /// Who made the call ([`crate::auth::ANONYMOUS`]: no token).
    pub principal: String,
    pub invoke_ms: u64,
    pub complete_ms: u64,
    pub outcome: Outcome,
    /// The replica that answered, when one did (as it named itself in the
    /// `x-a2a-chaos-replica` header).
    pub replica: Option<Host>,
    /// The whole task in the answer, if any (for streams that began with a Task snapshot:
    /// the snapshot with every later event folded in).
    pub task: Option<TaskView>,
    /// For streams that began without a Task snapshot (a continuation's stream starts with
    /// a status update): the task the events named, its last state and only the artifacts
    /// the stream added, with no history. Enough to tell that a turn was acknowledged; not
    /// a read of the whole task, so checkers that compare reads use [`Op::task`] only.
    pub streamed: Option<TaskView>,
    /// For streams: every task state seen, in order.
    pub stream_states: Vec<TaskState>,
    /// For streams: whether the first event was a Task snapshot.
    pub stream_snapshot_first: bool,
    /// For streams: the state carried by the first event that repeated the one before it
    /// byte for byte (the same event delivered twice). A new event in the same state (a
    /// Task event mid-stream, a progress update still `working`) is not one.
    pub stream_redelivered: Option<TaskState>,
}

impl Op {
    /// The name of the replica that answered, or `none` when none did: what a sentence
    /// about the operation says.
    pub fn replica_or(&self, none: &str) -> String {
        self.replica
            .as_ref()
            .map_or_else(|| none.to_string(), Host::to_string)
    }

    /// What the answer showed of the task: the whole task, or for a stream without a
    /// snapshot what its events showed. Use it to ask whether a turn was acknowledged (its
    /// artifact, the state it ended in), never to ask what a read left out.
    pub fn acknowledged(&self) -> Option<&TaskView> {
        self.task.as_ref().or(self.streamed.as_ref())
    }
}

/// The shared history of one run. Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct History {
    ops: Rc<RefCell<Vec<Op>>>,
    next: Rc<RefCell<u64>>,
}

impl History {
    /// Reserves an op id at invoke time.
    pub fn invoke(&self) -> u64 {
        let mut n = self.next.borrow_mut();
        *n += 1;
        *n - 1
    }

    /// Records a completed op.
    pub fn complete(&self, op: Op) {
        self.ops.borrow_mut().push(op);
    }

    /// Every op, in invoke order.
    pub fn ops(&self) -> Vec<Op> {
        let mut ops = self.ops.borrow().clone();
        ops.sort_by_key(|o| o.id);
        ops
    }
}
