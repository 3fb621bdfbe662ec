//! The command-line contract: exit codes, clear errors, `check --json`.

use std::path::Path;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_a2a-chaos"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the binary runs")
}

fn temp_file(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("a2a-chaos-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn a_bad_flag_exits_2() {
    let out = run(&["run", "--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_missing_file_exits_2_naming_it() {
    let out = run(&["check", "nope/missing.toml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nope/missing.toml"), "{err}");
    assert_eq!(err.lines().count(), 1, "one clear message: {err}");
}

#[test]
fn an_unknown_key_exits_2_with_file_line_and_key() {
    let path = temp_file(
        "typo.toml",
        "name = \"x\"\nmodel = \"reference\"\nreplicaz = 2\n",
    );
    let out = run(&["check", &path]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{path}:3:")) && err.contains("replicaz"),
        "{err}"
    );
}

#[test]
fn an_unknown_model_or_invariant_exits_2() {
    let model = temp_file(
        "model.toml",
        "name = \"x\"\nmodel = \"nope\"\n[[step]]\nwait-ms = 1\n",
    );
    let out = run(&["check", &model]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown model `nope`"));
    let inv = temp_file(
        "inv.toml",
        "name = \"x\"\nmodel = \"reference\"\n[expect]\nviolations = [\"no-such\"]\n",
    );
    let out = run(&["check", &inv]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown invariant `no-such`"));
}

#[test]
fn check_json_prints_the_contract_object_last_and_exits_by_expectation() {
    let file = "tests/scenarios/h01-aba-continuation-a2a-python-1.1.toml";
    assert!(Path::new(env!("CARGO_MANIFEST_DIR")).join(file).exists());
    let out = run(&["check", file, "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(v["file"], file);
    assert_eq!(v["runs"], 1);
    assert_eq!(v["expectations_met"], true);
    assert_eq!(v["invariants"]["no-lost-writes"]["verdict"], "fail");
    assert_eq!(v["first_violation"]["invariant"], "no-lost-writes");
    assert_eq!(
        v["first_violation"]["reproduce"],
        format!("a2a-chaos replay {file} --seed 0")
    );
    assert_eq!(v["trace_hash"].as_str().unwrap().len(), 16);

    // The same scenario with its expectation removed: the violation makes it exit 1.
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
    let strict = temp_file(
        "strict.toml",
        &text.replace(
            "violations = [\"no-lost-writes\", \"versions-monotonic\"]",
            "violations = []",
        ),
    );
    let out = run(&["check", &strict, "--json"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn list_names_every_model_strategy_fault_and_invariant() {
    let out = run(&["list"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for name in a2a_chaos::model::names()
        .into_iter()
        .chain(a2a_chaos::router::names())
        .chain(a2a_chaos::faults::names())
        .chain(a2a_chaos::check::names())
    {
        assert!(text.contains(name), "list misses {name}");
    }
}
