//! Authentication and authorisation: who a caller is ([`Caller`]), which tasks it may touch,
//! and the `auth-required` pause of a turn whose action needs the user's authorisation
//! ([`NEEDS_AUTH_KEY`]), with its resumption by an answer or an out-of-band grant.
//!
//! Knobs read: `auth.bearer`, `auth.card_bearer`, `auth.owner`,
//! `auth.auth_required_resume`, and `handler.cache_snapshot` (the paused task is cached).

use std::rc::Rc;

use a2a::{Message, Part, PartContent, Role, StreamResponse, Task, TaskState, TaskStatus};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::decide::subscribe::status_update;
use super::decide::Saved;
use super::{set_marker, ActiveTask, Refusal, Replica, TurnInfo, MARKER_KEY};
use crate::model::{AuthResume, BearerRule, OwnerScope};

/// The data-part key by which a turn asks for an action that needs the user's authorisation
/// (a payment, a booking): the agent answers it with `auth-required` until authorised.
pub const NEEDS_AUTH_KEY: &str = "needsAuthorization";

/// Whether a message's turn asks for an action that needs authorisation.
///
/// The key is read from the turn's data part, or from a text part that is the turn as JSON
/// (a client's message to a server that refuses data parts, [`crate::model::TurnIn::TextJson`]),
/// as [`TurnInfo::from_message`] reads the turn.
pub fn needs_auth(message: &Message) -> bool {
    let asks = |v: &Value| v.get(NEEDS_AUTH_KEY).and_then(Value::as_bool) == Some(true);
    message.parts.iter().any(|p| match &p.content {
        PartContent::Data(v) => asks(v),
        PartContent::Text(t) => super::turn_in_text(t).is_some_and(|v| asks(&v)),
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
    pub(super) fn owner(&self) -> &str {
        match self {
            Caller::Client(p) => p.as_deref().unwrap_or(""),
            Caller::Internal => "",
        }
    }
}

impl Replica {
    /// The `[auth]` check of a request: the caller, or why it gets a 401. A model that
    /// checks no token (or not on the card) reads none: its callers are anonymous.
    pub(super) fn authenticate(
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
    pub(super) fn may_touch(&self, caller: &Caller, task: &Task) -> bool {
        match (self.profile.auth.owner, caller) {
            (OwnerScope::None, _) | (_, Caller::Internal) => true,
            (OwnerScope::TokenSubject, _) => owner_of(task) == caller.owner(),
        }
    }

    /// Loads a task for `caller`: `None` when it does not exist or is another owner's.
    pub(super) async fn load_for(
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

    /// Whether the paused action of `task` may run now (`auth.auth_required_resume`): with
    /// `any-message`, when this message answers the request (the agent takes the answer as
    /// the authorisation); with `grant`, only when the identity provider holds a grant for
    /// the task (the owner's, when tasks are scoped to owners), whatever the message says.
    pub(super) fn authorised(&self, task: &Task, answering: bool) -> bool {
        match self.profile.auth.resume() {
            AuthResume::AnyMessage => answering,
            AuthResume::Grant => {
                let owner =
                    (self.profile.auth.owner == OwnerScope::TokenSubject).then(|| owner_of(task));
                self.links.grants.granted(&task.id, owner)
            }
        }
    }

    /// Pauses the turn: the task goes to `auth-required`, asking the user to authorise the
    /// action out of band; no effect, no artifact.
    pub(super) async fn ask_for_auth(
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
pub(super) fn auth_pending(task: &Task) -> bool {
    task.metadata
        .as_ref()
        .and_then(|m| m.get(MARKER_KEY))
        .and_then(|m| m.get("authPending"))
        .is_some()
}
