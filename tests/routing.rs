//! A routing strategy of a user's own ([`Sim::builder`]'s `routing_strategy`): it routes
//! every request nobody pinned, its name is the run's routing in the record, and the run
//! replays to the same trace.

use a2a_chaos::host::Host;
use a2a_chaos::router::{MakeStrategy, RouteInput, Strategy};
use a2a_chaos::scenario::Script;
use a2a_chaos::sim::Sim;
use rand_chacha::ChaCha8Rng;

/// Everything to the last replica.
struct LastReplica;

impl Strategy for LastReplica {
    fn pick(&mut self, input: &RouteInput<'_>, _rng: &mut ChaCha8Rng) -> usize {
        input.ready.len() - 1
    }
}

const LAST: MakeStrategy = || Box::new(LastReplica);

#[test]
fn a_users_strategy_routes_every_unpinned_request() {
    let script = Script::parse(
        "name = \"routing\"\nmodel = \"a2a-python-1.3-versioned\"\nreplicas = 3\n\
         [[step]]\nsend = { conversation = \"c1\", turn = 1 }\n\
         [[step]]\nsend = { conversation = \"c1\", turn = 2 }\n\
         [[step]]\nget = { conversation = \"c1\" }\n",
        "routing-test",
    )
    .unwrap();
    let run = || {
        Sim::builder()
            .script(script.clone())
            .routing_strategy("last-replica", LAST)
            .keep_trace(true)
            .build()
            .unwrap()
            .run()
    };
    let record = run();
    assert_eq!(record.routing, "last-replica");
    assert_eq!(record.history.len(), 3);
    for op in &record.history {
        assert_eq!(op.replica, Some(Host::Replica(2)), "{:?}", op.kind);
    }
    assert_eq!(record.trace_hash, run().trace_hash);
    // A name alone must be a built-in strategy's.
    let unknown = Sim::builder()
        .script(script)
        .routing("last-replica")
        .build()
        .err()
        .expect("refused");
    assert!(unknown.to_string().contains("unknown routing"), "{unknown}");
}
