//! Experiment files: models × routing strategies × fault profiles × seeds.
//!
//! The format is the one in `docs/CONTRACT.md`. `[workload]` and `[faults]` are the
//! tables of [`WorkloadSpec`] and [`FaultSpec`]; `[expect]` is optional: either
//! `violations = [...]` for every model, or one `[expect.<model>]` table per model, and
//! `exercised = [...]` / `allow-unexercised` at either level.
//! The default experiment (`experiments/default.toml`) is embedded in the binary.
//!
//! A file that omits `[faults]` or `[workload]` gets the embedded default's table for it,
//! the full swarm ([`Experiment::defaulted`] says which, and `run` prints the resolved
//! values). Running without faults is said explicitly: `[faults] none = true`, or every
//! rate written as 0; a `[faults]` table that names no fault and does not say `none` is
//! refused, since it would silently run no chaos.
//!
//! The experiment's `name` is its default output folder, so it must be a plain file name
//! ([`crate::names`]).

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
#[serde(rename_all = "kebab-case")]
pub struct ExperimentExpect {
    /// For every model.
    #[serde(default)]
    pub violations: Option<Vec<String>>,
    /// Invariants every model × routing combination must exercise at least once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exercised: Option<Vec<String>>,
    /// Let a combination that exercised no invariant at all pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_unexercised: Option<bool>,
    /// At most this many refused continuations in each run (a model's own table may say
    /// otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_refused_continuations: Option<u64>,
    /// At most this many failed turns in each run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_failed_turns: Option<u64>,
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
    /// Simulated time one step of the world advances, ms (default 1; see
    /// [`crate::scenario::check_tick_ms`]).
    #[serde(
        default = "crate::scenario::default_tick_ms",
        skip_serializing_if = "is_default_tick"
    )]
    pub tick_ms: u64,
    /// Which engine runs the worlds (default `events`, which jumps over idle time; `turmoil`
    /// steps every host one tick at a time).
    #[serde(default, skip_serializing_if = "is_default_engine")]
    pub engine: crate::engine::Engine,
    /// Omitted: the embedded default's `[workload]`.
    #[serde(default = "embedded_workload")]
    pub workload: WorkloadSpec,
    /// Omitted: the embedded default's `[faults]`.
    #[serde(default = "embedded_faults")]
    pub faults: FaultSpec,
    #[serde(default)]
    pub expect: Option<ExperimentExpect>,
}

fn three() -> usize {
    3
}

fn is_default_engine(engine: &crate::engine::Engine) -> bool {
    *engine == crate::engine::Engine::default()
}

fn is_default_tick(tick_ms: &u64) -> bool {
    *tick_ms == crate::scenario::default_tick_ms()
}

/// Which of the defaultable tables a file gives (their contents are read by
/// [`ExperimentFile`]; a `toml::Table` would refuse integers above `i64::MAX` that the typed
/// parse accepts and then bounds with a clearer message).
#[derive(Deserialize)]
struct Present {
    workload: Option<serde::de::IgnoredAny>,
    faults: Option<serde::de::IgnoredAny>,
}

/// One table of the embedded default, as written there.
fn embedded_table<T: serde::de::DeserializeOwned>(key: &str) -> T {
    let table: toml::Table = toml::from_str(DEFAULT).expect("the embedded default is TOML");
    table
        .get(key)
        .cloned()
        .expect("the embedded default has the table")
        .try_into()
        .expect("the embedded default's table is valid")
}

/// The embedded default's `[workload]`: what a file without one gets.
pub fn embedded_workload() -> WorkloadSpec {
    embedded_table("workload")
}

/// The embedded default's `[faults]`: what a file without one gets.
pub fn embedded_faults() -> FaultSpec {
    embedded_table("faults")
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
    /// The tables the file omitted and that came from the embedded default (`workload`,
    /// `faults`).
    pub defaulted: Vec<&'static str>,
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
        let text = crate::input::read_text(path, crate::input::FileKind::Experiment)?;
        Experiment::parse(&text, &origin, Some(origin.clone()))
    }

    /// Parses and validates an experiment.
    pub fn parse(text: &str, origin: &str, path: Option<String>) -> Result<Experiment, InputError> {
        let file: ExperimentFile =
            toml::from_str(text).map_err(|e| InputError::toml(origin, text, &e))?;
        let present: Present =
            toml::from_str(text).map_err(|e| InputError::toml(origin, text, &e))?;
        let defaulted: Vec<&'static str> = [
            ("workload", present.workload.is_some()),
            ("faults", present.faults.is_some()),
        ]
        .into_iter()
        .filter(|(_, given)| !given)
        .map(|(k, _)| k)
        .collect();
        crate::names::check("name", &file.name)
            .map_err(|m| InputError::new(origin, m.to_string()))?;
        if !defaulted.contains(&"faults") && !file.faults.none && file.faults.rates.is_empty() {
            return Err(InputError::new(
                origin,
                format!(
                    "[faults] names no fault, which would run no chaos at all: give rates (faults: {}), say `none = true` to run without faults, or leave the table out for the default swarm",
                    crate::faults::names().join(", ")
                ),
            ));
        }
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
            if file.faults.draws("drain") {
                p.check_drain(origin)?;
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
        crate::scenario::check_tick_ms(file.tick_ms)
            .map_err(|m| InputError::new(origin, m.to_string()))?;
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
            if let Some(v) = &expect.exercised {
                crate::check::validate_names(v, origin)?;
            }
            for (model, e) in &expect.models {
                if !file.models.contains(model) {
                    return Err(InputError::new(
                        origin,
                        format!("[expect.{model}] names a model the experiment does not run"),
                    ));
                }
                crate::check::validate_names(&e.names(), origin)?;
                if !e.call.is_empty() || !e.task.is_empty() {
                    return Err(InputError::new(
                        origin,
                        format!(
                            "[expect.{model}]: call and task expectations belong in a scenario (an experiment's conversations are drawn, not named)"
                        ),
                    ));
                }
            }
        }
        let budget = budget_for(&file.workload, &file.faults);
        Ok(Experiment {
            file,
            profiles,
            origin: origin.to_string(),
            path,
            budget,
            defaulted,
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

    /// Everything `[expect]` says about a model: its expected violations (its own table's,
    /// else the file's), the invariants it must exercise (both levels) and whether a
    /// combination that exercised nothing may pass (either level). `None` when the file
    /// has no `[expect]`.
    pub fn expect_for(&self, model: &str) -> Option<Expect> {
        let e = self.file.expect.as_ref()?;
        let own = e.models.get(model);
        let mut exercised: Vec<String> = e.exercised.clone().unwrap_or_default();
        for x in own.map(|o| o.exercised.clone()).unwrap_or_default() {
            if !exercised.contains(&x) {
                exercised.push(x);
            }
        }
        Some(Expect {
            violations: self.expected(model).unwrap_or_default(),
            exercised,
            allow_unexercised: e.allow_unexercised.unwrap_or(false)
                || own.is_some_and(|o| o.allow_unexercised),
            max_refused_continuations: own
                .and_then(|o| o.max_refused_continuations)
                .or(e.max_refused_continuations),
            max_failed_turns: own.and_then(|o| o.max_failed_turns).or(e.max_failed_turns),
            call: Vec::new(),
            task: Vec::new(),
        })
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
        let engine = match self.file.engine {
            e if e == crate::engine::Engine::default() => String::new(),
            other => format!(" --engine {other}"),
        };
        match &self.path {
            Some(p) => format!(
                "a2a-chaos replay {p} --seed {seed} --model {model} --routing {routing}{engine}"
            ),
            None => format!(
                "a2a-chaos replay --seed {seed} --model {model} --routing {routing}{engine}"
            ),
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
        .saturating_add(w.turn_extra_ms());
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

    const MINIMAL: &str = "name = \"m\"\nmodels = [\"reference\"]\nrouting = [\"round-robin\"]\n\
                           seeds = { start = 0, count = 1 }\n";

    #[test]
    fn omitted_tables_get_the_embedded_default_swarm() {
        let e = Experiment::parse(MINIMAL, "m.toml", None).unwrap();
        assert_eq!(e.defaulted, ["workload", "faults"]);
        let d = Experiment::default_experiment();
        assert!(d.defaulted.is_empty());
        assert_eq!(e.file.faults, d.file.faults);
        assert_eq!(e.file.workload, d.file.workload);
        assert!(e.file.faults.rates["kill"] > 0.0 && e.file.workload.rate("cancel-rate") > 0.0);
    }

    #[test]
    fn no_faults_is_said_explicitly() {
        let none = format!("{MINIMAL}[faults]\nnone = true\n");
        let e = Experiment::parse(&none, "m.toml", None).unwrap();
        assert!(e.file.faults.none && e.file.faults.rates.is_empty());
        assert_eq!(e.defaulted, ["workload"]);
        let zero = format!("{MINIMAL}[faults]\nkill = 0\n");
        assert!(Experiment::parse(&zero, "m.toml", None).is_ok());
        let silent = format!("{MINIMAL}[faults]\nwindow-ms = 500\n");
        let err = Experiment::parse(&silent, "m.toml", None).unwrap_err();
        assert!(err.message.contains("none = true"), "{err}");
        let both = format!("{MINIMAL}[faults]\nnone = true\nkill = 0.5\n");
        assert!(Experiment::parse(&both, "m.toml", None).is_err());
    }

    #[test]
    fn a_name_that_is_not_a_file_name_is_refused() {
        let bad = MINIMAL.replace("name = \"m\"", "name = \"../../../escaped\"");
        let err = Experiment::parse(&bad, "m.toml", None).unwrap_err();
        assert!(err.message.contains("`../../../escaped`"), "{err}");
    }

    #[test]
    fn an_unknown_model_is_refused() {
        let bad = DEFAULT.replace("\"reference\"", "\"nope\"");
        let err = Experiment::parse(&bad, "x.toml", None).unwrap_err();
        assert!(err.message.contains("unknown model `nope`"), "{err}");
    }
}
