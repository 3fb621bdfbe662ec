//! `a2a-chaos bench`: what a simulated A2A request costs on this machine, as ratios.
//!
//! One invocation measures, serially on the calling thread unless said otherwise:
//!
//! 1. **Standard scenario**: 3 replicas, `a2a-python-1.3-versioned`, 8 conversations x
//!    4 turns, the default experiment's swarm faults ([`STANDARD`]), swept on 1 thread on
//!    each engine, the event engine (the default) and turmoil: seeds per second and per
//!    core-second, simulated A2A requests per wall-second, simulated seconds per
//!    wall-second, peak resident memory.
//! 2. **Idle floor** (turmoil): the same hosts (store, ledger, webhook, replica-0..2,
//!    router, client) serving nothing for as long as a standard run lasts. turmoil steps
//!    every running host's runtime every tick whether or not anything happens on it, so
//!    this is the least any turmoil run with these hosts can cost per simulated
//!    millisecond ([`IDLE_HOSTS`]). The event engine has no such floor.
//! 3. **Baseline**: a bare world with those hosts, the same latency
//!    ([`world::LATENCY_MS`]) and listener capacity, serving HTTP/1.1 with hyper through
//!    [`net::serve`] / [`net::send`] but with no A2A logic: the client runs 8 loops (one
//!    per conversation) of `client -> router -> replica-k -> store` calls with empty JSON
//!    bodies, as many requests per seed as the standard scenario made. On turmoil it runs
//!    *paced*, its requests spread over as much simulated time as a standard run takes,
//!    and *back to back*; on the event engine back to back, the cost of a bare request
//!    itself: the target compares a standard request with it ([`TARGET_COST_RATIO_MAX`]).
//! 4. **2 threads**: the standard sweep again on 2 threads ([`runner::sweep`]).
//! 5. **Hazard discovery**: for every built-in model, seeds from 0 upward under the default
//!    experiment's workload and faults, both routings, until a seed or wall cap; per
//!    (model, invariant), the first violating seed and the wall time it took to find it;
//!    `bench --hazards` adds the hazards reported upstream, each on the model that has it
//!    (`bench/upstream.rs`).
//!
//! On turmoil, where the time goes is reported as a split: the idle floor times the ticks a
//! run took is turmoil stepping runtimes; the rest is the requests' own work (A2A logic,
//! hyper, the simulated network, the checkers).
//!
//! Timings depend on the machine and on whatever else runs on it; the 1-minute load average
//! and the process's CPU seconds are recorded beside the wall times, so a noisy number can be
//! recognised as such. Nothing here is asserted by tests: the figures are measured, the
//! targets only reported.
//!
//! Where each part lives:
//!
//! - this module: the standard scenario ([`STANDARD`]), the targets, [`BenchSize`], and
//!   [`run`], which runs the phases above in that order;
//! - `baseline`: the bare turmoil world and its hosts, the paced and back-to-back baselines
//!   ([`baseline_once`]) and the idle floor ([`idle_once`]);
//! - `sysinfo`: peak RSS, the load average, the process's CPU seconds, and the stopwatch
//!   each phase is timed with;
//! - `discovery`: hazard discovery ([`discover`], [`discover_all`], the card faults it adds,
//!   [`documented_table`]);
//! - `report`: [`Throughput`], [`Report`] and its figures as [`Metric`]s, printed as a table
//!   and written as `bench.csv`.
//!
//! Everything public is re-exported here, so callers use `crate::bench::...` only.
//!
//! [`world::TICK`]: crate::world::TICK
//! [`world::LATENCY_MS`]: crate::world::LATENCY_MS
//! [`net::serve`]: crate::net::serve
//! [`net::send`]: crate::net::send

mod baseline;
mod discovery;
mod report;
mod sysinfo;
mod upstream;

pub use baseline::{baseline_once, idle_once};
pub use discovery::{
    discover, discover_all, documented_table, Documented, Hazard, Search, DISCOVERY_CARD_FAULTS,
};
pub use report::{Metric, Report, Throughput};
pub use sysinfo::{load_average, peak_rss_kib, process_cpu_s};
pub use upstream::{discover_upstream, upstream_table, Upstream, UpstreamSearch, UPSTREAM};

use std::time::{Duration, Instant};

use crate::engine::Engine;
use crate::experiment::Experiment;
use crate::sweep::runner::{self, SweepOptions};
use baseline::BASELINE_LOOPS;
use sysinfo::Stopwatch;

/// The standard scenario, embedded so the benchmark does not depend on files on disk.
pub const STANDARD: &str = r#"
name = "bench-standard"
models = ["a2a-python-1.3-versioned"]
routing = ["round-robin"]
replicas = 3
seeds = { start = 0, count = 1 }

[workload]
conversations = 8
turns = 4
retries = 2
cancel-rate = 0.25

[faults]
swarm = true
window-ms = 3000
liveness-ms = 4000
kill = 0.6
kill-store = 0.15
kill-router = 0.15
kill-at-point = 0.1
partition = 0.4
link-partition = 0.4
hold = 0.3
latency = 0.3
lost-reply = 0.03
buggify = 0.2
"#;

/// Target: a simulated A2A request of the standard scenario costs at most this many times
/// a bare HTTP request sent back to back over the same world (issue 42: an A2A request's
/// own work, its store and ledger calls included, is about 3 bare requests').
pub const TARGET_COST_RATIO_MAX: f64 = 4.0;
/// Target: the event engine runs at least this many standard seeds per core-second as
/// turmoil, stepped, does.
pub const TARGET_SEEDS_VS_TURMOIL_MIN: f64 = 5.0;
/// Target: simulated seconds per wall-second, at least.
pub const TARGET_SIM_PER_WALL_MIN: f64 = 200.0;
/// Target: 2-thread sweep throughput over 1-thread, at least.
pub const TARGET_SPEEDUP_MIN: f64 = 1.8;
/// Target: every hazard found from seed 0 within this many wall-seconds.
pub const TARGET_HAZARD_SECS_MAX: f64 = 10.0;

/// Seeds per second per core of the standard scenario before generated runs ended once
/// settled (the committed `results/bench.csv` of that day, same machine, 1 thread).
pub const SEEDS_PER_CORE_BEFORE_SETTLE: f64 = 9.15;
/// When [`SEEDS_PER_CORE_BEFORE_SETTLE`] was measured.
pub const SEEDS_PER_CORE_BEFORE_SETTLE_WHEN: &str = "2026-11-30";
/// Target: seeds per second per core, at least this many times the figure before.
pub const TARGET_SEEDS_PER_CORE_RATIO: f64 = 2.0;
/// The standard scenario's fault window (`window-ms`), simulated ms.
pub const STANDARD_WINDOW_MS: u64 = 3000;

/// Runtimes turmoil steps every tick in a standard run and in the baseline: the client and
/// seven hosts (store, ledger, webhook, replica-0..2, router).
pub const IDLE_HOSTS: u64 = 8;

/// How much work one benchmark does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BenchSize {
    /// Seeds of the standard scenario (each sweep: 1 thread, then 2 threads).
    pub standard_seeds: u64,
    /// Baseline simulations (seeds).
    pub baseline_seeds: u64,
    /// Hazard discovery: highest seed count per model (each seed runs both routings).
    pub hazard_seeds_max: u64,
    /// Hazard discovery: wall-time cap per model.
    pub hazard_wall_max: Duration,
}

impl BenchSize {
    /// The default run: about a minute on a 2-core machine (200 standard seeds: the event
    /// engine sweeps 40 in half a second, too short to time).
    pub fn full() -> BenchSize {
        BenchSize {
            standard_seeds: 200,
            baseline_seeds: 40,
            hazard_seeds_max: 200,
            hazard_wall_max: Duration::from_secs(15),
        }
    }

    /// `--quick`: a few seconds; the figures are only indicative.
    pub fn quick() -> BenchSize {
        BenchSize {
            standard_seeds: 2,
            baseline_seeds: 2,
            hazard_seeds_max: 1,
            hazard_wall_max: Duration::from_millis(500),
        }
    }
}

/// Runs the benchmark; `say` receives progress lines as each phase starts.
pub fn run(size: BenchSize, mut say: impl FnMut(&str)) -> Report {
    let started = Instant::now();
    let load_average = load_average();
    let mut standard = Experiment::parse(STANDARD, "(bench standard scenario)", None)
        .expect("the embedded standard scenario is valid");
    standard.file.seeds.count = size.standard_seeds.max(1);
    let replicas = standard.file.replicas;

    say(&format!(
        "standard scenario, 1 thread: {} seeds on each engine",
        standard.file.seeds.count
    ));
    let one = SweepOptions {
        jobs: 1,
        progress: false,
    };
    let on_engine = |engine: Engine, options: &SweepOptions| {
        let mut exp = standard.clone();
        exp.file.engine = engine;
        let clock = Stopwatch::start();
        let runs = runner::sweep(&exp, options);
        Throughput::of(&runs, clock)
    };
    let standard_1t = on_engine(Engine::Events, &one);
    let peak_rss_kib = peak_rss_kib();
    let turmoil_1t = on_engine(Engine::Turmoil, &one);

    // The baseline matches a standard run: as many requests, over as much simulated time.
    let per_seed = (standard_1t.requests / standard_1t.runs.max(1)).max(BASELINE_LOOPS);
    let run_ms = turmoil_1t.sim_ms / turmoil_1t.runs.max(1);
    let seeds = size.baseline_seeds.max(1);

    say(&format!(
        "idle floor (turmoil): {seeds} seeds x {run_ms} simulated ms, {IDLE_HOSTS} runtimes, no traffic"
    ));
    let clock = Stopwatch::start();
    let mut idle = Throughput::default();
    for seed in 0..seeds {
        idle.runs += 1;
        idle.sim_ms += idle_once(seed, replicas, run_ms);
    }
    (idle.wall_s, idle.cpu_s) = clock.read();

    let mut baselines = Vec::new();
    // The event engine's bare requests are so cheap that as many seeds as the others take
    // a few hundredths of a second: ten times as many keep the timer's noise out.
    let paced = Some(Duration::from_millis(run_ms));
    for (engine, label, spread, seeds) in [
        (Engine::Turmoil, "paced", paced, seeds),
        (Engine::Turmoil, "back to back", None, seeds),
        (Engine::Events, "back to back", None, seeds * 10),
    ] {
        say(&format!(
            "baseline on {engine}, {label}: {seeds} seeds x {per_seed} bare HTTP requests"
        ));
        let clock = Stopwatch::start();
        let mut b = Throughput::default();
        for seed in 0..seeds {
            let (answered, sim_ms) = baseline_once(engine, seed, per_seed, replicas, spread);
            b.runs += 1;
            b.requests += answered;
            b.sim_ms += sim_ms;
        }
        (b.wall_s, b.cpu_s) = clock.read();
        baselines.push(b);
    }
    let (baseline, baseline_unpaced, baseline_events) = (baselines[0], baselines[1], baselines[2]);

    say(&format!(
        "standard scenario, 2 threads: {} seeds",
        standard.file.seeds.count
    ));
    let two = SweepOptions {
        jobs: 2,
        progress: false,
    };
    let standard_2t = on_engine(Engine::Events, &two);

    let searches = discover_all(&[], size.hazard_seeds_max, size.hazard_wall_max, &mut say);
    Report {
        size,
        load_average,
        standard_1t,
        turmoil_1t,
        idle,
        baseline,
        baseline_unpaced,
        baseline_events,
        standard_2t,
        peak_rss_kib,
        searches,
        wall_s: started.elapsed().as_secs_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_scenario_parses_as_described() {
        let exp = Experiment::parse(STANDARD, "standard", None).unwrap();
        assert_eq!(exp.file.replicas, 3);
        assert_eq!(exp.file.models, ["a2a-python-1.3-versioned"]);
        assert_eq!(exp.file.workload.conversations, 8);
        assert_eq!(exp.file.workload.turns, 4);
        assert_eq!(exp.file.faults.window_ms, STANDARD_WINDOW_MS);
        let default = Experiment::default_experiment();
        assert_eq!(
            serde_json::to_string(&exp.file.faults).unwrap(),
            serde_json::to_string(&default.file.faults).unwrap(),
            "the same faults as the default experiment"
        );
    }
}
