//! A replica's view of its task store: the pod's own memory, or the `store` host over the
//! simulated network. Every operation is one [`StoreRequest`]: applied in place to the
//! memory store, or sent to the host, which applies it the same way ([`super::wire`]).
//!
//! A replica whose profile says its pool does not check pooled connections
//! (`store.pool_without_pre_ping`) keeps a [`Pool`]: the life of the store its connections
//! were made in. The first call after the store died and restarted fails on such a stale
//! connection without reaching the store ([`StoreError::Closed`]) and renews the pool; a
//! call that finds the connection broken renews it too (SQLAlchemy invalidates the whole
//! pool on a disconnect error).

use std::cell::Cell;
use std::fmt;
use std::rc::Rc;
use std::time::Duration;

use a2a::Task;

use crate::host::Host;
use crate::net::{self, Call};

use super::wire::{apply, StoreRequest, StoreResponse};
use super::{Claim, OutboxEntry, SaveError, SaveMode, SharedState, PORT};

/// A replica's view of its task store.
#[derive(Clone)]
pub enum TaskStore {
    /// The pod's own memory.
    Local(SharedState),
    /// The `store` host, with a per-call timeout, and the replica's pool when its
    /// connections go unchecked (`None`: every call connects afresh).
    Remote {
        timeout: Duration,
        pool: Option<Pool>,
    },
}

impl TaskStore {
    /// The `store` host as a replica of `knobs` reaches it: its call timeout (`world`
    /// unless the profile sets one), and a pool of its own when its pool goes unchecked.
    pub fn remote(knobs: &crate::model::StoreKnobs, world: Duration) -> TaskStore {
        TaskStore::Remote {
            timeout: knobs.call_timeout(world),
            pool: knobs.pool_without_pre_ping.then(Pool::opened),
        }
    }
}

/// The pooled connections of a replica whose pool does not check them: the store life they
/// were made in ([`crate::net::crashed::life`]), `None` once the pool was renewed.
#[derive(Clone, Debug)]
pub struct Pool(Rc<Cell<Option<u64>>>);

impl Pool {
    /// The pool of a replica starting now: it initialised the store, so it holds a
    /// connection of the store's current life (none while the store is down).
    pub fn opened() -> Pool {
        let up = !crate::net::crashed::is_down(HOST);
        Pool(Rc::new(Cell::new(
            up.then(|| crate::net::crashed::life(HOST)),
        )))
    }
}

/// The store host's name.
const HOST: &str = "store";

/// Why a store call has no answer. On the store's wire (inside [`SaveError`]) the words of
/// an unanswered call are a plain string, as they were before this type.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum StoreError {
    /// No answer: timed out, refused, reset or unreadable. Worth another try.
    Unanswered(String),
    /// The pooled connection belonged to the store's former life. Not tried again: the
    /// SDK retries contention only (a2a-sdk 1.3.0 `cluster/database_task_store.py`
    /// `_is_transient`), and SQLAlchemy raises this as an `InterfaceError`.
    Closed,
}

impl StoreError {
    /// Whether a call that failed so is worth another try (`store.transient_retries`).
    pub fn worth_retrying(&self) -> bool {
        matches!(self, StoreError::Unanswered(_))
    }
}

/// A reply of the wrong kind to a `what` call: unanswered, as far as the caller can tell.
fn unexpected(what: &str) -> StoreError {
    StoreError::Unanswered(format!("store: unexpected reply to {what}"))
}

/// Callers that answer in words take a store error as its words.
impl From<StoreError> for String {
    fn from(e: StoreError) -> String {
        e.to_string()
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Unanswered(why) => f.write_str(why),
            StoreError::Closed => {
                f.write_str("store connection is closed (pooled before the store restarted)")
            }
        }
    }
}

impl TaskStore {
    /// Carries one request to the store; `Err` when the store did not answer.
    async fn call(&self, req: StoreRequest) -> Result<StoreResponse, StoreError> {
        match self {
            TaskStore::Local(state) => Ok(apply(state, req, None)),
            TaskStore::Remote { timeout, pool } => {
                if let Some(Pool(made_in)) = pool {
                    let now = crate::net::crashed::life(HOST);
                    if made_in.get().is_some_and(|life| life != now) {
                        made_in.set(None);
                        return Err(StoreError::Closed);
                    }
                }
                let body = serde_json::to_vec(&req).expect("store requests serialise");
                // A database's transaction: each statement waits for the last one's answer.
                let call = Call {
                    exchange: net::Exchange::Conversation,
                    ..Call::post_json(HOST, PORT, "/", body, *timeout)
                };
                let sent = net::send(&call).await;
                if let Some(Pool(made_in)) = pool {
                    match &sent {
                        Ok(_) => made_in.set(Some(crate::net::crashed::life(HOST))),
                        Err(net::CallError::Broken(_) | net::CallError::Unconnected(_)) => {
                            made_in.set(None)
                        }
                        Err(net::CallError::Timeout) => {}
                    }
                }
                let reply = sent.map_err(|e| StoreError::Unanswered(format!("store {e}")))?;
                serde_json::from_slice(&reply.body)
                    .map_err(|e| StoreError::Unanswered(format!("store reply: {e}")))
            }
        }
    }

    /// Reads a task and its version; `Err` when the store did not answer.
    pub async fn get(&self, task_id: &str) -> Result<Option<(Task, u64)>, StoreError> {
        let req = StoreRequest::Get {
            task_id: task_id.to_string(),
        };
        match self.call(req).await? {
            StoreResponse::Task { task, version } => Ok(task.map(|t| (t, version))),
            _ => Err(StoreError::Unanswered(
                "store: unexpected reply to get".into(),
            )),
        }
    }

    /// Saves a task built from the version `based_on`; returns the new version.
    pub async fn save(
        &self,
        task: &Task,
        mode: SaveMode,
        based_on: Option<u64>,
        replica: &Host,
    ) -> Result<u64, SaveError> {
        self.save_and_enqueue(task, mode, based_on, replica, false)
            .await
    }

    /// [`TaskStore::save`], also queueing the task's push in the outbox when the save is
    /// accepted: one transaction.
    pub async fn save_and_enqueue(
        &self,
        task: &Task,
        mode: SaveMode,
        based_on: Option<u64>,
        replica: &Host,
        enqueue_push: bool,
    ) -> Result<u64, SaveError> {
        let req = StoreRequest::Save {
            task: task.clone(),
            mode,
            based_on,
            replica: replica.clone(),
            enqueue_push,
        };
        match self.call(req).await {
            Ok(StoreResponse::Saved { version }) => Ok(version),
            Ok(StoreResponse::Refused { error }) => Err(error),
            Ok(_) => Err(SaveError::Unavailable(StoreError::Unanswered(
                "unexpected reply to save".into(),
            ))),
            Err(e) => Err(SaveError::Unavailable(e)),
        }
    }

    /// Snapshots after `after`, in version order.
    pub async fn events_after(
        &self,
        task_id: &str,
        after: u64,
    ) -> Result<Vec<(u64, Task)>, StoreError> {
        let req = StoreRequest::Events {
            task_id: task_id.to_string(),
            after,
        };
        match self.call(req).await? {
            StoreResponse::Events { events } => Ok(events),
            _ => Err(unexpected("events")),
        }
    }

    /// Tasks whose runner lease ran out (see [`super::StoreState::abandoned`]).
    pub async fn abandoned(&self) -> Result<Vec<(Task, u64)>, StoreError> {
        match self.call(StoreRequest::Abandoned).await? {
            StoreResponse::Abandoned { tasks } => Ok(tasks),
            _ => Err(unexpected("abandoned")),
        }
    }

    /// Every task, the most recently saved first (what ListTasks pages through).
    pub async fn list(&self) -> Result<Vec<Task>, StoreError> {
        match self.call(StoreRequest::List).await? {
            StoreResponse::Listed { tasks } => Ok(tasks),
            _ => Err(unexpected("list")),
        }
    }

    /// Registers a push URL for a task.
    pub async fn add_push(&self, task_id: &str, url: &str) -> Result<(), StoreError> {
        let req = StoreRequest::AddPush {
            task_id: task_id.to_string(),
            url: url.to_string(),
        };
        self.call(req).await.map(|_| ())
    }

    /// Unregisters a push URL of a task (DeleteTaskPushNotificationConfig).
    pub async fn remove_push(&self, task_id: &str, url: &str) -> Result<(), StoreError> {
        let req = StoreRequest::RemovePush {
            task_id: task_id.to_string(),
            url: url.to_string(),
        };
        self.call(req).await.map(|_| ())
    }

    /// The push URLs registered for a task.
    pub async fn push_urls(&self, task_id: &str) -> Result<Vec<String>, StoreError> {
        let req = StoreRequest::PushUrls {
            task_id: task_id.to_string(),
        };
        match self.call(req).await? {
            StoreResponse::PushUrls { urls } => Ok(urls),
            _ => Err(unexpected("push-urls")),
        }
    }

    /// Claims unheld outbox entries for `lease_ms`.
    pub async fn claim_outbox(&self, lease_ms: u64) -> Result<Vec<(u64, OutboxEntry)>, StoreError> {
        match self.call(StoreRequest::ClaimOutbox { lease_ms }).await? {
            StoreResponse::Outbox { entries } => Ok(entries),
            _ => Err(unexpected("claim-outbox")),
        }
    }

    /// Removes an outbox entry.
    pub async fn ack_outbox(&self, id: u64) -> Result<(), StoreError> {
        self.call(StoreRequest::AckOutbox { id }).await.map(|_| ())
    }

    /// Claims a dedup key in this store.
    pub async fn claim(&self, key: &str, lease_ms: u64) -> Result<Claim, StoreError> {
        let req = StoreRequest::Claim {
            key: key.to_string(),
            lease_ms,
        };
        match self.call(req).await? {
            StoreResponse::Claim { claim } => Ok(claim),
            _ => Err(unexpected("claim")),
        }
    }

    /// Finishes (or with `None`, releases) a dedup claim.
    pub async fn finish(
        &self,
        key: &str,
        task_id: Option<String>,
        ttl_ms: u64,
    ) -> Result<(), StoreError> {
        let req = StoreRequest::Finish {
            key: key.to_string(),
            task_id,
            ttl_ms,
        };
        self.call(req).await.map(|_| ())
    }
}
