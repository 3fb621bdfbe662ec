//! Sweeps: every combination of an experiment × every seed, in parallel across cores.
//!
//! Each worker thread builds and runs whole simulations (a simulation is single-threaded
//! and never leaves its thread) and sends back a [`RunSummary`]. A run that panics is
//! contained: it is reported with its seed and reproduce command and the sweep goes on.
//! Results are sorted by (model, routing, seed), so output never depends on thread timing.
//!
//! A sweep is a list of [`WorkItem`]s in a canonical order ([`work_items`]). A shard
//! ([`crate::sweep::shard`]) runs a deterministic subset of that list, and a resumed sweep
//! ([`crate::sweep::journal`]) runs what its journal does not hold yet; [`sweep_items`] reports each
//! finished run as it arrives so that it can be journaled at once.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use crate::experiment::Experiment;
use crate::model::Profile;
use crate::sim::{RunSummary, Sim};

use super::progress::Reporter;

/// Runs one seed of one combination of an experiment, contained: a run that panics, or a
/// combination the front door refuses, is summarised with the reason as its error, so a
/// sweep goes on.
pub fn run_one(exp: &Experiment, profile: &Profile, routing: &str, seed: u64) -> RunSummary {
    match Sim::from_experiment(exp, profile, routing, seed) {
        Ok(sim) => sim.check().summary,
        Err(e) => RunSummary::refused(&profile.name, routing, seed, &e),
    }
}

/// Sweep options.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// Worker threads.
    pub jobs: usize,
    /// Show progress on stderr ([`super::progress`]: a bar on a terminal, a plain line
    /// every 10 s elsewhere).
    pub progress: bool,
}

/// One unit of a sweep: one seed of one (model, routing) combination, by position in the
/// experiment's `models` and `routing` lists. Ordering is the canonical sweep order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkItem {
    /// Index into the experiment's models (and [`Experiment::profiles`]).
    pub model: usize,
    /// Index into the experiment's routing strategies.
    pub routing: usize,
    /// The seed.
    pub seed: u64,
}

/// Every work item of an experiment, in canonical order: model, then routing, then seed.
pub fn work_items(exp: &Experiment) -> Vec<WorkItem> {
    let mut work = Vec::new();
    for model in 0..exp.profiles.len() {
        for routing in 0..exp.file.routing.len() {
            for k in 0..exp.file.seeds.count {
                work.push(WorkItem {
                    model,
                    routing,
                    seed: exp.file.seeds.start + k,
                });
            }
        }
    }
    work
}

/// The work item a summary belongs to, if it belongs to this experiment.
pub fn item_of(exp: &Experiment, summary: &RunSummary) -> Option<WorkItem> {
    let model = exp.profiles.iter().position(|p| p.name == summary.model)?;
    let routing = exp
        .file
        .routing
        .iter()
        .position(|r| *r == summary.routing)?;
    let seeds = exp.file.seeds;
    (summary.seed >= seeds.start && summary.seed - seeds.start < seeds.count).then_some(WorkItem {
        model,
        routing,
        seed: summary.seed,
    })
}

/// A fingerprint of everything that decides an experiment's runs: the resolved experiment
/// (after `--seeds`) and every model profile it loads. Journals and shard manifests carry
/// it, so runs made under another configuration are never mixed in.
pub fn fingerprint(exp: &Experiment) -> String {
    let mut h = crate::trace::Fnv::default();
    h.write(
        serde_json::to_string(&exp.file)
            .expect("an experiment serialises")
            .as_bytes(),
    );
    for p in &exp.profiles {
        h.write(b"\n");
        h.write(
            serde_json::to_string(p)
                .expect("a profile serialises")
                .as_bytes(),
        );
    }
    format!("{:016x}", h.0)
}

/// Runs every combination × seed; returns summaries sorted by (model, routing, seed) in the
/// experiment's order.
pub fn sweep(exp: &Experiment, options: &SweepOptions) -> Vec<RunSummary> {
    let items = work_items(exp);
    let progress = Progress {
        total: items.len(),
        ..Progress::default()
    };
    let result: Result<_, std::convert::Infallible> =
        sweep_items(exp, &items, options, progress, |_, _| Ok(()));
    match result {
        Ok(runs) => runs.into_iter().map(|(_, s)| s).collect(),
        Err(never) => match never {},
    }
}

/// Where a sweep's progress line starts: runs finished before this sweep (a resumed
/// journal) and the total the line counts towards.
#[derive(Debug, Clone, Copy, Default)]
pub struct Progress {
    /// Runs already done (counted as done from the start).
    pub done: usize,
    /// Of those, runs with a violation or an error.
    pub violating: usize,
    /// Every run the line counts towards (done + to do).
    pub total: usize,
}

/// Runs `items` on `options.jobs` threads. `on_done` sees each run as it finishes, in
/// completion order (which depends on thread timing); an error from it stops the sweep
/// (runs in flight finish and are dropped) and is returned. The result is sorted by work
/// item, so it does not depend on thread timing.
pub fn sweep_items<E>(
    exp: &Experiment,
    items: &[WorkItem],
    options: &SweepOptions,
    progress: Progress,
    mut on_done: impl FnMut(&WorkItem, &RunSummary) -> Result<(), E>,
) -> Result<Vec<(WorkItem, RunSummary)>, E> {
    let total = progress.total.max(progress.done + items.len());
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<(WorkItem, RunSummary)>();
    let mut results: BTreeMap<WorkItem, RunSummary> = BTreeMap::new();
    let mut failure = None;
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.max(1) {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else {
                    return;
                };
                let profile = &exp.profiles[item.model];
                let routing = &exp.file.routing[item.routing];
                let summary = run_one(exp, profile, routing, item.seed);
                if tx.send((*item, summary)).is_err() {
                    return;
                }
            });
        }
        drop(tx);
        let mut done = progress.done;
        let mut violating = progress.violating;
        let mut reporter = Reporter::new(options.progress, total, done, violating);
        for (item, summary) in rx.iter() {
            done += 1;
            if !summary.violated().is_empty() || summary.error.is_some() {
                violating += 1;
            }
            if let Some(err) = &summary.error {
                reporter.println(&format!(
                    "run failed: {err}\n  reproduce: {}",
                    exp.reproduce(summary.seed, &summary.model, &summary.routing)
                ));
            }
            if let Err(e) = on_done(&item, &summary) {
                // Stop handing out work; the threads finish their current run.
                next.store(items.len(), Ordering::Relaxed);
                failure = Some(e);
                break;
            }
            results.insert(item, summary);
            reporter.update(done, violating);
        }
        drop(rx);
        reporter.finish();
    });
    match failure {
        Some(e) => Err(e),
        None => Ok(results.into_iter().collect()),
    }
}
