//! Determinism is the product: one seed, one trace, in this process or another.

use std::process::Command;

use a2a_chaos::engine::Engine;
use a2a_chaos::experiment::Experiment;
use a2a_chaos::sim::Sim;

/// 24 seeds across every model × routing of the default experiment, each run twice, on
/// each engine.
#[test]
fn the_same_seed_gives_the_same_trace_hash_twice() {
    for engine in [Engine::Events, Engine::Turmoil] {
        same_hash_twice(engine);
    }
}

fn same_hash_twice(engine: Engine) {
    let exp = Experiment::default_experiment();
    let mut combos = Vec::new();
    for p in &exp.profiles {
        for r in &exp.file.routing {
            combos.push((p.clone(), r.clone()));
        }
    }
    let mut hashes = Vec::new();
    for seed in 0..24u64 {
        let (profile, routing) = &combos[seed as usize % combos.len()];
        let sim = Sim::experiment_builder(&exp, profile, routing, seed)
            .engine(engine)
            .build()
            .unwrap();
        let first = sim.run();
        let second = sim.run();
        assert_eq!(
            first.trace_hash, second.trace_hash,
            "{engine}: seed {seed} ({} / {routing}) replayed differently",
            profile.name
        );
        assert!(
            first.error.is_none(),
            "{engine}: seed {seed}: {:?}",
            first.error
        );
        hashes.push(first.trace_hash);
    }
    hashes.sort();
    hashes.dedup();
    assert!(
        hashes.len() > 20,
        "different seeds should give different traces"
    );
}

/// The hash printed by `replay` in two separate processes, and in this one, agree, on each
/// engine.
#[test]
fn a_seed_replays_to_the_same_hash_in_another_process() {
    for engine in [Engine::Events, Engine::Turmoil] {
        replays_in_another_process(engine);
    }
}

fn replays_in_another_process(engine: Engine) {
    let bin = env!("CARGO_BIN_EXE_a2a-chaos");
    let hash_of = || {
        let out = Command::new(bin)
            .args([
                "replay",
                "--seed",
                "7",
                "--model",
                "a2a-python-1.3-versioned",
                "--routing",
                "round-robin",
                "--engine",
                engine.name(),
            ])
            .output()
            .expect("the binary runs");
        assert!(out.status.success());
        let stdout = String::from_utf8(out.stdout).unwrap();
        let last = stdout.lines().last().unwrap().to_string();
        assert!(last.starts_with("trace-hash: "), "{last}");
        last
    };
    let a = hash_of();
    let b = hash_of();
    assert_eq!(a, b);
    let exp = Experiment::default_experiment();
    let profile = exp
        .profiles
        .iter()
        .find(|p| p.name == "a2a-python-1.3-versioned")
        .unwrap();
    let here = Sim::experiment_builder(&exp, profile, "round-robin", 7)
        .engine(engine)
        .build()
        .unwrap()
        .run();
    assert_eq!(a, format!("trace-hash: {}", here.trace_hash));
}
