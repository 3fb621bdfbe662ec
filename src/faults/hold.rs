//! `hold`: messages between two hosts are held, then released all at once.
//!
//! Rate: holds per simulated second. Each picks two distinct hosts uniformly, holds every
//! message between them (turmoil's `hold`) for 100 to 1000 ms (its stability window), then
//! releases them, so a burst of stale requests and answers lands together: a late save after
//! a newer one, a retry that overtakes its original, an effect that arrives after a cancel.
//! Nothing is lost, which is what makes it different from a partition.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{arrivals, hosts, Action, Fault, PlanInput, Scheduled};

/// The hold fault.
pub struct Hold;

impl Fault for Hold {
    fn describe(&self) -> &'static str {
        "holds of the messages between any two hosts per simulated second, released after 100-1000 ms"
    }

    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let all = hosts(input.replicas);
        let mut out = Vec::new();
        for at_ms in arrivals(rate, input.window_ms, rng) {
            let (a, b) = super::pick_pair(&all, rng);
            let length_ms = rng.random_range(100..=1000);
            out.push(Scheduled {
                at_ms,
                action: Action::Hold(a.clone(), b.clone()),
            });
            out.push(Scheduled {
                at_ms: at_ms + length_ms,
                action: Action::Release(a, b),
            });
        }
        out
    }
}
