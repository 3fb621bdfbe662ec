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
//! With `--out DIR`, DIR is the sweep's folder and the shard writes `DIR/shard-K-of-N/`, so
//! every task of a job array can be given the same `--out` ([`shard_dir`]).
//!
//! The shard can also come from the environment of a batch system (`--shard auto`, see
//! [`crate::sweep::batch`]). Without `--shard`, a run is never sharded, whatever the
//! environment says.

use std::path::{Path, PathBuf};

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
    /// The first task id of the Slurm job array that ran this shard (`--shard auto`), kept
    /// in the manifest so that a one-task rerun (`sbatch --array=K`) can tell which shard its
    /// task id is ([`crate::sweep::batch`]). `None` for `--shard K/N` and Kubernetes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_first: Option<u64>,
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
        Ok(Shard {
            index,
            count,
            array_first: None,
        })
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

    /// Whether the item at `position` in the canonical work list is this shard's.
    pub fn owns(&self, position: usize) -> bool {
        position as u64 % self.count == self.index
    }

    /// How many of the first `total` positions of the work list are this shard's.
    pub fn count_in(&self, total: u64) -> u64 {
        if self.index >= total {
            0
        } else {
            (total - self.index).div_ceil(self.count)
        }
    }

    /// This shard's items of the work list, in order, made as they are asked for.
    pub fn items<'a>(
        &self,
        list: &'a crate::sweep::runner::WorkList,
    ) -> impl Iterator<Item = WorkItem> + Send + 'a {
        let (index, count) = (self.index, self.count);
        (0..list.count_in_steps(index, count)).filter_map(move |k| list.get(index + k * count))
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

    /// The shard a directory name `shard-K-of-N` names, if it is one.
    pub fn from_dir_name(name: &str) -> Option<Shard> {
        let (k, n) = name.strip_prefix("shard-")?.split_once("-of-")?;
        let plain = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        if !plain(k) || !plain(n) {
            return None;
        }
        Shard::new(k.parse().ok()?, n.parse().ok()?, "").ok()
    }

    /// Whether two shards are the same index of the same count.
    pub fn same(&self, other: &Shard) -> bool {
        self.index == other.index && self.count == other.count
    }
}

/// The folder of a sharded sweep, which holds its `shard-K-of-N/` folders: `--out`, or
/// `results/<experiment>/`. An `--out` that names a shard's own folder (`.../shard-K-of-N`)
/// stands for its parent.
pub fn sweep_dir(out: Option<&Path>, experiment: &str) -> PathBuf {
    match out {
        Some(out) => match out.file_name().and_then(|n| n.to_str()) {
            Some(name) if Shard::from_dir_name(name).is_some() => out
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_path_buf(),
            _ => out.to_path_buf(),
        },
        None => Path::new("results").join(experiment),
    }
}

/// Where shard `shard` writes: `shard-K-of-N/` inside [`sweep_dir`], so every task of a
/// job array given the same `--out` writes its own folder. An `--out` that already names a
/// shard folder is used as it is, if it is this shard's.
pub fn shard_dir(
    out: Option<&Path>,
    experiment: &str,
    shard: &Shard,
) -> Result<PathBuf, InputError> {
    if let Some(out) = out {
        let named = out
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(Shard::from_dir_name);
        if let Some(named) = named {
            if !named.same(shard) {
                return Err(InputError::new(
                    "--out",
                    format!(
                        "{} is the folder of shard {named}, but this run is shard {shard}: give the sweep's folder ({}) and each shard writes its own shard-K-of-N/ in it",
                        out.display(),
                        sweep_dir(Some(out), experiment).display()
                    ),
                ));
            }
            return Ok(out.to_path_buf());
        }
    }
    Ok(sweep_dir(out, experiment).join(shard.dir_name()))
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
        if let Err(e) = std::fs::metadata(&path) {
            return Err(InputError::new(
                &origin,
                format!(
                    "cannot read: {e} (is {} the output of `run --shard`?)",
                    dir.display()
                ),
            ));
        }
        let text = crate::input::read_text(&path, crate::input::FileKind::Manifest)?;
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
        assert_eq!(Shard::parse("2/4").unwrap(), Shard::new(2, 4, "t").unwrap());
        assert!(Shard::parse("4/4").unwrap_err().message.contains("0..=3"));
        assert!(Shard::parse("1").is_err());
        assert!(Shard::parse("0/0").is_err());
    }

    #[test]
    fn shard_folders_are_named_and_found_again() {
        let s = Shard::new(1, 4, "t").unwrap();
        assert_eq!(Shard::from_dir_name(&s.dir_name()), Some(s));
        assert_eq!(Shard::from_dir_name("shard-4-of-4"), None);
        assert_eq!(Shard::from_dir_name("shard-+1-of-4"), None);
        assert_eq!(Shard::from_dir_name("shards"), None);
        let out = Path::new("/tmp/sweep");
        assert_eq!(
            shard_dir(Some(out), "x", &s).unwrap(),
            out.join("shard-1-of-4")
        );
        assert_eq!(
            shard_dir(Some(&out.join("shard-1-of-4")), "x", &s).unwrap(),
            out.join("shard-1-of-4")
        );
        assert!(shard_dir(Some(&out.join("shard-0-of-4")), "x", &s).is_err());
        assert_eq!(sweep_dir(Some(&out.join("shard-0-of-4")), "x"), out);
        assert_eq!(
            shard_dir(None, "x", &s).unwrap(),
            Path::new("results/x/shard-1-of-4")
        );
    }
}
