//! Hostile files and shared output folders (issue 39), through the binary:
//!
//! - every input file through one bounded reader: `/dev/zero` as a model, a FIFO as a
//!   scenario (refused at once, never a hang), a file over its kind's limit;
//! - a 10-million-seed experiment of 8 models × 4 routings starts in little memory;
//! - a second run on the same `--out` is refused; `--resume` refuses a foreign journal row;
//! - the journal is never written through a symbolic link;
//! - fault rates out of range are refused by meaning;
//! - `check-history`: duplicated lines read once, colliding lines a malformed recording,
//!   an empty recording exercised nothing, lines out of order read as one history;
//! - error messages escape control characters and stay short; a profile may not take a
//!   built-in model's name.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_a2a-chaos"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    for (k, _) in std::env::vars() {
        if k.starts_with("SLURM_") || k.starts_with("A2A_CHAOS_") || k == "JOB_COMPLETION_INDEX" {
            c.env_remove(k);
        }
    }
    c
}

/// Runs the binary, killing it after `limit` (a hang is a failure, not a stuck suite).
fn run_within(args: &[&str], limit: Duration) -> Output {
    let mut child = bin()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "`a2a-chaos {}` did not finish within {limit:?} (it hangs): {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn run(args: &[&str]) -> Output {
    run_within(args, Duration::from_secs(120))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("a2a-chaos-hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(s(path)).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn dev_zero_as_a_model_file_is_refused_at_once() {
    let d = scratch("zero");
    let model = d.join("zero.toml");
    std::os::unix::fs::symlink("/dev/zero", &model).unwrap();
    let out = run_within(
        &["serve", "--model", &s(&model), "--listen", "127.0.0.1:0"],
        Duration::from_secs(10),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(&s(&model)), "{err}");
    assert!(
        err.contains("a character device, not a regular file"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_fifo_as_a_scenario_is_refused_and_never_hangs() {
    let d = scratch("fifo");
    let fifo = d.join("scenario.toml");
    mkfifo(&fifo);
    for cmd in [&["check"][..], &["replay", "--seed", "0"]] {
        let mut args = cmd.to_vec();
        let path = s(&fifo);
        args.push(&path);
        let out = run_within(&args, Duration::from_secs(10));
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("a FIFO (named pipe)"),
            "{}",
            stderr(&out)
        );
    }
    let history = d.join("history.jsonl");
    mkfifo(&history);
    let out = run_within(&["check-history", &s(&history)], Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_file_over_its_limit_is_refused_naming_the_limit() {
    let d = scratch("big");
    let scenario = d.join("big.toml");
    // 50 MB, sparse: refused by its size before a byte is read.
    std::fs::File::create(&scenario)
        .unwrap()
        .set_len(50_000_000)
        .unwrap();
    let out = run_within(&["check", &s(&scenario)], Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("is 50000000 bytes, over the 4 MiB limit for a scenario or experiment file"),
        "{err}"
    );
    let experiment = d.join("exp.toml");
    std::fs::File::create(&experiment)
        .unwrap()
        .set_len(2 << 20)
        .unwrap();
    let out = run_within(&["run", &s(&experiment)], Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("over the 1 MiB limit for an experiment file"));
    let _ = std::fs::remove_dir_all(&d);
}

/// The peak memory of a child, from `wait4` (which reaps it: `Child::wait` is not called).
#[allow(clippy::zombie_processes)]
fn run_measured(args: &[&str]) -> (i32, u64, String) {
    let child = bin()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for this child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for this process's own child.
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(got, pid);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    (code, usage.ru_maxrss as u64, err)
}

/// 8 models × 4 routings × 10,000,000 seeds: 320 million runs, the documented limit. The
/// work list is walked, never stored, so the sweep starts (and here stops after 2 runs)
/// in the memory of a small one.
#[test]
fn a_10_million_seed_experiment_starts_in_little_memory() {
    let d = scratch("ten-million");
    let exp = d.join("huge.toml");
    let models: Vec<String> = a2a_chaos::model::names()
        .iter()
        .map(|m| format!("\"{m}\""))
        .collect();
    std::fs::write(
        &exp,
        format!(
            "name = \"huge\"\nmodels = [{}]\nrouting = [\"round-robin\", \"context-affinity\", \"random\", \"affinity-failover\"]\nseeds = {{ start = 0, count = 10000000 }}\n[workload]\nconversations = 1\nturns = 1\n[faults]\nnone = true\n",
            models.join(", ")
        ),
    )
    .unwrap();
    let out = d.join("out");
    let (code, maxrss_kib, err) = run_measured(&[
        "run",
        &s(&exp),
        "--out",
        &s(&out),
        "--quiet",
        "--jobs",
        "1",
        "--stop-after",
        "2",
    ]);
    eprintln!(
        "a 8 x 4 x 10,000,000-seed sweep started and stopped after 2 runs with a peak RSS of {} MiB",
        maxrss_kib / 1024
    );
    assert_eq!(code, 0, "{err}");
    assert!(maxrss_kib < 100 * 1024, "peak RSS {maxrss_kib} KiB");
    let _ = std::fs::remove_dir_all(&d);
}

const SMALL: &str = "name = \"small\"\nmodels = [\"reference\"]\nrouting = [\"round-robin\"]\nseeds = { start = 0, count = 3 }\n[workload]\nconversations = 1\nturns = 1\n[faults]\nnone = true\n";

/// A second run on the folder a sweep is writing is refused at once; once the first is
/// gone the folder is free again.
#[test]
fn a_second_run_on_the_same_out_folder_is_refused() {
    let d = scratch("lock");
    let exp = d.join("long.toml");
    std::fs::write(&exp, SMALL.replace("count = 3", "count = 100000")).unwrap();
    let out = d.join("out");
    let mut first = bin()
        .args(["run", &s(&exp), "--out", &s(&out), "--quiet", "--jobs", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let journal = out.join("journal.jsonl");
    let started = Instant::now();
    while !journal.exists() && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(journal.exists(), "the first run journals");
    let second = run(&["run", &s(&exp), "--out", &s(&out), "--quiet"]);
    let _ = first.kill();
    let _ = first.wait();
    assert_eq!(second.status.code(), Some(2), "{}", stderr(&second));
    assert!(
        stderr(&second).contains("another a2a-chaos process is writing to this folder"),
        "{}",
        stderr(&second)
    );
    // The first run's journal is intact: its head line is still there.
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(text.starts_with("{\"a2a-chaos-journal\""), "{text}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `--resume` holds every journal row against the experiment: a row of another model (a
/// journal written by another run, or edited) is refused naming its line, and nothing is
/// merged.
#[test]
fn resume_refuses_a_journal_row_of_another_experiment() {
    let d = scratch("foreign");
    let exp = d.join("small.toml");
    std::fs::write(&exp, SMALL).unwrap();
    let out = d.join("out");
    let first = run(&[
        "run",
        &s(&exp),
        "--out",
        &s(&out),
        "--quiet",
        "--stop-after",
        "1",
    ]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let journal = out.join("journal.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let row = text.lines().nth(1).expect("one run line").to_string();
    let foreign = row.replacen("\"model\":\"reference\"", "\"model\":\"a2a-python-1.1\"", 1);
    assert_ne!(foreign, row);
    std::fs::write(&journal, format!("{text}{foreign}\n")).unwrap();
    let out_run = run(&["run", &s(&exp), "--out", &s(&out), "--quiet", "--resume"]);
    assert_eq!(out_run.status.code(), Some(2), "{}", stdout(&out_run));
    let err = stderr(&out_run);
    assert!(err.contains("journal.jsonl:3"), "{err}");
    assert!(
        err.contains("model `a2a-python-1.1` is not one of the experiment's"),
        "{err}"
    );
    // A seed out of range, and a run twice, are refused the same way.
    for bad in [row.replacen("\"seed\":0", "\"seed\":99", 1), row.clone()] {
        std::fs::write(&journal, format!("{text}{bad}\n")).unwrap();
        let again = run(&["run", &s(&exp), "--out", &s(&out), "--quiet", "--resume"]);
        assert_eq!(again.status.code(), Some(2), "{bad}");
        assert!(
            stderr(&again).contains("journal.jsonl:3"),
            "{}",
            stderr(&again)
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A journal that is a symbolic link out of `--out` is not followed: the run refuses, and
/// the file it points to is untouched.
#[test]
fn the_journal_is_never_written_through_a_symbolic_link() {
    let d = scratch("symlink");
    let exp = d.join("small.toml");
    std::fs::write(&exp, SMALL).unwrap();
    let out = d.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let precious = d.join("precious.txt");
    std::fs::write(&precious, "keep me").unwrap();
    std::os::unix::fs::symlink(&precious, out.join("journal.jsonl")).unwrap();
    let o = run(&["run", &s(&exp), "--out", &s(&out), "--quiet"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("symbolic link"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me");
    // runs.csv as a link is refused too, after the sweep.
    std::fs::remove_file(out.join("journal.jsonl")).unwrap();
    std::os::unix::fs::symlink(&precious, out.join("runs.csv")).unwrap();
    let o = run(&["run", &s(&exp), "--out", &s(&out), "--quiet"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn fault_rates_out_of_range_are_refused_by_meaning() {
    let d = scratch("rates");
    for (line, key, range) in [
        ("kill = 100000", "kill = 100000", "[0, 95.238]"),
        ("lost-reply = 7", "lost-reply = 7", "[0, 1]"),
        ("buggify = 1.5", "buggify = 1.5", "[0, 1]"),
    ] {
        let exp = d.join("rates.toml");
        std::fs::write(
            &exp,
            SMALL.replace("none = true", &format!("window-ms = 3000\n{line}")),
        )
        .unwrap();
        let o = run(&["run", &s(&exp), "--out", &s(&d.join("out")), "--quiet"]);
        assert_eq!(o.status.code(), Some(2), "{line}");
        let err = stderr(&o);
        assert!(err.contains(key) && err.contains(range), "{line}: {err}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

fn history(d: &Path, lines: &[serde_json::Value]) -> PathBuf {
    let path = d.join("history.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

fn send(seq: u64, at: u64, id: &str) -> serde_json::Value {
    serde_json::json!({"type": "request", "seq": seq, "at_ms": at, "replica": "replica-0",
        "body": {"jsonrpc": "2.0", "id": seq, "method": "message/send", "params": {"message":
            {"messageId": id, "contextId": "ctx", "taskId": "t1", "role": "user",
             "parts": [{"kind": "text", "text": "hi"}]}}}})
}

fn answer(seq: u64, at: u64) -> serde_json::Value {
    serde_json::json!({"type": "response", "seq": seq, "at_ms": at, "status": 200,
        "body": {"jsonrpc": "2.0", "id": seq, "result": {"kind": "task", "id": "t1",
            "contextId": "ctx", "status": {"state": "input-required"},
            "history": [{"messageId": "m1", "role": "user", "parts": [], "kind": "message"}],
            "artifacts": [{"artifactId": "a", "name": "answer", "parts": []}]}}})
}

fn effect(seq: u64, at: u64) -> serde_json::Value {
    serde_json::json!({"type": "effect", "seq": seq, "at_ms": at, "applied": true, "request": {
        "task_id": "t1", "context_id": "ctx", "conversation": "ctx", "turn": 1,
        "message_id": "m1", "replica": "replica-0", "key": null, "sent_ms": at}})
}

/// A turn sent twice (a retry) with one effect, whose effect line the file holds twice:
/// the copy is read once and said, not reported as a double effect.
#[test]
fn a_duplicated_line_is_read_once_and_said() {
    let d = scratch("dup");
    let h = history(
        &d,
        &[
            send(1, 0, "m1"),
            answer(1, 10),
            send(2, 20, "m1"),
            answer(2, 30),
            effect(0, 5),
            effect(0, 5),
        ],
    );
    let o = run(&["check-history", &s(&h)]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("exactly-once-effects   pass"), "{out}");
    assert!(
        out.contains("1 duplicated line(s) were identical copies of an earlier line and were read once (line 6)"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn requests_sharing_a_seq_are_a_malformed_recording() {
    let d = scratch("collide");
    let mut lines = Vec::new();
    for i in 0..48 {
        lines.push(send(7, i, &format!("m{i}")));
    }
    let h = history(&d, &lines);
    let o = run(&["check-history", &s(&h)]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("a malformed recording: lines 1 and 2 both record request 7, differently"),
        "{err}"
    );
    assert!(err.contains("and 42 more such lines"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn an_empty_recording_exercised_nothing() {
    let d = scratch("empty");
    let h = history(&d, &[]);
    let o = run(&["check-history", &s(&h), "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = stdout(&o);
    let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    for (name, i) in v["invariants"].as_object().unwrap() {
        assert_eq!(i["verdict"], "unknown", "{name}");
    }
    let o = run(&["check-history", &s(&h)]);
    assert!(
        stdout(&o).contains("the recording exercised nothing"),
        "{}",
        stdout(&o)
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn lines_out_of_order_are_read_as_one_history() {
    let d = scratch("order");
    let h = history(
        &d,
        &[
            answer(2, 30),
            answer(1, 10),
            effect(0, 5),
            send(2, 20, "m1"),
            send(1, 0, "m1"),
        ],
    );
    let o = run(&["check-history", &s(&h)]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(!out.contains("not in the file"), "{out}");
    assert!(out.contains("2 requests (2 ok"), "{out}");
    assert!(out.contains("exactly-once-effects   pass"), "{out}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn errors_escape_control_characters_and_stay_short() {
    let d = scratch("errors");
    let name = d.join("a\u{1b}[31mred.toml");
    let o = run(&["check", &s(&name)]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(!err.contains('\u{1b}'), "{err:?}");
    assert!(err.contains("a\\u{1b}[31mred.toml"), "{err}");
    // A 3 MB unknown key: the message names it, cut short.
    let key = "k".repeat(3_000_000);
    let scenario = d.join("key.toml");
    std::fs::write(
        &scenario,
        format!("name = \"x\"\nmodel = \"reference\"\n{key} = 1\n"),
    )
    .unwrap();
    let o = run(&["check", &s(&scenario)]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.len() < 4096, "{} bytes", err.len());
    assert!(err.contains("more bytes]"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_profile_may_not_take_a_built_in_models_name() {
    let d = scratch("name");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("models/a2a-python-1.1.toml"),
    )
    .unwrap();
    let impostor = d.join("impostor.toml");
    std::fs::write(
        &impostor,
        text.replacen("name = \"a2a-python-1.1\"", "name = \"reference\"", 1),
    )
    .unwrap();
    let o = run_within(
        &["serve", "--model", &s(&impostor), "--listen", "127.0.0.1:0"],
        Duration::from_secs(10),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("name = `reference` is a built-in model's name"),
        "{}",
        stderr(&o)
    );
    // The built-in's own file, unchanged, still loads (experiments name it by path).
    let exp = d.join("by-path.toml");
    std::fs::write(
        &exp,
        SMALL.replace("\"reference\"", "\"models/reference.toml\""),
    )
    .unwrap();
    let o = run(&["check", &s(&exp)]);
    assert!(o.status.code().is_some_and(|c| c < 2), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&d);
}

/// Every committed experiment and scenario still loads under the new bounds (rates by
/// meaning, file limits).
#[test]
fn every_committed_experiment_and_scenario_still_loads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    let mut dirs = vec![root.join("experiments"), root.join("tests")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() && !p.ends_with("peers") && !p.ends_with("models") {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "toml") {
                files.push(p);
            }
        }
    }
    let mut loaded = 0;
    std::env::set_current_dir(root).unwrap();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        if text.contains("[[step]]") || text.contains("models = ") {
            if let Err(e) = a2a_chaos::cli::load(f) {
                panic!("{}: {e}", f.display());
            }
            loaded += 1;
        }
    }
    assert!(loaded > 50, "{loaded} files loaded");
}
