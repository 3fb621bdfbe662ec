//! Sweep outputs: the chart and timelines, shards merged byte for byte, interrupted sweeps
//! resumed byte for byte.
//!
//! Every test sweeps the same small experiment (2 models x 1 routing x 4 seeds, 2 replicas,
//! short fault window) through the binary; the straight-through sweep they compare against
//! runs once per test process.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const EXPERIMENT: &str = r#"
name = "outputs-test"
models = ["a2a-python-1.3-memory", "reference"]
routing = ["round-robin"]
replicas = 2
seeds = { start = 0, count = 4 }

[workload]
conversations = 4
turns = 3
retries = 2

[faults]
swarm = true
window-ms = 1500
liveness-ms = 1000
kill = 0.7
partition = 0.3
lost-reply = 0.05
buggify = 0.5
kill-at-point = 0.3
"#;

/// Files a finished sweep writes besides the timelines.
const FILES: &[&str] = &["runs.csv", "summary.csv", "chart.svg"];

mod sweep_support;
use sweep_support::bin;

/// A fresh directory under the scratch directory.
fn fresh(name: &str) -> PathBuf {
    sweep_support::fresh("outputs", name)
}

fn experiment_file() -> String {
    sweep_support::experiment_file("outputs", EXPERIMENT)
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("the binary runs")
}

fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn sweep(out: &Path, extra: &[&str]) -> Output {
    let exp = experiment_file();
    let out_s = out.display().to_string();
    let mut args = vec![
        "run",
        exp.as_str(),
        "--out",
        out_s.as_str(),
        "--quiet",
        "--jobs",
        "2",
    ];
    args.extend_from_slice(extra);
    run(&args)
}

/// The straight-through sweep, once per process.
fn straight() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = fresh("straight");
        ok(sweep(&dir, &[]));
        dir
    })
}

/// Every output file of a sweep directory, by name (the journal and manifests excluded).
fn outputs(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().to_string(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

fn assert_same_outputs(expected: &Path, got: &Path) {
    let (a, b) = (outputs(expected), outputs(got));
    let names = |v: &[(String, Vec<u8>)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&a), names(&b), "the same files");
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        assert!(
            x == y,
            "{name} differs between {} and {}",
            expected.display(),
            got.display()
        );
    }
}

#[test]
fn a_sweep_writes_csvs_a_chart_and_a_timeline_per_failing_combination() {
    let dir = straight();
    let names: Vec<String> = outputs(dir).into_iter().map(|(n, _)| n).collect();
    for f in FILES {
        assert!(names.iter().any(|n| n == f), "{f} missing: {names:?}");
    }
    assert!(
        !dir.join("journal.jsonl").exists(),
        "a finished sweep removes its journal"
    );
    assert!(
        !names.iter().any(|n| n.contains(".tmp-")),
        "no temporary files left: {names:?}"
    );

    // runs.csv alone gives back runs.csv and summary.csv.
    let runs_csv = std::fs::read(dir.join("runs.csv")).unwrap();
    let runs = a2a_chaos::output::report::parse_runs_csv(&runs_csv, "runs.csv").unwrap();
    assert_eq!(runs.len(), 8);
    assert_eq!(a2a_chaos::output::report::runs_csv(&runs), runs_csv);
    assert_eq!(
        a2a_chaos::output::report::summary_csv(&runs),
        std::fs::read(dir.join("summary.csv")).unwrap()
    );

    // The chart shows each combination's numbers as summary.csv has them.
    let chart = String::from_utf8(std::fs::read(dir.join("chart.svg")).unwrap()).unwrap();
    assert!(chart.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    for row in a2a_chaos::output::report::summary_rows(&runs) {
        let cell = format!("{} / {} / {}: ", row.model, row.routing, row.invariant);
        assert!(chart.contains(&cell), "chart misses {cell}");
        if row.runs_exercised > 0 {
            assert!(chart.contains(&format!(
                "{cell}{}/{} runs violated",
                row.runs_violated, row.runs
            )));
        }
    }

    // One timeline per combination with a violation, for its first failing seed.
    let failing = a2a_chaos::output::timeline::first_failures(&runs);
    assert!(
        !failing.is_empty(),
        "the test experiment should find violations (a2a-python-1.3-memory under kills)"
    );
    let timelines: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("timeline-"))
        .collect();
    assert_eq!(timelines.len(), failing.len(), "{timelines:?}");
    assert!(
        failing.iter().any(|r| !r.points_fired.is_empty()),
        "no failing run fired a fault point: the page's points table is untested"
    );
    for r in failing {
        let name = a2a_chaos::output::timeline::file_name(&r.model, &r.routing, r.seed);
        let html = String::from_utf8(std::fs::read(dir.join(&name)).unwrap()).unwrap();
        for lane in [
            "client",
            "router",
            "replica-0",
            "replica-1",
            "store",
            "ledger",
            "webhook",
            "driver",
        ] {
            assert!(
                html.contains(&format!(">{lane}</text>")),
                "{name}: no {lane} lane"
            );
        }
        let inv = r.violated()[0];
        assert!(
            html.contains(&format!("<b>V1</b> {inv}")),
            "{name}: violation not marked"
        );
        assert!(
            html.contains(&format!(
                "a2a-chaos replay {} --seed {} --model {} --routing {}",
                experiment_file(),
                r.seed,
                r.model,
                r.routing
            )),
            "{name}: no reproduce command"
        );
        // The fault points that fired, as runs.csv counts them, each with its times.
        assert!(html.contains("<h2>Fault points fired</h2>"), "{name}");
        for (point, n) in &r.points_fired {
            assert!(
                html.contains(&format!("<tr><td>{point}</td><td class=\"n\">{n}</td>")),
                "{name}: {point} fired {n} times, not on the page"
            );
            assert!(
                html.contains(&format!("point fired: {point}</title>")),
                "{name}: {point} not drawn"
            );
        }
        assert!(
            html.contains("this is the same run"),
            "{name}: the re-run differs"
        );
        assert!(
            !html.contains("<script") && !html.contains("<link"),
            "{name}: not self-contained"
        );
    }
}

#[test]
fn merged_shards_equal_the_unsharded_run_byte_for_byte() {
    let parent = fresh("shards");
    let exp = experiment_file();
    let dir = |k: u64| parent.join(format!("shard-{k}-of-3")).display().to_string();
    // Shard 0 by flag, shard 1 as a Kubernetes Indexed Job, shard 2 as a Slurm array task.
    ok(sweep(Path::new(&dir(0)), &["--shard", "0/3"]));
    ok(bin()
        .args(["run", &exp, "--out", &dir(1), "--quiet", "--shard", "auto"])
        .env("JOB_COMPLETION_INDEX", "1")
        .env("A2A_CHAOS_SHARDS", "3")
        .output()
        .unwrap());
    ok(bin()
        .args(["run", &exp, "--out", &dir(2), "--quiet", "--shard", "auto"])
        .env("SLURM_ARRAY_TASK_ID", "3")
        .env("SLURM_ARRAY_TASK_MIN", "1")
        .env("SLURM_ARRAY_TASK_COUNT", "3")
        .output()
        .unwrap());
    let mut rows = 0;
    for k in 0..3 {
        let d = PathBuf::from(dir(k));
        assert!(d.join("shard.json").exists());
        assert!(
            !d.join("summary.csv").exists(),
            "a shard writes runs.csv only"
        );
        rows += std::fs::read_to_string(d.join("runs.csv"))
            .unwrap()
            .lines()
            .count()
            - 1;
    }
    assert_eq!(rows, 8, "the shards split the 8 runs");

    // Missing a shard is refused, naming it.
    let out = run(&[
        "merge",
        &dir(0),
        &dir(2),
        "--out",
        &fresh("merged-partial").display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("shard 1 of 3 is missing"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The parent directory expands to its shard-K-of-N folders.
    let merged = fresh("merged");
    ok(run(&[
        "merge",
        &parent.display().to_string(),
        "--out",
        &merged.display().to_string(),
    ]));
    assert_same_outputs(straight(), &merged);
}

#[test]
fn a_stopped_sweep_resumes_to_the_same_files() {
    let dir = fresh("stopped");
    let out = ok(sweep(&dir, &["--stop-after", "3"]));
    assert!(String::from_utf8_lossy(&out.stdout).contains("stopped after 3 runs"));
    assert!(
        !dir.join("runs.csv").exists(),
        "an interrupted sweep writes no partial runs.csv"
    );
    let journal = dir.join("journal.jsonl");
    assert_eq!(
        std::fs::read_to_string(&journal).unwrap().lines().count(),
        4
    );
    // The interruption tore the line being written.
    let mut bytes = std::fs::read(&journal).unwrap();
    bytes.extend_from_slice(b"{\"model\":\"a2a-python-1.3-mem");
    std::fs::write(&journal, bytes).unwrap();

    // Resuming under another configuration is refused.
    let out = sweep(&dir, &["--resume", "--seeds", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("configuration"));

    let out = ok(sweep(&dir, &["--resume"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("resumed: 3 runs from the journal, 5 to go"),
        "{stdout}"
    );
    assert!(
        stdout.contains("5 runs in"),
        "only the missing runs ran: {stdout}"
    );
    assert_same_outputs(straight(), &dir);
}

#[test]
fn a_killed_sweep_resumes_to_the_same_files() {
    let dir = fresh("killed");
    let exp = experiment_file();
    let mut child = bin()
        .args([
            "run",
            &exp,
            "--out",
            &dir.display().to_string(),
            "--quiet",
            "--jobs",
            "1",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let journal = dir.join("journal.jsonl");
    let started = Instant::now();
    loop {
        let lines = std::fs::read_to_string(&journal).map_or(0, |t| t.lines().count());
        if lines >= 3 || started.elapsed() > Duration::from_secs(120) {
            break;
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let finished = child.try_wait().unwrap().is_some();
    let _ = child.kill();
    let _ = child.wait();
    let out = ok(sweep(&dir, &["--resume"]));
    if !finished {
        // The kill landed mid-sweep (the usual case): the resumed sweep did not start over.
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("runs from the journal"), "{stdout}");
    }
    assert_same_outputs(straight(), &dir);
}

#[test]
fn bad_shard_flags_and_merge_inputs_exit_2() {
    let exp = experiment_file();
    let out_dir = fresh("bad").display().to_string();
    for args in [
        vec![
            "run",
            exp.as_str(),
            "--out",
            out_dir.as_str(),
            "--shard",
            "3/3",
        ],
        vec![
            "run",
            exp.as_str(),
            "--out",
            out_dir.as_str(),
            "--shard",
            "x",
        ],
        vec![
            "run",
            exp.as_str(),
            "--out",
            out_dir.as_str(),
            "--shard",
            "auto",
        ],
        vec![
            "run",
            exp.as_str(),
            "--out",
            out_dir.as_str(),
            "--shards",
            "2",
        ],
        vec!["merge", out_dir.as_str()],
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one clear message: {err}");
    }
}

#[test]
fn merging_an_unfinished_shard_is_refused() {
    let parent = fresh("unfinished");
    let shard = parent.join("shard-0-of-2");
    ok(sweep(&shard, &["--shard", "0/2", "--stop-after", "1"]));
    let out = run(&["merge", &parent.display().to_string()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has not finished"), "{err}");
}
