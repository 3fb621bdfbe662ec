//! Experiment files: models × routing strategies × fault profiles × seeds.
//!
//! The format is the one in `docs/CONTRACT.md`. `[workload]` and `[faults]` are the
//! tables of [`WorkloadSpec`] and [`FaultSpec`]; `[expect]` is optional: either
//! `violations = [...]` for every model, or one `[expect.<model>]` table per model.
//! The default experiment (`experiments/default.toml`) is embedded in the binary.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::InputError;
use crate::faults::FaultSpec;
use crate::model::Profile;
use crate::scenario::{Expect, REPLICAS_MAX};
use crate::workload::WorkloadSpec;

/// The embedded default experiment.
pub const DEFAULT: &str = include_str!("../experiments/default.toml");

/// Most seeds one experiment may sweep.
pub const SEEDS_MAX: u64 = 10_000_000;

/// A range of seeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Seeds {
    pub start: u64,
    pub count: u64,
}

/// `[expect]` of an experiment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExperimentExpect {
    /// For every model.
    #[serde(default)]
    pub violations: Option<Vec<String>>,
    /// Per model.
    #[serde(flatten)]
    pub models: BTreeMap<String, Expect>,
}

/// An experiment file as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ExperimentFile {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    pub models: Vec<String>,
    pub routing: Vec<String>,
    #[serde(default = "three")]
    pub replicas: usize,
    pub seeds: Seeds,
    #[serde(default)]
    pub workload: WorkloadSpec,
    #[serde(default)]
    pub faults: FaultSpec,
    #[serde(default)]
    pub expect: Option<ExperimentExpect>,
}

fn three() -> usize {
    3
}

/// An experiment ready to run.
#[derive(Debug, Clone)]
pub struct Experiment {
    pub file: ExperimentFile,
    pub profiles: Vec<Profile>,
    /// Where it came from (`experiments/x.toml`, or `(embedded default)`).
    pub origin: String,
    /// Whether it came from a file (reproduce commands name the file) or is the default.
    pub path: Option<String>,
    /// Simulated time after which a run counts as not terminating.
    pub budget: Duration,
}

impl Experiment {
    /// The embedded default.
    pub fn default_experiment() -> Experiment {
        Experiment::parse(DEFAULT, "(embedded default)", None)
            .expect("the embedded default is valid")
    }

    /// Reads an experiment file.
    pub fn load(path: &Path) -> Result<Experiment, InputError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| InputError::new(&origin, format!("cannot read: {e}")))?;
        Experiment::parse(&text, &origin, Some(origin.clone()))
    }

    /// Parses and validates an experiment.
    pub fn parse(text: &str, origin: &str, path: Option<String>) -> Result<Experiment, InputError> {
        let file: ExperimentFile =
            toml::from_str(text).map_err(|e| InputError::toml(origin, text, &e))?;
        if file.models.is_empty() || file.routing.is_empty() {
            return Err(InputError::new(
                origin,
                "models and routing each need at least one entry",
            ));
        }
        let mut profiles = Vec::new();
        let cards = crate::faults::any_card_fault(file.faults.rates.keys());
        for m in &file.models {
            let p = Profile::load(m).map_err(|e| InputError::new(origin, e.to_string()))?;
            if cards {
                crate::card::check_profile(&p, origin)?;
            }
            profiles.push(p);
        }
        for r in &file.routing {
            if crate::router::strategy(r).is_none() {
                return Err(InputError::new(
                    origin,
                    format!(
                        "unknown routing `{r}`; known: {}",
                        crate::router::names().join(", ")
                    ),
                ));
            }
        }
        if file.replicas == 0 || file.replicas > REPLICAS_MAX {
            return Err(InputError::new(
                origin,
                format!("replicas = {} must be 1..={REPLICAS_MAX}", file.replicas),
            ));
        }
        if file.seeds.count == 0 || file.seeds.count > SEEDS_MAX {
            return Err(InputError::new(
                origin,
                format!("seeds.count = {} must be 1..={SEEDS_MAX}", file.seeds.count),
            ));
        }
        if file.seeds.start.checked_add(file.seeds.count).is_none() {
            return Err(InputError::new(
                origin,
                "seeds.start + seeds.count overflows",
            ));
        }
        file.workload.validate(origin)?;
        file.faults.validate(origin)?;
        if let Some(expect) = &file.expect {
            if let Some(v) = &expect.violations {
                crate::check::validate_names(v, origin)?;
            }
            for (model, e) in &expect.models {
                if !file.models.contains(model) {
                    return Err(InputError::new(
                        origin,
                        format!("[expect.{model}] names a model the experiment does not run"),
                    ));
                }
                crate::check::validate_names(&e.violations, origin)?;
            }
        }
        let budget = budget_for(&file.workload, &file.faults);
        Ok(Experiment {
            file,
            profiles,
            origin: origin.to_string(),
            path,
            budget,
        })
    }

    /// The expected violations for a model, if the file says.
    pub fn expected(&self, model: &str) -> Option<Vec<String>> {
        let e = self.file.expect.as_ref()?;
        e.models
            .get(model)
            .map(|x| x.violations.clone())
            .or_else(|| e.violations.clone())
    }

    /// The command that replays one run of this experiment.
    /// A model loaded from a profile path is named by that path, which `replay` can load.
    pub fn reproduce(&self, seed: u64, model: &str, routing: &str) -> String {
        let model = self
            .profiles
            .iter()
            .position(|p| p.name == model)
            .and_then(|i| self.file.models.get(i))
            .map_or(model, String::as_str);
        match &self.path {
            Some(p) => {
                format!("a2a-chaos replay {p} --seed {seed} --model {model} --routing {routing}")
            }
            None => format!("a2a-chaos replay --seed {seed} --model {model} --routing {routing}"),
        }
    }
}

/// The longest a generated run may take: the slowest conversation the workload allows
/// (every turn retried to the end of its timeouts), then the liveness phase, plus a margin.
/// A run past it is cut and reported as not finishing.
pub fn budget_for(w: &WorkloadSpec, faults: &FaultSpec) -> Duration {
    let per_turn = (u64::from(w.retries) + 1)
        .saturating_mul(w.request_timeout_ms.saturating_add(w.retry_backoff_ms))
        .saturating_add(w.gap_ms[1])
        .saturating_add(if w.poll_rate > 0.0 {
            w.poll_timeout_ms.saturating_add(w.poll_interval_ms)
        } else {
            0
        });
    let workload_ms = w
        .start_spread_ms
        .saturating_add(u64::from(w.turns).saturating_mul(per_turn));
    let budget_ms = workload_ms
        .max(faults.window_ms)
        .saturating_add(faults.liveness_ms)
        .saturating_add(120_000);
    Duration::from_millis(budget_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_default_is_valid() {
        let e = Experiment::default_experiment();
        assert_eq!(e.file.replicas, 3);
    }

    #[test]
    fn an_unknown_fault_is_refused() {
        let bad = DEFAULT.replace("kill = 0.6", "kil = 0.6");
        let err = Experiment::parse(&bad, "x.toml", None).unwrap_err();
        assert!(err.message.contains("kil"), "{err}");
    }

    #[test]
    fn an_unknown_model_is_refused() {
        let bad = DEFAULT.replace("\"reference\"", "\"nope\"");
        let err = Experiment::parse(&bad, "x.toml", None).unwrap_err();
        assert!(err.message.contains("unknown model `nope`"), "{err}");
    }
}
