//! `kill-at-point`: a replica is killed at a chosen moment of its work.
//!
//! Rate: the probability that a replica reaching an armed point is killed there. Each run
//! arms each point with probability 2/3 (at least one): during a business effect (the
//! ledger call is on the wire), between the effect and the save, during a stream. A killed
//! replica restarts after 200 to 1000 ms, and no other point kill lands within 300 ms of
//! one (the stability window), so a run is not one long outage. See [`crate::buggify`] for
//! how a replica marks a point and [`crate::world`] for how the driver crashes it.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{Action, Fault, PlanInput, Scheduled};
use crate::buggify::KILL_POINTS;

/// Shortest time between two point kills, simulated ms.
pub const STABILITY_MS: u64 = 300;

/// Down time of a replica killed at a point, simulated ms.
pub const DOWN_MS: (u64, u64) = (200, 1000);

/// The kill-at-point fault.
pub struct KillPoint;

impl Fault for KillPoint {
    fn describe(&self) -> &'static str {
        "probability that a replica is killed on reaching an armed point (effect, after-effect, stream); restarts after 200-1000 ms"
    }

    fn plan(&self, rate: f64, _input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let mut armed: Vec<_> = KILL_POINTS
            .iter()
            .copied()
            .filter(|_| rng.random_bool(2.0 / 3.0))
            .collect();
        if armed.is_empty() {
            armed.push(KILL_POINTS[rng.random_range(0..KILL_POINTS.len())]);
        }
        armed
            .into_iter()
            .map(|point| Scheduled {
                at_ms: 0,
                action: Action::KillAt(point, rate.min(1.0)),
            })
            .collect()
    }
}
