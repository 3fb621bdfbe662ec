//! The sweep journal: what `a2a-chaos run --resume` continues from.
//!
//! While a sweep runs, every finished run is appended to `journal.jsonl` in the output
//! directory as one JSON line, written with a single `write` and flushed, so a sweep stopped
//! at any instant (Ctrl-C, `kill -9`, a pre-empted node) leaves every finished run on disk
//! and at most one torn last line. The first line names the journal format and the
//! [`crate::sweep::runner::fingerprint`] of the experiment; a journal written under another
//! configuration is refused rather than mixed in.
//!
//! On resume the journal is read back, a torn last line is cut off, and only the work items
//! it does not hold are run. At the end `runs.csv` and `summary.csv` are rebuilt from every
//! run sorted by work item, so they equal those of a sweep that went straight through; then
//! the journal is removed.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::check::{self, Verdict};
use crate::error::InputError;
use crate::files;
use crate::sim::{InvariantResult, RunSummary};

/// The journal's file name inside the output directory.
pub const FILE_NAME: &str = "journal.jsonl";

/// Format version in the journal's first line.
const FORMAT: u64 = 1;

/// Why a journaled run is not one of the sweep being resumed (the `accept` of
/// [`Journal::resume`]).
#[derive(Debug, thiserror::Error)]
pub enum NotThisSweep {
    /// Another experiment's run: its model, routing or seed is not this sweep's.
    #[error(transparent)]
    Foreign(#[from] crate::sweep::runner::ForeignRun),
    /// The run belongs to another shard of the sweep.
    #[error("seed {seed} of {model} / {routing} belongs to another shard than {shard}")]
    OtherShard {
        seed: u64,
        model: String,
        routing: String,
        shard: String,
    },
    /// The run is in the journal twice.
    #[error("seed {seed} of {model} / {routing} is in the journal twice")]
    Twice {
        seed: u64,
        model: String,
        routing: String,
    },
}

/// An open journal, appending.
#[derive(Debug)]
pub struct Journal {
    file: File,
    path: PathBuf,
}

/// What a resumed journal held.
#[derive(Debug, Default)]
pub struct Resumed {
    /// Complete runs, in file order.
    pub runs: Vec<RunSummary>,
    /// Whether a torn last line was cut off.
    pub torn: bool,
}

impl Journal {
    /// The journal path of an output directory.
    pub fn path_in(dir: &Path) -> PathBuf {
        dir.join(FILE_NAME)
    }

    /// Starts a new journal (replacing any old one) for the experiment with `fingerprint`.
    pub fn create(dir: &Path, experiment: &str, fingerprint: &str) -> std::io::Result<Journal> {
        std::fs::create_dir_all(dir)?;
        let path = Journal::path_in(dir);
        let mut file = files::create_no_follow(&path)?;
        let head = json!({
            "a2a-chaos-journal": FORMAT,
            "experiment": experiment,
            "fingerprint": fingerprint,
        });
        file.write_all(format!("{head}\n").as_bytes())?;
        file.sync_all()?;
        Ok(Journal { file, path })
    }

    /// Opens the journal in `dir` to continue it: returns the runs it holds and the journal,
    /// positioned after its last complete line. `Ok(None)` when there is no journal.
    /// A journal of another experiment or configuration is an error, and so is any run line
    /// `accept` refuses (a run of another experiment, a seed out of range, another shard's
    /// run, a run twice): the error names the line. The journal is read line by line, each
    /// line at most [`FileKind::JournalLine`]'s limit.
    ///
    /// [`FileKind::JournalLine`]: crate::input::FileKind::JournalLine
    pub fn resume(
        dir: &Path,
        experiment: &str,
        fingerprint: &str,
        accept: &mut dyn FnMut(&RunSummary) -> Result<(), NotThisSweep>,
    ) -> Result<Option<(Journal, Resumed)>, InputError> {
        let path = Journal::path_in(dir);
        let origin = path.display().to_string();
        match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            _ => {}
        }
        let mut lines = crate::input::Lines::open(&path, crate::input::FileKind::JournalLine)?;
        let mut resumed = Resumed::default();
        let mut keep = 0usize;
        let mut head_seen = false;
        while let Some(crate::input::Line {
            number: line_no,
            bytes: line,
            complete,
        }) = lines.next_line()?
        {
            let next = keep + line.len() + usize::from(complete);
            let parsed = std::str::from_utf8(&line)
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(t).ok());
            let at_end = lines.at_end();
            let value = match (parsed, complete) {
                (Some(v), true) => v,
                // A torn last line: the process stopped while writing it.
                (_, false) => {
                    resumed.torn = true;
                    break;
                }
                (None, true) if at_end => {
                    resumed.torn = true;
                    break;
                }
                (None, true) => {
                    return Err(InputError::new(
                        format!("{origin}:{line_no}"),
                        "not a journal line (the journal is damaged; remove it and run without --resume)",
                    ))
                }
            };
            if !head_seen {
                check_head(&value, &origin, experiment, fingerprint)?;
                head_seen = true;
            } else {
                let run = from_json(&value).map_err(|e| {
                    InputError::new(format!("{origin}:{line_no}"), format!("bad run: {e}"))
                })?;
                accept(&run).map_err(|why| {
                    InputError::new(
                        format!("{origin}:{line_no}"),
                        format!("{why}: this run does not belong to the sweep being resumed (the journal was written by another run or edited); remove it and run without --resume"),
                    )
                })?;
                resumed.runs.push(run);
            }
            keep = next;
        }
        if !head_seen {
            // Not even the first line made it: start over.
            return Ok(Some((
                Journal::create(dir, experiment, fingerprint)
                    .map_err(|e| InputError::new(&origin, format!("cannot write: {e}")))?,
                resumed,
            )));
        }
        let file = files::options_no_follow()
            .write(true)
            .open(&path)
            .and_then(|f| {
                f.set_len(keep as u64)?;
                Ok(f)
            })
            .and_then(|f| {
                drop(f);
                files::options_no_follow().append(true).open(&path)
            })
            .map_err(|e| InputError::new(&origin, format!("cannot continue the journal: {e}")))?;
        Ok(Some((Journal { file, path }, resumed)))
    }

    /// Appends one finished run as one line, flushed to the operating system.
    pub fn append(&mut self, run: &RunSummary) -> std::io::Result<()> {
        let line = format!("{}\n", to_json(run));
        self.file.write_all(line.as_bytes())?;
        self.file.flush()
    }

    /// Removes the journal once its runs are in `runs.csv`.
    pub fn finish(self) -> std::io::Result<()> {
        let Journal { file, path } = self;
        drop(file);
        std::fs::remove_file(path)
    }
}

/// What the first line of a journal says, and how many runs follow it: what `merge` and
/// `--shard auto` learn from a shard that has not finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// The experiment's name.
    pub experiment: String,
    /// The key the journal was written under: the configuration's fingerprint, `/`, and the
    /// shard (`K/N`) or `all`.
    pub key: String,
    /// Complete run lines after the head.
    pub runs: u64,
}

/// Reads the head of the journal in `dir`; `None` when there is none or it is not one.
pub fn head(dir: &Path) -> Option<Head> {
    let mut lines =
        crate::input::Lines::open(&Journal::path_in(dir), crate::input::FileKind::JournalLine)
            .ok()?;
    let first = lines.next_line().ok()??;
    let first: Value = serde_json::from_slice(&first.bytes).ok()?;
    if first.get("a2a-chaos-journal").and_then(Value::as_u64) != Some(FORMAT) {
        return None;
    }
    let mut runs = 0u64;
    while let Ok(Some(line)) = lines.next_line() {
        runs += u64::from(line.complete);
    }
    Some(Head {
        experiment: first.get("experiment")?.as_str()?.to_string(),
        key: first.get("fingerprint")?.as_str()?.to_string(),
        runs,
    })
}

fn check_head(
    value: &Value,
    origin: &str,
    experiment: &str,
    fingerprint: &str,
) -> Result<(), InputError> {
    if value.get("a2a-chaos-journal").and_then(Value::as_u64) != Some(FORMAT) {
        return Err(InputError::new(
            origin,
            "not an a2a-chaos journal of this version; remove it and run without --resume",
        ));
    }
    let name = value
        .get("experiment")
        .and_then(Value::as_str)
        .unwrap_or("");
    let print = value
        .get("fingerprint")
        .and_then(Value::as_str)
        .unwrap_or("");
    if name != experiment || print != fingerprint {
        return Err(InputError::new(
            origin,
            format!(
                "this journal belongs to experiment `{name}` with configuration {print}, not `{experiment}` with {fingerprint} (the file, a model, --seeds or --shard changed); remove it or run without --resume"
            ),
        ));
    }
    Ok(())
}

/// One run as a journal line: every field of [`RunSummary`].
pub fn to_json(run: &RunSummary) -> Value {
    let invariants: Vec<Value> = run
        .invariants
        .iter()
        .map(|i| {
            json!({
                "name": i.name,
                "verdict": i.verdict.word(),
                "violations": i.violations,
                "exercised": i.exercised,
                "first": i.first,
            })
        })
        .collect();
    json!({
        "model": run.model,
        "routing": run.routing,
        "seed": run.seed,
        "requests": run.requests,
        "ok": run.ok,
        "fail": run.fail,
        "info": run.info,
        "effects": run.effects,
        "latencies_ms": run.latencies_ms,
        "invariants": invariants,
        "trace_hash": run.trace_hash,
        "fault_rates": run.fault_rates,
        "sim_ms": run.sim_ms,
        "wall_ms": run.wall_ms,
        "error": run.error,
        "points_fired": run.points_fired,
        "availability": run.availability,
    })
}

/// Why a journal line is not a run ([`from_json`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RowError {
    /// A text field is missing or not a string.
    #[error("`{0}` is missing or not a string")]
    NotAString(&'static str),
    /// A count is missing or not a number.
    #[error("`{0}` is missing or not a number")]
    NotANumber(&'static str),
    /// A list is missing.
    #[error("`{0}` is missing")]
    Missing(&'static str),
    /// A latency that is not a number.
    #[error("a latency is not a number")]
    Latency,
    /// An invariant this version does not have.
    #[error("unknown invariant `{0}`")]
    UnknownInvariant(String),
    /// A verdict other than pass, fail or unknown.
    #[error("bad verdict {0:?}")]
    Verdict(Option<String>),
}

/// The inverse of [`to_json`].
pub fn from_json(v: &Value) -> Result<RunSummary, RowError> {
    let s = |k: &'static str| {
        v.get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or(RowError::NotAString(k))
    };
    let n = |k: &'static str| {
        v.get(k)
            .and_then(Value::as_u64)
            .ok_or(RowError::NotANumber(k))
    };
    let latencies_ms = v
        .get("latencies_ms")
        .and_then(Value::as_array)
        .ok_or(RowError::Missing("latencies_ms"))?
        .iter()
        .map(|x| x.as_u64().ok_or(RowError::Latency))
        .collect::<Result<Vec<_>, _>>()?;
    let mut invariants = Vec::new();
    for i in v
        .get("invariants")
        .and_then(Value::as_array)
        .ok_or(RowError::Missing("invariants"))?
    {
        let name = i.get("name").and_then(Value::as_str).unwrap_or("");
        let name = check::names()
            .into_iter()
            .find(|n| *n == name)
            .ok_or_else(|| RowError::UnknownInvariant(name.to_string()))?;
        let verdict = match i.get("verdict").and_then(Value::as_str) {
            Some("pass") => Verdict::Pass,
            Some("fail") => Verdict::Fail,
            Some("unknown") => Verdict::Unknown,
            other => return Err(RowError::Verdict(other.map(str::to_string))),
        };
        invariants.push(InvariantResult {
            name,
            verdict,
            violations: i.get("violations").and_then(Value::as_u64).unwrap_or(0),
            exercised: i.get("exercised").and_then(Value::as_u64).unwrap_or(0),
            first: i.get("first").and_then(Value::as_str).map(str::to_string),
            note: None,
        });
    }
    Ok(RunSummary {
        model: s("model")?,
        routing: s("routing")?,
        seed: n("seed")?,
        requests: n("requests")?,
        ok: n("ok")?,
        fail: n("fail")?,
        info: n("info")?,
        effects: n("effects")?,
        latencies_ms,
        invariants,
        trace_hash: s("trace_hash")?,
        fault_rates: s("fault_rates")?,
        sim_ms: n("sim_ms")?,
        wall_ms: n("wall_ms")?,
        error: v.get("error").and_then(Value::as_str).map(str::to_string),
        points_fired: v
            .get("points_fired")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, n)| Some((k.clone(), n.as_u64()?)))
                    .collect()
            })
            .unwrap_or_default(),
        // Journals written before availability was counted: none counted.
        availability: v
            .get("availability")
            .and_then(|a| serde_json::from_value(a.clone()).ok())
            .unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seed: u64) -> RunSummary {
        RunSummary {
            model: "reference".into(),
            routing: "round-robin".into(),
            seed,
            requests: 3,
            ok: 2,
            fail: 1,
            info: 0,
            effects: 2,
            latencies_ms: vec![5, 7],
            invariants: vec![InvariantResult {
                name: crate::check::Invariant::NO_LOST_WRITES,
                verdict: Verdict::Fail,
                violations: 1,
                exercised: 2,
                first: Some("turn 1 of c1 \"lost\"\nsecond line".into()),
                note: None,
            }],
            trace_hash: "00ff".into(),
            fault_rates: "kill=0.500".into(),
            sim_ms: 10,
            wall_ms: 1,
            error: None,
            points_fired: [("buggify:delay-before-save".to_string(), 2)].into(),
            availability: crate::sim::Availability {
                turns: 4,
                refused_continuations: 1,
                failed_turns: 1,
            },
        }
    }

    fn dir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("a2a-chaos-journal-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn a_run_survives_the_journal_line() {
        let r = run(4);
        let back = from_json(&to_json(&r)).unwrap();
        assert_eq!(to_json(&back), to_json(&r));
    }

    #[test]
    fn a_torn_last_line_is_cut_off_and_the_journal_continues() {
        let d = dir("torn");
        let mut j = Journal::create(&d, "x", "f1").unwrap();
        j.append(&run(0)).unwrap();
        j.append(&run(1)).unwrap();
        drop(j);
        let path = Journal::path_in(&d);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(b"{\"model\":\"refer");
        std::fs::write(&path, &bytes).unwrap();

        let (mut j, resumed) = Journal::resume(&d, "x", "f1", &mut |_| Ok(()))
            .unwrap()
            .unwrap();
        assert!(resumed.torn);
        assert_eq!(resumed.runs.len(), 2);
        j.append(&run(2)).unwrap();
        drop(j);
        let (_, resumed) = Journal::resume(&d, "x", "f1", &mut |_| Ok(()))
            .unwrap()
            .unwrap();
        assert!(!resumed.torn);
        let seeds: Vec<u64> = resumed.runs.iter().map(|r| r.seed).collect();
        assert_eq!(seeds, vec![0, 1, 2]);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_row_the_sweep_refuses_is_named_by_its_line() {
        let d = dir("foreign");
        let mut j = Journal::create(&d, "x", "f1").unwrap();
        j.append(&run(0)).unwrap();
        j.append(&run(7)).unwrap();
        drop(j);
        let err = Journal::resume(&d, "x", "f1", &mut |r| {
            if r.seed < 5 {
                Ok(())
            } else {
                Err(NotThisSweep::Twice {
                    seed: r.seed,
                    model: r.model.clone(),
                    routing: r.routing.clone(),
                })
            }
        })
        .unwrap_err();
        assert!(err.origin.ends_with("journal.jsonl:3"), "{err}");
        assert!(err.message.starts_with("seed 7 of "), "{err}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_journal_of_another_configuration_is_refused() {
        let d = dir("other");
        drop(Journal::create(&d, "x", "f1").unwrap());
        let h = head(&d).unwrap();
        assert_eq!(
            (h.experiment.as_str(), h.key.as_str(), h.runs),
            ("x", "f1", 0)
        );
        let err = Journal::resume(&d, "x", "f2", &mut |_| Ok(())).unwrap_err();
        assert!(err.message.contains("configuration"), "{err}");
        assert!(Journal::resume(&dir("none"), "x", "f1", &mut |_| Ok(()))
            .unwrap()
            .is_none());
        let _ = std::fs::remove_dir_all(&d);
    }
}
