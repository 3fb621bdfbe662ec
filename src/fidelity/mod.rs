//! Differential runs: one scenario in the simulator and against the real system, compared
//! on everything both can observe.
//!
//! The fixed suite (`a2a-chaos fidelity`, `tests/fidelity/`) is what the models were fitted
//! to; [`generated`] draws scenarios nobody chose (`fidelity --generate N`) from
//! [`crate::strategies::ScenarioConfig::live`]. Each [`Case`] runs once simulated with its
//! model and twice live against the model's real peer ([`crate::live`]):
//! - the two live runs differ: the scenario is **unstable** (real time raced; the effect
//!   holds fix the orders the generator knows matter, not every order), never an agreement;
//!   a scenario whose two live runs agree but differ from the simulation gets a third live
//!   run, and is unstable if that one differs;
//! - the simulated run differs from the live one in any [`observe::Observables`]: a
//!   **disagreement**, listed with both sides, then shrunk ([`shrink`]) re-running both
//!   worlds and written under `tests/fidelity/found/` ([`report::write_found`]);
//! - otherwise they **agree**.

pub mod observe;
pub mod report;
pub mod shrink;

use std::time::Instant;

use crate::error::InputError;
use crate::live::{self, LiveOptions, Pool};
use crate::model::Profile;
use crate::scenario::Script;
use crate::sim::Sim;
use crate::strategies::{draw, ScenarioConfig};

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
    /// The simulated run's observables.
    pub simulated: Observables,
    /// The first live run's observables.
    pub real: Observables,
    /// Wall time of the simulated run, ms.
    pub sim_wall_ms: u64,
    /// Wall time of the live runs together, ms.
    pub live_wall_ms: u64,
}

/// The simulated run's observables.
pub fn simulate(script: &Script) -> Result<Observables, InputError> {
    let checked = Sim::from_scenario(script)?.check();
    Ok(match &checked.record {
        Some(record) => Observables::of_simulated(record, &checked.summary),
        None => Observables {
            error: checked.summary.error.clone(),
            ..Observables::default()
        },
    })
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

/// Runs `script` simulated once and live `live_runs` times (2 to tell an unstable scenario;
/// 1 while shrinking) and compares them.
pub fn run_case(script: &Script, live: &mut Live, live_runs: usize) -> Result<Outcome, InputError> {
    let started = Instant::now();
    let simulated = simulate(script)?;
    let sim_wall_ms = started.elapsed().as_millis() as u64;
    let started = Instant::now();
    let real = live.observe(script, 0)?;
    let mut unstable = Vec::new();
    for run in 1..live_runs {
        let again = live.observe(script, run)?;
        unstable = real.diff(&again, "live run 1", "live run 2");
        if !unstable.is_empty() {
            break;
        }
    }
    let mut differ = Vec::new();
    if unstable.is_empty() {
        differ = simulated.diff(&real, "simulated", "real");
        if !differ.is_empty() && live_runs >= 2 {
            // Two live runs can agree by luck on a race the real system does not always win
            // the same way: a disagreement gets a third run, on fresh replicas.
            let third = live.fresh_twin().observe(script, 0)?;
            unstable = real.diff(&third, "live run 1", "live run 3");
        }
    }
    let live_wall_ms = started.elapsed().as_millis() as u64;
    let status = if !unstable.is_empty() {
        Status::Unstable(unstable)
    } else if differ.is_empty() {
        Status::Agree
    } else {
        Status::Disagree(differ)
    };
    Ok(Outcome {
        status,
        simulated,
        real,
        sim_wall_ms,
        live_wall_ms,
    })
}

/// The generated scenario of `model` for scenario seed `seed`: the same (model, seed), the
/// same scenario, named `gen-<model>-<seed>`.
pub fn generated(model: &str, seed: u64) -> Script {
    let mut script = draw(&ScenarioConfig::live(model), seed).0;
    script.file.name = format!("gen-{}-{seed}", model_slug(model));
    script.file.description = Some(format!(
        "generated by `a2a-chaos fidelity --generate 1 --seed {seed} --model {model}`"
    ));
    script
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

    #[test]
    fn a_generated_scenario_is_a_function_of_its_model_and_seed() {
        let a = generated("a2a-python-1.3-plain", 7);
        let b = generated("a2a-python-1.3-plain", 7);
        assert_eq!(a.to_toml(), b.to_toml());
        assert_eq!(a.file.seed, 7);
        assert!((2..=3).contains(&a.file.replicas));
        let other = generated("a2a-python-1.3-plain", 8);
        assert_ne!(a.to_toml(), other.to_toml());
        // What a live run can do, and nothing else.
        for seed in 0..64 {
            let s = generated("a2a-python-1.3-versioned", seed);
            live::validate(&s, "generated", false).unwrap();
            assert!(!s.to_toml().contains("partition"), "{}", s.to_toml());
        }
    }
}
