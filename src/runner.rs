//! Sweeps: every combination of an experiment × every seed, in parallel across cores.
//!
//! Each worker thread builds and runs whole simulations (a simulation is single-threaded
//! and never leaves its thread) and sends back a [`RunSummary`]. A run that panics is
//! contained: it is reported with its seed and reproduce command and the sweep goes on.
//! Results are sorted by (model, routing, seed), so output never depends on thread timing.

use std::collections::BTreeMap;
use std::io::Write;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use crate::check::{self, Verdict};
use crate::cluster::{self, RunRecord, RunSpec, Workload};
use crate::experiment::Experiment;
use crate::history::{OpKind, Outcome};
use crate::model::Profile;
use crate::replica::Timing;
use crate::webhook::WebhookMode;

/// What one invariant found in one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvariantResult {
    pub name: &'static str,
    pub verdict: Verdict,
    pub violations: u64,
    pub exercised: u64,
    /// The first violation, in words.
    pub first: Option<String>,
}

/// One run, summarised.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub model: String,
    pub routing: String,
    pub seed: u64,
    /// Client operations.
    pub requests: u64,
    pub ok: u64,
    pub fail: u64,
    pub info: u64,
    /// Effects applied at the ledger.
    pub effects: u64,
    /// Latency of every acknowledged send, simulated ms.
    pub latencies_ms: Vec<u64>,
    pub invariants: Vec<InvariantResult>,
    pub trace_hash: String,
    pub fault_rates: String,
    pub sim_ms: u64,
    pub wall_ms: u64,
    /// A panic or a run that did not finish.
    pub error: Option<String>,
}

impl RunSummary {
    /// Invariants with at least one violation.
    pub fn violated(&self) -> Vec<&'static str> {
        self.invariants
            .iter()
            .filter(|i| i.verdict == Verdict::Fail)
            .map(|i| i.name)
            .collect()
    }
}

/// Builds the spec of one run of an experiment.
pub fn spec_for(
    exp: &Experiment,
    profile: &Profile,
    routing: &str,
    seed: u64,
    keep_trace: bool,
) -> RunSpec {
    RunSpec {
        seed,
        profile: Rc::new(profile.clone()),
        routing: routing.to_string(),
        replicas: exp.file.replicas,
        workload: Workload::Generated(exp.file.workload.clone()),
        faults: exp.file.faults.clone(),
        timing: Timing::default(),
        webhook: WebhookMode::Ok,
        keep_trace,
        budget: exp.budget,
    }
}

/// Summarises a finished run.
pub fn summarise(record: &RunRecord, wall_ms: u64) -> RunSummary {
    let mut ok = 0;
    let mut fail = 0;
    let mut info = 0;
    let mut latencies_ms = Vec::new();
    for op in &record.history {
        match op.outcome {
            Outcome::Ok => ok += 1,
            Outcome::Fail { .. } => fail += 1,
            Outcome::Info { .. } => info += 1,
        }
        if matches!(op.kind, OpKind::Send { .. }) && op.outcome == Outcome::Ok {
            latencies_ms.push(op.complete_ms.saturating_sub(op.invoke_ms));
        }
    }
    let invariants = check::check_all(record)
        .into_iter()
        .map(|f| InvariantResult {
            name: f.invariant,
            verdict: f.verdict(),
            violations: f.violations.len() as u64,
            exercised: f.exercised,
            first: f.violations.first().map(|v| v.detail.clone()),
        })
        .collect();
    RunSummary {
        model: record.model.clone(),
        routing: record.routing.clone(),
        seed: record.seed,
        requests: record.history.len() as u64,
        ok,
        fail,
        info,
        effects: record.effects.iter().filter(|e| e.applied).count() as u64,
        latencies_ms,
        invariants,
        trace_hash: record.trace_hash.clone(),
        fault_rates: cluster::describe_rates(&record.fault_rates),
        sim_ms: record.sim_ms,
        wall_ms,
        error: record.error.clone(),
    }
}

/// Runs one seed of one combination, containing a panic.
pub fn run_one(exp: &Experiment, profile: &Profile, routing: &str, seed: u64) -> RunSummary {
    let start = Instant::now();
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let record = cluster::run(&spec_for(exp, profile, routing, seed, false));
        summarise(&record, start.elapsed().as_millis() as u64)
    }));
    match result {
        Ok(summary) => summary,
        Err(panic) => {
            let why = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            RunSummary {
                model: profile.name.clone(),
                routing: routing.to_string(),
                seed,
                requests: 0,
                ok: 0,
                fail: 0,
                info: 0,
                effects: 0,
                latencies_ms: Vec::new(),
                invariants: Vec::new(),
                trace_hash: String::new(),
                fault_rates: String::new(),
                sim_ms: 0,
                wall_ms: start.elapsed().as_millis() as u64,
                error: Some(format!("panicked: {why}")),
            }
        }
    }
}

/// Sweep options.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// Worker threads.
    pub jobs: usize,
    /// Draw a progress line on stderr.
    pub progress: bool,
}

/// Runs every combination × seed; returns summaries sorted by (model, routing, seed) in the
/// experiment's order.
pub fn sweep(exp: &Experiment, options: &SweepOptions) -> Vec<RunSummary> {
    let mut work = Vec::new();
    for (m, profile) in exp.profiles.iter().enumerate() {
        for (r, routing) in exp.file.routing.iter().enumerate() {
            for k in 0..exp.file.seeds.count {
                work.push((m, r, profile, routing.as_str(), exp.file.seeds.start + k));
            }
        }
    }
    let total = work.len();
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<(usize, usize, RunSummary)>();
    let started = Instant::now();
    let mut results: BTreeMap<(usize, usize, u64), RunSummary> = BTreeMap::new();
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.max(1) {
            let tx = tx.clone();
            let (work, next) = (&work, &next);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((m, r, profile, routing, seed)) = work.get(i) else {
                    return;
                };
                let summary = run_one(exp, profile, routing, *seed);
                if tx.send((*m, *r, summary)).is_err() {
                    return;
                }
            });
        }
        drop(tx);
        let mut done = 0;
        let mut violating = 0;
        let mut last_draw = Instant::now();
        for (m, r, summary) in rx {
            done += 1;
            if !summary.violated().is_empty() || summary.error.is_some() {
                violating += 1;
            }
            if let Some(err) = &summary.error {
                eprintln!(
                    "\nrun failed: {err}\n  reproduce: {}",
                    exp.reproduce(summary.seed, &summary.model, &summary.routing)
                );
            }
            results.insert((m, r, summary.seed), summary);
            if options.progress && (last_draw.elapsed().as_millis() >= 100 || done == total) {
                last_draw = Instant::now();
                draw_progress(done, total, violating, started.elapsed().as_secs_f64());
            }
        }
        if options.progress {
            eprintln!();
        }
    });
    results.into_values().collect()
}

fn draw_progress(done: usize, total: usize, violating: usize, secs: f64) {
    let width = 30;
    let filled = done * width / total.max(1);
    let bar: String = "#".repeat(filled) + &".".repeat(width - filled);
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "\r[{bar}] {done}/{total} runs, {violating} with violations, {secs:.1} s"
    );
    let _ = err.flush();
}
