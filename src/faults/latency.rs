//! `latency`: a latency spike on one replica's link to the store.
//!
//! Rate: spikes per simulated second. Each raises the link's maximum latency to 50-300 ms
//! for 300-1000 ms, which widens the window between a read and the save based on it.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{arrivals, Action, Fault, PlanInput, Scheduled};

/// The latency fault.
pub struct Latency;

impl Fault for Latency {
    fn describe(&self) -> &'static str {
        "replica<->store latency spikes per simulated second (50-300 ms for 300-1000 ms)"
    }

    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let mut out = Vec::new();
        for at_ms in arrivals(rate, input.window_ms, rng) {
            let host = format!("replica-{}", rng.random_range(0..input.replicas));
            let max_ms = rng.random_range(50..=300);
            let length_ms = rng.random_range(300..=1000);
            out.push(Scheduled {
                at_ms,
                action: Action::LinkLatency(host.clone(), "store".into(), Some(max_ms)),
            });
            out.push(Scheduled {
                at_ms: at_ms + length_ms,
                action: Action::LinkLatency(host, "store".into(), None),
            });
        }
        out
    }
}
