//! `buggify`: fault points inside the replica and store code, FoundationDB style.
//!
//! Rate: the probability that an enabled point fires each time the code passes it. Each run
//! enables each point with probability 1/2 (at least one), from the seed: an extra
//! 200-1500 ms between a turn's effect and its save, a phantom writer that makes a CAS save
//! conflict, a subscriber's event poll slowed by 1-3 s. Points are off again from the
//! liveness phase on. See [`crate::buggify`].

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{Action, Fault, PlanInput, Scheduled};
use crate::buggify::POINTS;

/// The buggify fault.
pub struct Buggify;

impl Fault for Buggify {
    fn describe(&self) -> &'static str {
        "probability that an enabled code fault point fires (delay-before-save, conflict-on-save, slow-event-poll)"
    }

    fn plan(&self, rate: f64, _input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let mut enabled: Vec<_> = POINTS
            .iter()
            .copied()
            .filter(|_| rng.random_bool(0.5))
            .collect();
        if enabled.is_empty() {
            enabled.push(POINTS[rng.random_range(0..POINTS.len())]);
        }
        enabled
            .into_iter()
            .map(|point| Scheduled {
                at_ms: 0,
                action: Action::Buggify(point, rate.min(1.0)),
            })
            .collect()
    }
}
