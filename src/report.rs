//! Summary tables, CSV files and the `check --json` object.
//!
//! Latency percentiles come from hdrhistogram over every acknowledged send, in simulated
//! ms. Violation rates come with a 95% Wilson interval, so a rate from 20 seeds is not read
//! as if it came from 20,000. Files are written to a temporary name and renamed into place,
//! so a reader never sees half a file.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use hdrhistogram::Histogram;

use crate::check::{self, Verdict};
use crate::runner::RunSummary;

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
pub fn tally(runs: &[&RunSummary], invariant: &str) -> (u64, u64) {
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
            let (v, e) = tally(&g.runs, inv);
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

/// Writes `contents` to `path` atomically (a temporary file renamed into place).
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir)?;
        }
    }
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, contents)?;
    std::fs::rename(&tmp, path)
}

/// `runs.csv`: one row per run.
pub fn runs_csv(runs: &[RunSummary]) -> Vec<u8> {
    let invariants = check::names();
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec![
        "model", "routing", "seed", "requests", "ok", "fail", "info", "effects",
    ];
    header.extend(invariants.iter().copied());
    header.extend([
        "p50_ms",
        "p99_ms",
        "sim_ms",
        "trace_hash",
        "faults",
        "error",
    ]);
    w.write_record(&header).expect("in-memory csv");
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
        ]);
        w.write_record(&row).expect("in-memory csv");
    }
    w.into_inner().expect("in-memory csv")
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
    for g in groups(runs) {
        let n = g.runs.len() as u64;
        let h = histogram(&g.runs);
        let q = |p: f64| {
            if h.is_empty() {
                String::new()
            } else {
                h.value_at_quantile(p).to_string()
            }
        };
        let requests: u64 = g.runs.iter().map(|r| r.requests).sum();
        let effects: u64 = g.runs.iter().map(|r| r.effects).sum();
        for inv in check::names() {
            let (v, e) = tally(&g.runs, inv);
            let (lo, hi) = wilson(v, n);
            w.write_record([
                g.model.to_string(),
                g.routing.to_string(),
                inv.to_string(),
                n.to_string(),
                v.to_string(),
                format!("{:.4}", v as f64 / n.max(1) as f64),
                format!("{lo:.4}"),
                format!("{hi:.4}"),
                e.to_string(),
                requests.to_string(),
                effects.to_string(),
                q(0.5),
                q(0.99),
                q(0.999),
            ])
            .expect("in-memory csv");
        }
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
        for r in runs {
            if let Some(i) = r.invariants.iter().find(|i| i.name == inv) {
                violations += i.violations;
                verdict = match (verdict, i.verdict) {
                    (_, Verdict::Fail) | (Verdict::Fail, _) => Verdict::Fail,
                    (_, Verdict::Pass) | (Verdict::Pass, _) => Verdict::Pass,
                    _ => Verdict::Unknown,
                };
            }
        }
        invariants.insert(
            inv.to_string(),
            serde_json::json!({"verdict": verdict.word(), "violations": violations}),
        );
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
            if !entry.iter().any(|x| x == v) {
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
    fn wilson_interval_brackets_the_rate() {
        let (lo, hi) = wilson(5, 20);
        assert!(lo < 0.25 && hi > 0.25);
        assert_eq!(wilson(0, 0), (0.0, 1.0));
    }
}
