//! `kill-store`: the shared store's host dies and restarts.
//!
//! Rate: kills per simulated second; the store stays down 200 to 1000 ms (its stability
//! window). The store's state is its database: what it committed survives the restart, and a
//! request in flight at the crash was never committed (see [`crate::store`]). Replicas see
//! the store as unavailable meanwhile, as they do under a partition, but every replica at once.

use rand_chacha::ChaCha8Rng;

use super::{FaultKind, PlanInput, Scheduled};

/// The kill-store fault.
pub struct KillStore;

impl FaultKind for KillStore {
    fn describe(&self) -> &'static str {
        "store host kills per simulated second; each restarts after 200-1000 ms, its committed state intact"
    }

    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        super::kill_and_restart(&crate::host::Host::Store, rate, input, rng, (200, 1000))
    }
}
