//! Sharded sweeps under what batch systems do (issue 23): the binary run with the variables
//! Slurm and Kubernetes set, for a whole array, a requeued task, a one-task rerun, a
//! stepped array, a restarted pod and a re-run index; `merge` run before every shard is
//! done (as under `--dependency=afterany`) and with a stray shard set beside the real one.
//!
//! Every sweep is 1 model x 1 routing x 8 seeds; every merge is compared byte for byte with
//! the unsharded run, which runs once per test process.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const EXPERIMENT: &str = r#"
name = "shards-test"
models = ["a2a-python-1.3-memory"]
routing = ["round-robin"]
replicas = 2
seeds = { start = 0, count = 8 }

[workload]
conversations = 3
turns = 2
retries = 2

[faults]
swarm = true
window-ms = 1000
liveness-ms = 800
kill = 0.7
partition = 0.3
buggify = 0.5
"#;

mod sweep_support;
use sweep_support::bin;

fn fresh(name: &str) -> PathBuf {
    sweep_support::fresh("shards", name)
}

fn experiment_file() -> String {
    sweep_support::experiment_file("shards", EXPERIMENT)
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn ok(out: Output) -> Output {
    assert!(out.status.success(), "{}", text(&out));
    out
}

fn refused(out: Output) -> Output {
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    out
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// `run EXP --shard auto --resume --quiet --out SWEEP` with `env` set, plus `extra`.
fn task(sweep: &Path, env: &[(&str, String)], extra: &[&str]) -> Output {
    let exp = experiment_file();
    let mut c = bin();
    c.args([
        "run", &exp, "--shard", "auto", "--resume", "--quiet", "--out",
    ])
    .arg(sweep)
    .args(extra);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// The variables Slurm sets for task `id` of an array `first..=last` (step 1).
fn slurm(id: u64, first: u64, last: u64) -> Vec<(&'static str, String)> {
    vec![
        ("SLURM_ARRAY_JOB_ID", "4242".to_string()),
        ("SLURM_ARRAY_TASK_ID", id.to_string()),
        ("SLURM_ARRAY_TASK_MIN", first.to_string()),
        ("SLURM_ARRAY_TASK_MAX", last.to_string()),
        ("SLURM_ARRAY_TASK_COUNT", (last - first + 1).to_string()),
        ("SLURM_ARRAY_TASK_STEP", "1".to_string()),
        ("SLURM_CPUS_ON_NODE", "2".to_string()),
    ]
}

fn merge(sweep: &Path) -> Output {
    bin().arg("merge").arg(sweep).output().unwrap()
}

/// The unsharded sweep, once per process.
fn straight() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = fresh("straight");
        ok(bin()
            .args(["run", &experiment_file(), "--quiet", "--out"])
            .arg(&dir)
            .output()
            .unwrap());
        dir
    })
}

fn assert_merged_as_unsharded(sweep: &Path) {
    for f in ["runs.csv", "summary.csv", "chart.svg"] {
        let a = std::fs::read(straight().join(f)).unwrap();
        let b = std::fs::read(sweep.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(a == b, "{f} differs from the unsharded run's");
    }
}

fn assert_nothing_merged(sweep: &Path) {
    for f in ["runs.csv", "summary.csv", "chart.svg"] {
        assert!(!sweep.join(f).exists(), "{f} was written");
    }
}

#[test]
fn a_requeued_task_and_a_one_task_rerun_end_in_the_unsharded_files() {
    // `sbatch --array=1-4`: shard K is task K+1.
    let sweep = fresh("slurm");
    for id in [1, 3] {
        let out = ok(task(&sweep, &slurm(id, 1, 4), &[]));
        assert!(stdout(&out).contains(&format!("shard {}/4", id - 1)));
    }
    // Tasks 2 and 4 are killed after one run each.
    ok(task(&sweep, &slurm(2, 1, 4), &["--stop-after", "1"]));
    ok(task(&sweep, &slurm(4, 1, 4), &["--stop-after", "1"]));

    // The merge job (afterany) runs now: it names what is not done and writes nothing.
    let out = refused(merge(&sweep));
    let all = text(&out);
    assert!(
        stderr(&out).contains("shards 1, 3 of 4 have not finished"),
        "{all}"
    );
    assert!(stderr(&out).contains("--shard K/4 --resume"), "{all}");
    assert!(
        stdout(&out).contains("unfinished (1 runs in its journal)"),
        "{all}"
    );
    assert_nothing_merged(&sweep);

    // `scontrol requeue 4242_2`: the same variables; the task resumes its journal.
    let out = ok(task(&sweep, &slurm(2, 1, 4), &[]));
    assert!(
        stdout(&out).contains("resumed: 1 runs from the journal, 1 to go"),
        "{}",
        text(&out)
    );

    // `sbatch --array=4 job.sh`: an array of one, COUNT 1 and MIN 4.
    let out = ok(task(&sweep, &slurm(4, 4, 4), &[]));
    let all = text(&out);
    assert!(stderr(&out).contains("rerun of shard 3/4"), "{all}");
    assert!(
        stdout(&out).contains("shard 3/4 (2 of the 8 runs)"),
        "{all}"
    );
    assert!(
        stdout(&out).contains("resumed: 1 runs from the journal"),
        "{all}"
    );
    assert!(!sweep.join("shard-0-of-1").exists(), "no stray shard set");

    let out = ok(merge(&sweep));
    assert!(stdout(&out).contains("merged 4 shards"), "{}", text(&out));
    assert_merged_as_unsharded(&sweep);
}

#[test]
fn stepped_and_gapped_arrays_are_refused_before_anything_runs() {
    let sweep = fresh("stepped");
    let mut stepped = slurm(2, 0, 6);
    stepped.retain(|(k, _)| !k.ends_with("COUNT") && !k.ends_with("STEP"));
    stepped.push(("SLURM_ARRAY_TASK_COUNT", "4".into()));
    stepped.push(("SLURM_ARRAY_TASK_STEP", "2".into()));
    let out = refused(task(&sweep, &stepped, &[]));
    let err = stderr(&out);
    assert!(
        err.contains("stepped") && err.contains("contiguous"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one clear message: {err}");
    assert!(!sweep.exists(), "nothing was written");

    // `--array=0,2,5`: no step, but gaps.
    let mut gapped = slurm(2, 0, 5);
    gapped.retain(|(k, _)| !k.ends_with("COUNT"));
    gapped.push(("SLURM_ARRAY_TASK_COUNT", "3".into()));
    let err = stderr(&refused(task(&sweep, &gapped, &[])));
    assert!(err.contains("gaps"), "{err}");
}

#[test]
fn a_rerun_that_cannot_be_placed_is_refused_with_the_recipe() {
    // Shards run by hand (`--shard K/N`) record no array; a one-task array cannot be placed.
    let sweep = fresh("unplaceable");
    let exp = experiment_file();
    ok(bin()
        .args(["run", &exp, "--shard", "0/4", "--quiet", "--out"])
        .arg(&sweep)
        .output()
        .unwrap());
    let err = stderr(&refused(task(&sweep, &slurm(1, 1, 1), &[])));
    assert!(err.contains("--shard K/4 --resume"), "{err}");
    assert!(err.contains("scontrol requeue"), "{err}");
    assert!(err.contains("K = 1, 2, 3"), "{err}");
    assert!(!sweep.join("shard-0-of-1").exists());
    // Said outright, the count is taken and the task id placed as in a whole array.
    let out = ok(task(&sweep, &slurm(1, 1, 1), &["--shards", "1"]));
    assert!(stdout(&out).contains("shard 0/1 (8 of the 8 runs)"));
}

#[test]
fn a_kubernetes_job_restarts_a_pod_and_reruns_an_index() {
    let sweep = fresh("k8s");
    let pod = |k: u64| vec![("JOB_COMPLETION_INDEX", k.to_string())];
    for k in [0, 1] {
        ok(task(&sweep, &pod(k), &["--shards", "4"]));
    }
    // The count from the variable the Job's spec sets.
    let mut env = pod(2);
    env.push(("A2A_CHAOS_SHARDS", "4".into()));
    ok(task(&sweep, &env, &["--stop-after", "1"]));
    // restartPolicy: OnFailure: the same pod spec again.
    let out = ok(task(&sweep, &env, &[]));
    assert!(stdout(&out).contains("resumed: 1 runs from the journal"));
    // Index 3 fails for good; it is re-run by a plain Job with the shard spelt out.
    ok(task(
        &sweep,
        &pod(3),
        &["--shards", "4", "--stop-after", "1"],
    ));
    refused(merge(&sweep));
    assert_nothing_merged(&sweep);
    let exp = experiment_file();
    let out = ok(bin()
        .args([
            "run", &exp, "--shard", "3/4", "--resume", "--quiet", "--out",
        ])
        .arg(&sweep)
        .output()
        .unwrap());
    assert!(stdout(&out).contains("resumed: 1 runs from the journal"));
    // An index beyond the count is refused.
    let err = stderr(&refused(task(&sweep, &pod(4), &["--shards", "4"])));
    assert!(err.contains("out of range"), "{err}");
    ok(merge(&sweep));
    assert_merged_as_unsharded(&sweep);
}

#[test]
fn merge_names_and_passes_over_a_set_of_another_count() {
    let sweep = fresh("stray");
    let exp = experiment_file();
    let shard = |spec: &str, extra: &[&str]| {
        ok(bin()
            .args(["run", &exp, "--shard", spec, "--quiet", "--out"])
            .arg(&sweep)
            .args(extra)
            .output()
            .unwrap())
    };
    shard("0/1", &["--stop-after", "2"]);
    shard("0/2", &[]);
    let out = refused(merge(&sweep));
    let all = text(&out);
    assert!(
        stderr(&out).contains("shard 0 of 1 has not finished"),
        "{all}"
    );
    assert!(stderr(&out).contains("shard 1 of 2 is missing"), "{all}");
    shard("1/2", &[]);
    let out = ok(merge(&sweep));
    assert!(
        stderr(&out).contains("passing over the set of 1 shards (not complete"),
        "{}",
        text(&out)
    );
    assert_merged_as_unsharded(&sweep);
}

#[test]
fn quiet_prints_one_line_instead_of_the_table() {
    let dir = fresh("quiet");
    let out = ok(bin()
        .args([
            "run",
            &experiment_file(),
            "--quiet",
            "--seeds",
            "2",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap());
    let so = stdout(&out);
    assert!(so.contains("of 2 runs violated an invariant"), "{so}");
    assert!(!so.contains("--wide prints it here"), "{so}");
    assert!(!so.contains("first violation per"), "{so}");
}

#[cfg(target_os = "linux")]
#[test]
fn jobs_default_to_the_cpus_of_the_affinity_mask() {
    // What Slurm's task binding does: one CPU in the mask, so one thread, no --jobs.
    let Ok(status) = Command::new("taskset").args(["-c", "0", "true"]).status() else {
        eprintln!("no taskset here; skipped");
        return;
    };
    assert!(status.success());
    let dir = fresh("affinity");
    let out = ok(Command::new("taskset")
        .args(["-c", "0", env!("CARGO_BIN_EXE_a2a-chaos"), "run"])
        .arg(experiment_file())
        .args(["--quiet", "--seeds", "1", "--out"])
        .arg(&dir)
        .output()
        .unwrap());
    assert!(stdout(&out).contains(", 1 threads"), "{}", text(&out));
}
