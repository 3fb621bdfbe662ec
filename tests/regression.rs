//! Pinned scenarios: every hazard and every failure found, as a scenario under
//! `tests/scenarios/` with a `postmortem` line, checked on every `cargo test`.
//!
//! A scenario expecting violations pins a model that has the hazard; its `-reference` twin
//! pins that the recommended design holds. `h*` files are the hazards of A2A-BEHAVIOURS.md §6,
//! `c*` files the card trust faults of issue 10, `s*` files shrunk swarm failures.
//!
//! "Meets its expectations" is `check`'s rule: exactly the expected violations, every
//! invariant `[expect] exercised` names reached, and at least one invariant exercised unless
//! the file says `allow-unexercised = true`. The fidelity suite (`tests/fidelity/`, its
//! `found/` and `documented/`) is held to the same rule on its simulated side.

use std::path::{Path, PathBuf};

use a2a_chaos::check::Verdict;
use a2a_chaos::scenario::Script;
use a2a_chaos::sim::{judge, Sim};

fn scenario_files() -> Vec<PathBuf> {
    files_in("tests/scenarios")
}

fn files_in(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/scenarios exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no scenarios in {}", dir.display());
    files
}

#[test]
fn every_pinned_scenario_meets_its_expectations() {
    meet_expectations(scenario_files());
}

#[test]
fn every_fidelity_scenario_meets_its_expectations_simulated() {
    let mut files = files_in("tests/fidelity");
    files.extend(files_in("tests/fidelity/found"));
    files.extend(files_in("tests/fidelity/documented"));
    files.extend(files_in("tests/fidelity/faults"));
    meet_expectations(files);
}

fn meet_expectations(files: Vec<PathBuf>) {
    let mut failures = Vec::new();
    for path in files {
        let script = Script::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let checked = Sim::from_scenario(&script)
            .unwrap_or_else(|e| panic!("{e}"))
            .check();
        let summary = checked.summary;
        let judged = judge(&script.file.expect, &summary, checked.record.as_ref());
        let (expected, got) = (&judged.expected, &judged.got);
        if !judged.met {
            let why: Vec<String> = judged.problems.iter().map(|p| p.to_string()).collect();
            failures.push(format!(
                "{}: expected [{}], got [{}]: {}\n  postmortem: {}\n  reproduce: a2a-chaos replay {} --seed {}",
                path.display(),
                expected.join(", "),
                got.join(", "),
                why.join("; "),
                script.file.postmortem.as_deref().unwrap_or("-"),
                path.display(),
                script.file.seed
            ));
        }
        // An expected violation must come from a run that exercised the invariant.
        for inv in &summary.invariants {
            if expected.iter().any(|e| inv.name == *e) && inv.verdict != Verdict::Fail {
                failures.push(format!(
                    "{}: {} was {:?}",
                    path.display(),
                    inv.name,
                    inv.verdict
                ));
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn every_pinned_scenario_says_what_broke_and_why() {
    for path in scenario_files() {
        let script = Script::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let pm = script.file.postmortem.unwrap_or_default();
        assert!(pm.len() > 20, "{}: needs a postmortem line", path.display());
    }
}

#[test]
fn every_hazard_has_a_reference_twin_that_holds() {
    let files = scenario_files();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    // Hazards (`h`) and the card trust faults of issue 10 (`c`).
    for name in names
        .iter()
        .filter(|n| n.starts_with('h') || n.starts_with('c'))
    {
        let hazard = name.split('-').next().unwrap();
        let twin = names
            .iter()
            .find(|n| n.starts_with(&format!("{hazard}-")) && n.ends_with("-reference.toml"));
        let twin = twin.unwrap_or_else(|| panic!("{name}: no {hazard}-*-reference.toml twin"));
        let script = Script::load(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/scenarios")
                .join(twin),
        )
        .unwrap();
        assert_eq!(script.file.model, "reference", "{twin}");
        assert!(
            script.file.expect.violations.is_empty(),
            "{twin}: the reference must hold"
        );
    }
}

/// Every experiment and profile file in the repository loads: a knob added to the models
/// must reach the experiment-local profiles too.
#[test]
fn every_experiment_file_loads() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            // Profile paths inside experiment files are relative to the repository root.
            std::env::set_current_dir(env!("CARGO_MANIFEST_DIR")).unwrap();
            a2a_chaos::experiment::Experiment::load(&path).unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
    }
    assert!(n >= 5, "found {n} experiment files");
}
