//! Summary tables, CSV files and the `check --json` object.
//!
//! Latency percentiles come from hdrhistogram over every acknowledged send, in simulated
//! ms. Violation rates come with a 95% Wilson interval, so a rate from 20 seeds is not read
//! as if it came from 20,000. Files are written to a temporary name and renamed into place,
//! so a reader never sees half a file.
//!
//! `summary.csv` is a function of `runs.csv` alone: each row of `runs.csv` carries its run's
//! latencies (column `latencies_ms`, see [`encode_latencies`]), and [`parse_runs_csv`] reads
//! the file back into [`RunSummary`] values that give the same `runs.csv` and
//! `summary.csv`, byte for byte. That is what lets `a2a-chaos merge` join shards.
//! New columns are only ever appended, so scripts that read columns by position keep working.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use hdrhistogram::Histogram;

use crate::check::{self, Invariant, Verdict};
use crate::error::InputError;
use crate::sim::{InvariantResult, RunSummary};

/// Runs of one (model, routing) combination.
pub struct Group<'a> {
    pub model: &'a str,
    pub routing: &'a str,
    pub runs: Vec<&'a RunSummary>,
}

/// Groups summaries by (model, routing), keeping their order of first appearance.
pub fn groups(runs: &[RunSummary]) -> Vec<Group<'_>> {
    let mut out: Vec<Group<'_>> = Vec::new();
    for r in runs {
        match out
            .iter_mut()
            .find(|g| g.model == r.model && g.routing == r.routing)
        {
            Some(g) => g.runs.push(r),
            None => out.push(Group {
                model: &r.model,
                routing: &r.routing,
                runs: vec![r],
            }),
        }
    }
    out
}

/// Latency histogram of a group (simulated ms).
pub fn histogram(runs: &[&RunSummary]) -> Histogram<u64> {
    let mut h =
        Histogram::<u64>::new_with_bounds(1, 3_600_000, 3).expect("static bounds are valid");
    for r in runs {
        for l in &r.latencies_ms {
            h.saturating_record((*l).max(1));
        }
    }
    h
}

/// How many runs of a group violated an invariant, and how many exercised it.
pub fn tally(runs: &[&RunSummary], invariant: Invariant) -> (u64, u64) {
    let mut violated = 0;
    let mut exercised = 0;
    for r in runs {
        if let Some(i) = r.invariants.iter().find(|i| i.name == invariant) {
            if i.verdict == Verdict::Fail {
                violated += 1;
            }
            if i.verdict != Verdict::Unknown {
                exercised += 1;
            }
        }
    }
    (violated, exercised)
}

/// The 95% Wilson score interval of `k` successes in `n` trials.
pub fn wilson(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_964f64;
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * ((p * (1.0 - p) / n) + z * z / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// The summary table printed after a sweep.
pub fn table(runs: &[RunSummary]) -> String {
    let invariants = check::names();
    let mut header = vec![
        "model".to_string(),
        "routing".into(),
        "runs".into(),
        "requests".into(),
        "ok/fail/info".into(),
        "effects".into(),
    ];
    header.extend(invariants.iter().map(|s| s.to_string()));
    header.push("p50 ms".into());
    header.push("p99 ms".into());
    let mut rows = vec![header];
    for g in groups(runs) {
        let n = g.runs.len() as u64;
        let sum = |f: fn(&RunSummary) -> u64| g.runs.iter().map(|r| f(r)).sum::<u64>();
        let h = histogram(&g.runs);
        let mut row = vec![
            g.model.to_string(),
            g.routing.to_string(),
            n.to_string(),
            sum(|r| r.requests).to_string(),
            format!("{}/{}/{}", sum(|r| r.ok), sum(|r| r.fail), sum(|r| r.info)),
            sum(|r| r.effects).to_string(),
        ];
        for inv in &invariants {
            let (v, e) = tally(&g.runs, *inv);
            row.push(if e == 0 {
                "unknown".to_string()
            } else {
                format!("{v}/{n} runs")
            });
        }
        if h.is_empty() {
            row.push("-".into());
            row.push("-".into());
        } else {
            row.push(h.value_at_quantile(0.5).to_string());
            row.push(h.value_at_quantile(0.99).to_string());
        }
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| format!("{cell:<w$}", w = widths[c]))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
        if i == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            let _ = writeln!(out, "{}", rule.join("  "));
        }
    }
    out
}

/// Writes `contents` to `path` atomically: to `<name>.tmp-<pid>` beside it, synced, then
/// renamed into place, so a reader (or a run killed half-way) never leaves half a file.
/// A symbolic link at `path` is refused ([`crate::files::write_atomic`]).
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    crate::files::write_atomic(path, contents)
}

/// A run's latencies as `runs.csv` stores them: ascending values, each followed by `xN`
/// when it occurs N > 1 times, separated by spaces (`49x2 51 60x3`). Empty when the run
/// acknowledged no send.
pub fn encode_latencies(latencies_ms: &[u64]) -> String {
    let mut counts: BTreeMap<u64, u64> = BTreeMap::new();
    for l in latencies_ms {
        *counts.entry(*l).or_default() += 1;
    }
    counts
        .iter()
        .map(|(v, n)| {
            if *n == 1 {
                v.to_string()
            } else {
                format!("{v}x{n}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Why a `runs.csv` cell does not read back ([`decode_latencies`], [`decode_points`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CellError {
    /// A latency item that is not `<ms>` or `<ms>x<count>`.
    #[error("latency `{0}` is not `<ms>` or `<ms>x<count>`")]
    Latency(String),
    /// A latency count of 0 or past ten million.
    #[error("latency `{0}` has an implausible count")]
    LatencyCount(String),
    /// A fired point without `=`.
    #[error("fired point `{0}` is not point=count")]
    Point(String),
    /// A fired point whose count is not a number.
    #[error("fired point `{0}` has no count")]
    PointCount(String),
}

/// The inverse of [`encode_latencies`] (values come back in ascending order).
pub fn decode_latencies(text: &str) -> Result<Vec<u64>, CellError> {
    let mut out = Vec::new();
    for item in text.split_whitespace() {
        let (value, count) = match item.split_once('x') {
            Some((v, n)) => (v, n),
            None => (item, "1"),
        };
        let bad = || CellError::Latency(item.to_string());
        let value: u64 = value.parse().map_err(|_| bad())?;
        let count: u64 = count.parse().map_err(|_| bad())?;
        if count == 0 || count > 10_000_000 {
            return Err(CellError::LatencyCount(item.to_string()));
        }
        out.extend(std::iter::repeat_n(value, count as usize));
    }
    Ok(out)
}

/// The fault points that fired in a run as `runs.csv` stores them: `point=count`, by point
/// name, space-separated (`buggify:conflict-on-save=2 kill-at:effect=1`); empty when none.
pub fn encode_points(points: &BTreeMap<String, u64>) -> String {
    points
        .iter()
        .map(|(point, n)| format!("{point}={n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Reads [`encode_points`]'s form back.
pub fn decode_points(cell: &str) -> Result<BTreeMap<String, u64>, CellError> {
    cell.split_whitespace()
        .map(|item| {
            let (point, n) = item
                .rsplit_once('=')
                .ok_or_else(|| CellError::Point(item.to_string()))?;
            let n = n
                .parse()
                .map_err(|_| CellError::PointCount(item.to_string()))?;
            Ok((point.to_string(), n))
        })
        .collect()
}

/// The columns of `runs.csv`, in order.
pub fn runs_csv_header() -> Vec<String> {
    let mut header: Vec<String> = [
        "model", "routing", "seed", "requests", "ok", "fail", "info", "effects",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    header.extend(check::names().iter().map(|s| s.to_string()));
    header.extend(
        [
            "p50_ms",
            "p99_ms",
            "sim_ms",
            "trace_hash",
            "faults",
            "error",
            "latencies_ms",
            "points_fired",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    header
}

/// Reads `runs.csv` back into run summaries, in file order.
///
/// What `runs.csv` does not keep comes back empty: each invariant's `exercised` count (0;
/// its verdict is kept) and first violation sentence (`None`) and the wall time (0).
/// `origin` names the file in errors.
pub fn parse_runs_csv(bytes: &[u8], origin: &str) -> Result<Vec<RunSummary>, InputError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(bytes);
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| InputError::new(origin, format!("cannot read the header: {e}")))?
        .iter()
        .map(str::to_string)
        .collect();
    let expected = runs_csv_header();
    if header != expected {
        return Err(InputError::new(
            origin,
            format!(
                "the columns are not the ones this version writes (expected {}; found {})",
                expected.join(","),
                header.join(",")
            ),
        ));
    }
    let invariants = check::names();
    let mut out = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let line = i + 2;
        let at = |what: &str| InputError::new(format!("{origin}:{line}"), what.to_string());
        let record = record.map_err(|e| at(&format!("bad csv: {e}")))?;
        let field = |c: usize| record.get(c).unwrap_or("");
        let number = |c: usize| -> Result<u64, InputError> {
            field(c).parse().map_err(|_| {
                at(&format!(
                    "column {} is `{}`, not a number",
                    expected[c],
                    field(c)
                ))
            })
        };
        let mut results = Vec::new();
        for (k, name) in invariants.iter().enumerate() {
            let cell = field(8 + k);
            let result = match cell {
                "" => continue,
                "unknown" => InvariantResult {
                    name: *name,
                    verdict: Verdict::Unknown,
                    violations: 0,
                    exercised: 0,
                    first: None,
                    note: None,
                },
                _ => {
                    let violations = number(8 + k)?;
                    InvariantResult {
                        name: *name,
                        verdict: if violations > 0 {
                            Verdict::Fail
                        } else {
                            Verdict::Pass
                        },
                        violations,
                        exercised: 0,
                        first: None,
                        note: None,
                    }
                }
            };
            results.push(result);
        }
        let tail = 8 + invariants.len();
        let latencies_ms = decode_latencies(field(tail + 6)).map_err(|e| at(&e.to_string()))?;
        let points_fired = decode_points(field(tail + 7)).map_err(|e| at(&e.to_string()))?;
        let error = field(tail + 5);
        out.push(RunSummary {
            model: field(0).to_string(),
            routing: field(1).to_string(),
            seed: number(2)?,
            requests: number(3)?,
            ok: number(4)?,
            fail: number(5)?,
            info: number(6)?,
            effects: number(7)?,
            latencies_ms,
            invariants: results,
            trace_hash: field(tail + 3).to_string(),
            fault_rates: field(tail + 4).to_string(),
            sim_ms: number(tail + 2)?,
            wall_ms: 0,
            error: (!error.is_empty()).then(|| error.to_string()),
            points_fired,
            // runs.csv keeps no availability: a merged sweep counts none.
            availability: Default::default(),
        });
    }
    Ok(out)
}

/// `runs.csv`: one row per run.
pub fn runs_csv(runs: &[RunSummary]) -> Vec<u8> {
    let invariants = check::names();
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(runs_csv_header()).expect("in-memory csv");
    for r in runs {
        let refs = [r];
        let h = histogram(&refs);
        let mut row = vec![
            r.model.clone(),
            r.routing.clone(),
            r.seed.to_string(),
            r.requests.to_string(),
            r.ok.to_string(),
            r.fail.to_string(),
            r.info.to_string(),
            r.effects.to_string(),
        ];
        for inv in &invariants {
            row.push(
                r.invariants
                    .iter()
                    .find(|i| i.name == *inv)
                    .map(|i| match i.verdict {
                        Verdict::Unknown => "unknown".to_string(),
                        _ => i.violations.to_string(),
                    })
                    .unwrap_or_default(),
            );
        }
        let (p50, p99) = if h.is_empty() {
            (String::new(), String::new())
        } else {
            (
                h.value_at_quantile(0.5).to_string(),
                h.value_at_quantile(0.99).to_string(),
            )
        };
        row.extend([
            p50,
            p99,
            r.sim_ms.to_string(),
            r.trace_hash.clone(),
            r.fault_rates.clone(),
            r.error.clone().unwrap_or_default(),
            encode_latencies(&r.latencies_ms),
            encode_points(&r.points_fired),
        ]);
        w.write_record(&row).expect("in-memory csv");
    }
    w.into_inner().expect("in-memory csv")
}

/// One row of `summary.csv`: one invariant of one (model, routing) combination.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    /// Model name.
    pub model: String,
    /// Routing strategy.
    pub routing: String,
    /// Invariant name.
    pub invariant: Invariant,
    /// Runs of the combination.
    pub runs: u64,
    /// Runs with at least one violation of the invariant.
    pub runs_violated: u64,
    /// The 95% Wilson interval of the violation rate.
    pub ci95: (f64, f64),
    /// Runs that exercised the invariant (0: its verdict is `unknown`).
    pub runs_exercised: u64,
    /// Client operations over every run of the combination.
    pub requests: u64,
    /// Ledger effects over every run of the combination.
    pub effects: u64,
    /// Median latency of acknowledged sends over every run, simulated ms (`None` when no
    /// send was acknowledged).
    pub p50_ms: Option<u64>,
    /// 99th percentile, as `p50_ms`.
    pub p99_ms: Option<u64>,
    /// 99.9th percentile, as `p50_ms`.
    pub p999_ms: Option<u64>,
}

impl SummaryRow {
    /// Runs violated / runs.
    pub fn violation_rate(&self) -> f64 {
        self.runs_violated as f64 / self.runs.max(1) as f64
    }
}

/// The rows of `summary.csv`, combination by combination in order of first appearance,
/// invariants in registry order.
pub fn summary_rows(runs: &[RunSummary]) -> Vec<SummaryRow> {
    let mut out = Vec::new();
    for g in groups(runs) {
        let n = g.runs.len() as u64;
        let h = histogram(&g.runs);
        let q = |p: f64| (!h.is_empty()).then(|| h.value_at_quantile(p));
        let requests: u64 = g.runs.iter().map(|r| r.requests).sum();
        let effects: u64 = g.runs.iter().map(|r| r.effects).sum();
        for inv in check::names() {
            let (v, e) = tally(&g.runs, inv);
            out.push(SummaryRow {
                model: g.model.to_string(),
                routing: g.routing.to_string(),
                invariant: inv,
                runs: n,
                runs_violated: v,
                ci95: wilson(v, n),
                runs_exercised: e,
                requests,
                effects,
                p50_ms: q(0.5),
                p99_ms: q(0.99),
                p999_ms: q(0.999),
            });
        }
    }
    out
}

/// `summary.csv`: one row per (model, routing, invariant).
pub fn summary_csv(runs: &[RunSummary]) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "model",
        "routing",
        "invariant",
        "runs",
        "runs_violated",
        "violation_rate",
        "ci95_low",
        "ci95_high",
        "runs_exercised",
        "requests",
        "effects",
        "p50_ms",
        "p99_ms",
        "p999_ms",
    ])
    .expect("in-memory csv");
    let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    for row in summary_rows(runs) {
        w.write_record([
            row.model.clone(),
            row.routing.clone(),
            row.invariant.to_string(),
            row.runs.to_string(),
            row.runs_violated.to_string(),
            format!("{:.4}", row.violation_rate()),
            format!("{:.4}", row.ci95.0),
            format!("{:.4}", row.ci95.1),
            row.runs_exercised.to_string(),
            row.requests.to_string(),
            row.effects.to_string(),
            opt(row.p50_ms),
            opt(row.p99_ms),
            opt(row.p999_ms),
        ])
        .expect("in-memory csv");
    }
    w.into_inner().expect("in-memory csv")
}

/// The `check --json` object for a set of runs.
pub fn check_json(
    file: &str,
    runs: &[RunSummary],
    expectations_met: bool,
    reproduce: impl Fn(&RunSummary) -> String,
) -> serde_json::Value {
    let mut invariants = serde_json::Map::new();
    for inv in check::names() {
        let mut verdict = Verdict::Unknown;
        let mut violations = 0;
        let mut note = None;
        for r in runs {
            if let Some(i) = r.invariants.iter().find(|i| i.name == inv) {
                note = note.or(i.note.clone());
                violations += i.violations;
                verdict = match (verdict, i.verdict) {
                    (_, Verdict::Fail) | (Verdict::Fail, _) => Verdict::Fail,
                    (_, Verdict::Pass) | (Verdict::Pass, _) => Verdict::Pass,
                    _ => Verdict::Unknown,
                };
            }
        }
        let mut entry = serde_json::json!({"verdict": verdict.word(), "violations": violations});
        if let Some(note) = note {
            // Why the verdict is weaker than the checker's own (a live peer's missing reports).
            entry["note"] = note.into();
        }
        invariants.insert(inv.to_string(), entry);
    }
    let first = runs.iter().find_map(|r| {
        r.invariants
            .iter()
            .find(|i| i.verdict == Verdict::Fail)
            .map(|i| {
                serde_json::json!({
                    "invariant": i.name,
                    "seed": r.seed,
                    "model": r.model,
                    "routing": r.routing,
                    "detail": i.first.clone().unwrap_or_default(),
                    "reproduce": reproduce(r),
                })
            })
    });
    let availability: crate::sim::Availability = runs.iter().map(|r| r.availability).sum();
    let trace_hash = if runs.len() == 1 {
        runs[0].trace_hash.clone()
    } else {
        let mut h = crate::trace::Fnv::default();
        for r in runs {
            h.write(r.trace_hash.as_bytes());
        }
        format!("{:016x}", h.0)
    };
    let errors: Vec<_> = runs
        .iter()
        .filter_map(|r| {
            r.error
                .as_ref()
                .map(|e| serde_json::json!({"seed": r.seed, "error": e, "reproduce": reproduce(r)}))
        })
        .collect();
    let mut out = serde_json::json!({
        "file": file,
        "runs": runs.len(),
        "expectations_met": expectations_met,
        "invariants": invariants,
        "first_violation": first,
        "trace_hash": trace_hash,
        "availability": availability,
    });
    if !errors.is_empty() {
        out["errors"] = serde_json::Value::Array(errors);
    }
    out
}

/// Violated invariants per model, over a set of runs.
pub fn violated_by_model(runs: &[RunSummary]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in runs {
        let entry = out.entry(r.model.clone()).or_default();
        for v in r.violated() {
            if !entry.iter().any(|x| v == *x) {
                entry.push(v.to_string());
            }
        }
    }
    for v in out.values_mut() {
        v.sort();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_round_trip_through_their_encoding() {
        let latencies = vec![60, 49, 51, 49, 60, 60];
        let text = encode_latencies(&latencies);
        assert_eq!(text, "49x2 51 60x3");
        let mut sorted = latencies.clone();
        sorted.sort();
        assert_eq!(decode_latencies(&text).unwrap(), sorted);
        assert_eq!(decode_latencies("").unwrap(), Vec::<u64>::new());
        assert!(decode_latencies("12xx").is_err());
    }

    #[test]
    fn fired_points_round_trip_through_their_encoding() {
        let points: BTreeMap<String, u64> = [
            ("kill-at:effect".to_string(), 1),
            ("buggify:conflict-on-save".to_string(), 2),
        ]
        .into();
        let text = encode_points(&points);
        assert_eq!(text, "buggify:conflict-on-save=2 kill-at:effect=1");
        assert_eq!(decode_points(&text).unwrap(), points);
        assert!(decode_points("").unwrap().is_empty());
        assert!(decode_points("buggify:slow-event-poll").is_err());
    }

    #[test]
    fn wilson_interval_brackets_the_rate() {
        let (lo, hi) = wilson(5, 20);
        assert!(lo < 0.25 && hi > 0.25);
        assert_eq!(wilson(0, 0), (0.0, 1.0));
    }
}
