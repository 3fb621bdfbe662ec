//! A replica's view of its task store: the pod's own memory, or the `store` host over the
//! simulated network. Every operation is one [`StoreRequest`]: applied in place to the
//! memory store, or sent to the host, which applies it the same way ([`super::wire`]).

use std::time::Duration;

use a2a::Task;

use crate::net::{self, Call};

use super::wire::{apply, StoreRequest, StoreResponse};
use super::{Claim, OutboxEntry, SaveError, SaveMode, SharedState, PORT};

/// A replica's view of its task store.
#[derive(Clone)]
pub enum TaskStore {
    /// The pod's own memory.
    Local(SharedState),
    /// The `store` host, with a per-call timeout.
    Remote { timeout: Duration },
}

impl TaskStore {
    /// Carries one request to the store; `Err` when the store did not answer.
    async fn call(&self, req: StoreRequest) -> Result<StoreResponse, String> {
        match self {
            TaskStore::Local(state) => Ok(apply(state, req, None)),
            TaskStore::Remote { timeout } => {
                let body = serde_json::to_vec(&req).expect("store requests serialise");
                let reply = net::send(&Call::post_json("store", PORT, "/", body, *timeout))
                    .await
                    .map_err(|e| format!("store {e}"))?;
                serde_json::from_slice(&reply.body).map_err(|e| format!("store reply: {e}"))
            }
        }
    }

    /// Reads a task and its version; `Err` when the store did not answer.
    pub async fn get(&self, task_id: &str) -> Result<Option<(Task, u64)>, String> {
        let req = StoreRequest::Get {
            task_id: task_id.to_string(),
        };
        match self.call(req).await? {
            StoreResponse::Task { task, version } => Ok(task.map(|t| (t, version))),
            _ => Err("store: unexpected reply to get".into()),
        }
    }

    /// Saves a task built from the version `based_on`; returns the new version.
    pub async fn save(
        &self,
        task: &Task,
        mode: SaveMode,
        based_on: Option<u64>,
        replica: &str,
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
        replica: &str,
        enqueue_push: bool,
    ) -> Result<u64, SaveError> {
        let req = StoreRequest::Save {
            task: task.clone(),
            mode,
            based_on,
            replica: replica.to_string(),
            enqueue_push,
        };
        match self.call(req).await {
            Ok(StoreResponse::Saved { version }) => Ok(version),
            Ok(StoreResponse::Refused { error }) => Err(error),
            Ok(_) => Err(SaveError::Unavailable("unexpected reply to save".into())),
            Err(e) => Err(SaveError::Unavailable(e)),
        }
    }

    /// Snapshots after `after`, in version order.
    pub async fn events_after(
        &self,
        task_id: &str,
        after: u64,
    ) -> Result<Vec<(u64, Task)>, String> {
        let req = StoreRequest::Events {
            task_id: task_id.to_string(),
            after,
        };
        match self.call(req).await? {
            StoreResponse::Events { events } => Ok(events),
            _ => Err("store: unexpected reply to events".into()),
        }
    }

    /// Tasks whose runner lease ran out (see [`super::StoreState::abandoned`]).
    pub async fn abandoned(&self) -> Result<Vec<(Task, u64)>, String> {
        match self.call(StoreRequest::Abandoned).await? {
            StoreResponse::Abandoned { tasks } => Ok(tasks),
            _ => Err("store: unexpected reply to abandoned".into()),
        }
    }

    /// Every task, the most recently saved first (what ListTasks pages through).
    pub async fn list(&self) -> Result<Vec<Task>, String> {
        match self.call(StoreRequest::List).await? {
            StoreResponse::Listed { tasks } => Ok(tasks),
            _ => Err("store: unexpected reply to list".into()),
        }
    }

    /// Registers a push URL for a task.
    pub async fn add_push(&self, task_id: &str, url: &str) -> Result<(), String> {
        let req = StoreRequest::AddPush {
            task_id: task_id.to_string(),
            url: url.to_string(),
        };
        self.call(req).await.map(|_| ())
    }

    /// Unregisters a push URL of a task (DeleteTaskPushNotificationConfig).
    pub async fn remove_push(&self, task_id: &str, url: &str) -> Result<(), String> {
        let req = StoreRequest::RemovePush {
            task_id: task_id.to_string(),
            url: url.to_string(),
        };
        self.call(req).await.map(|_| ())
    }

    /// The push URLs registered for a task.
    pub async fn push_urls(&self, task_id: &str) -> Result<Vec<String>, String> {
        let req = StoreRequest::PushUrls {
            task_id: task_id.to_string(),
        };
        match self.call(req).await? {
            StoreResponse::PushUrls { urls } => Ok(urls),
            _ => Err("store: unexpected reply to push-urls".into()),
        }
    }

    /// Claims unheld outbox entries for `lease_ms`.
    pub async fn claim_outbox(&self, lease_ms: u64) -> Result<Vec<(u64, OutboxEntry)>, String> {
        match self.call(StoreRequest::ClaimOutbox { lease_ms }).await? {
            StoreResponse::Outbox { entries } => Ok(entries),
            _ => Err("store: unexpected reply to claim-outbox".into()),
        }
    }

    /// Removes an outbox entry.
    pub async fn ack_outbox(&self, id: u64) -> Result<(), String> {
        self.call(StoreRequest::AckOutbox { id }).await.map(|_| ())
    }

    /// Claims a dedup key in this store.
    pub async fn claim(&self, key: &str, lease_ms: u64) -> Result<Claim, String> {
        let req = StoreRequest::Claim {
            key: key.to_string(),
            lease_ms,
        };
        match self.call(req).await? {
            StoreResponse::Claim { claim } => Ok(claim),
            _ => Err("store: unexpected reply to claim".into()),
        }
    }

    /// Finishes (or with `None`, releases) a dedup claim.
    pub async fn finish(
        &self,
        key: &str,
        task_id: Option<String>,
        ttl_ms: u64,
    ) -> Result<(), String> {
        let req = StoreRequest::Finish {
            key: key.to_string(),
            task_id,
            ttl_ms,
        };
        self.call(req).await.map(|_| ())
    }
}
