//! `random`: a ready replica drawn uniformly from the run's seeded generator.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{RouteInput, Strategy};

struct Random;

/// A new random strategy.
pub fn new() -> Box<dyn Strategy> {
    Box::new(Random)
}

impl Strategy for Random {
    fn pick(&mut self, input: &RouteInput<'_>, rng: &mut ChaCha8Rng) -> usize {
        let ready: Vec<usize> = (0..input.ready.len()).filter(|i| input.ready[*i]).collect();
        if ready.is_empty() {
            rng.random_range(0..input.ready.len())
        } else {
            ready[rng.random_range(0..ready.len())]
        }
    }
}
