//! `partition`: a replica loses the store (both ways) for a while.
//!
//! Rate: partitions per simulated second; each lasts 200 to 800 ms. A replica cut from the
//! store still answers clients, which is exactly when stale reads and half-done turns
//! happen. TCP streams that lost data during the cut are dead after it (turmoil has no
//! retransmit), so every store call is a fresh connection with a timeout.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{arrivals, Action, Fault, PlanInput, Scheduled};

/// The partition fault.
pub struct Partition;

impl Fault for Partition {
    fn describe(&self) -> &'static str {
        "replica<->store partitions per simulated second; each lasts 200-800 ms"
    }

    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let mut out = Vec::new();
        for at_ms in arrivals(rate, input.window_ms, rng) {
            let host = format!("replica-{}", rng.random_range(0..input.replicas));
            let length_ms = rng.random_range(200..=800);
            out.push(Scheduled {
                at_ms,
                action: Action::Partition(host.clone(), "store".into()),
            });
            out.push(Scheduled {
                at_ms: at_ms + length_ms,
                action: Action::Repair(host, "store".into()),
            });
        }
        out
    }
}
