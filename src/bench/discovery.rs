//! Hazard discovery: for each built-in model, seeds from 0 upward under the default
//! experiment plus [`DISCOVERY_CARD_FAULTS`], every routing, until a seed or wall cap; per
//! (model, invariant) and per documented hazard (A2A-BEHAVIOURS.md §6), the first run that
//! showed it and the wall (and CPU) seconds it took.
//!
//! [`discover`] searches one model and [`discover_all`] every built-in model (what `bench`
//! and `bench --hazards` run); [`documented_table`] is the per-model §6 table that
//! `bench --hazards` prints.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::ControlFlow;
use std::time::Duration;

use super::sysinfo::Stopwatch;
use crate::check::Finding;
use crate::error::InputError;
use crate::experiment::Experiment;
use crate::model::{self, Profile};
use crate::sim::Sim;
use crate::world::RunRecord;

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

/// Hazard discovery for one model: seeds from 0 upward, every routing of `exp`, until
/// `seeds_max` seeds or `wall_max` have gone by.
pub fn discover(exp: &Experiment, profile: &Profile, seeds_max: u64, wall_max: Duration) -> Search {
    let clock = Stopwatch::start();
    let mut hazards: BTreeMap<crate::check::Invariant, Hazard> = BTreeMap::new();
    let mut documented: BTreeMap<u8, Documented> = BTreeMap::new();
    let seeds = each_run(
        exp,
        profile,
        seeds_max,
        wall_max,
        &clock,
        |seed, routing, runs, run| {
            let Ok((record, findings)) = run else {
                return ControlFlow::Continue(());
            };
            for number in crate::check::hazards::shown(record, findings) {
                documented.entry(number).or_insert_with(|| {
                    let (wall_s, cpu_s) = clock.read();
                    Documented {
                        number,
                        seed,
                        routing: routing.to_string(),
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
                    routing: routing.to_string(),
                    wall_s: clock.wall.elapsed().as_secs_f64(),
                });
            }
            ControlFlow::Continue(())
        },
    );
    let mut hazards: Vec<Hazard> = hazards.into_values().collect();
    hazards.sort_by(|a, b| a.wall_s.total_cmp(&b.wall_s));
    let mut documented: Vec<Documented> = documented.into_values().collect();
    documented.sort_by(|a, b| a.wall_s.total_cmp(&b.wall_s));
    Search {
        model: profile.name.clone(),
        seeds,
        wall_s: clock.wall.elapsed().as_secs_f64(),
        hazards,
        documented,
    }
}

/// One run of a search: its record and findings, or why it could not be made.
pub(super) type Run<'a> = Result<(&'a RunRecord, &'a [Finding]), &'a InputError>;

/// The search loop hazard discovery and [`super::upstream`] share: seeds from 0 upward, every
/// routing of `exp`, until `seeds_max` seeds, `wall_max` since `clock` started (seed 0 always
/// runs whole) or `visit` breaks. `visit` gets the seed, the routing, the runs made so far
/// (this one included) and the run. Returns the seeds searched: those finished, and the one
/// `visit` broke in.
pub(super) fn each_run(
    exp: &Experiment,
    profile: &Profile,
    seeds_max: u64,
    wall_max: Duration,
    clock: &Stopwatch,
    mut visit: impl FnMut(u64, &str, u64, Run<'_>) -> ControlFlow<()>,
) -> u64 {
    let mut runs = 0;
    for seed in 0..seeds_max {
        for routing in &exp.file.routing {
            if seed > 0 && clock.wall.elapsed() >= wall_max {
                return seed;
            }
            runs += 1;
            let flow = match Sim::from_experiment(exp, profile, routing, seed) {
                Err(e) => visit(seed, routing, runs, Err(&e)),
                Ok(sim) => {
                    let checked = sim.check();
                    match &checked.record {
                        Some(record) => visit(seed, routing, runs, Ok((record, &checked.findings))),
                        None => ControlFlow::Continue(()),
                    }
                }
            };
            if flow.is_break() {
                return seed + 1;
            }
        }
    }
    seeds_max
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

/// The width of the model column of the discovery tables ([`documented_table`] and
/// [`super::upstream_table`]): the longest model they name (`a2a-python-1.1.3-tap-queue-1`,
/// 28 characters) and two spaces.
pub(super) const MODEL_COLUMN: usize = 30;

/// Per model, each documented hazard (§6) found: first seed, runs and wall-seconds; then
/// the hazards no model showed, and the ones the simulator cannot show, with the reason.
pub fn documented_table(searches: &[Search]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<w$} {:<4} {:>6} {:>6} {:>8} {:>7}  {:<17} hazard",
        "model",
        "§6",
        "seed",
        "runs",
        "wall s",
        "CPU s",
        "routing",
        w = MODEL_COLUMN
    );
    let mut seen = std::collections::BTreeSet::new();
    for s in searches {
        for d in &s.documented {
            seen.insert(d.number);
            let title = crate::check::hazards::by_number(d.number).map_or("", |h| h.title);
            let cpu = d.cpu_s.map_or("-".to_string(), |c| format!("{c:.2}"));
            let _ = writeln!(
                out,
                "{:<w$} {:<4} {:>6} {:>6} {:>8.2} {cpu:>7}  {:<17} {title}",
                s.model,
                d.number,
                d.seed,
                d.runs,
                d.wall_s,
                d.routing,
                w = MODEL_COLUMN
            );
        }
        let _ = writeln!(
            out,
            "{:<w$} searched {} seeds x routings in {:.1} s",
            s.model,
            s.seeds,
            s.wall_s,
            w = MODEL_COLUMN
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
