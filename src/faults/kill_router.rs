//! `kill-router`: the router (the load balancer) dies and restarts.
//!
//! Rate: kills per simulated second; the router stays down 100 to 600 ms (its stability
//! window). Requests it was forwarding are lost both ways: the client sees a broken
//! connection (`info`) and retries, while the replica may well have finished the work. The
//! router keeps no state but its strategy's (a round-robin counter, a failover map), which a
//! restart resets.

use rand_chacha::ChaCha8Rng;

use super::{FaultKind, PlanInput, Scheduled};

/// The kill-router fault.
pub struct KillRouter;

impl FaultKind for KillRouter {
    fn describe(&self) -> &'static str {
        "router kills per simulated second; each restarts after 100-600 ms with fresh strategy state"
    }

    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        super::kill_and_restart(&crate::host::Host::Router, rate, input, rng, (100, 600))
    }
}
