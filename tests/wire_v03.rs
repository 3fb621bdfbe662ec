//! The A2A 0.3 wire in the simulation (issue 18): a scripted client that speaks 0.3
//! (`client-wire = "0.3"`) gets, from a model that serves 0.3 (`[wire] v03`), the same
//! outcomes, effects and final tasks as a 1.0 client; from a model that does not, every
//! call is refused with the answer that model gives an unknown method today.

use a2a_chaos::client::history::Outcome;
use a2a_chaos::model::{Profile, V03Wire};
use a2a_chaos::scenario::Script;
use a2a_chaos::sim::Sim;
use a2a_chaos::world::RunRecord;

/// Blocking, streamed and non-blocking turns, a push config, a resubscribe, a read and a
/// cancel, on one replica; `wire` is the client's (`None`: 1.0).
fn run(profile: Profile, wire: Option<&str>) -> RunRecord {
    let header = wire.map_or(String::new(), |w| format!("client-wire = \"{w}\"\n"));
    let text = format!(
        "name = \"v03\"\nmodel = \"reference\"\nreplicas = 1\n{header}\
         [[step]]\nsend = {{ conversation = \"c1\", turn = 1 }}\n\
         [[step]]\nset-push = {{ conversation = \"c1\", url = \"http://hooks.example:7200/ok/c1\" }}\n\
         [[step]]\nsend = {{ conversation = \"c1\", turn = 2, streaming = true }}\n\
         [[step]]\nsend = {{ conversation = \"c1\", turn = 3, blocking = false }}\n\
         [[step]]\nsubscribe = {{ conversation = \"c1\" }}\n\
         [[step]]\nget = {{ conversation = \"c1\" }}\n\
         [[step]]\nsend = {{ conversation = \"c2\", turn = 1, blocking = false }}\n\
         [[step]]\ncancel = {{ conversation = \"c2\" }}\n\
         [[step]]\nsend = {{ conversation = \"c2\", turn = 2 }}\n"
    );
    let script = Script::parse(&text, "v03.toml").unwrap();
    let record = Sim::scenario_builder(&script)
        .model(profile)
        .routing("round-robin")
        .seed(3)
        .build()
        .unwrap()
        .run();
    assert!(record.error.is_none(), "{:?}", record.error);
    record
}

/// What a run's client was told, op by op, and what the ledger and the store ended with.
fn observed(r: &RunRecord) -> (Vec<String>, usize, Vec<String>) {
    let outcomes = r
        .history
        .iter()
        .map(|op| {
            format!(
                "{} {:?} {:?}",
                op.kind.label(),
                op.outcome,
                op.stream_states
            )
        })
        .collect();
    let finals = r
        .final_tasks
        .values()
        .map(|t| {
            format!(
                "{:?} {}",
                t.status.state,
                t.artifacts.as_ref().map_or(0, Vec::len)
            )
        })
        .collect();
    (outcomes, r.effects.len(), finals)
}

fn with_v03(model: &str, v03: V03Wire) -> Profile {
    let mut p = Profile::load(model).unwrap();
    let mut wire = p.wire();
    wire.v03 = Some(v03);
    p.wire = Some(wire);
    p
}

#[test]
fn a_0_3_client_sees_on_mastra_what_a_1_0_client_sees() {
    let v1 = run(Profile::load("mastra").unwrap(), None);
    let v03 = run(Profile::load("mastra").unwrap(), Some("0.3"));
    assert_eq!(observed(&v03), observed(&v1));
    assert!(
        v03.history
            .iter()
            .filter(|op| op.outcome == Outcome::Ok)
            .count()
            >= 6
    );
    assert!(
        !v03.deliveries.is_empty(),
        "the push config set over 0.3 delivered"
    );
}

#[test]
fn a_0_3_client_sees_on_a2a_python_with_compat_what_a_1_0_client_sees() {
    let model = "a2a-python-1.3-versioned";
    let v1 = run(Profile::load(model).unwrap(), None);
    let v03 = run(with_v03(model, V03Wire::SdkCompat), Some("0.3"));
    assert_eq!(observed(&v03), observed(&v1));
}

/// Without 0.3 a model answers as it did: a2a-sdk's default (compat off) looks the slash
/// method up first (`-32601`); a profile that checks the version first says `-32009`.
#[test]
fn models_without_0_3_refuse_every_0_3_call() {
    for (model, code) in [
        ("a2a-python-1.3-versioned", -32601),
        ("a2a-python-1.1", -32009),
    ] {
        let r = run(Profile::load(model).unwrap(), Some("0.3"));
        assert!(r.effects.is_empty(), "{model}: no turn ran");
        for op in &r.history {
            match &op.outcome {
                Outcome::Fail { code: c, .. } => {
                    assert_eq!(*c, code, "{model}: {}", op.kind.label())
                }
                other => panic!("{model}: {} answered {other:?}", op.kind.label()),
            }
        }
    }
}

/// The mastra model is the same model to a 1.0 client with 0.3 on or off.
#[test]
fn serving_0_3_changes_nothing_for_a_1_0_client() {
    let on = run(Profile::load("mastra").unwrap(), None);
    let off = run(with_v03("mastra", V03Wire::Off), None);
    assert_eq!(observed(&on), observed(&off));
}
