//! `a2a-chaos bench`: what a simulated A2A request costs on this machine, as ratios.
//!
//! One invocation measures, serially on the calling thread unless said otherwise:
//!
//! 1. **Standard scenario**: 3 replicas, `a2a-python-1.3-versioned`, 8 conversations x
//!    4 turns, the default experiment's swarm faults ([`STANDARD`]), swept on 1 thread:
//!    seeds per second, simulated A2A requests per wall-second, simulated seconds per
//!    wall-second, peak resident memory.
//! 2. **Idle floor**: the same hosts (store, ledger, webhook, replica-0..2, router, client)
//!    serving nothing for as long as a standard run lasts. turmoil steps every running
//!    host's runtime every tick whether or not anything happens on it, so this is the least
//!    any run with these hosts can cost per simulated millisecond, and its inverse the most
//!    simulated time per wall-second it can reach ([`IDLE_HOSTS`]).
//! 3. **Baseline**: a bare turmoil world with those hosts, the same tick
//!    ([`world::TICK`]), latency ([`world::LATENCY_MS`]) and listener capacity,
//!    serving HTTP/1.1 with hyper through [`net::serve`] / [`net::send`] but with no A2A
//!    logic: the client runs 8 loops (one per conversation) of
//!    `client -> router -> replica-k -> store` calls with empty JSON bodies, as many
//!    requests per seed as the standard scenario made. It runs twice: *paced*, its requests
//!    spread over as much simulated time as a standard run takes (the same hosts, message
//!    count and tick: the target's baseline), and *back to back* (what bare request
//!    handling costs when no tick is idle).
//! 4. **2 threads**: the standard sweep again on 2 threads ([`runner::sweep`]).
//! 5. **Hazard discovery**: for every built-in model, seeds from 0 upward under the default
//!    experiment's workload and faults, both routings, until a seed or wall cap; per
//!    (model, invariant), the first violating seed and the wall time it took to find it.
//!
//! Where the time goes is reported as a split: the idle floor times the ticks a run took is
//! turmoil stepping runtimes; the rest is the requests' own work (A2A logic, hyper, the
//! simulated network, the checkers).
//!
//! Timings depend on the machine and on whatever else runs on it; the 1-minute load average
//! and the process's CPU seconds are recorded beside the wall times, so a noisy number can be
//! recognised as such. Nothing here is asserted by tests: the figures are measured, the
//! targets only reported.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use http::{Request, Response};
use hyper::body::Incoming;

use crate::experiment::Experiment;
use crate::model::{self, Profile};
use crate::net::{self, BoxError, Call};
use crate::sim::{RunSummary, Sim};
use crate::sweep::runner::{self, SweepOptions};
use crate::world;

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

/// Target: a simulated A2A request costs at most this many times a bare HTTP request.
pub const TARGET_COST_RATIO_MAX: f64 = 2.0;
/// Target: simulated seconds per wall-second, at least.
pub const TARGET_SIM_PER_WALL_MIN: f64 = 200.0;
/// Target: 2-thread sweep throughput over 1-thread, at least.
pub const TARGET_SPEEDUP_MIN: f64 = 1.8;
/// Target: every hazard found from seed 0 within this many wall-seconds.
pub const TARGET_HAZARD_SECS_MAX: f64 = 10.0;

/// Runtimes turmoil steps every tick in a standard run and in the baseline: the client and
/// seven hosts (store, ledger, webhook, replica-0..2, router).
pub const IDLE_HOSTS: u64 = 8;

/// The port every baseline host serves on.
const BASELINE_PORT: u16 = 9000;
/// Concurrent request loops in the baseline client (one per conversation).
const BASELINE_LOOPS: u64 = 8;

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
    /// The default run: about two minutes on a 2-core machine.
    pub fn full() -> BenchSize {
        BenchSize {
            standard_seeds: 40,
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

/// One measured figure: a row of `bench.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// Stable name (`standard_sim_per_wall`, `hazard_wall_s/<model>/<invariant>`, ...).
    pub name: String,
    /// The figure.
    pub value: f64,
    /// Its unit (`us`, `x`, `ratio`, `s`, ...).
    pub unit: &'static str,
    /// The target as text (`<= 2`), empty when the figure has none.
    pub target: String,
    /// Whether the target is met; `None` when there is no target.
    pub met: Option<bool>,
    /// Free text (the first seed of a hazard, the load average, ...).
    pub note: String,
}

impl Metric {
    fn plain(name: impl Into<String>, value: f64, unit: &'static str) -> Metric {
        Metric {
            name: name.into(),
            value,
            unit,
            target: String::new(),
            met: None,
            note: String::new(),
        }
    }

    fn at_most(name: impl Into<String>, value: f64, unit: &'static str, max: f64) -> Metric {
        Metric {
            target: format!("<= {max}"),
            met: Some(value <= max),
            ..Metric::plain(name, value, unit)
        }
    }

    fn at_least(name: impl Into<String>, value: f64, unit: &'static str, min: f64) -> Metric {
        Metric {
            target: format!(">= {min}"),
            met: Some(value >= min),
            ..Metric::plain(name, value, unit)
        }
    }

    fn note(mut self, note: impl Into<String>) -> Metric {
        self.note = note.into();
        self
    }
}

/// The first violation of one invariant by one model during hazard discovery.
#[derive(Debug, Clone, PartialEq)]
pub struct Hazard {
    /// The model searched.
    pub model: String,
    /// The invariant violated.
    pub invariant: String,
    /// The first seed that violated it.
    pub seed: u64,
    /// The routing strategy of that run.
    pub routing: String,
    /// Wall time from the start of this model's search (seed 0) to the run that found it.
    pub wall_s: f64,
}

/// The first run that showed one documented hazard (§6) on one model.
#[derive(Debug, Clone, PartialEq)]
pub struct Documented {
    /// Its §6 number.
    pub number: u8,
    /// The first seed that showed it.
    pub seed: u64,
    /// The routing strategy of that run.
    pub routing: String,
    /// Runs made up to and including that one (seeds x routings).
    pub runs: u64,
    /// Wall time from the start of this model's search to the run that showed it.
    pub wall_s: f64,
    /// CPU time of this process over the same span, when `/proc` tells (the search runs on
    /// one thread, so on a busy machine this is what the search itself cost).
    pub cpu_s: Option<f64>,
}

/// What hazard discovery did for one model.
#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    /// The model searched.
    pub model: String,
    /// Seeds tried (each with every routing).
    pub seeds: u64,
    /// Wall time of the whole search.
    pub wall_s: f64,
    /// Every invariant violated, in the order found.
    pub hazards: Vec<Hazard>,
    /// Every documented hazard (§6) shown, in the order found.
    pub documented: Vec<Documented>,
}

/// Wall and simulated totals of a batch of simulations.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Throughput {
    /// Simulations run (seeds).
    pub runs: u64,
    /// Client requests they made.
    pub requests: u64,
    /// Simulated time they covered, ms (= ticks).
    pub sim_ms: u64,
    /// Wall time they took.
    pub wall_s: f64,
    /// CPU time the process spent meanwhile (every thread), when `/proc` tells.
    pub cpu_s: Option<f64>,
}

impl Throughput {
    fn of(runs: &[RunSummary], clock: Stopwatch) -> Throughput {
        let (wall_s, cpu_s) = clock.read();
        Throughput {
            runs: runs.len() as u64,
            requests: runs.iter().map(|r| r.requests).sum(),
            sim_ms: runs.iter().map(|r| r.sim_ms).sum(),
            wall_s,
            cpu_s,
        }
    }

    /// Wall microseconds of the requests' own work, per request: the wall time less what
    /// stepping `idle_us_per_tick` for every tick costs.
    pub fn active_us_per_request(&self, idle_us_per_tick: f64) -> f64 {
        (self.wall_s * 1e6 - idle_us_per_tick * self.sim_ms as f64).max(0.0)
            / self.requests.max(1) as f64
    }

    /// Wall microseconds per simulated request.
    pub fn us_per_request(&self) -> f64 {
        self.wall_s * 1e6 / self.requests.max(1) as f64
    }

    /// Simulated seconds per wall-second.
    pub fn sim_per_wall(&self) -> f64 {
        self.sim_ms as f64 / 1000.0 / self.wall_s.max(1e-9)
    }

    /// Simulated requests per wall-second.
    pub fn requests_per_sec(&self) -> f64 {
        self.requests as f64 / self.wall_s.max(1e-9)
    }

    /// Wall microseconds per simulated millisecond (one tick of [`world::TICK`]).
    pub fn us_per_tick(&self) -> f64 {
        self.wall_s * 1e6 / self.sim_ms.max(1) as f64
    }

    /// Simulated milliseconds (ticks) per simulated request.
    pub fn ticks_per_request(&self) -> f64 {
        self.sim_ms as f64 / self.requests.max(1) as f64
    }

    /// Runs (seeds) per wall-second.
    pub fn runs_per_sec(&self) -> f64 {
        self.runs as f64 / self.wall_s.max(1e-9)
    }
}

/// A bare turmoil world configured like [`world::run`]'s: seed, epoch, tick, latency and
/// listener capacity.
fn bare_world<'a>(seed: u64) -> turmoil::Sim<'a> {
    world::turmoil_builder(seed, Duration::from_secs(600)).build()
}

/// The baseline's hosts, the same names as a standard run's: `store`, `ledger` and
/// `webhook` answer every request with `{}`; each replica makes one call to `store` per
/// request (like a save); `router` proxies round-robin to the replicas.
fn bare_hosts(sim: &mut turmoil::Sim<'_>, replicas: usize) {
    let timeout = Duration::from_secs(5);
    let leaf = |req: Request<Incoming>| async move {
        net::read_request(req.into_body())
            .await
            .map_err(|e| BoxError::from(e.to_string()))?;
        Ok::<_, BoxError>(Response::new(net::full(&b"{}"[..])))
    };
    for host in ["store", "ledger", "webhook"] {
        sim.host(host, move || net::serve(BASELINE_PORT, leaf));
    }
    let replica = move |req: Request<Incoming>| async move {
        let body = net::read_request(req.into_body())
            .await
            .map_err(|e| BoxError::from(e.to_string()))?;
        let call = Call::post_json("store", BASELINE_PORT, "/", body.to_vec(), timeout);
        let reply = net::send(&call)
            .await
            .map_err(|e| BoxError::from(e.to_string()))?;
        Ok::<_, BoxError>(Response::new(net::full(reply.body)))
    };
    for i in 0..replicas {
        sim.host(format!("replica-{i}"), move || {
            net::serve(BASELINE_PORT, replica)
        });
    }
    sim.host("router", move || {
        let next = Rc::new(Cell::new(0usize));
        let handler = move |req: Request<Incoming>| {
            let next = next.clone();
            async move {
                let body = net::read_request(req.into_body())
                    .await
                    .map_err(|e| BoxError::from(e.to_string()))?;
                let k = next.get();
                next.set(k.wrapping_add(1));
                let host = format!("replica-{}", k % replicas.max(1));
                let call = Call::post_json(host, BASELINE_PORT, "/", body.to_vec(), timeout);
                let reply = net::send(&call)
                    .await
                    .map_err(|e| BoxError::from(e.to_string()))?;
                Ok::<_, BoxError>(Response::new(net::full(reply.body)))
            }
        };
        net::serve(BASELINE_PORT, handler)
    });
}

/// Steps `sim` tick by tick, as the cluster driver does, until the client is done; returns
/// the simulated milliseconds.
fn step_to_end(mut sim: turmoil::Sim<'_>, what: &str) -> u64 {
    loop {
        match sim.step() {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => panic!("the {what} simulation failed: {e}"),
        }
    }
    sim.elapsed().as_millis() as u64
}

/// Runs one baseline simulation: `requests` bare HTTP calls from `client` through `router`
/// to a replica and on to `store`, in 8 loops. With `spread`, each loop starts its requests
/// at even intervals over that much simulated time (a paced run, as long as a standard
/// run); without, back to back. Returns (requests answered, simulated ms).
pub fn baseline_once(
    seed: u64,
    requests: u64,
    replicas: usize,
    spread: Option<Duration>,
) -> (u64, u64) {
    let mut sim = bare_world(seed);
    bare_hosts(&mut sim, replicas);
    let timeout = Duration::from_secs(5);
    let answered = Rc::new(Cell::new(0u64));
    {
        let answered = answered.clone();
        sim.client("client", async move {
            let start = tokio::time::Instant::now();
            let mut loops = Vec::new();
            for l in 0..BASELINE_LOOPS {
                let share = requests / BASELINE_LOOPS + u64::from(l < requests % BASELINE_LOOPS);
                let answered = answered.clone();
                loops.push(tokio::task::spawn_local(async move {
                    // Loop l's request i starts at (i + l/8) periods from the start.
                    let period = spread.map(|d| d / share.max(1) as u32);
                    for i in 0..share {
                        if let Some(p) = period {
                            let at = p * i as u32 + p * l as u32 / BASELINE_LOOPS as u32;
                            tokio::time::sleep_until(start + at).await;
                        }
                        let call =
                            Call::post_json("router", BASELINE_PORT, "/", b"{}".to_vec(), timeout);
                        if net::send(&call).await.is_ok() {
                            answered.set(answered.get() + 1);
                        }
                    }
                }));
            }
            for l in loops {
                l.await?;
            }
            Ok(())
        });
    }
    let sim_ms = step_to_end(sim, "baseline");
    (answered.get(), sim_ms)
}

/// Runs one idle simulation: the baseline's hosts, serving nothing, while the client sleeps
/// `sim_ms` simulated milliseconds. Returns the simulated ms it took.
pub fn idle_once(seed: u64, replicas: usize, sim_ms: u64) -> u64 {
    let mut sim = bare_world(seed);
    bare_hosts(&mut sim, replicas);
    sim.client("client", async move {
        tokio::time::sleep(Duration::from_millis(sim_ms)).await;
        Ok(())
    });
    step_to_end(sim, "idle")
}

/// Peak resident set size of this process (`VmHWM`), in KiB, if `/proc` has it.
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The load averages, as `/proc/loadavg` gives them (first three fields).
pub fn load_average() -> Option<(f64, String)> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let fields: Vec<&str> = text.split_whitespace().take(3).collect();
    let one = fields.first()?.parse().ok()?;
    Some((one, fields.join(" ")))
}

/// CPU seconds this process has used, user plus system, every thread (`/proc/self/stat`,
/// in the kernel's 100 Hz clock ticks).
pub fn process_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces; the fields after its `)` are fixed.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3, so utime (14) and stime (15) are at 11 and 12.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / 100.0)
}

/// Wall and CPU time since it started.
#[derive(Debug, Clone, Copy)]
struct Stopwatch {
    wall: Instant,
    cpu: Option<f64>,
}

impl Stopwatch {
    fn start() -> Stopwatch {
        Stopwatch {
            wall: Instant::now(),
            cpu: process_cpu_s(),
        }
    }

    /// (wall seconds, CPU seconds) since the start.
    fn read(&self) -> (f64, Option<f64>) {
        let cpu = match (self.cpu, process_cpu_s()) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        };
        (self.wall.elapsed().as_secs_f64(), cpu)
    }
}

/// Hazard discovery for one model: seeds from 0 upward, every routing of `exp`, until
/// `seeds_max` seeds or `wall_max` have gone by.
pub fn discover(exp: &Experiment, profile: &Profile, seeds_max: u64, wall_max: Duration) -> Search {
    let clock = Stopwatch::start();
    let started = clock.wall;
    let mut hazards: BTreeMap<&'static str, Hazard> = BTreeMap::new();
    let mut documented: BTreeMap<u8, Documented> = BTreeMap::new();
    let mut seeds = 0;
    let mut runs = 0;
    'seeds: for seed in 0..seeds_max {
        for routing in &exp.file.routing {
            if seed > 0 && started.elapsed() >= wall_max {
                break 'seeds;
            }
            runs += 1;
            let Ok(sim) = Sim::from_experiment(exp, profile, routing, seed) else {
                continue;
            };
            let checked = sim.check();
            let Some(record) = checked.record else {
                continue;
            };
            let findings = checked.findings;
            for number in crate::check::hazards::shown(&record, &findings) {
                documented.entry(number).or_insert_with(|| {
                    let (wall_s, cpu_s) = clock.read();
                    Documented {
                        number,
                        seed,
                        routing: routing.clone(),
                        runs,
                        wall_s,
                        cpu_s,
                    }
                });
            }
            let violated = findings
                .iter()
                .filter(|f| f.verdict() == crate::check::Verdict::Fail)
                .map(|f| f.invariant);
            for inv in violated {
                hazards.entry(inv).or_insert_with(|| Hazard {
                    model: profile.name.clone(),
                    invariant: inv.to_string(),
                    seed,
                    routing: routing.clone(),
                    wall_s: started.elapsed().as_secs_f64(),
                });
            }
        }
        seeds = seed + 1;
    }
    let mut hazards: Vec<Hazard> = hazards.into_values().collect();
    hazards.sort_by(|a, b| a.wall_s.total_cmp(&b.wall_s));
    let mut documented: Vec<Documented> = documented.into_values().collect();
    documented.sort_by(|a, b| a.wall_s.total_cmp(&b.wall_s));
    Search {
        model: profile.name.clone(),
        seeds,
        wall_s: started.elapsed().as_secs_f64(),
        hazards,
        documented,
    }
}

/// The card faults hazard discovery adds to the default experiment. The default `run` leaves
/// them out: simulating the card adds hosts, and the default would no longer finish within a
/// minute on two cores.
pub const DISCOVERY_CARD_FAULTS: &str = "card-move = 0.1
card-no-streaming = 0.1
card-key-revoked = 0.1
card-tampered = 0.05
card-foreign-origin = 0.05
";

/// Hazard discovery for every built-in model under the default experiment plus
/// [`DISCOVERY_CARD_FAULTS`], from seed 0.
///
/// `only` restricts the search to those models (every built-in model when empty).
pub fn discover_all(
    only: &[String],
    seeds_max: u64,
    wall_max: Duration,
    mut say: impl FnMut(&str),
) -> Vec<Search> {
    // The default's `[faults]` table is its last: the card faults join it.
    let text = format!("{}{DISCOVERY_CARD_FAULTS}", crate::experiment::DEFAULT);
    let default = Experiment::parse(&text, "(default + card faults)", None)
        .expect("the embedded default with card faults is valid");
    let mut searches = Vec::new();
    for name in model::names() {
        if !only.is_empty() && !only.iter().any(|m| m == name) {
            continue;
        }
        say(&format!(
            "hazard discovery: {name} (up to {seeds_max} seeds or {:.1} s)",
            wall_max.as_secs_f64()
        ));
        let profile = Profile::load(name).expect("a built-in profile loads");
        searches.push(discover(&default, &profile, seeds_max.max(1), wall_max));
    }
    searches
}

/// Per model, each documented hazard (§6) found: first seed, runs and wall-seconds; then
/// the hazards no model showed, and the ones the simulator cannot show, with the reason.
pub fn documented_table(searches: &[Search]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<26} {:<4} {:>6} {:>6} {:>8} {:>7}  {:<17} hazard",
        "model", "§6", "seed", "runs", "wall s", "CPU s", "routing"
    );
    let mut seen = std::collections::BTreeSet::new();
    for s in searches {
        for d in &s.documented {
            seen.insert(d.number);
            let title = crate::check::hazards::by_number(d.number).map_or("", |h| h.title);
            let cpu = d.cpu_s.map_or("-".to_string(), |c| format!("{c:.2}"));
            let _ = writeln!(
                out,
                "{:<26} {:<4} {:>6} {:>6} {:>8.2} {cpu:>7}  {:<17} {title}",
                s.model, d.number, d.seed, d.runs, d.wall_s, d.routing
            );
        }
        let _ = writeln!(
            out,
            "{:<26} searched {} seeds x routings in {:.1} s",
            s.model, s.seeds, s.wall_s
        );
    }
    for h in crate::check::hazards::HAZARDS {
        if !seen.contains(&h.number) {
            let _ = writeln!(
                out,
                "§6.{}: not shown by any model within the caps: {}",
                h.number, h.title
            );
        }
    }
    for (n, why) in crate::check::hazards::NOT_REACHABLE {
        let _ = writeln!(out, "§6.{n}: not reachable: {why}");
    }
    out
}

/// Everything one benchmark measured.
#[derive(Debug, Clone)]
pub struct Report {
    /// How much work was done.
    pub size: BenchSize,
    /// The 1-minute load average at the start, and the three averages as text.
    pub load_average: Option<(f64, String)>,
    /// The standard scenario swept on 1 thread.
    pub standard_1t: Throughput,
    /// The idle floor: the same hosts serving nothing (its `requests` are 0).
    pub idle: Throughput,
    /// The bare-HTTP baseline, paced over a standard run's simulated time.
    pub baseline: Throughput,
    /// The bare-HTTP baseline, back to back.
    pub baseline_unpaced: Throughput,
    /// The standard sweep on 2 threads.
    pub standard_2t: Throughput,
    /// `VmHWM` after the 1-thread sweep, KiB (process-wide).
    pub peak_rss_kib: Option<u64>,
    /// Hazard discovery, one per built-in model.
    pub searches: Vec<Search>,
    /// Wall time of the whole benchmark.
    pub wall_s: f64,
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
        "standard scenario, 1 thread: {} seeds",
        standard.file.seeds.count
    ));
    let one = SweepOptions {
        jobs: 1,
        progress: false,
    };
    let clock = Stopwatch::start();
    let runs = runner::sweep(&standard, &one);
    let standard_1t = Throughput::of(&runs, clock);
    let peak_rss_kib = peak_rss_kib();

    // The baseline matches a standard run: as many requests, over as much simulated time.
    let per_seed = (standard_1t.requests / standard_1t.runs.max(1)).max(BASELINE_LOOPS);
    let run_ms = standard_1t.sim_ms / standard_1t.runs.max(1);
    let seeds = size.baseline_seeds.max(1);

    say(&format!(
        "idle floor: {seeds} seeds x {run_ms} simulated ms, {IDLE_HOSTS} runtimes, no traffic"
    ));
    let clock = Stopwatch::start();
    let mut idle = Throughput::default();
    for seed in 0..seeds {
        idle.runs += 1;
        idle.sim_ms += idle_once(seed, replicas, run_ms);
    }
    (idle.wall_s, idle.cpu_s) = clock.read();

    let mut baselines = Vec::new();
    for (label, spread) in [
        ("paced", Some(Duration::from_millis(run_ms))),
        ("back to back", None),
    ] {
        say(&format!(
            "baseline, {label}: {seeds} seeds x {per_seed} bare HTTP requests"
        ));
        let clock = Stopwatch::start();
        let mut b = Throughput::default();
        for seed in 0..seeds {
            let (answered, sim_ms) = baseline_once(seed, per_seed, replicas, spread);
            b.runs += 1;
            b.requests += answered;
            b.sim_ms += sim_ms;
        }
        (b.wall_s, b.cpu_s) = clock.read();
        baselines.push(b);
    }
    let (baseline, baseline_unpaced) = (baselines[0], baselines[1]);

    say(&format!(
        "standard scenario, 2 threads: {} seeds",
        standard.file.seeds.count
    ));
    let two = SweepOptions {
        jobs: 2,
        progress: false,
    };
    let clock = Stopwatch::start();
    let runs = runner::sweep(&standard, &two);
    let standard_2t = Throughput::of(&runs, clock);

    let searches = discover_all(&[], size.hazard_seeds_max, size.hazard_wall_max, &mut say);
    Report {
        size,
        load_average,
        standard_1t,
        idle,
        baseline,
        baseline_unpaced,
        standard_2t,
        peak_rss_kib,
        searches,
        wall_s: started.elapsed().as_secs_f64(),
    }
}

/// A batch's wall seconds, with its CPU seconds beside them when known, as a note.
fn cpu_note(t: &Throughput) -> String {
    match t.cpu_s {
        Some(cpu) => format!("{:.2} s wall, {cpu:.2} s CPU", t.wall_s),
        None => format!("{:.2} s wall", t.wall_s),
    }
}

impl Report {
    /// Every figure, with its target when it has one.
    pub fn metrics(&self) -> Vec<Metric> {
        let mut m = Vec::new();
        if let Some((one, all)) = &self.load_average {
            m.push(Metric::plain("load_average_1m", *one, "load").note(all.clone()));
        }
        let (s1, s2, idle) = (&self.standard_1t, &self.standard_2t, &self.idle);
        let (b, bu) = (&self.baseline, &self.baseline_unpaced);
        let idle_tick = idle.us_per_tick();

        // The standard scenario.
        m.push(
            Metric::plain("standard_wall_us_per_request", s1.us_per_request(), "us").note(format!(
                "{} seeds, {} requests, 1 thread, {}",
                s1.runs,
                s1.requests,
                cpu_note(s1)
            )),
        );
        m.push(Metric::plain(
            "standard_seeds_per_sec_1t",
            s1.runs_per_sec(),
            "seeds/s",
        ));
        m.push(Metric::plain(
            "standard_requests_per_sec_1t",
            s1.requests_per_sec(),
            "requests/s",
        ));
        m.push(Metric::at_least(
            "standard_sim_per_wall_1t",
            s1.sim_per_wall(),
            "x",
            TARGET_SIM_PER_WALL_MIN,
        ));
        m.push(
            Metric::plain("standard_wall_us_per_tick", s1.us_per_tick(), "us")
                .note(format!("{:.1} ticks per request", s1.ticks_per_request())),
        );
        if let Some(kib) = self.peak_rss_kib {
            m.push(
                Metric::plain("peak_rss_mib", kib as f64 / 1024.0, "MiB")
                    .note("VmHWM after the 1-thread sweep; process-wide"),
            );
        }

        // Where the time goes: turmoil stepping idle runtimes, and the rest.
        m.push(
            Metric::plain("idle_wall_us_per_tick", idle_tick, "us").note(format!(
                "{IDLE_HOSTS} runtimes stepped with no traffic, {} simulated s, {}",
                idle.sim_ms / 1000,
                cpu_note(idle)
            )),
        );
        m.push(Metric::plain(
            "idle_wall_us_per_runtime_tick",
            idle_tick / IDLE_HOSTS as f64,
            "us",
        ));
        m.push(
            Metric::plain("sim_per_wall_ceiling", 1000.0 / idle_tick.max(1e-9), "x").note(
                "the most simulated time per wall-second any run with these hosts reaches at this tick",
            ),
        );
        m.push(
            Metric::plain(
                "standard_idle_share",
                idle_tick * s1.sim_ms as f64 / (s1.wall_s * 1e6).max(1e-9),
                "ratio",
            )
            .note("share of the standard run's wall time spent stepping runtimes"),
        );
        m.push(
            Metric::plain(
                "standard_active_us_per_request",
                s1.active_us_per_request(idle_tick),
                "us",
            )
            .note("wall per request less the idle floor of its ticks"),
        );

        // The baseline, paced like a standard run (the target's), and back to back.
        m.push(
            Metric::plain("baseline_wall_us_per_request", b.us_per_request(), "us").note(format!(
                "paced: {} seeds, {} requests over {} simulated ms each, {}",
                b.runs,
                b.requests,
                b.sim_ms / b.runs.max(1),
                cpu_note(b)
            )),
        );
        m.push(
            Metric::at_most(
                "cost_per_request_vs_baseline",
                s1.us_per_request() / b.us_per_request().max(1e-9),
                "ratio",
                TARGET_COST_RATIO_MAX,
            )
            .note("standard vs the paced baseline: same hosts, requests, tick and simulated time"),
        );
        m.push(
            Metric::plain(
                "baseline_unpaced_wall_us_per_request",
                bu.us_per_request(),
                "us",
            )
            .note(format!(
                "back to back: {:.1} ticks per request, {}",
                bu.ticks_per_request(),
                cpu_note(bu)
            )),
        );
        m.push(
            Metric::plain(
                "cost_per_request_vs_unpaced_baseline",
                s1.us_per_request() / bu.us_per_request().max(1e-9),
                "ratio",
            )
            .note("the standard run's idle ticks count against it here"),
        );
        m.push(
            Metric::plain(
                "active_cost_per_request_vs_baseline",
                s1.active_us_per_request(idle_tick)
                    / bu.active_us_per_request(idle_tick).max(1e-9),
                "ratio",
            )
            .note("standard vs back-to-back baseline, both less the idle floor of their ticks: one A2A request's work (with its store, ledger and push calls) vs one bare request's"),
        );

        // 2 threads.
        m.push(
            Metric::plain("standard_seeds_per_sec_2t", s2.runs_per_sec(), "seeds/s")
                .note(cpu_note(s2)),
        );
        m.push(Metric::at_least(
            "speedup_2t_vs_1t",
            s1.wall_s / s2.wall_s.max(1e-9),
            "ratio",
            TARGET_SPEEDUP_MIN,
        ));

        let mut all_found = true;
        for s in &self.searches {
            for d in &s.documented {
                let title = crate::check::hazards::by_number(d.number).map_or("", |h| h.title);
                let metric = Metric::at_most(
                    format!("hazard6_wall_s/{}/h{:02}", s.model, d.number),
                    d.wall_s,
                    "s",
                    TARGET_HAZARD_SECS_MAX,
                )
                .note(format!(
                    "first seed {} ({}), after {} runs: {title}",
                    d.seed, d.routing, d.runs
                ));
                all_found &= metric.met == Some(true);
                m.push(metric);
            }
            m.push(
                Metric::plain(format!("hazard_search_wall_s/{}", s.model), s.wall_s, "s")
                    .note(format!("{} seeds x 2 routings", s.seeds)),
            );
            for h in &s.hazards {
                m.push(
                    Metric::plain(
                        format!("hazard_wall_s/{}/{}", h.model, h.invariant),
                        h.wall_s,
                        "s",
                    )
                    .note(format!("first seed {} ({})", h.seed, h.routing)),
                );
            }
        }
        // Per §6 hazard, the model that showed it first; a hazard no model showed fails.
        let mut every_hazard = true;
        for h in crate::check::hazards::HAZARDS {
            let fastest = self
                .searches
                .iter()
                .flat_map(|s| s.documented.iter().map(move |d| (s, d)))
                .filter(|(_, d)| d.number == h.number)
                .min_by(|a, b| a.1.wall_s.total_cmp(&b.1.wall_s));
            let metric = match fastest {
                Some((s, d)) => Metric::at_most(
                    format!("hazard6_fastest_wall_s/h{:02}", h.number),
                    d.wall_s,
                    "s",
                    TARGET_HAZARD_SECS_MAX,
                )
                .note(format!("{} seed {}: {}", s.model, d.seed, h.title)),
                None => Metric {
                    target: format!("<= {TARGET_HAZARD_SECS_MAX}"),
                    met: Some(false),
                    ..Metric::plain(
                        format!("hazard6_fastest_wall_s/h{:02}", h.number),
                        f64::NAN,
                        "s",
                    )
                    .note(format!(
                        "not shown by any model within the caps: {}",
                        h.title
                    ))
                },
            };
            every_hazard &= metric.met == Some(true);
            all_found &= fastest.is_some();
            m.push(metric);
        }
        m.push(Metric {
            target: "1".into(),
            met: Some(every_hazard),
            ..Metric::plain(
                "hazards_found_within_target",
                f64::from(u8::from(every_hazard)),
                "bool",
            )
            .note("every §6 hazard shown within the target by the model that shows it first")
        });
        m.push(Metric {
            target: "1".into(),
            met: Some(all_found),
            ..Metric::plain(
                "hazards_found_within_target_on_every_model",
                f64::from(u8::from(all_found)),
                "bool",
            )
            .note("every §6 hazard shown, and on every model that showed it within the target")
        });
        m.push(Metric::plain("bench_wall_s", self.wall_s, "s"));
        m
    }

    /// The human-readable table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<62} {:>10} {:<10} {:<8} {:<4}  note",
            "metric", "value", "unit", "target", "met"
        );
        for m in self.metrics() {
            let met = match m.met {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "",
            };
            let _ = writeln!(
                out,
                "{:<62} {:>10.2} {:<10} {:<8} {:<4}  {}",
                m.name, m.value, m.unit, m.target, met, m.note
            );
        }
        out
    }

    /// `bench.csv`: `metric,value,unit,target,met,note`.
    pub fn csv(&self) -> Vec<u8> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(["metric", "value", "unit", "target", "met", "note"])
            .expect("writing to memory");
        for m in self.metrics() {
            let met = match m.met {
                Some(true) => "true",
                Some(false) => "false",
                None => "",
            };
            w.write_record([
                m.name.as_str(),
                &format!("{:.4}", m.value),
                m.unit,
                &m.target,
                met,
                &m.note,
            ])
            .expect("writing to memory");
        }
        w.into_inner().expect("writing to memory")
    }

    /// Writes [`Report::csv`] to `path` atomically.
    pub fn write_csv(&self, path: &Path) -> std::io::Result<()> {
        crate::output::report::write_atomic(path, &self.csv())
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
        let default = Experiment::default_experiment();
        assert_eq!(
            serde_json::to_string(&exp.file.faults).unwrap(),
            serde_json::to_string(&default.file.faults).unwrap(),
            "the same faults as the default experiment"
        );
    }

    #[test]
    fn the_baseline_answers_every_request_deterministically() {
        let a = baseline_once(7, 20, 3, None);
        assert_eq!(a.0, 20);
        assert_eq!(a, baseline_once(7, 20, 3, None));
        let paced = baseline_once(7, 20, 3, Some(Duration::from_millis(2000)));
        assert_eq!(paced.0, 20);
        assert!(
            (1500..2100).contains(&paced.1),
            "paced over about 2 s (the last request starts one period before): {paced:?}"
        );
    }

    #[test]
    fn the_idle_floor_lasts_as_long_as_asked() {
        let ms = idle_once(3, 3, 500);
        assert!((500..510).contains(&ms), "{ms}");
    }
}
