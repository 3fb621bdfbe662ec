//! Issue 10 end to end: card runs replay exactly, `check --json` reports the card
//! invariants, and runs that do not simulate the card leave them unknown.

use std::path::Path;
use std::process::Command;

use a2a_chaos::check::Verdict;
use a2a_chaos::experiment::Experiment;
use a2a_chaos::scenario::Script;
use a2a_chaos::sim::Sim;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every model of the card experiment, a few seeds each, run twice.
#[test]
fn card_runs_replay_to_the_same_trace_hash() {
    let exp = Experiment::load(&root().join("experiments/card-trust.toml")).unwrap();
    for profile in &exp.profiles {
        for seed in 0..3 {
            let sim = Sim::from_experiment(&exp, profile, "context-affinity", seed).unwrap();
            let a = sim.run();
            let b = sim.run();
            assert_eq!(a.trace_hash, b.trace_hash, "{} seed {seed}", profile.name);
            assert!(a.error.is_none(), "{:?}", a.error);
            assert!(a.cards.enabled && !a.cards.uses.is_empty());
        }
    }
}

#[test]
fn check_json_reports_the_card_invariants() {
    let file = "tests/scenarios/c02-tampered-card-mastra.toml";
    let out = Command::new(env!("CARGO_BIN_EXE_a2a-chaos"))
        .current_dir(root())
        .args(["check", file, "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(v["invariants"]["credential-audience"]["verdict"], "fail");
    assert_eq!(v["first_violation"]["invariant"], "credential-audience");
    assert!(v["first_violation"]["detail"]
        .as_str()
        .unwrap()
        .contains("mitm.example"));
}

#[test]
fn a_run_without_the_card_leaves_the_card_invariants_unknown() {
    let script =
        Script::load(&root().join("tests/scenarios/h01-aba-continuation-reference.toml")).unwrap();
    assert_eq!(script.card_setup(), None);
    let summary = Sim::from_scenario(&script).unwrap().check().summary;
    for name in ["credential-audience", "card-freshness"] {
        let inv = summary.invariants.iter().find(|i| i.name == name).unwrap();
        assert_eq!(inv.verdict, Verdict::Unknown, "{name}");
    }
}

#[test]
fn a_card_scenario_with_a_card_less_model_exits_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_a2a-chaos"))
        .current_dir(root())
        .args([
            "replay",
            "tests/scenarios/c02-tampered-card-mastra.toml",
            "--seed",
            "0",
            "--model",
            "tests/models/naive-push-follows-redirects.toml",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no [card] knobs"));
}
