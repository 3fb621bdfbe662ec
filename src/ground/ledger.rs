//! The business-effect ledger: the independent sink that says what really happened.
//!
//! Each agent turn performs one business effect (a transfer, an order) by POSTing it here.
//! The ledger records every arrival with task, context, turn, replica, idempotency key and
//! simulated time, and applies it unless a request with the same key was applied before.
//! It never looks at task state: it is ground truth that does not depend on the system under
//! test telling the truth about itself. Its state outlives a restart of the ledger host.
//!
//! A script can hold a turn inside its effect step (`hold-effect`): that turn's effects are
//! applied when they arrive, but the ledger's answer waits until `release-effect`, so the
//! executor stays in its tool call. With `await-effect` a script waits until the turn's
//! effect has arrived. Both worlds share this ledger code (the simulated `ledger` host, and
//! the live ledger of [`crate::live::observer`]), so a script that orders two turns with
//! these steps sees the same interleaving in the simulation and against a real peer.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

use http::StatusCode;
use serde::{Deserialize, Serialize};

use crate::host::Host;
use crate::net::{self, Call};
use crate::trace::{now_ms, Event, Trace};

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
    pub replica: Host,
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

/// How often a held answer checks whether it was released (ms).
const HOLD_POLL: Duration = Duration::from_millis(1);

/// Everything the ledger has seen.
#[derive(Debug, Default)]
pub struct LedgerState {
    effects: Vec<Effect>,
    keys: BTreeSet<String>,
    /// Turns `(conversation, turn)` whose effects are answered only once released.
    held: BTreeSet<(String, u32)>,
    /// Arrivals dropped by [`LedgerState::trim`] (a long-lived `serve`; 0 in a simulation).
    trimmed: u64,
}

impl LedgerState {
    /// Records an arrival; returns whether it was applied.
    pub fn apply(&mut self, request: EffectRequest, at_ms: u64) -> bool {
        let applied = match &request.key {
            Some(key) => self.keys.insert(key.clone()),
            None => true,
        };
        let seq = self.trimmed + self.effects.len() as u64;
        self.effects.push(Effect {
            seq,
            at_ms,
            request,
            applied,
        });
        applied
    }

    /// Every arrival, in order (since the last [`LedgerState::trim`]).
    pub fn effects(&self) -> &[Effect] {
        &self.effects
    }

    /// How many arrivals there were, trimmed ones included.
    pub fn arrivals(&self) -> u64 {
        self.trimmed + self.effects.len() as u64
    }

    /// Keeps only the last `keep` arrivals (a long-lived `a2a-chaos serve`, whose memory
    /// must not grow with every turn; a simulation never trims). Idempotency keys are kept.
    pub fn trim(&mut self, keep: usize) {
        let cut = self.effects.len().saturating_sub(keep);
        self.effects.drain(..cut);
        self.trimmed += cut as u64;
    }

    /// Holds the answer to every effect of this turn until [`LedgerState::release`].
    pub fn hold(&mut self, conversation: &str, turn: u32) {
        self.held.insert((conversation.to_string(), turn));
    }

    /// Answers the held effects of this turn, and stops holding it.
    pub fn release(&mut self, conversation: &str, turn: u32) {
        self.held.remove(&(conversation.to_string(), turn));
    }

    /// Whether the answers to this turn's effects are held.
    pub fn is_held(&self, conversation: &str, turn: u32) -> bool {
        self.held.contains(&(conversation.to_string(), turn))
    }

    /// Whether an effect of this turn has arrived.
    pub fn arrived(&self, conversation: &str, turn: u32) -> bool {
        self.effects
            .iter()
            .any(|e| e.request.conversation == conversation && e.request.turn == turn)
    }
}

/// Shared handle to the ledger's state.
pub type SharedLedger = Rc<RefCell<LedgerState>>;

/// Why a replica does not know what became of an effect it sent: the effect may have been
/// applied and the answer lost. The words are those of the replica's trace line.
#[derive(Debug, thiserror::Error)]
pub enum EffectError {
    /// The call to the ledger got no answer (timed out, broke, or never connected).
    #[error("ledger {0}")]
    Call(net::CallError),
    /// The ledger's answer was not JSON.
    #[error("ledger reply: {0}")]
    Reply(serde_json::Error),
}

/// Performs an effect from a replica; whether the ledger applied it (`false`: deduplicated
/// by its key).
pub async fn perform(request: &EffectRequest, timeout: Duration) -> Result<bool, EffectError> {
    let body = serde_json::to_vec(request).expect("effects serialise");
    let reply = net::send(&Call::post_json("ledger", PORT, "/effect", body, timeout))
        .await
        .map_err(EffectError::Call)?;
    let value: serde_json::Value =
        serde_json::from_slice(&reply.body).map_err(EffectError::Reply)?;
    Ok(value["applied"].as_bool().unwrap_or(false))
}

/// One effect arriving: applied (or deduplicated by its key) in `state`, recorded in the
/// trace; the ledger's answer.
pub fn arrive(
    state: &RefCell<LedgerState>,
    trace: &Trace,
    request: EffectRequest,
) -> http::Response<net::BoxBody> {
    let mut event = Event::Effect {
        conversation: request.conversation.clone(),
        turn: request.turn,
        task: request.task_id.clone(),
        replica: request.replica.clone(),
        key: request.key.clone(),
        applied: false,
    };
    let applied = state.borrow_mut().apply(request, now_ms());
    if let Event::Effect { applied: a, .. } = &mut event {
        *a = applied;
    }
    trace.record(Host::Ledger, event);
    net::json_response(StatusCode::OK, &serde_json::json!({ "applied": applied }))
}

/// [`arrive`], then, while a script holds this turn, the answer waits for its release.
pub async fn arrive_and_answer(
    state: &RefCell<LedgerState>,
    trace: &Trace,
    request: EffectRequest,
) -> http::Response<net::BoxBody> {
    let (conversation, turn) = (request.conversation.clone(), request.turn);
    let answer = arrive(state, trace, request);
    if state.borrow().is_held(&conversation, turn) {
        trace.record(
            Host::Ledger,
            Event::plain(format!("answer to {conversation}#{turn} held")),
        );
        while state.borrow().is_held(&conversation, turn) {
            tokio::time::sleep(HOLD_POLL).await;
        }
        trace.record(
            Host::Ledger,
            Event::plain(format!("answer to {conversation}#{turn} released")),
        );
    }
    answer
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
            Ok(arrive_and_answer(&state, &trace, request).await)
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn effect(turn: u32) -> EffectRequest {
        EffectRequest {
            task_id: "t".into(),
            context_id: "c".into(),
            conversation: "c1".into(),
            turn,
            message_id: format!("m{turn}"),
            replica: crate::host::Host::Replica(0),
            key: None,
            sent_ms: 0,
        }
    }

    #[test]
    fn a_held_turn_is_applied_on_arrival_and_held_until_released() {
        let mut ledger = LedgerState::default();
        ledger.hold("c1", 2);
        assert!(ledger.is_held("c1", 2) && !ledger.is_held("c1", 3));
        assert!(!ledger.arrived("c1", 2));
        assert!(ledger.apply(effect(2), 10));
        assert!(ledger.arrived("c1", 2) && !ledger.arrived("c1", 3));
        ledger.release("c1", 2);
        assert!(!ledger.is_held("c1", 2));
    }
}
