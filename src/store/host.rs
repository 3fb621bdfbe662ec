//! The `store` host: the shared task store as a service on the simulated network, so that
//! latency, partitions, holds and kills apply between the replicas and their store. Its
//! state outlives a restart of the host (as a database's committed rows do). Each operation
//! takes the simulated time a real database takes for it ([`OpTimes`]).

use std::time::Duration;

use http::{Response, StatusCode};

use crate::buggify::SharedChaos;
use crate::net::{self, BoxBody};
use crate::trace::Trace;

use super::wire::{apply, InHost, StoreRequest};
use super::{SaveMode, SharedState, StoreState, PORT};

/// Simulated time the store host spends on one operation: the database's own work, the
/// network to it aside (that is the simulated link's). A save costs more than a read, as in
/// a real database, and a compare-and-swap that is already stale when it arrives is refused
/// at its first statement.
///
/// Measured on a2a-sdk 1.3.0's stores over PostgreSQL 18 on loopback (`fsync` off, as live
/// runs use it; `tests/peers/a2a-python/probes/store_timing.py`, medians on a machine as
/// busy as during a live run; docs/FIDELITY.md "The simulated store's timing"):
/// `VersionedDatabaseTaskStore.get` 1.54-1.61 ms; its `save` with the event row cluster mode
/// appends 3.35-3.43 ms; a save whose version check fails 1.64-1.66 ms; the plain
/// `DatabaseTaskStore.save` 1.77 ms. On an idle machine each is about a quarter faster, in
/// the same proportions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpTimes {
    /// A read: a task, its events, the push URLs, a list, the abandoned tasks.
    pub read: Duration,
    /// A save that compares versions or cancels (a transaction of several statements and
    /// the event row).
    pub versioned_save: Duration,
    /// A last-writer-wins save, and the small writes (a claim, a push URL, the outbox).
    pub plain_write: Duration,
    /// A compare-and-swap whose version is already not the stored one when it arrives.
    pub stale_save: Duration,
}

/// The store host's operation times (see [`OpTimes`] for their source).
pub const OP_TIMES: OpTimes = OpTimes {
    read: Duration::from_micros(1500),
    versioned_save: Duration::from_micros(3500),
    plain_write: Duration::from_micros(1750),
    stale_save: Duration::from_micros(1500),
};

impl OpTimes {
    /// How long `request` takes against `state` as it is when the request arrives. Only
    /// the time depends on the stored version: whether the save is refused is still the
    /// table's answer when it is applied (a user's table that ignores versions is not
    /// corrected here).
    pub(crate) fn of(&self, request: &StoreRequest, state: &StoreState) -> Duration {
        match request {
            StoreRequest::Save { task, mode, .. } => match mode {
                SaveMode::Cas(based_on) if state.version(&task.id) != *based_on => self.stale_save,
                SaveMode::Cas(_) | SaveMode::Cancel | SaveMode::CancelWhole => self.versioned_save,
                SaveMode::Overwrite => self.plain_write,
            },
            StoreRequest::Claim { .. }
            | StoreRequest::Finish { .. }
            | StoreRequest::AddPush { .. }
            | StoreRequest::RemovePush { .. }
            | StoreRequest::ClaimOutbox { .. }
            | StoreRequest::AckOutbox { .. } => self.plain_write,
            StoreRequest::Get { .. }
            | StoreRequest::Events { .. }
            | StoreRequest::Abandoned
            | StoreRequest::List
            | StoreRequest::PushUrls { .. } => self.read,
        }
    }
}

/// The `store` host: serves [`crate::store::StoreState`] over HTTP until the host is crashed.
pub async fn serve(state: SharedState, trace: Trace, chaos: SharedChaos) -> turmoil::Result {
    net::serve(PORT, move |req| {
        let state = state.clone();
        let trace = trace.clone();
        let chaos = chaos.clone();
        async move { Ok(handle(req, state, trace, chaos).await) }
    })
    .await
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
    let time = OP_TIMES.of(&request, &state.borrow());
    tokio::time::sleep(time).await;
    let response = apply(
        &state,
        request,
        Some(InHost {
            trace: &trace,
            chaos: &chaos,
        }),
    );
    net::json_response(StatusCode::OK, &response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Host;

    fn save(mode: SaveMode) -> StoreRequest {
        StoreRequest::Save {
            task: a2a::Task {
                id: "t".into(),
                context_id: "c".into(),
                status: a2a::TaskStatus {
                    state: a2a::TaskState::Working,
                    message: None,
                    timestamp: None,
                },
                artifacts: None,
                history: None,
                metadata: None,
            },
            mode,
            based_on: None,
            replica: Host::Replica(0),
            enqueue_push: false,
        }
    }

    /// A save costs more than a read, and a compare-and-swap is refused fast only when the
    /// version it was built on is already gone when it arrives.
    #[test]
    fn a_save_costs_more_than_a_read_and_a_stale_one_is_refused_fast() {
        let state = super::super::shared(None);
        let times = OP_TIMES;
        let get = StoreRequest::Get {
            task_id: "t".into(),
        };
        assert!(times.read < times.plain_write && times.plain_write < times.versioned_save);
        assert_eq!(times.of(&get, &state.borrow()), times.read);
        // Nothing stored yet: an insert is a whole save, a CAS on a version is stale.
        assert_eq!(
            times.of(&save(SaveMode::Cas(None)), &state.borrow()),
            times.versioned_save
        );
        assert_eq!(
            times.of(&save(SaveMode::Cas(Some(1))), &state.borrow()),
            times.stale_save
        );
        let StoreRequest::Save { task, .. } = save(SaveMode::Cas(None)) else {
            unreachable!()
        };
        state
            .borrow_mut()
            .save(
                task,
                SaveMode::Cas(None),
                None,
                &crate::host::Host::Replica(0),
            )
            .unwrap();
        assert_eq!(
            times.of(&save(SaveMode::Cas(Some(1))), &state.borrow()),
            times.versioned_save
        );
        assert_eq!(
            times.of(&save(SaveMode::Cas(None)), &state.borrow()),
            times.stale_save
        );
        assert_eq!(
            times.of(&save(SaveMode::Overwrite), &state.borrow()),
            times.plain_write
        );
        assert_eq!(
            times.of(&save(SaveMode::Cancel), &state.borrow()),
            times.versioned_save
        );
    }
}
