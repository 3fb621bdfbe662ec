//! The business-effect ledger: the independent sink that says what really happened.
//!
//! Each agent turn performs one business effect (a transfer, an order) by POSTing it here.
//! The ledger records every arrival with task, context, turn, replica, idempotency key and
//! simulated time, and applies it unless a request with the same key was applied before.
//! It never looks at task state: it is ground truth that does not depend on the system under
//! test telling the truth about itself. Its state outlives a restart of the ledger host.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

use http::StatusCode;
use serde::{Deserialize, Serialize};

use crate::net::{self, Call};
use crate::trace::{now_ms, Trace};

/// Port the ledger serves on.
pub const PORT: u16 = 7100;

/// Simulated time the ledger takes to apply one effect.
pub const OP_TIME: Duration = Duration::from_millis(5);

/// What an executor asks the ledger to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectRequest {
    pub task_id: String,
    pub context_id: String,
    pub conversation: String,
    pub turn: u32,
    pub message_id: String,
    pub replica: String,
    /// Idempotency key, when the model sends one.
    pub key: Option<String>,
    /// Simulated time the replica started the effect (sent the request).
    pub sent_ms: u64,
}

/// One arrival at the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Effect {
    pub seq: u64,
    pub at_ms: u64,
    pub request: EffectRequest,
    /// False when an earlier effect with the same key was applied.
    pub applied: bool,
}

/// Everything the ledger has seen.
#[derive(Debug, Default)]
pub struct LedgerState {
    effects: Vec<Effect>,
    keys: BTreeSet<String>,
}

impl LedgerState {
    /// Records an arrival; returns whether it was applied.
    pub fn apply(&mut self, request: EffectRequest, at_ms: u64) -> bool {
        let applied = match &request.key {
            Some(key) => self.keys.insert(key.clone()),
            None => true,
        };
        let seq = self.effects.len() as u64;
        self.effects.push(Effect {
            seq,
            at_ms,
            request,
            applied,
        });
        applied
    }

    /// Every arrival, in order.
    pub fn effects(&self) -> &[Effect] {
        &self.effects
    }
}

/// Shared handle to the ledger's state.
pub type SharedLedger = Rc<RefCell<LedgerState>>;

/// Performs an effect from a replica. `Err` means the outcome is unknown to the caller: the
/// effect may have been applied and the reply lost.
pub async fn perform(request: &EffectRequest, timeout: Duration) -> Result<bool, String> {
    let body = serde_json::to_vec(request).expect("effects serialise");
    let reply = net::send(&Call::post_json("ledger", PORT, "/effect", body, timeout))
        .await
        .map_err(|e| format!("ledger {e}"))?;
    let value: serde_json::Value =
        serde_json::from_slice(&reply.body).map_err(|e| format!("ledger reply: {e}"))?;
    Ok(value["applied"].as_bool().unwrap_or(false))
}

/// One effect arriving: applied (or deduplicated by its key) in `state`, recorded in the
/// trace; the ledger's answer.
pub fn arrive(
    state: &RefCell<LedgerState>,
    trace: &Trace,
    request: EffectRequest,
) -> http::Response<net::BoxBody> {
    let what = format!(
        "effect {}#{} task {} from {} key {:?}",
        request.conversation, request.turn, request.task_id, request.replica, request.key
    );
    let applied = state.borrow_mut().apply(request, now_ms());
    trace.record(
        "ledger",
        format!(
            "{what}: {}",
            if applied { "applied" } else { "deduplicated" }
        ),
    );
    net::json_response(StatusCode::OK, &serde_json::json!({ "applied": applied }))
}

/// The `ledger` host.
pub async fn serve(state: SharedLedger, trace: Trace) -> turmoil::Result {
    net::serve(PORT, move |req: http::Request<hyper::body::Incoming>| {
        let state = state.clone();
        let trace = trace.clone();
        async move {
            let body = match net::read_request(req.into_body()).await {
                Ok(b) => b,
                Err(e) => {
                    return Ok(net::json_response(
                        StatusCode::BAD_REQUEST,
                        &serde_json::json!({ "error": e.to_string() }),
                    ))
                }
            };
            let request: EffectRequest = match serde_json::from_slice(&body) {
                Ok(r) => r,
                Err(e) => {
                    return Ok(net::json_response(
                        StatusCode::BAD_REQUEST,
                        &serde_json::json!({ "error": e.to_string() }),
                    ))
                }
            };
            tokio::time::sleep(OP_TIME).await;
            Ok(arrive(&state, &trace, request))
        }
    })
    .await
}
