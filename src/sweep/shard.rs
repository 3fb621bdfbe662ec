//! Shards: splitting one sweep over several machines, and joining the pieces again.
//!
//! A sweep is the list of work items of [`crate::sweep::runner::work_items`] (model, then routing,
//! then seed). Shard `K` of `N` runs the items whose position `i` in that list has
//! `i % N == K`: striped rather than cut in blocks, so every shard gets its share of every
//! model and routing strategy and the shards take about the same time. `K` counts from 0.
//!
//! A shard writes `runs.csv` and a manifest, `shard.json`, into its own directory (by
//! default `results/<experiment>/shard-K-of-N/`). The manifest names the experiment, its
//! text, the seed count and the [`crate::sweep::runner::fingerprint`] of the configuration, so
//! `a2a-chaos merge` can refuse shards of different sweeps, report missing shards, and
//! re-run the first failing seeds for the timelines.
//!
//! The shard can also come from the environment of a batch system (`--shard auto`): a
//! Kubernetes Indexed Job's `JOB_COMPLETION_INDEX` (with the count from `--shards N` or
//! `A2A_CHAOS_SHARDS`, because Kubernetes does not export it), or a Slurm job array's
//! `SLURM_ARRAY_TASK_ID`, less `SLURM_ARRAY_TASK_MIN`, out of `SLURM_ARRAY_TASK_COUNT`.
//! Without `--shard`, a run is never sharded, whatever the environment says.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::InputError;
use crate::experiment::Experiment;
use crate::sweep::runner::WorkItem;

/// The manifest's file name inside a shard's directory.
pub const MANIFEST: &str = "shard.json";

/// Most shards one sweep may be cut into.
pub const SHARDS_MAX: u64 = 1_000_000;

/// Shard `index` of `count` (`index` counts from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// Which shard, from 0.
    pub index: u64,
    /// How many shards the sweep is cut into.
    pub count: u64,
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// A validated shard.
    pub fn new(index: u64, count: u64, origin: &str) -> Result<Shard, InputError> {
        if count == 0 || count > SHARDS_MAX {
            return Err(InputError::new(
                origin,
                format!("the shard count {count} must be 1..={SHARDS_MAX}"),
            ));
        }
        if index >= count {
            return Err(InputError::new(
                origin,
                format!(
                    "shard index {index} is out of range: indexes count from 0, so {count} shards are 0..={}",
                    count - 1
                ),
            ));
        }
        Ok(Shard { index, count })
    }

    /// Parses `K/N`.
    pub fn parse(text: &str) -> Result<Shard, InputError> {
        let origin = "--shard";
        let bad = || {
            InputError::new(
                origin,
                format!("`{text}` is not K/N (shard K of N, K from 0) or `auto`"),
            )
        };
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let k: u64 = k.trim().parse().map_err(|_| bad())?;
        let n: u64 = n.trim().parse().map_err(|_| bad())?;
        Shard::new(k, n, origin)
    }

    /// The shard a batch system's environment gives (`--shard auto`). `shards` is the
    /// `--shards` flag; `env` reads a variable (`std::env::var` in the binary).
    pub fn from_env(
        shards: Option<u64>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Shard, InputError> {
        let number = |name: &str| -> Result<Option<u64>, InputError> {
            match env(name) {
                None => Ok(None),
                Some(v) if v.trim().is_empty() => Ok(None),
                Some(v) => v.trim().parse().map(Some).map_err(|_| {
                    InputError::new(
                        format!("${name}"),
                        format!("`{v}` is not a non-negative integer"),
                    )
                }),
            }
        };
        if let Some(index) = number("JOB_COMPLETION_INDEX")? {
            let count = match shards {
                Some(n) => n,
                None => number("A2A_CHAOS_SHARDS")?.ok_or_else(|| {
                    InputError::new(
                        "--shard auto",
                        "JOB_COMPLETION_INDEX is set but the shard count is not: pass --shards N (the Job's completions) or set A2A_CHAOS_SHARDS",
                    )
                })?,
            };
            return Shard::new(index, count, "$JOB_COMPLETION_INDEX");
        }
        if let Some(id) = number("SLURM_ARRAY_TASK_ID")? {
            let min = number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
            let count = match shards {
                Some(n) => n,
                None => number("SLURM_ARRAY_TASK_COUNT")?.ok_or_else(|| {
                    InputError::new(
                        "--shard auto",
                        "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not: pass --shards N",
                    )
                })?,
            };
            let index = id.checked_sub(min).ok_or_else(|| {
                InputError::new(
                    "$SLURM_ARRAY_TASK_ID",
                    format!("{id} is below SLURM_ARRAY_TASK_MIN {min}"),
                )
            })?;
            return Shard::new(index, count, "$SLURM_ARRAY_TASK_ID");
        }
        Err(InputError::new(
            "--shard auto",
            "found neither JOB_COMPLETION_INDEX (Kubernetes Indexed Job) nor SLURM_ARRAY_TASK_ID (Slurm job array); use --shard K/N",
        ))
    }

    /// Whether the item at `position` in the canonical work list is this shard's.
    pub fn owns(&self, position: usize) -> bool {
        position as u64 % self.count == self.index
    }

    /// This shard's items of the canonical work list, in order.
    pub fn select(&self, items: &[WorkItem]) -> Vec<WorkItem> {
        items
            .iter()
            .enumerate()
            .filter(|(i, _)| self.owns(*i))
            .map(|(_, item)| *item)
            .collect()
    }

    /// The directory name of this shard's output: `shard-K-of-N`.
    pub fn dir_name(&self) -> String {
        format!("shard-{}-of-{}", self.index, self.count)
    }
}

/// `shard.json`: what `merge` needs to know about a shard's `runs.csv`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Manifest format version.
    pub format: u64,
    /// The experiment's name.
    pub experiment: String,
    /// Where the experiment came from, as the run printed it.
    pub origin: String,
    /// The experiment file's path as given (reproduce commands name it), or `None` for the
    /// embedded default.
    pub path: Option<String>,
    /// The experiment file's text, or `None` for the embedded default.
    pub text: Option<String>,
    /// The first seed.
    pub seeds_start: u64,
    /// Seeds swept (after `--seeds`).
    pub seeds_count: u64,
    /// [`crate::sweep::runner::fingerprint`] of the configuration.
    pub fingerprint: String,
    /// Model names in the experiment's order.
    pub models: Vec<String>,
    /// Routing strategies in the experiment's order.
    pub routing: Vec<String>,
    /// Which shard this is.
    pub shard: Shard,
    /// Rows in the shard's `runs.csv`.
    pub runs: u64,
}

impl Manifest {
    /// The manifest of a shard of `exp`, whose file text is `text`.
    pub fn new(exp: &Experiment, text: Option<String>, shard: Shard, runs: u64) -> Manifest {
        Manifest {
            format: 1,
            experiment: exp.file.name.clone(),
            origin: exp.origin.clone(),
            path: exp.path.clone(),
            text,
            seeds_start: exp.file.seeds.start,
            seeds_count: exp.file.seeds.count,
            fingerprint: crate::sweep::runner::fingerprint(exp),
            models: exp.profiles.iter().map(|p| p.name.clone()).collect(),
            routing: exp.file.routing.clone(),
            shard,
            runs,
        }
    }

    /// Reads `dir/shard.json`.
    pub fn read(dir: &Path) -> Result<Manifest, InputError> {
        let path = dir.join(MANIFEST);
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(&path).map_err(|e| {
            InputError::new(
                &origin,
                format!(
                    "cannot read: {e} (is {} the output of `run --shard`?)",
                    dir.display()
                ),
            )
        })?;
        let m: Manifest = serde_json::from_str(&text)
            .map_err(|e| InputError::new(&origin, format!("not a shard manifest: {e}")))?;
        if m.format != 1 {
            return Err(InputError::new(
                &origin,
                format!("manifest format {} is not one this version reads", m.format),
            ));
        }
        Ok(m)
    }

    /// The manifest as pretty JSON with a trailing newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut text = serde_json::to_string_pretty(self).expect("a manifest serialises");
        text.push('\n');
        text.into_bytes()
    }

    /// The experiment the shard ran, rebuilt from the manifest (it loads the models, which
    /// must exist where `merge` runs).
    pub fn experiment(&self) -> Result<Experiment, InputError> {
        let mut exp = match &self.text {
            Some(text) => Experiment::parse(text, &self.origin, self.path.clone())?,
            None => Experiment::default_experiment(),
        };
        exp.file.seeds.count = self.seeds_count;
        Ok(exp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_work_list() {
        let items: Vec<WorkItem> = (0..10)
            .map(|seed| WorkItem {
                model: 0,
                routing: 0,
                seed,
            })
            .collect();
        let mut seen = Vec::new();
        for k in 0..3 {
            seen.extend(Shard::new(k, 3, "t").unwrap().select(&items));
        }
        seen.sort();
        assert_eq!(seen, items);
        assert_eq!(Shard::new(1, 3, "t").unwrap().select(&items).len(), 3);
    }

    #[test]
    fn k_of_n_parses_and_bad_values_are_refused() {
        assert_eq!(Shard::parse("2/4").unwrap(), Shard { index: 2, count: 4 });
        assert!(Shard::parse("4/4").unwrap_err().message.contains("0..=3"));
        assert!(Shard::parse("1").is_err());
        assert!(Shard::parse("0/0").is_err());
    }

    #[test]
    fn the_environment_of_a_batch_system_gives_the_shard() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let k8s = env(&[("JOB_COMPLETION_INDEX", "3"), ("A2A_CHAOS_SHARDS", "8")]);
        assert_eq!(
            Shard::from_env(None, &k8s).unwrap(),
            Shard { index: 3, count: 8 }
        );
        assert_eq!(
            Shard::from_env(Some(4), &k8s).unwrap(),
            Shard { index: 3, count: 4 }
        );
        let k8s_no_count = env(&[("JOB_COMPLETION_INDEX", "3")]);
        assert!(Shard::from_env(None, &k8s_no_count).is_err());
        let slurm = env(&[
            ("SLURM_ARRAY_TASK_ID", "5"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "8"),
        ]);
        assert_eq!(
            Shard::from_env(None, &slurm).unwrap(),
            Shard { index: 4, count: 8 }
        );
        assert!(Shard::from_env(None, &env(&[])).is_err());
    }
}
