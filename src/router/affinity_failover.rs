//! `affinity-failover`: context affinity, moving to the next ready replica when the
//! context's own pod is down.
//!
//! Keeps a context on one pod while it lives and fails over when it dies, so a store that
//! only works with affinity is exposed to the takeover it was never designed for.

use rand_chacha::ChaCha8Rng;

use super::{context_slot, RouteInput, Strategy};

struct AffinityFailover;

/// A new affinity-failover strategy.
pub fn new() -> Box<dyn Strategy> {
    Box::new(AffinityFailover)
}

impl Strategy for AffinityFailover {
    fn pick(&mut self, input: &RouteInput<'_>, _rng: &mut ChaCha8Rng) -> usize {
        let n = input.ready.len();
        let home = input.context_id.map_or(0, |c| context_slot(c, n));
        (0..n)
            .map(|step| (home + step) % n)
            .find(|i| input.ready[*i])
            .unwrap_or(home)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn moves_to_the_next_ready_replica_when_home_is_down() {
        let mut s = AffinityFailover;
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let ctx = "ctx-a";
        let home = context_slot(ctx, 3);
        let mut ready = vec![true; 3];
        let input = RouteInput {
            context_id: Some(ctx),
            ready: &ready,
        };
        assert_eq!(s.pick(&input, &mut rng), home);
        ready[home] = false;
        let input = RouteInput {
            context_id: Some(ctx),
            ready: &ready,
        };
        assert_eq!(s.pick(&input, &mut rng), (home + 1) % 3);
    }
}
