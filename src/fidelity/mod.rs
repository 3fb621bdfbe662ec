//! Differential runs: one scenario in the simulator and against the real system, compared
//! on everything both can observe.
//!
//! The fixed suite (`a2a-chaos fidelity`, `tests/fidelity/`) is what the models were fitted
//! to; [`generated`] draws scenarios nobody chose (`fidelity --generate N`) from
//! [`crate::strategies::ScenarioConfig::live`]. Each case ([`run_case`]) runs simulated with its
//! model (once per order of its races, [`patterns::order_variants`]) and twice live against
//! the model's real peer ([`crate::live`]), compared on every [`observe::Observables`]:
//! - every live run equals a simulated order: they **agree**;
//! - some do and some do not: **unstable** (real time took an order the simulation never
//!   does; the effect holds fix the orders the generator knows matter, not every order),
//!   never an agreement;
//! - none does (a third live run is made when the two agree with each other): a
//!   **disagreement**, listed with both sides against the closest simulated order, then
//!   shrunk ([`shrink`]) re-running both worlds and written under `tests/fidelity/found/`
//!   ([`report::write_found`]).

pub mod observe;
pub mod patterns;
pub mod report;
pub mod shrink;

use std::time::Instant;

use crate::check::Verdict;
use crate::error::InputError;
use crate::live::{self, LiveOptions, Pool};
use crate::model::Profile;
use crate::replica::Timing;
use crate::scenario::Script;
use crate::sim::Sim;
use crate::strategies::{draw, Generation, ScenarioConfig};

pub use observe::{Difference, Observables};

/// What a case came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Every observable the same in the simulation and both live runs.
    Agree,
    /// The two live runs differ (these are the differences between them).
    Unstable(Vec<Difference>),
    /// The live runs agree with each other and the simulation differs from them.
    Disagree(Vec<Difference>),
}

impl Status {
    /// `agree`, `unstable` or `DISAGREE`.
    pub fn word(&self) -> &'static str {
        match self {
            Status::Agree => "agree",
            Status::Unstable(_) => "unstable",
            Status::Disagree(_) => "DISAGREE",
        }
    }

    /// The differences behind the status (none for an agreement).
    pub fn differences(&self) -> &[Difference] {
        match self {
            Status::Agree => &[],
            Status::Unstable(d) | Status::Disagree(d) => d,
        }
    }
}

/// One scenario, compared.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub status: Status,
    /// The simulated run's observables: of the order the first live run matched, else of
    /// the order closest to it ([`patterns::order_variants`]; the scenario as drawn when it
    /// has no race).
    pub simulated: Observables,
    /// The first live run's observables.
    pub real: Observables,
    /// The simulated orders the live runs matched, by [`patterns::order_variants`] index
    /// (`[0]`, the scenario as drawn, for most agreements); empty when a live run matched
    /// none.
    pub orders: Vec<usize>,
    /// How many simulated orders were compared (1 when the scenario has no race).
    pub variants: usize,
    /// Wall time of the simulated runs together, ms.
    pub sim_wall_ms: u64,
    /// Wall time of the live runs together, ms.
    pub live_wall_ms: u64,
}

/// The agent's timing in a live run of `script`, which its simulated twin takes: every
/// preset peer thinks the scenario's `think-ms` (a range: its midpoint; else
/// [`live::THINK_MS_DEFAULT`]) and composes [`live::COMPOSE_MS_DEFAULT`], the same for
/// every turn. The simulation alone draws each turn's times from a range; compared with a
/// real peer, two turns racing on two replicas would then finish in an order the real ones
/// never take (a2a-python-1.3-plain's generated seed 136: a 33 ms and a 59 ms think where
/// both real agents thought 40, and the other turn's whole-task save landed last).
pub fn live_timing(script: &Script) -> Timing {
    let think = live::think_ms(script).unwrap_or(live::THINK_MS_DEFAULT);
    Timing {
        think_ms: (think, think),
        compose_ms: (live::COMPOSE_MS_DEFAULT, live::COMPOSE_MS_DEFAULT),
        ..Timing::default()
    }
}

/// The simulation of `script` a live run of it is compared with: the scenario's, with the
/// agent's timing of a live run ([`live_timing`]).
pub fn twin(script: &Script) -> Result<Sim, InputError> {
    Sim::scenario_builder(script)
        .timing(live_timing(script))
        .build()
}

/// The simulated run's observables ([`twin`]).
pub fn simulate(script: &Script) -> Result<Observables, InputError> {
    let checked = twin(script)?.check();
    Ok(match &checked.record {
        Some(record) => Observables::of_simulated(record, &checked.summary),
        None => Observables {
            error: checked.summary.error.clone(),
            ..Observables::default()
        },
    })
}

/// The observables of every order [`patterns::order_variants`] gives `script`, the
/// scenario as drawn first.
pub fn simulate_orders(script: &Script) -> Result<Vec<Observables>, InputError> {
    patterns::order_variants(script)
        .iter()
        .map(simulate)
        .collect()
}

/// The simulated order that differs least from `real` (the first of equals, so the
/// scenario as drawn wins a tie), and its differences.
pub fn closest(orders: &[Observables], real: &Observables) -> (usize, Vec<Difference>) {
    orders
        .iter()
        .map(|o| o.diff(real, "simulated", "real"))
        .enumerate()
        .min_by_key(|(_, d)| d.len())
        .expect("a scenario has at least one order")
}

/// `differ` (the closest order's differences from a live run), each simulated `pass`
/// against a real `fail` marked with the first simulated order that fails that invariant
/// too (`pass (fails in simulated order 4)`). Such a row is a difference of timing: the
/// model makes the failure, in an order that differs from the live run elsewhere. One
/// without the mark is a failure no simulated order made: the false `pass` to read first.
pub fn reachable(mut differ: Vec<Difference>, orders: &[Observables]) -> Vec<Difference> {
    for d in &mut differ {
        let [(_, simulated), (_, real)] = &mut d.sides;
        if simulated != "pass" || real != "fail" {
            continue;
        }
        let Some(invariant) = d.invariant else {
            continue;
        };
        let fails = |o: &Observables| o.verdicts.get(&invariant) == Some(&Verdict::Fail);
        if let Some(k) = orders.iter().position(fails) {
            *simulated = format!("pass (fails in simulated order {k})");
        }
    }
    differ
}

/// Where a model's live runs happen: fresh replicas for every run, or two [`Pool`]s that
/// serve scenario after scenario (the first live run of each on one, the second on the
/// other, since a pool serves a seed once).
pub struct Live {
    pub profile: Profile,
    options: LiveOptions,
    pools: Option<[Pool; 2]>,
}

impl Live {
    /// Fresh replicas for every run (as `a2a-chaos live`).
    pub fn fresh(profile: &Profile, options: &LiveOptions) -> Live {
        Live {
            profile: profile.clone(),
            options: options.clone(),
            pools: None,
        }
    }

    /// Two pools of `replicas` replicas, started now.
    pub fn pooled(
        profile: &Profile,
        options: &LiveOptions,
        replicas: usize,
    ) -> Result<Live, InputError> {
        let pools = [
            Pool::new(profile, replicas, options)?,
            Pool::new(profile, replicas, options)?,
        ];
        Ok(Live {
            profile: profile.clone(),
            options: options.clone(),
            pools: Some(pools),
        })
    }

    /// Live run `run` (0 or 1) of `script`: its observables.
    pub fn observe(&mut self, script: &Script, run: usize) -> Result<Observables, InputError> {
        let (summary, record) = match &mut self.pools {
            Some(pools) => pools[run.min(1)].run(script)?,
            None => live::run_scenario(script, self.profile.clone(), &self.options)?,
        };
        Ok(Observables::of(&record, &summary))
    }

    /// The same model's live runs on fresh replicas (shrinking re-runs one seed many times).
    pub fn fresh_twin(&self) -> Live {
        Live::fresh(&self.profile, &self.options)
    }
}

/// Runs `script` simulated (once per order of its races) and live `live_runs` times (2 to
/// tell an unstable scenario; 1 while shrinking), and compares them.
///
/// Every live run must equal one of the simulated orders (the scenario as drawn, when it has
/// no race): then the scenario agrees, whichever orders real time took. When the live runs
/// agree with each other but with no simulated order, a third runs on fresh replicas. Some
/// live runs equal a simulated order and some none: unstable (real time took an order the
/// simulation never does). No live run equals one: a disagreement, whether or not the live
/// runs agree with each other.
pub fn run_case(script: &Script, live: &mut Live, live_runs: usize) -> Result<Outcome, InputError> {
    let started = Instant::now();
    let orders = simulate_orders(script)?;
    let sim_wall_ms = started.elapsed().as_millis() as u64;
    let started = Instant::now();
    let real = live.observe(script, 0)?;
    let matched = |o: &Observables| orders.iter().position(|s| s.diff(o, "s", "r").is_empty());
    let mut unstable = Vec::new();
    let mut matches = vec![matched(&real)];
    for run in 1..live_runs {
        let again = live.observe(script, run)?;
        matches.push(matched(&again));
        if unstable.is_empty() {
            unstable = real.diff(&again, "live run 1", &format!("live run {}", run + 1));
        }
    }
    let (nearest, differ) = closest(&orders, &real);
    if unstable.is_empty() && !differ.is_empty() && live_runs >= 2 {
        // Two live runs can agree by luck on a race the real system does not always win
        // the same way: a disagreement gets a third run, on fresh replicas.
        let third = live.fresh_twin().observe(script, 0)?;
        matches.push(matched(&third));
        unstable = real.diff(&third, "live run 1", "live run 3");
    }
    let live_wall_ms = started.elapsed().as_millis() as u64;
    let status = if matches.iter().all(Option::is_some) {
        // Each live run took an order the simulation also takes.
        Status::Agree
    } else if matches.iter().any(Option::is_some) {
        // Real time took an order the simulation takes, and one it never does.
        Status::Unstable(unstable)
    } else {
        // No live run is anything the simulation does.
        Status::Disagree(reachable(differ, &orders))
    };
    let variants = orders.len();
    let simulated = orders
        .into_iter()
        .nth(matches[0].unwrap_or(nearest))
        .expect("the order exists");
    Ok(Outcome {
        status,
        simulated,
        real,
        orders: matches.into_iter().flatten().collect(),
        variants,
        sim_wall_ms,
        live_wall_ms,
    })
}

/// The generated scenario of `model` for scenario seed `seed` in the newest generation
/// ([`Generation::LATEST`]); see [`generated_by`].
pub fn generated(model: &str, seed: u64) -> Script {
    generated_by(model, seed, Generation::LATEST)
}

/// The generated scenario of `model` for scenario seed `seed` in `generation`: the same
/// (generation, model, seed), the same scenario, named `gen-<model>-<seed>` (generation 1)
/// or `gen-g<N>-<model>-<seed>`.
pub fn generated_by(model: &str, seed: u64, generation: Generation) -> Script {
    let config = ScenarioConfig {
        store_link: store_link(model),
        ..ScenarioConfig::live_generation(model, generation)
    };
    let mut script = draw(&config, seed).0;
    script.file.name = format!("gen-{}{}-{seed}", tag(generation), model_slug(model));
    script.file.description = Some(format!(
        "generated by `{}`",
        reproduce_command(model, seed, generation)
    ));
    script
}

/// Whether `model`'s live counterpart (the peer its `[fidelity]` table names) reaches its
/// store over TCP, a link a fault can cut: the a2a-python preset's PostgreSQL, or a user's
/// command. The Mastra and a2a-js presets keep their tasks in the process, so no store
/// fault is drawn for them.
fn store_link(model: &str) -> bool {
    crate::model::Profile::load(model)
        .ok()
        .and_then(|p| p.fidelity)
        .map(|f| crate::live::peer::PeerCommand(f.peer))
        .is_none_or(|peer| peer.is_a2a_python() || !peer.is_preset())
}

/// The command that draws and compares the scenario of (`model`, `seed`) in `generation`.
pub fn reproduce_command(model: &str, seed: u64, generation: Generation) -> String {
    format!(
        "a2a-chaos fidelity --generate 1 --seed {seed} --model {model} --generator {}",
        generation.number()
    )
}

fn tag(generation: Generation) -> String {
    match generation {
        Generation::Classic => String::new(),
        g => format!("g{}-", g.number()),
    }
}

/// A model name or profile path as a file-name fragment (`models/my.toml` → `my`).
pub fn model_slug(model: &str) -> String {
    let path = std::path::Path::new(model);
    match path.file_stem() {
        Some(stem) if model.ends_with(".toml") => crate::names::slug(&stem.to_string_lossy()),
        _ => crate::names::slug(model),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Invariant;

    /// A fault on the store link is drawn only for a model whose live peer has one: the
    /// Mastra peer keeps its tasks in the process, and a live run refuses such a step.
    #[test]
    fn no_store_fault_is_drawn_for_a_peer_without_a_store_link() {
        let store_faults = |model: &str| {
            (0..120)
                .filter(|seed| {
                    generated_by(model, *seed, Generation::Shapes)
                        .to_toml()
                        .contains("\"store\"")
                })
                .count()
        };
        assert_eq!(store_faults("mastra"), 0);
        assert!(store_faults("a2a-python-1.3-versioned") > 0);
    }

    #[test]
    fn a_generated_scenario_is_a_function_of_its_model_and_seed() {
        let a = generated_by("a2a-python-1.3-plain", 7, Generation::Classic);
        let b = generated_by("a2a-python-1.3-plain", 7, Generation::Classic);
        assert_eq!(a.to_toml(), b.to_toml());
        assert_eq!(a.file.seed, 7);
        assert!((2..=3).contains(&a.file.replicas));
        let other = generated_by("a2a-python-1.3-plain", 8, Generation::Classic);
        assert_ne!(a.to_toml(), other.to_toml());
        // What a live run can do, and nothing else.
        for seed in 0..64 {
            for generation in [Generation::Classic, Generation::Concurrent] {
                let s = generated_by("a2a-python-1.3-versioned", seed, generation);
                live::validate(&s, "generated", false).unwrap();
                assert!(!s.to_toml().contains("partition"), "{}", s.to_toml());
            }
        }
    }

    #[test]
    fn the_concurrent_generation_draws_races_of_every_kind_of_call() {
        let mut patterns = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let s = generated_by("a2a-python-1.3-versioned", seed, Generation::Concurrent);
            assert!(s.file.name.starts_with("gen-g2-"), "{}", s.file.name);
            for p in patterns::patterns(&s) {
                if let Some(race) = p.strip_prefix("race:") {
                    for call in race.split('@').next().unwrap().split('+') {
                        patterns.insert(call.to_string());
                    }
                }
            }
        }
        let want = ["again", "cancel", "get", "next", "next-stream", "subscribe"];
        for w in want {
            assert!(
                patterns.contains(w),
                "no race with {w} in 200 seeds: {patterns:?}"
            );
        }
    }

    #[test]
    fn the_fault_generation_draws_every_live_fault_around_turns() {
        let mut kinds = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let s = generated_by("a2a-python-1.3-versioned", seed, Generation::Faults);
            assert!(s.file.name.starts_with("gen-g3-"), "{}", s.file.name);
            // Every fault it draws, a live run can make.
            live::validate(&s, "generated", false).unwrap();
            kinds.extend(patterns::kinds(&s));
        }
        for want in [
            "partition",
            "partition-oneway",
            "hold",
            "latency",
            "pause",
            "kill-at",
        ] {
            assert!(kinds.contains(want), "no {want} in 200 seeds: {kinds:?}");
        }
        // Generation 2 draws no fault of generation 3.
        for seed in 0..64 {
            let s = generated_by("a2a-python-1.3-versioned", seed, Generation::Concurrent);
            let text = s.to_toml();
            assert!(
                !text.contains("pause") && !text.contains("kill-at"),
                "{text}"
            );
        }
    }

    #[test]
    fn a_false_pass_says_whether_another_order_fails_it() {
        let with = |verdict| Observables {
            verdicts: [(Invariant::TERMINAL_IS_FINAL, verdict)].into(),
            ..Observables::default()
        };
        let real = with(Verdict::Fail);
        let orders = [
            with(Verdict::Pass),
            with(Verdict::Pass),
            with(Verdict::Fail),
        ];
        let differ = reachable(orders[0].diff(&real, "simulated", "real"), &orders);
        assert_eq!(
            differ[0].to_string(),
            "terminal-is-final: simulated pass (fails in simulated order 2); real fail"
        );
        // No order fails it: the false pass stays unmarked.
        let differ = reachable(orders[0].diff(&real, "simulated", "real"), &orders[..2]);
        assert_eq!(
            differ[0].to_string(),
            "terminal-is-final: simulated pass; real fail"
        );
    }

    /// The step kinds of `generation`'s first 100 scenarios of a2a-python-1.3-versioned,
    /// each named for its generation, valid live, and held to `check`.
    fn kinds_in_100_seeds(
        generation: Generation,
        check: impl Fn(&Script),
    ) -> std::collections::BTreeSet<String> {
        let mut kinds = std::collections::BTreeSet::new();
        for seed in 0..100 {
            let s = generated_by("a2a-python-1.3-versioned", seed, generation);
            let tag = format!("gen-g{}-", generation.number());
            assert!(s.file.name.starts_with(&tag), "{}", s.file.name);
            live::validate(&s, "generated", false).unwrap();
            check(&s);
            kinds.extend(patterns::kinds(&s));
        }
        kinds
    }

    #[test]
    fn the_clients_generation_draws_plain_messages_and_two_answers() {
        let kinds = kinds_in_100_seeds(Generation::Clients, |_| {});
        for want in ["plain", "file", "answers", "task-only", "race"] {
            assert!(kinds.contains(want), "no {want} in 100 seeds: {kinds:?}");
        }
        // Generation 4 draws neither.
        for seed in 0..64 {
            let text = generated_by("a2a-python-1.3-versioned", seed, Generation::Shapes).to_toml();
            assert!(
                !text.contains("parts = \"") && !text.contains(" reply = \""),
                "{text}"
            );
        }
    }

    #[test]
    fn the_agents_generation_draws_progress_no_effect_and_cancels_mid_think() {
        let kinds = kinds_in_100_seeds(Generation::Agents, |s| {
            assert_eq!(s.file.think_ms, Some([200, 200]));
        });
        for want in ["progress", "no-effect", "cancel-mid-think", "plain", "race"] {
            assert!(kinds.contains(want), "no {want} in 100 seeds: {kinds:?}");
        }
        // A cancel mid-think is aimed at the middle of a gap between progress updates.
        use crate::strategies::cancel_wait_ms;
        assert_eq!(cancel_wait_ms(0, 0), 75);
        assert_eq!(
            (0..=3).map(|g| cancel_wait_ms(3, g)).collect::<Vec<_>>(),
            [1, 50, 100, 150]
        );
        // Generation 5 draws no agent shape, and thinks as the model does.
        for seed in 0..64 {
            let s = generated_by("a2a-python-1.3-versioned", seed, Generation::Clients);
            let text = s.to_toml();
            assert!(
                !text.contains("progress =") && !text.contains("effect = false"),
                "{text}"
            );
            assert_eq!(s.file.think_ms, None);
        }
    }
}
