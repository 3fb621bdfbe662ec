//! Task stores: a per-pod memory store and a shared store served on the simulated network.
//!
//! Both keep the same [`StoreState`]: tasks with a version, an event log of every accepted
//! save, and a `(contextId, messageId)` dedup table. What differs is where the state lives:
//! - [`Placement::Memory`](crate::model::Placement): inside the replica, dropped when the pod
//!   dies and invisible to other replicas.
//! - [`Placement::Shared`](crate::model::Placement): inside the `store` host, reached over the
//!   network (so latency and partitions apply), durable across a restart of the store host
//!   (the state outlives the host's software, as a database's committed rows do).
//!
//! Saves come in three modes (A2A-BEHAVIOURS.md §2.1): compare-and-swap on the version read,
//! unconditional overwrite (the legacy adapter: last writer wins), and the cancel special
//! case that skips the version check unless the task is missing or already terminal.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use a2a::Task;
use http::{Response, StatusCode};
use serde::{Deserialize, Serialize};

use crate::buggify::SharedChaos;
use crate::faults::Point;
use crate::net::{self, BoxBody, Call};
use crate::trace::{now_ms, Event, Trace};

/// Port the store host serves on.
pub const PORT: u16 = 7000;

/// The writer named in the save log for a BUGGIFY phantom write.
pub const PHANTOM_WRITER: &str = "buggify";

/// How a save treats the version it was based on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "mode", content = "prev")]
pub enum SaveMode {
    /// Compare-and-swap: `None` inserts a new task (conflicts if it exists), `Some(v)`
    /// conflicts unless the stored version is `v`.
    Cas(Option<u64>),
    /// Last writer wins.
    Overwrite,
    /// Write CANCELED unless the task is missing or terminal; no version check.
    Cancel,
}

/// Why a save was refused or not answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SaveError {
    /// The stored version is not the one the save was based on.
    Conflict { current: Option<u64> },
    /// A cancel found the task missing or terminal.
    NotCancelable,
    /// The store did not answer (timeout, partition, crash).
    Unavailable(String),
}

/// One accepted save, as the store saw it: ground truth for `versions-monotonic`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaveRecord {
    pub at_ms: u64,
    pub task_id: String,
    pub context_id: String,
    pub mode: SaveMode,
    /// The version stored before this save (`None`: the task did not exist).
    pub before: Option<u64>,
    /// The version the writer had read when it built this task (`None`: it created it).
    pub based_on: Option<u64>,
    /// The version this save created.
    pub version: u64,
    pub state: a2a::TaskState,
    pub replica: String,
    /// Artifact names in the task after this save.
    pub artifacts: Vec<String>,
}

/// What a dedup claim found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "claim")]
pub enum Claim {
    /// Nobody has this message: the caller now holds it.
    New,
    /// Another request holds it and its lease has not run out.
    InFlight,
    /// It completed; this is the task it produced.
    Done { task_id: String },
}

#[derive(Debug, Clone)]
enum DedupEntry {
    InFlight { until_ms: u64 },
    Done { task_id: String, until_ms: u64 },
}

/// Everything a store holds.
#[derive(Debug, Default)]
pub struct StoreState {
    tasks: BTreeMap<String, (Task, u64)>,
    events: BTreeMap<String, Vec<(u64, Task)>>,
    saves: Vec<SaveRecord>,
    dedup: BTreeMap<String, DedupEntry>,
    push_configs: BTreeMap<String, Vec<String>>,
    outbox: BTreeMap<u64, OutboxEntry>,
    next_outbox_id: u64,
}

/// A push waiting in the outbox: what to send where, and who holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutboxEntry {
    pub task: Task,
    pub url: String,
    /// Deliveries tried so far.
    pub attempts: u32,
    /// A claim holds the entry until then (simulated ms).
    pub held_until_ms: u64,
}

impl StoreState {
    /// The task and its version.
    pub fn get(&self, task_id: &str) -> Option<(Task, u64)> {
        self.tasks.get(task_id).cloned()
    }

    /// Every task, by id.
    pub fn tasks(&self) -> &BTreeMap<String, (Task, u64)> {
        &self.tasks
    }

    /// Every accepted save, in order.
    pub fn saves(&self) -> &[SaveRecord] {
        &self.saves
    }

    /// Snapshots of a task at each version after `after`, in version order.
    pub fn events_after(&self, task_id: &str, after: u64) -> Vec<(u64, Task)> {
        self.events
            .get(task_id)
            .map(|evs| evs.iter().filter(|(v, _)| *v > after).cloned().collect())
            .unwrap_or_default()
    }

    /// Applies a save; returns the new version. `based_on` is the version the writer read.
    pub fn save(
        &mut self,
        task: Task,
        mode: SaveMode,
        based_on: Option<u64>,
        replica: &str,
    ) -> Result<u64, SaveError> {
        let current = self
            .tasks
            .get(&task.id)
            .map(|(t, v)| (t.status.state.clone(), *v));
        let before = current.as_ref().map(|(_, v)| *v);
        match mode {
            SaveMode::Cas(prev) => {
                if prev != before {
                    return Err(SaveError::Conflict { current: before });
                }
            }
            SaveMode::Overwrite => {}
            SaveMode::Cancel => match &current {
                Some((state, _)) if !state.is_terminal() => {}
                _ => return Err(SaveError::NotCancelable),
            },
        }
        let version = before.unwrap_or(0) + 1;
        let mut task = task;
        if mode == SaveMode::Cancel {
            // The cancel writes CANCELED onto the stored copy, keeping what others wrote.
            let (stored, _) = self.tasks.get(&task.id).expect("checked above");
            let mut canceled = stored.clone();
            canceled.status = task.status.clone();
            task = canceled;
        }
        self.saves.push(SaveRecord {
            at_ms: now_ms(),
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            mode,
            before,
            based_on,
            version,
            state: task.status.state.clone(),
            replica: replica.to_string(),
            artifacts: artifact_names(&task),
        });
        self.events
            .entry(task.id.clone())
            .or_default()
            .push((version, task.clone()));
        self.tasks.insert(task.id.clone(), (task, version));
        Ok(version)
    }

    /// A phantom writer (the `conflict-on-save` BUGGIFY point) rewrites a task as it is,
    /// which bumps its version: a CAS save based on the old version then conflicts. Returns
    /// the new version, or `None` when the task does not exist.
    pub fn phantom_write(&mut self, task_id: &str) -> Option<u64> {
        let (task, version) = self.tasks.get(task_id).cloned()?;
        self.save(
            task,
            SaveMode::Cas(Some(version)),
            Some(version),
            PHANTOM_WRITER,
        )
        .ok()
    }

    /// Registers a push URL for a task (a config without an id adds one more URL).
    pub fn add_push(&mut self, task_id: &str, url: &str) {
        let urls = self.push_configs.entry(task_id.to_string()).or_default();
        if !urls.iter().any(|u| u == url) {
            urls.push(url.to_string());
        }
    }

    /// The push URLs registered for a task.
    pub fn push_urls(&self, task_id: &str) -> Vec<String> {
        self.push_configs.get(task_id).cloned().unwrap_or_default()
    }

    /// Queues a push for every URL registered for `task`.
    pub fn enqueue_push(&mut self, task: &Task) -> usize {
        let urls = self.push_urls(&task.id);
        for url in &urls {
            self.next_outbox_id += 1;
            self.outbox.insert(
                self.next_outbox_id,
                OutboxEntry {
                    task: task.clone(),
                    url: url.clone(),
                    attempts: 0,
                    held_until_ms: 0,
                },
            );
        }
        urls.len()
    }

    /// Claims the outbox entries nobody holds, for `lease_ms`.
    pub fn claim_outbox(&mut self, now_ms: u64, lease_ms: u64) -> Vec<(u64, OutboxEntry)> {
        let mut out = Vec::new();
        for (id, entry) in self.outbox.iter_mut() {
            if entry.held_until_ms <= now_ms {
                entry.held_until_ms = now_ms.saturating_add(lease_ms);
                entry.attempts += 1;
                out.push((*id, entry.clone()));
            }
        }
        out
    }

    /// Pushes still owed: `(task id, state)` of every outbox entry.
    pub fn outbox_pending(&self) -> Vec<(String, a2a::TaskState)> {
        self.outbox
            .values()
            .map(|e| (e.task.id.clone(), e.task.status.state.clone()))
            .collect()
    }

    /// Removes an outbox entry (delivered, or given up).
    pub fn ack_outbox(&mut self, id: u64) {
        self.outbox.remove(&id);
    }

    /// Working or submitted tasks whose runner lease (the replica's marker
    /// `a2aChaos.runnerUntilMs`) ran out before `now_ms`.
    pub fn abandoned(&self, now_ms: u64) -> Vec<(Task, u64)> {
        self.tasks
            .values()
            .filter(|(t, _)| {
                matches!(
                    t.status.state,
                    a2a::TaskState::Working | a2a::TaskState::Submitted
                )
            })
            .filter(|(t, _)| {
                t.metadata
                    .as_ref()
                    .and_then(|m| m.get("a2aChaos"))
                    .and_then(|m| m.get("runnerUntilMs"))
                    .and_then(serde_json::Value::as_u64)
                    .is_some_and(|until| until < now_ms)
            })
            .cloned()
            .collect()
    }

    /// Claims a message for processing (see [`Claim`]).
    pub fn claim(&mut self, key: &str, now_ms: u64, lease_ms: u64) -> Claim {
        match self.dedup.get(key) {
            Some(DedupEntry::Done { task_id, until_ms }) if *until_ms > now_ms => {
                return Claim::Done {
                    task_id: task_id.clone(),
                }
            }
            Some(DedupEntry::InFlight { until_ms }) if *until_ms > now_ms => {
                return Claim::InFlight
            }
            Some(DedupEntry::InFlight { .. }) => {
                // The claim's holder died between its final save and marking the claim done.
                // The tasks are the durable record: a task past this message's turn (its
                // state settled, the message in its history) means the message completed.
                if let Some(task_id) = self.settled_with(key) {
                    return Claim::Done { task_id };
                }
            }
            _ => {}
        }
        self.dedup.insert(
            key.to_string(),
            DedupEntry::InFlight {
                until_ms: now_ms.saturating_add(lease_ms),
            },
        );
        Claim::New
    }

    /// A settled task (not working or submitted) whose context and history hold the message
    /// of dedup key `contextId/messageId`.
    fn settled_with(&self, key: &str) -> Option<String> {
        let (context, message) = key.rsplit_once('/')?;
        self.tasks
            .values()
            .find(|(t, _)| {
                t.context_id == context
                    && !matches!(
                        t.status.state,
                        a2a::TaskState::Working | a2a::TaskState::Submitted
                    )
                    && t.history.iter().flatten().any(|m| m.message_id == message)
            })
            .map(|(t, _)| t.id.clone())
    }

    /// Marks a claimed message done, remembered for `ttl_ms`; `None` releases the claim.
    pub fn finish(&mut self, key: &str, task_id: Option<String>, now_ms: u64, ttl_ms: u64) {
        match task_id {
            Some(task_id) if ttl_ms > 0 => {
                self.dedup.insert(
                    key.to_string(),
                    DedupEntry::Done {
                        task_id,
                        until_ms: now_ms.saturating_add(ttl_ms),
                    },
                );
            }
            _ => {
                self.dedup.remove(key);
            }
        }
    }
}

/// The names of a task's artifacts, in order.
pub fn artifact_names(task: &Task) -> Vec<String> {
    task.artifacts
        .iter()
        .flatten()
        .map(|a| a.name.clone().unwrap_or_else(|| a.artifact_id.clone()))
        .collect()
}

/// Shared handle to a store's state.
pub type SharedState = Rc<RefCell<StoreState>>;

/// A replica's view of its task store.
#[derive(Clone)]
pub enum TaskStore {
    /// The pod's own memory.
    Local(SharedState),
    /// The `store` host, with a per-call timeout.
    Remote { timeout: Duration },
}

// Requests and responses cross the simulated wire as JSON; their size difference is moot.
#[allow(clippy::large_enum_variant)]
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
enum StoreRequest {
    Get {
        task_id: String,
    },
    Save {
        task: Task,
        mode: SaveMode,
        based_on: Option<u64>,
        replica: String,
        /// Queue the task's push in the outbox in the same transaction.
        #[serde(default)]
        enqueue_push: bool,
    },
    Events {
        task_id: String,
        after: u64,
    },
    Claim {
        key: String,
        lease_ms: u64,
    },
    Abandoned,
    AddPush {
        task_id: String,
        url: String,
    },
    PushUrls {
        task_id: String,
    },
    ClaimOutbox {
        lease_ms: u64,
    },
    AckOutbox {
        id: u64,
    },
    Finish {
        key: String,
        task_id: Option<String>,
        ttl_ms: u64,
    },
}

#[allow(clippy::large_enum_variant)]
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "result")]
enum StoreResponse {
    Task { task: Option<Task>, version: u64 },
    Saved { version: u64 },
    Refused { error: SaveError },
    Events { events: Vec<(u64, Task)> },
    Claim { claim: Claim },
    Abandoned { tasks: Vec<(Task, u64)> },
    PushUrls { urls: Vec<String> },
    Outbox { entries: Vec<(u64, OutboxEntry)> },
    Done,
}

impl TaskStore {
    async fn remote(&self, req: &StoreRequest, timeout: Duration) -> Result<StoreResponse, String> {
        let body = serde_json::to_vec(req).expect("store requests serialise");
        let reply = net::send(&Call::post_json("store", PORT, "/", body, timeout))
            .await
            .map_err(|e| format!("store {e}"))?;
        serde_json::from_slice(&reply.body).map_err(|e| format!("store reply: {e}"))
    }

    /// Reads a task and its version; `Err` when the store did not answer.
    pub async fn get(&self, task_id: &str) -> Result<Option<(Task, u64)>, String> {
        match self {
            TaskStore::Local(state) => Ok(state.borrow().get(task_id)),
            TaskStore::Remote { timeout } => {
                let req = StoreRequest::Get {
                    task_id: task_id.to_string(),
                };
                match self.remote(&req, *timeout).await? {
                    StoreResponse::Task { task, version } => Ok(task.map(|t| (t, version))),
                    _ => Err("store: unexpected reply to get".into()),
                }
            }
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
        match self {
            TaskStore::Local(state) => {
                let mut state = state.borrow_mut();
                let v = state.save(task.clone(), mode, based_on, replica)?;
                if enqueue_push {
                    state.enqueue_push(task);
                }
                Ok(v)
            }
            TaskStore::Remote { timeout } => {
                let req = StoreRequest::Save {
                    task: task.clone(),
                    mode,
                    based_on,
                    replica: replica.to_string(),
                    enqueue_push,
                };
                match self.remote(&req, *timeout).await {
                    Ok(StoreResponse::Saved { version }) => Ok(version),
                    Ok(StoreResponse::Refused { error }) => Err(error),
                    Ok(_) => Err(SaveError::Unavailable("unexpected reply to save".into())),
                    Err(e) => Err(SaveError::Unavailable(e)),
                }
            }
        }
    }

    /// Snapshots after `after`, in version order.
    pub async fn events_after(
        &self,
        task_id: &str,
        after: u64,
    ) -> Result<Vec<(u64, Task)>, String> {
        match self {
            TaskStore::Local(state) => Ok(state.borrow().events_after(task_id, after)),
            TaskStore::Remote { timeout } => {
                let req = StoreRequest::Events {
                    task_id: task_id.to_string(),
                    after,
                };
                match self.remote(&req, *timeout).await? {
                    StoreResponse::Events { events } => Ok(events),
                    _ => Err("store: unexpected reply to events".into()),
                }
            }
        }
    }

    /// Tasks whose runner lease ran out (see [`StoreState::abandoned`]).
    pub async fn abandoned(&self) -> Result<Vec<(Task, u64)>, String> {
        match self {
            TaskStore::Local(state) => Ok(state.borrow().abandoned(now_ms())),
            TaskStore::Remote { timeout } => {
                match self.remote(&StoreRequest::Abandoned, *timeout).await? {
                    StoreResponse::Abandoned { tasks } => Ok(tasks),
                    _ => Err("store: unexpected reply to abandoned".into()),
                }
            }
        }
    }

    /// Registers a push URL for a task.
    pub async fn add_push(&self, task_id: &str, url: &str) -> Result<(), String> {
        match self {
            TaskStore::Local(state) => {
                state.borrow_mut().add_push(task_id, url);
                Ok(())
            }
            TaskStore::Remote { timeout } => {
                let req = StoreRequest::AddPush {
                    task_id: task_id.to_string(),
                    url: url.to_string(),
                };
                self.remote(&req, *timeout).await.map(|_| ())
            }
        }
    }

    /// The push URLs registered for a task.
    pub async fn push_urls(&self, task_id: &str) -> Result<Vec<String>, String> {
        match self {
            TaskStore::Local(state) => Ok(state.borrow().push_urls(task_id)),
            TaskStore::Remote { timeout } => {
                let req = StoreRequest::PushUrls {
                    task_id: task_id.to_string(),
                };
                match self.remote(&req, *timeout).await? {
                    StoreResponse::PushUrls { urls } => Ok(urls),
                    _ => Err("store: unexpected reply to push-urls".into()),
                }
            }
        }
    }

    /// Claims unheld outbox entries for `lease_ms`.
    pub async fn claim_outbox(&self, lease_ms: u64) -> Result<Vec<(u64, OutboxEntry)>, String> {
        match self {
            TaskStore::Local(state) => Ok(state.borrow_mut().claim_outbox(now_ms(), lease_ms)),
            TaskStore::Remote { timeout } => {
                match self
                    .remote(&StoreRequest::ClaimOutbox { lease_ms }, *timeout)
                    .await?
                {
                    StoreResponse::Outbox { entries } => Ok(entries),
                    _ => Err("store: unexpected reply to claim-outbox".into()),
                }
            }
        }
    }

    /// Removes an outbox entry.
    pub async fn ack_outbox(&self, id: u64) -> Result<(), String> {
        match self {
            TaskStore::Local(state) => {
                state.borrow_mut().ack_outbox(id);
                Ok(())
            }
            TaskStore::Remote { timeout } => self
                .remote(&StoreRequest::AckOutbox { id }, *timeout)
                .await
                .map(|_| ()),
        }
    }

    /// Claims a dedup key in this store.
    pub async fn claim(&self, key: &str, lease_ms: u64) -> Result<Claim, String> {
        match self {
            TaskStore::Local(state) => Ok(state.borrow_mut().claim(key, now_ms(), lease_ms)),
            TaskStore::Remote { timeout } => {
                let req = StoreRequest::Claim {
                    key: key.to_string(),
                    lease_ms,
                };
                match self.remote(&req, *timeout).await? {
                    StoreResponse::Claim { claim } => Ok(claim),
                    _ => Err("store: unexpected reply to claim".into()),
                }
            }
        }
    }

    /// Finishes (or with `None`, releases) a dedup claim.
    pub async fn finish(
        &self,
        key: &str,
        task_id: Option<String>,
        ttl_ms: u64,
    ) -> Result<(), String> {
        match self {
            TaskStore::Local(state) => {
                state.borrow_mut().finish(key, task_id, now_ms(), ttl_ms);
                Ok(())
            }
            TaskStore::Remote { timeout } => {
                let req = StoreRequest::Finish {
                    key: key.to_string(),
                    task_id,
                    ttl_ms,
                };
                self.remote(&req, *timeout).await.map(|_| ())
            }
        }
    }
}

/// Simulated time one store operation takes (a database round trip inside the store host).
pub const OP_TIME: Duration = Duration::from_millis(2);

/// The `store` host: serves [`StoreState`] over HTTP until the host is crashed.
pub async fn serve(state: SharedState, trace: Trace, chaos: SharedChaos) -> turmoil::Result {
    net::serve(PORT, move |req| {
        let state = state.clone();
        let trace = trace.clone();
        let chaos = chaos.clone();
        async move { Ok(handle(req, state, trace, chaos).await) }
    })
    .await
}

/// Fires the `conflict-on-save` BUGGIFY point for a CAS save of an existing task: a phantom
/// writer bumps the task's version first, so the save conflicts.
pub fn buggify_conflict(
    state: &SharedState,
    chaos: &SharedChaos,
    trace: &Trace,
    task_id: &str,
    mode: SaveMode,
) {
    if !matches!(mode, SaveMode::Cas(Some(_))) || !chaos.borrow_mut().buggify(Point::ConflictOnSave)
    {
        return;
    }
    if let Some(v) = state.borrow_mut().phantom_write(task_id) {
        trace.record(
            "store",
            Event::plain(format!("buggify: phantom write of {task_id} v{v}")),
        );
    }
}

async fn handle(
    req: http::Request<hyper::body::Incoming>,
    state: SharedState,
    trace: Trace,
    chaos: SharedChaos,
) -> Response<BoxBody> {
    let bad = |why: String| {
        net::json_response(
            StatusCode::BAD_REQUEST,
            &serde_json::json!({ "error": why }),
        )
    };
    let body = match net::read_request(req.into_body()).await {
        Ok(b) => b,
        Err(e) => return bad(e.to_string()),
    };
    let request: StoreRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return bad(e.to_string()),
    };
    tokio::time::sleep(OP_TIME).await;
    let response = match request {
        StoreRequest::Get { task_id } => match state.borrow().get(&task_id) {
            Some((task, version)) => StoreResponse::Task {
                task: Some(task),
                version,
            },
            None => StoreResponse::Task {
                task: None,
                version: 0,
            },
        },
        StoreRequest::Save {
            task,
            mode,
            based_on,
            replica,
            enqueue_push,
        } => {
            let id = task.id.clone();
            buggify_conflict(&state, &chaos, &trace, &id, mode);
            let pushed = enqueue_push.then(|| task.clone());
            let result = state.borrow_mut().save(task, mode, based_on, &replica);
            if let (Ok(_), Some(task)) = (&result, pushed) {
                state.borrow_mut().enqueue_push(&task);
            }
            match result {
                Ok(version) => {
                    trace.record(
                        "store",
                        Event::Save {
                            task: id.clone(),
                            version,
                            replica: replica.clone(),
                            mode: format!("{mode:?}"),
                        },
                    );
                    StoreResponse::Saved { version }
                }
                Err(error) => {
                    trace.record(
                        "store",
                        Event::SaveRefused {
                            task: id,
                            replica: replica.clone(),
                            mode: format!("{mode:?}"),
                            error: format!("{error:?}"),
                        },
                    );
                    StoreResponse::Refused { error }
                }
            }
        }
        StoreRequest::Events { task_id, after } => StoreResponse::Events {
            events: state.borrow().events_after(&task_id, after),
        },
        StoreRequest::Claim { key, lease_ms } => {
            let claim = state.borrow_mut().claim(&key, now_ms(), lease_ms);
            trace.record("store", Event::plain(format!("claim {key}: {claim:?}")));
            StoreResponse::Claim { claim }
        }
        StoreRequest::AddPush { task_id, url } => {
            state.borrow_mut().add_push(&task_id, &url);
            StoreResponse::Done
        }
        StoreRequest::PushUrls { task_id } => StoreResponse::PushUrls {
            urls: state.borrow().push_urls(&task_id),
        },
        StoreRequest::ClaimOutbox { lease_ms } => StoreResponse::Outbox {
            entries: state.borrow_mut().claim_outbox(now_ms(), lease_ms),
        },
        StoreRequest::AckOutbox { id } => {
            state.borrow_mut().ack_outbox(id);
            StoreResponse::Done
        }
        StoreRequest::Abandoned => StoreResponse::Abandoned {
            tasks: state.borrow().abandoned(now_ms()),
        },
        StoreRequest::Finish {
            key,
            task_id,
            ttl_ms,
        } => {
            state.borrow_mut().finish(&key, task_id, now_ms(), ttl_ms);
            StoreResponse::Done
        }
    };
    let value = serde_json::to_value(&response).expect("store responses serialise");
    net::json_response(StatusCode::OK, &value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str) -> Task {
        Task {
            id: id.into(),
            context_id: "c".into(),
            status: a2a::TaskStatus {
                state: a2a::TaskState::Working,
                message: None,
                timestamp: None,
            },
            artifacts: None,
            history: None,
            metadata: None,
        }
    }

    #[test]
    fn cas_refuses_a_stale_version_and_overwrite_does_not() {
        let mut s = StoreState::default();
        assert_eq!(s.save(task("t"), SaveMode::Cas(None), None, "r0"), Ok(1));
        assert_eq!(
            s.save(task("t"), SaveMode::Cas(None), None, "r1"),
            Err(SaveError::Conflict { current: Some(1) })
        );
        assert_eq!(
            s.save(task("t"), SaveMode::Cas(Some(1)), Some(1), "r0"),
            Ok(2)
        );
        assert_eq!(
            s.save(task("t"), SaveMode::Cas(Some(1)), Some(1), "r1"),
            Err(SaveError::Conflict { current: Some(2) })
        );
        assert_eq!(s.save(task("t"), SaveMode::Overwrite, Some(1), "r1"), Ok(3));
    }

    #[test]
    fn cancel_skips_the_version_but_not_terminal_states() {
        let mut s = StoreState::default();
        s.save(task("t"), SaveMode::Cas(None), None, "r0").unwrap();
        let mut c = task("t");
        c.status.state = a2a::TaskState::Canceled;
        assert_eq!(s.save(c.clone(), SaveMode::Cancel, Some(1), "r1"), Ok(2));
        assert_eq!(
            s.save(c, SaveMode::Cancel, Some(1), "r1"),
            Err(SaveError::NotCancelable)
        );
    }

    #[test]
    fn a_claim_is_held_until_its_lease_runs_out() {
        let mut s = StoreState::default();
        assert_eq!(s.claim("k", 0, 100), Claim::New);
        assert_eq!(s.claim("k", 50, 100), Claim::InFlight);
        assert_eq!(s.claim("k", 150, 100), Claim::New);
        s.finish("k", Some("t".into()), 160, 1000);
        assert_eq!(
            s.claim("k", 170, 100),
            Claim::Done {
                task_id: "t".into()
            }
        );
    }
}
