//! `a2a-chaos merge DIR...`: join the shards of a sweep into the files one machine writes.
//!
//! Each DIR is a shard's output (`runs.csv` and `shard.json`), or a directory holding
//! `shard-K-of-N/` directories. The shards must come from the same experiment and
//! configuration (the manifests' fingerprints agree), cover every shard index exactly once,
//! and hold exactly their own work items. The merged `runs.csv`, `summary.csv` and
//! `chart.svg` are then byte for byte those of the unsharded run: rows are sorted into the
//! sweep's order and `summary.csv` is computed from `runs.csv` alone. When the experiment
//! can be rebuilt from the manifest (its models load here and give the same fingerprint),
//! the timelines of the first failing seeds are written too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::InputError;
use crate::output::report;
use crate::sim::RunSummary;
use crate::sweep::runner::{self, WorkItem};
use crate::sweep::shard::{Manifest, MANIFEST};

use super::run::write_outputs;

/// The shard directories named by the arguments, expanding a parent of `shard-*` folders.
fn shard_dirs(dirs: &[PathBuf]) -> Result<Vec<PathBuf>, InputError> {
    let mut out = Vec::new();
    let unfinished = |d: &Path| {
        InputError::new(
            d.display().to_string(),
            format!(
                "is a shard that has not finished (no {MANIFEST} yet): finish it with `a2a-chaos run ... --shard K/N --resume`"
            ),
        )
    };
    for d in dirs {
        if d.join(MANIFEST).exists() {
            out.push(d.clone());
            continue;
        }
        if d.join(crate::sweep::journal::FILE_NAME).exists() {
            return Err(unfinished(d));
        }
        let origin = d.display().to_string();
        let entries = std::fs::read_dir(d)
            .map_err(|e| InputError::new(&origin, format!("cannot read: {e}")))?;
        let mut found: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("shard-") && e.path().is_dir())
            .map(|e| e.path())
            .collect();
        if let Some(d) = found.iter().find(|d| !d.join(MANIFEST).exists()) {
            return Err(unfinished(d));
        }
        if found.is_empty() {
            return Err(InputError::new(
                &origin,
                format!("holds no {MANIFEST}, nor shard-K-of-N folders with one: is it the output of `run --shard`?"),
            ));
        }
        found.sort();
        out.extend(found);
    }
    Ok(out)
}

/// Runs `a2a-chaos merge`; returns the exit code.
pub fn cmd_merge(dirs: Vec<PathBuf>, out: Option<PathBuf>, wide: bool) -> Result<i32, InputError> {
    if dirs.is_empty() {
        return Err(InputError::new(
            "merge",
            "name at least one shard directory",
        ));
    }
    let dirs = shard_dirs(&dirs)?;
    let mut first: Option<Manifest> = None;
    let mut by_index: BTreeMap<u64, PathBuf> = BTreeMap::new();
    let mut rows: BTreeMap<WorkItem, RunSummary> = BTreeMap::new();
    for dir in &dirs {
        let m = Manifest::read(dir)?;
        let origin = dir.join(MANIFEST).display().to_string();
        if let Some(f) = &first {
            if m.experiment != f.experiment || m.fingerprint != f.fingerprint {
                return Err(InputError::new(
                    &origin,
                    format!(
                        "is a shard of `{}` ({}), but {} is of `{}` ({}): shards of different sweeps cannot be merged",
                        m.experiment,
                        m.fingerprint,
                        by_index.values().next().map_or(String::new(), |p| p.display().to_string()),
                        f.experiment,
                        f.fingerprint
                    ),
                ));
            }
            if m.shard.count != f.shard.count {
                return Err(InputError::new(
                    &origin,
                    format!(
                        "is shard {} but the others are of {} shards",
                        m.shard, f.shard.count
                    ),
                ));
            }
        }
        if let Some(other) = by_index.insert(m.shard.index, dir.clone()) {
            return Err(InputError::new(
                &origin,
                format!(
                    "shard {} is given twice ({} and {})",
                    m.shard,
                    other.display(),
                    dir.display()
                ),
            ));
        }
        let csv_path = dir.join("runs.csv");
        let csv_origin = csv_path.display().to_string();
        let bytes = std::fs::read(&csv_path)
            .map_err(|e| InputError::new(&csv_origin, format!("cannot read: {e}")))?;
        let runs = report::parse_runs_csv(&bytes, &csv_origin)?;
        if runs.len() as u64 != m.runs {
            return Err(InputError::new(
                &csv_origin,
                format!(
                    "has {} runs but its manifest says {}: the shard did not finish",
                    runs.len(),
                    m.runs
                ),
            ));
        }
        let (routings, seeds) = (m.routing.len() as u64, m.seeds_count);
        for run in runs {
            let model = m.models.iter().position(|x| *x == run.model);
            let routing = m.routing.iter().position(|x| *x == run.routing);
            let in_range = run.seed >= m.seeds_start && run.seed - m.seeds_start < m.seeds_count;
            let (Some(model), Some(routing), true) = (model, routing, in_range) else {
                return Err(InputError::new(
                    &csv_origin,
                    format!(
                        "holds {} / {} seed {}, which the experiment does not sweep",
                        run.model, run.routing, run.seed
                    ),
                ));
            };
            let position =
                (model as u64 * routings + routing as u64) * seeds + (run.seed - m.seeds_start);
            if position % m.shard.count != m.shard.index {
                return Err(InputError::new(
                    &csv_origin,
                    format!(
                        "holds {} / {} seed {}, which belongs to another shard than {}",
                        run.model, run.routing, run.seed, m.shard
                    ),
                ));
            }
            let item = WorkItem {
                model,
                routing,
                seed: run.seed,
            };
            if rows.insert(item, run).is_some() {
                return Err(InputError::new(&csv_origin, "holds a run twice"));
            }
        }
        if first.is_none() {
            first = Some(m);
        }
    }
    let m = first.expect("at least one shard");
    let missing: Vec<String> = (0..m.shard.count)
        .filter(|k| !by_index.contains_key(k))
        .map(|k| k.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(InputError::new(
            "merge",
            format!(
                "shards {} of {} are missing (indexes count from 0)",
                missing.join(", "),
                m.shard.count
            ),
        ));
    }
    let expected = m.models.len() as u64 * m.routing.len() as u64 * m.seeds_count;
    if rows.len() as u64 != expected {
        return Err(InputError::new(
            "merge",
            format!(
                "the shards hold {} runs, but the sweep has {expected}",
                rows.len()
            ),
        ));
    }
    let runs: Vec<RunSummary> = rows.into_values().collect();
    println!(
        "merged {} shards of experiment {}: {} runs",
        m.shard.count,
        m.experiment,
        runs.len()
    );
    println!();
    super::run::print_summary(&runs, wide);
    println!();
    let out = match out {
        Some(out) => out,
        None => {
            // The manifest is a file on disk: its name must not lead out of results/.
            crate::names::check("the experiment name", &m.experiment).map_err(|e| {
                InputError::new(
                    dirs.first()
                        .map_or(String::new(), |d| d.join(MANIFEST).display().to_string()),
                    e,
                )
            })?;
            Path::new("results").join(&m.experiment)
        }
    };
    // The timelines need the experiment itself: rebuilt from the manifest, if it is the same.
    let exp = match m.experiment() {
        Ok(exp) if runner::fingerprint(&exp) == m.fingerprint => Some(exp),
        Ok(_) => {
            eprintln!("note: the models here differ from the ones the shards ran with, so no timelines are written");
            None
        }
        Err(e) => {
            eprintln!("note: no timelines: the experiment cannot be rebuilt here: {e}");
            None
        }
    };
    write_outputs(exp.as_ref(), &m.experiment, &runs, &out)?;
    Ok(0)
}
