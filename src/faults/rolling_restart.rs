//! `rolling-restart`: a deployment rolls, restarting every replica one after another.
//!
//! Rate: rollouts per simulated second. Each rollout kills `replica-0`, restarts it after
//! 100-300 ms, then does the same to `replica-1`, and so on, each replica killed once the
//! one before it is back (as a Kubernetes Deployment with `maxUnavailable: 1` does). Requests
//! in flight on a killed replica are lost; with per-pod memory every task is gone by the end
//! of a rollout. It plans the existing kill and restart actions, so it is this one file plus
//! its line in [`super::FAULTS`].

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{arrivals, kill, FaultKind, PlanInput, Scheduled};
use crate::host::Host;

/// The rolling-restart fault.
pub struct RollingRestart;

impl FaultKind for RollingRestart {
    fn describe(&self) -> &'static str {
        "rollouts per simulated second; each kills and restarts every replica in turn, 100-300 ms down each"
    }

    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let mut out = Vec::new();
        for start in arrivals(rate, input.window_ms, rng) {
            let mut at_ms = start;
            for i in 0..input.replicas {
                let host = Host::Replica(i);
                let down = rng.random_range(100..=300);
                out.push(Scheduled {
                    at_ms,
                    action: kill::Kill(host.clone()).into(),
                });
                out.push(Scheduled {
                    at_ms: at_ms + down,
                    action: kill::Restart(host).into(),
                });
                at_ms += down;
            }
        }
        out
    }
}
