//! What crosses the simulated wire between a replica and the `store` host, and how one
//! request is applied to a store: the same code for the shared store (the host serves it)
//! and for a pod's own memory (the replica applies it in place).

use a2a::Task;

use crate::buggify::SharedChaos;
use crate::faults::Point;
use crate::host::Host;
use crate::trace::{now_ms, Event, Trace};

use super::tagged::tag_first_enum;
use super::{Claim, OutboxEntry, SaveError, SaveMode, SharedState};

tag_first_enum! {
    /// A request to the store. Requests and responses cross the simulated wire as JSON,
    /// the tag first; their size difference is moot.
    #[allow(clippy::large_enum_variant)]
    pub(crate) enum StoreRequest tag "op" {
        Get = "get" {
            task_id: String,
        },
        Save = "save" {
            task: Task,
            mode: SaveMode,
            based_on: Option<u64>,
            replica: Host,
            /// Queue the task's push in the outbox in the same transaction.
            #[serde(default)]
            enqueue_push: bool,
        },
        Events = "events" {
            task_id: String,
            after: u64,
        },
        Claim = "claim" {
            key: String,
            lease_ms: u64,
        },
        Abandoned = "abandoned",
        /// Every task, the most recently saved first (ListTasks).
        List = "list",
        AddPush = "add_push" {
            task_id: String,
            url: String,
        },
        PushUrls = "push_urls" {
            task_id: String,
        },
        RemovePush = "remove_push" {
            task_id: String,
            url: String,
        },
        ClaimOutbox = "claim_outbox" {
            lease_ms: u64,
        },
        AckOutbox = "ack_outbox" {
            id: u64,
        },
        Finish = "finish" {
            key: String,
            task_id: Option<String>,
            ttl_ms: u64,
        },
    }
}

tag_first_enum! {
    /// The store's answer to a [`StoreRequest`].
    #[allow(clippy::large_enum_variant)]
    pub(crate) enum StoreResponse tag "result" {
        Task = "task" { task: Option<Task>, version: u64 },
        Saved = "saved" { version: u64 },
        Refused = "refused" { error: SaveError },
        Events = "events" { events: Vec<(u64, Task)> },
        Claim = "claim" { claim: Claim },
        Abandoned = "abandoned" { tasks: Vec<(Task, u64)> },
        Listed = "listed" { tasks: Vec<Task> },
        PushUrls = "push_urls" { urls: Vec<String> },
        Outbox = "outbox" { entries: Vec<(u64, OutboxEntry)> },
        Done = "done",
    }
}

/// The host a request is applied in: the shared store's traces and BUGGIFY points. A pod's
/// memory store has neither.
pub(crate) struct InHost<'a> {
    pub trace: &'a Trace,
    pub chaos: &'a SharedChaos,
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
            Host::Store,
            Event::plain(format!("buggify: phantom write of {task_id} v{v}")),
        );
    }
}

/// Applies one request to `state`; in the `store` host (`host`), with its traces and fault
/// points.
pub(crate) fn apply(
    state: &SharedState,
    request: StoreRequest,
    host: Option<InHost<'_>>,
) -> StoreResponse {
    match request {
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
            if let Some(h) = &host {
                buggify_conflict(state, h.chaos, h.trace, &id, mode);
            }
            let pushed = enqueue_push.then(|| task.clone());
            let result = state.borrow_mut().save(task, mode, based_on, &replica);
            if let (Ok(_), Some(task)) = (&result, pushed) {
                state.borrow_mut().enqueue_push(&task);
            }
            match result {
                Ok(version) => {
                    if let Some(h) = &host {
                        h.trace.record(
                            Host::Store,
                            Event::Save {
                                task: id.clone(),
                                version,
                                replica: replica.clone(),
                                mode: mode.to_string(),
                            },
                        );
                    }
                    StoreResponse::Saved { version }
                }
                Err(error) => {
                    if let Some(h) = &host {
                        h.trace.record(
                            Host::Store,
                            Event::SaveRefused {
                                task: id,
                                replica,
                                mode: mode.to_string(),
                                error: error.to_string(),
                            },
                        );
                    }
                    StoreResponse::Refused { error }
                }
            }
        }
        StoreRequest::Events { task_id, after } => StoreResponse::Events {
            events: state.borrow().events_after(&task_id, after),
        },
        StoreRequest::Claim { key, lease_ms } => {
            let claim = state.borrow_mut().claim(&key, now_ms(), lease_ms);
            if let Some(h) = &host {
                h.trace
                    .record(Host::Store, Event::plain(format!("claim {key}: {claim}")));
            }
            StoreResponse::Claim { claim }
        }
        StoreRequest::AddPush { task_id, url } => {
            state.borrow_mut().add_push(&task_id, &url);
            StoreResponse::Done
        }
        StoreRequest::RemovePush { task_id, url } => {
            state.borrow_mut().remove_push(&task_id, &url);
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
        StoreRequest::List => StoreResponse::Listed {
            tasks: state.borrow().recent(),
        },
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
    }
}
