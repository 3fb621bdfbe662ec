//! The `store` host: the shared task store as a service on the simulated network, so that
//! latency, partitions, holds and kills apply between the replicas and their store. Its
//! state outlives a restart of the host (as a database's committed rows do).

use std::time::Duration;

use http::{Response, StatusCode};

use crate::buggify::SharedChaos;
use crate::net::{self, BoxBody};
use crate::trace::Trace;

use super::wire::{apply, InHost, StoreRequest};
use super::{SharedState, PORT};

/// Simulated time one store operation takes (a database round trip inside the store host).
pub const OP_TIME: Duration = Duration::from_millis(2);

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
    tokio::time::sleep(OP_TIME).await;
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
