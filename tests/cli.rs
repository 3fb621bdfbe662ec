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
        .chain(a2a_chaos::check::names().into_iter().map(|i| i.as_str()))
    {
        assert!(text.contains(name), "list misses {name}");
    }
}

fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_a2a-chaos"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the binary runs")
}

/// An experiment named `../../../escaped` would write `results/../../../escaped/`: the
/// name is refused before anything is written, with exit 2.
#[test]
fn a_name_that_would_leave_the_output_folder_exits_2_and_writes_nothing() {
    let root = std::env::temp_dir().join(format!("a2a-chaos-escape-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let cwd = root.join("a/b/c");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(
        cwd.join("escaped.toml"),
        "name = \"../../../escaped\"\nmodels = [\"reference\"]\nrouting = [\"round-robin\"]\n\
         seeds = { start = 0, count = 1 }\n",
    )
    .unwrap();
    for args in [
        &["run", "escaped.toml"][..],
        &["check", "escaped.toml"],
        &["shrink", "escaped.toml", "--seed", "0"],
    ] {
        let out = run_in(&cwd, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("escaped.toml") && err.contains("`../../../escaped`"),
            "{args:?}: {err}"
        );
    }
    assert!(!root.join("escaped").exists(), "wrote outside results/");
    assert!(
        !cwd.join("results").exists(),
        "wrote results/ for a refused name"
    );
    assert!(!cwd.join("shrunk").exists());
    // A scenario's name is refused the same way.
    std::fs::write(
        cwd.join("s.toml"),
        "name = \"../x\"\nmodel = \"reference\"\n[[step]]\nwait-ms = 1\n",
    )
    .unwrap();
    let out = run_in(&cwd, &["check", "s.toml"]);
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&root);
}

/// A scenario whose first step sends turn 5 exercises no invariant: `check` fails it,
/// saying so, unless the file allows it.
#[test]
fn a_check_that_exercised_nothing_fails_unless_allowed() {
    let vacuous = "name = \"vacuous\"\nmodel = \"a2a-python-1.1\"\n[[step]]\n\
                   send = { conversation = \"c1\", turn = 5 }\n[expect]\nviolations = []\n";
    let path = temp_file("vacuous.toml", vacuous);
    let out = run(&["check", &path]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("exercised no invariant at all") && stdout.contains("NOT met"),
        "{stdout}"
    );
    let out = run(&["check", &path, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(v["expectations_met"], false);
    assert!(v["problems"][0]["problem"]
        .as_str()
        .unwrap()
        .contains("exercised no invariant"));

    let allowed = temp_file(
        "allowed.toml",
        &format!("{vacuous}allow-unexercised = true\n"),
    );
    let out = run(&["check", &allowed]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // An expected violation of an invariant nothing exercised is unexercised, not missing.
    let expected = temp_file(
        "expected.toml",
        &vacuous.replace("violations = []", "violations = [\"no-lost-writes\"]"),
    );
    let out = run(&["check", &expected]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("no-lost-writes was expected to be violated, but was never exercised"),
        "{stdout}"
    );
}

/// `[expect] exercised` names invariants the run must reach, whatever their verdict.
#[test]
fn an_invariant_that_must_be_exercised_and_was_not_fails_the_check() {
    let file = "tests/scenarios/h01-aba-continuation-a2a-python-1.1.toml";
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
    let reached = temp_file(
        "reached.toml",
        &format!("{text}\nexercised = [\"no-lost-writes\"]\n"),
    );
    assert_eq!(run(&["check", &reached]).status.code(), Some(0));
    let unreached = temp_file(
        "unreached.toml",
        &format!("{text}\nexercised = [\"liveness\"]\n"),
    );
    let out = run(&["check", &unreached]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("liveness must be exercised ([expect] exercised)"),
        "{stdout}"
    );
}

/// Turning faults off is said explicitly; a `[faults]` table that names no fault is refused.
#[test]
fn a_faults_table_without_faults_exits_2_unless_it_says_none() {
    let head = "name = \"quiet\"\nmodels = [\"reference\"]\nrouting = [\"round-robin\"]\n\
                seeds = { start = 0, count = 1 }\n[workload]\nconversations = 1\nturns = 2\n";
    let silent = temp_file("silent.toml", &format!("{head}[faults]\nwindow-ms = 500\n"));
    let out = run(&["check", &silent]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("none = true"));
    let both = temp_file(
        "both.toml",
        &format!("{head}[faults]\nnone = true\nkill = 0.5\n"),
    );
    assert_eq!(run(&["check", &both]).status.code(), Some(2));
}

/// Issue 19's new user: a file that names only models, routing, replicas and seeds.
const MINIMAL: &str = "name = \"minimal\"\nmodels = [\"a2a-python-1.1\", \"a2a-python-1.3-memory\"]\n\
                       routing = [\"round-robin\"]\nreplicas = 3\nseeds = { start = 0, count = 10 }\n";

/// Without `[faults]` and `[workload]` it runs the default swarm, so it finds lost writes
/// and double effects on both models (it once ran no fault and no retry at all).
#[test]
fn a_minimal_experiment_file_runs_the_default_swarm_and_finds_the_hazards() {
    use a2a_chaos::experiment::Experiment;
    use a2a_chaos::sweep::runner::{sweep, SweepOptions};
    let exp = Experiment::parse(MINIMAL, "minimal.toml", None).unwrap();
    let runs = sweep(
        &exp,
        &SweepOptions {
            jobs: 2,
            progress: false,
        },
    );
    let by_model = a2a_chaos::output::report::violated_by_model(&runs);
    for model in ["a2a-python-1.1", "a2a-python-1.3-memory"] {
        for inv in ["no-lost-writes", "exactly-once-effects"] {
            assert!(
                by_model[model].iter().any(|v| v == inv),
                "{model} did not violate {inv}: {:?}",
                by_model[model]
            );
        }
    }
}

/// `run`'s output on a pipe: every line within 100 columns, no colour, no progress frames;
/// the resolved defaults are printed; `--wide` gives the full table.
#[test]
fn run_output_fits_100_columns_and_has_no_progress_frames_on_a_pipe() {
    let dir = std::env::temp_dir().join(format!("a2a-chaos-narrow-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("minimal.toml"), MINIMAL).unwrap();
    let out = run_in(
        &dir,
        &["run", "minimal.toml", "--seeds", "3", "--jobs", "2"],
    );
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    for line in stdout.lines() {
        assert!(line.chars().count() <= 100, "too wide: {line}");
    }
    assert!(
        !stdout.contains('\x1b') && !stderr.contains('\x1b'),
        "colour on a pipe"
    );
    assert!(
        !stderr.contains('\r'),
        "progress frames on a pipe: {stderr:?}"
    );
    assert!(
        stdout.contains("the file has no [faults]: the embedded default's")
            && stdout.contains("the file has no [workload]: the embedded default's"),
        "{stdout}"
    );
    assert!(
        stdout.contains("a2a-python-1.1 / round-robin (3 runs): ")
            && stdout.contains("never exercised:"),
        "{stdout}"
    );
    let wide = run_in(
        &dir,
        &["run", "minimal.toml", "--seeds", "3", "--wide", "--quiet"],
    );
    let wide = String::from_utf8(wide.stdout).unwrap();
    assert!(
        wide.contains("ok/fail/info") && wide.lines().any(|l| l.len() > 100),
        "{wide}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `fidelity --merge`: batches run apart become one results directory; a later batch's row
/// of the same model and seed replaces the earlier one; a malformed runs.csv exits 2.
#[test]
fn fidelity_merge_joins_batches_and_a_rerun_replaces_its_row() {
    let header = "model,seed,replicas,steps,status,differences,found,sim_wall_ms,live_wall_ms\n";
    let first = format!(
        "{header}m,0,2,3,agree,,,10,1000\nm,1,2,4,DISAGREE,\"x: simulated pass; real fail\",,20,2000\n"
    );
    let rerun = format!("{header}m,1,2,4,agree,,,30,3000\nm,2,3,5,unstable,y,,40,4000\n");
    let base = std::env::temp_dir().join(format!("a2a-chaos-cli-merge-{}", std::process::id()));
    let a = base.join("merge-a");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::write(a.join("runs.csv"), first).unwrap();
    let b = base.join("merge-b");
    std::fs::create_dir_all(&b).unwrap();
    std::fs::write(b.join("runs.csv"), rerun).unwrap();
    let out_dir = base.join("merge-out");
    let out = run(&[
        "fidelity",
        "--merge",
        a.to_str().unwrap(),
        "--merge",
        b.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let runs = std::fs::read_to_string(out_dir.join("runs.csv")).unwrap();
    let statuses: Vec<&str> = runs
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(4).unwrap())
        .collect();
    assert_eq!(statuses, ["agree", "agree", "unstable"], "{runs}");
    let summary = std::fs::read_to_string(out_dir.join("summary.csv")).unwrap();
    assert!(summary.contains("\nm,3,2,1,0,0,1.000,0.333,"), "{summary}");
    std::fs::write(b.join("runs.csv"), "model,seed\nm,zero\n").unwrap();
    let bad = run(&[
        "fidelity",
        "--merge",
        b.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("runs.csv"));
    let _ = std::fs::remove_dir_all(&base);
}
