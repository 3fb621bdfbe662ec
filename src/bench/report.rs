//! What one benchmark measured and how it is shown: [`Throughput`] (a batch's runs,
//! requests, simulated time, wall and CPU seconds), [`Report`] (every phase's figures), and
//! [`Metric`], one figure against its target: a row of the table [`Report::table`] prints
//! and of `bench.csv` ([`Report::csv`]).

use std::fmt::Write as _;
use std::path::Path;

use super::discovery::Search;
use super::sysinfo::Stopwatch;
use super::{
    BenchSize, IDLE_HOSTS, TARGET_COST_RATIO_MAX, TARGET_HAZARD_SECS_MAX,
    TARGET_SEEDS_VS_TURMOIL_MIN, TARGET_SIM_PER_WALL_MIN, TARGET_SPEEDUP_MIN,
};
use crate::sim::RunSummary;

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
    pub(super) fn of(runs: &[RunSummary], clock: Stopwatch) -> Throughput {
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
    ///
    /// [`world::TICK`]: crate::world::TICK
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

/// Everything one benchmark measured.
#[derive(Debug, Clone)]
pub struct Report {
    /// How much work was done.
    pub size: BenchSize,
    /// The 1-minute load average at the start, and the three averages as text.
    pub load_average: Option<(f64, String)>,
    /// The standard scenario swept on 1 thread, on the event engine.
    pub standard_1t: Throughput,
    /// The standard scenario swept on 1 thread, on turmoil.
    pub turmoil_1t: Throughput,
    /// turmoil's idle floor: the same hosts serving nothing (its `requests` are 0).
    pub idle: Throughput,
    /// The bare-HTTP baseline on turmoil, paced over a standard run's simulated time.
    pub baseline: Throughput,
    /// The bare-HTTP baseline on turmoil, back to back.
    pub baseline_unpaced: Throughput,
    /// The bare-HTTP baseline on the event engine, back to back.
    pub baseline_events: Throughput,
    /// The standard sweep on 2 threads, on the event engine.
    pub standard_2t: Throughput,
    /// `VmHWM` after the 1-thread sweep, KiB (process-wide).
    pub peak_rss_kib: Option<u64>,
    /// Hazard discovery, one per built-in model.
    pub searches: Vec<Search>,
    /// Wall time of the whole benchmark.
    pub wall_s: f64,
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
        let (t1, b, bu, be) = (
            &self.turmoil_1t,
            &self.baseline,
            &self.baseline_unpaced,
            &self.baseline_events,
        );
        let idle_tick = idle.us_per_tick();
        let per_core = |t: &Throughput| t.runs as f64 / t.cpu_s.unwrap_or(t.wall_s).max(1e-9);

        // The standard scenario, on the event engine.
        m.push(
            Metric::plain("standard_wall_us_per_request", s1.us_per_request(), "us").note(format!(
                "event engine: {} seeds, {} requests, 1 thread, {}",
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
        // Per core: seeds per CPU second of the process (its wall second on one thread when
        // /proc does not tell), against the figure the driver had before it stopped settled
        // runs early.
        let ratio = per_core(s1) / super::SEEDS_PER_CORE_BEFORE_SETTLE;
        m.push(
            Metric::at_least(
                "standard_seeds_per_sec_per_core",
                per_core(s1),
                "seeds/s",
                super::TARGET_SEEDS_PER_CORE_RATIO * super::SEEDS_PER_CORE_BEFORE_SETTLE,
            )
            .note(format!(
                "{ratio:.2}x the {} seeds/s measured before the settle rule ({})",
                super::SEEDS_PER_CORE_BEFORE_SETTLE,
                super::SEEDS_PER_CORE_BEFORE_SETTLE_WHEN
            )),
        );
        m.push(
            Metric::at_least(
                "seeds_per_core_vs_turmoil",
                per_core(s1) / per_core(t1).max(1e-9),
                "ratio",
                TARGET_SEEDS_VS_TURMOIL_MIN,
            )
            .note(format!(
                "event engine {:.1} vs turmoil {:.1} seeds per core-second",
                per_core(s1),
                per_core(t1)
            )),
        );
        m.push(
            Metric::plain(
                "standard_sim_ms_per_seed",
                s1.sim_ms as f64 / s1.runs.max(1) as f64,
                "ms",
            )
            .note(format!(
                "{:.0} of them after the heal, on average",
                (s1.sim_ms as f64 / s1.runs.max(1) as f64 - super::STANDARD_WINDOW_MS as f64)
                    .max(0.0)
            )),
        );
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
        if let Some(kib) = self.peak_rss_kib {
            m.push(
                Metric::plain("peak_rss_mib", kib as f64 / 1024.0, "MiB")
                    .note("VmHWM after the 1-thread sweep; process-wide"),
            );
        }
        m.push(
            Metric::plain(
                "baseline_events_wall_us_per_request",
                be.us_per_request(),
                "us",
            )
            .note(format!(
                "event engine, back to back: {} seeds, {} requests, {}",
                be.runs,
                be.requests,
                cpu_note(be)
            )),
        );
        m.push(
            Metric::at_most(
                "cost_per_request_vs_baseline",
                s1.us_per_request() / be.us_per_request().max(1e-9),
                "ratio",
                TARGET_COST_RATIO_MAX,
            )
            .note("standard vs back-to-back bare requests, both on the event engine"),
        );

        // The same on turmoil, and where its time goes: stepping idle runtimes, and the rest.
        m.push(
            Metric::plain(
                "turmoil_standard_wall_us_per_request",
                t1.us_per_request(),
                "us",
            )
            .note(format!(
                "turmoil: {} seeds, {} requests, 1 thread, {}",
                t1.runs,
                t1.requests,
                cpu_note(t1)
            )),
        );
        m.push(Metric::plain(
            "turmoil_standard_seeds_per_sec_1t",
            t1.runs_per_sec(),
            "seeds/s",
        ));
        m.push(
            Metric::plain("turmoil_standard_wall_us_per_tick", t1.us_per_tick(), "us")
                .note(format!("{:.1} ticks per request", t1.ticks_per_request())),
        );
        m.push(
            Metric::plain("idle_wall_us_per_tick", idle_tick, "us").note(format!(
                "turmoil: {IDLE_HOSTS} runtimes stepped with no traffic, {} simulated s, {}",
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
                "the most simulated time per wall-second any turmoil run with these hosts reaches at this tick",
            ),
        );
        m.push(
            Metric::plain(
                "turmoil_standard_idle_share",
                idle_tick * t1.sim_ms as f64 / (t1.wall_s * 1e6).max(1e-9),
                "ratio",
            )
            .note("share of turmoil's standard wall time spent stepping runtimes"),
        );
        m.push(
            Metric::plain(
                "turmoil_standard_active_us_per_request",
                t1.active_us_per_request(idle_tick),
                "us",
            )
            .note("wall per request less the idle floor of its ticks"),
        );
        m.push(
            Metric::plain("baseline_wall_us_per_request", b.us_per_request(), "us").note(format!(
                "turmoil, paced: {} seeds, {} requests over {} simulated ms each, {}",
                b.runs,
                b.requests,
                b.sim_ms / b.runs.max(1),
                cpu_note(b)
            )),
        );
        m.push(
            Metric::plain(
                "turmoil_cost_per_request_vs_paced_baseline",
                t1.us_per_request() / b.us_per_request().max(1e-9),
                "ratio",
            )
            .note("turmoil: standard vs the paced baseline (same hosts, requests, tick and simulated time)"),
        );
        m.push(
            Metric::plain(
                "baseline_unpaced_wall_us_per_request",
                bu.us_per_request(),
                "us",
            )
            .note(format!(
                "turmoil, back to back: {:.1} ticks per request, {}",
                bu.ticks_per_request(),
                cpu_note(bu)
            )),
        );
        m.push(
            Metric::plain(
                "turmoil_cost_per_request_vs_unpaced_baseline",
                t1.us_per_request() / bu.us_per_request().max(1e-9),
                "ratio",
            )
            .note("turmoil: the standard run's idle ticks count against it here"),
        );
        m.push(
            Metric::plain(
                "turmoil_active_cost_per_request_vs_baseline",
                t1.active_us_per_request(idle_tick)
                    / bu.active_us_per_request(idle_tick).max(1e-9),
                "ratio",
            )
            .note("turmoil: standard vs back-to-back baseline, both less the idle floor of their ticks"),
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
