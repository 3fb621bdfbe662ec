//! A routing strategy of your own, run beside a built-in one: `first-ready` — every request
//! goes to the lowest-numbered replica that is up, as an active/passive load balancer sends
//! everything to its primary and fails over only when the primary is down.
//!
//! `cargo run --example sticky_routing` runs a few seeds of the default experiment on
//! `a2a-python-1.3-plain` (one shared store, no versions) with `first-ready` and with
//! `round-robin`, and prints the invariants each seed violates. With one primary, two
//! writers of a task rarely meet, so round-robin's stale saves (`versions-monotonic`) and
//! overwritten terminal states (`terminal-is-final`) are gone on seeds 0-3; the duplicate
//! effects and the tasks left unfinished stay, since they come with the retries and the
//! kills that any routing meets.
//!
//! A strategy is a [`Strategy`] (it picks a replica for each request the client did not
//! pin) and a constructor ([`MakeStrategy`]), called for each router, and again at every
//! restart of one: its state dies with the router, as a real balancer's does.

use a2a_chaos::router::{MakeStrategy, RouteInput, Strategy};
use a2a_chaos::sim::Sim;
use rand_chacha::ChaCha8Rng;

struct FirstReady;

impl Strategy for FirstReady {
    fn pick(&mut self, input: &RouteInput<'_>, _rng: &mut ChaCha8Rng) -> usize {
        input.ready.iter().position(|up| *up).unwrap_or(0)
    }
}

/// The constructor the builder takes.
const FIRST_READY: MakeStrategy = || Box::new(FirstReady);

fn main() -> Result<(), a2a_chaos::error::InputError> {
    for seed in 0..4 {
        let mine = Sim::builder()
            .model("a2a-python-1.3-plain")
            .routing_strategy("first-ready", FIRST_READY)
            .seed(seed)
            .build()?
            .check();
        let built_in = Sim::builder()
            .model("a2a-python-1.3-plain")
            .routing("round-robin")
            .seed(seed)
            .build()?
            .check();
        println!(
            "seed {seed}: first-ready violates {:?}; round-robin violates {:?}",
            mine.summary.violated(),
            built_in.summary.violated()
        );
    }
    Ok(())
}
