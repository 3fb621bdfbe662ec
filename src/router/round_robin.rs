//! `round-robin`: each request to the next ready replica in turn, ignoring the context.
//!
//! What a plain Kubernetes Service or a default load balancer does. Rasa's documentation
//! names it as the way to lose protocol context, re-execute retries and miss cancels
//! (A2A-BEHAVIOURS.md §4).

use rand_chacha::ChaCha8Rng;

use super::{RouteInput, Strategy};

struct RoundRobin {
    next: usize,
}

/// A new round-robin strategy starting at replica 0.
pub fn new() -> Box<dyn Strategy> {
    Box::new(RoundRobin { next: 0 })
}

impl Strategy for RoundRobin {
    fn pick(&mut self, input: &RouteInput<'_>, _rng: &mut ChaCha8Rng) -> usize {
        let n = input.ready.len();
        for step in 0..n {
            let i = (self.next + step) % n;
            if input.ready[i] {
                self.next = i + 1;
                return i;
            }
        }
        // Nothing ready: keep rotating; the request waits on a dead pod and times out.
        let i = self.next % n;
        self.next = i + 1;
        i
    }
}
