//! `context-affinity`: a stable hash of the contextId picks the replica, ready or not.
//!
//! Rasa's recommended routing (A2A-BEHAVIOURS.md §4): a context always lands on one pod, and
//! when that pod dies its requests wait or fail: affinity gives no takeover. A request with no
//! routing key goes to replica 0.

use rand_chacha::ChaCha8Rng;

use super::{context_slot, RouteInput, Strategy};

struct ContextAffinity;

/// A new context-affinity strategy.
pub fn new() -> Box<dyn Strategy> {
    Box::new(ContextAffinity)
}

impl Strategy for ContextAffinity {
    fn pick(&mut self, input: &RouteInput<'_>, _rng: &mut ChaCha8Rng) -> usize {
        input
            .context_id
            .map_or(0, |c| context_slot(c, input.ready.len()))
    }
}
