//! Sweeps: every combination of an experiment × every seed, in parallel across cores.
//!
//! Each worker thread builds and runs whole simulations (a simulation is single-threaded
//! and never leaves its thread) and sends back a [`RunSummary`]. A run that panics is
//! contained: it is reported with its seed and reproduce command and the sweep goes on.
//! Results are sorted by (model, routing, seed), so output never depends on thread timing.
//!
//! A sweep is a list of [`WorkItem`]s in a canonical order ([`WorkList`]), computed on
//! demand from its position, never stored: 8 models × 4 routings × 10 million seeds take no
//! more memory to start than one seed. A shard ([`crate::sweep::shard`]) runs a
//! deterministic subset of that list, and a resumed sweep ([`crate::sweep::journal`]) runs
//! what its journal does not hold yet; [`sweep_items`] pulls the items from an iterator as
//! its threads get free, and reports each finished run as it arrives so that it can be
//! journaled at once.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};

use crate::experiment::{Experiment, Seeds};
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

/// Every work item of an experiment, in canonical order (model, then routing, then seed),
/// as positions in a list that is never stored: [`WorkList::get`] computes the item at a
/// position, so the list takes the same few bytes whatever the seed count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkList {
    models: usize,
    routings: usize,
    seeds: Seeds,
}

impl WorkList {
    /// The work list of an experiment (after `--seeds`).
    pub fn of(exp: &Experiment) -> WorkList {
        WorkList {
            models: exp.profiles.len(),
            routings: exp.file.routing.len(),
            seeds: exp.file.seeds,
        }
    }

    /// How many items (saturating: a count past `u64::MAX` is never reached).
    pub fn len(&self) -> u64 {
        (self.models as u64)
            .saturating_mul(self.routings as u64)
            .saturating_mul(self.seeds.count)
    }

    /// Whether the list has no item.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The item at `position`.
    pub fn get(&self, position: u64) -> Option<WorkItem> {
        if position >= self.len() {
            return None;
        }
        let per_model = self.routings as u64 * self.seeds.count;
        let model = (position / per_model) as usize;
        let rest = position % per_model;
        Some(WorkItem {
            model,
            routing: (rest / self.seeds.count) as usize,
            seed: self.seeds.start + rest % self.seeds.count,
        })
    }

    /// The position of `item` in the list; `None` when it is not one of its items.
    pub fn position(&self, item: &WorkItem) -> Option<u64> {
        let k = item.seed.checked_sub(self.seeds.start)?;
        (item.model < self.models && item.routing < self.routings && k < self.seeds.count).then(
            || {
                (item.model as u64 * self.routings as u64 + item.routing as u64) * self.seeds.count
                    + k
            },
        )
    }

    /// How many positions `start, start + step, ...` fall inside the list.
    pub fn count_in_steps(&self, start: u64, step: u64) -> u64 {
        let len = self.len();
        if start >= len || step == 0 {
            0
        } else {
            (len - start).div_ceil(step)
        }
    }

    /// Every item, in order, made as it is asked for.
    pub fn iter(&self) -> impl Iterator<Item = WorkItem> + Send + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }
}

/// Every work item of an experiment, in canonical order, in a vector: for tests and small
/// experiments only ([`WorkList`] is what a sweep walks).
pub fn work_items(exp: &Experiment) -> Vec<WorkItem> {
    WorkList::of(exp).iter().collect()
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

/// The work item a journaled run is, checked against the experiment: its model and routing
/// are the experiment's, its seed in range, and its columns (the invariants) those a sweep
/// of this version writes. `Err` says what does not match.
pub fn check_row(exp: &Experiment, run: &RunSummary) -> Result<WorkItem, ForeignRun> {
    if !exp.profiles.iter().any(|p| p.name == run.model) {
        return Err(ForeignRun::Model(crate::error::clean(&run.model, 80)));
    }
    if !exp.file.routing.contains(&run.routing) {
        return Err(ForeignRun::Routing(crate::error::clean(&run.routing, 80)));
    }
    let Some(item) = item_of(exp, run) else {
        let s = exp.file.seeds;
        return Err(ForeignRun::Seed {
            seed: run.seed,
            start: s.start,
            end: s.start.saturating_add(s.count),
        });
    };
    let names: Vec<crate::check::Invariant> = run.invariants.iter().map(|i| i.name).collect();
    let fine = names == crate::check::names() || (names.is_empty() && run.error.is_some());
    if !fine {
        return Err(ForeignRun::Columns {
            found: names,
            want: crate::check::names(),
        });
    }
    Ok(item)
}

/// Why a journaled run is not one of an experiment's ([`check_row`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForeignRun {
    /// Its model is not the experiment's (the name, cleaned for printing).
    #[error("model `{0}` is not one of the experiment's")]
    Model(String),
    /// Its routing is not the experiment's (cleaned for printing).
    #[error("routing `{0}` is not one of the experiment's")]
    Routing(String),
    /// Its seed is outside the experiment's `start..end`.
    #[error("seed {seed} is outside the experiment's seeds {start}..{end}")]
    Seed { seed: u64, start: u64, end: u64 },
    /// Its invariant columns are not this version's.
    #[error(
        "its invariant columns ({}) are not this version's ({})",
        words(found),
        words(want)
    )]
    Columns {
        found: Vec<crate::check::Invariant>,
        want: Vec<crate::check::Invariant>,
    },
}

/// Invariant names, for a sentence.
fn words(names: &[crate::check::Invariant]) -> String {
    names
        .iter()
        .map(|i| i.as_str())
        .collect::<Vec<_>>()
        .join(", ")
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
    let items = WorkList::of(exp);
    let progress = Progress {
        total: items.len() as usize,
        ..Progress::default()
    };
    let result: Result<_, std::convert::Infallible> =
        sweep_items(exp, items.iter(), options, progress, |_, _| Ok(()));
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

/// Runs the items `items` yields on `options.jobs` threads, each taking the next item when
/// it is free (the items are made as they are taken, never listed). `on_done` sees each run
/// as it finishes, in completion order (which depends on thread timing); an error from it
/// stops the sweep (runs in flight finish and are dropped) and is returned. The result is
/// sorted by work item, so it does not depend on thread timing.
pub fn sweep_items<E>(
    exp: &Experiment,
    items: impl Iterator<Item = WorkItem> + Send,
    options: &SweepOptions,
    progress: Progress,
    mut on_done: impl FnMut(&WorkItem, &RunSummary) -> Result<(), E>,
) -> Result<Vec<(WorkItem, RunSummary)>, E> {
    let total = progress.total.max(progress.done);
    let next = Mutex::new(items);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(WorkItem, RunSummary)>();
    let mut results: BTreeMap<WorkItem, RunSummary> = BTreeMap::new();
    let mut failure = None;
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.max(1) {
            let tx = tx.clone();
            let (next, stop) = (&next, &stop);
            scope.spawn(move || loop {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let item = match next.lock() {
                    Ok(mut items) => items.next(),
                    Err(_) => None,
                };
                let Some(item) = item else {
                    return;
                };
                let profile = &exp.profiles[item.model];
                let routing = &exp.file.routing[item.routing];
                let summary = run_one(exp, profile, routing, item.seed);
                if tx.send((item, summary)).is_err() {
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
                stop.store(true, Ordering::Relaxed);
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
