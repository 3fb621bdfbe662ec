//! `kill`: a replica pod dies (SIGKILL: memory gone, in-flight requests lost) and restarts.
//!
//! Rate: kills per simulated second. Each kill picks a replica uniformly and restarts it
//! after 200 to 1000 ms (choice: about the time a Kubernetes pod takes to be replaced on a
//! warm node, scaled to the short runs here).

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{arrivals, Action, Fault, PlanInput, Scheduled};

/// The kill fault.
pub struct Kill;

impl Fault for Kill {
    fn describe(&self) -> &'static str {
        "replica kills per simulated second; each restarts after 200-1000 ms"
    }

    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let mut out = Vec::new();
        for at_ms in arrivals(rate, input.window_ms, rng) {
            let host = format!("replica-{}", rng.random_range(0..input.replicas));
            let down_ms = rng.random_range(200..=1000);
            out.push(Scheduled {
                at_ms,
                action: Action::Kill(host.clone()),
            });
            out.push(Scheduled {
                at_ms: at_ms + down_ms,
                action: Action::Restart(host),
            });
        }
        out
    }
}
