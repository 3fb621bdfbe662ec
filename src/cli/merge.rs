//! `a2a-chaos merge DIR...`: join the shards of a sweep into the files one machine writes.
//!
//! Each DIR is a shard's output (`runs.csv` and `shard.json`), or a sweep's folder holding
//! `shard-K-of-N/` folders. The folders are grouped by shard count ([`census`]): the set
//! that is complete is merged, and sets of another count (say a stray `shard-0-of-1/` or an
//! earlier cut of the sweep) are named and passed over. When no set is complete, merge
//! reports every shard (done, unfinished, missing) and how to run the missing ones again,
//! writes nothing and exits 2, so a batch system can run it at any time (Slurm's
//! `--dependency=afterany`) and it can simply be run again.
//!
//! The shards merged must come from the same experiment and configuration (the manifests'
//! fingerprints agree), cover every shard index exactly once, and hold exactly their own
//! work items. The merged `runs.csv`, `summary.csv` and `chart.svg` are then byte for byte
//! those of the unsharded run: rows are sorted into the sweep's order and `summary.csv` is
//! computed from `runs.csv` alone. When the experiment can be rebuilt from the manifest
//! (its models load here and give the same fingerprint), the timelines of the first
//! failing seeds are written too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::InputError;
use crate::output::report;
use crate::sim::RunSummary;
use crate::sweep::batch;
use crate::sweep::census::{self, Found, Set};
use crate::sweep::runner::{self, WorkItem};
use crate::sweep::shard::MANIFEST;

use super::run::write_outputs;

/// The shard folders the arguments name, expanding a sweep's folder to its `shard-*`.
fn gather(dirs: &[PathBuf]) -> Result<Vec<Found>, InputError> {
    let mut out = Vec::new();
    for d in dirs {
        let origin = d.display().to_string();
        std::fs::read_dir(d).map_err(|e| InputError::new(&origin, format!("cannot read: {e}")))?;
        if let Some(f) = census::inspect(d)? {
            out.push(f);
            continue;
        }
        let found = census::scan(d)?;
        if found.is_empty() {
            return Err(InputError::new(
                &origin,
                format!("holds no {MANIFEST}, nor shard-K-of-N folders: is it the output of `run --shard`?"),
            ));
        }
        out.extend(found);
    }
    Ok(out)
}

/// What is not done in a set, as a clause: `shard 1 of 4 has not finished and shards 2, 3
/// of 4 are missing`.
fn gaps(set: &Set) -> String {
    let n = set.count;
    let mut parts = Vec::new();
    match set.unfinished()[..] {
        [] => {}
        [k] => parts.push(format!("shard {k} of {n} has not finished")),
        ref ks => parts.push(format!(
            "shards {} of {n} have not finished",
            census::list(ks)
        )),
    }
    match set.missing()[..] {
        [] => {}
        [k] => parts.push(format!("shard {k} of {n} is missing")),
        ref ks => parts.push(format!("shards {} of {n} are missing", census::list(ks))),
    }
    parts.join(" and ")
}

/// The `a2a-chaos run ...` that runs a shard of this set again, when a manifest says how.
fn run_command(set: &Set) -> Option<String> {
    let f = set.shards.values().find(|f| f.done())?;
    let m = f.manifest.as_ref()?;
    let file = m.path.as_deref().map_or(String::new(), |p| format!(" {p}"));
    let sweep = f.dir.parent().map_or(PathBuf::from("."), Path::to_path_buf);
    Some(format!(
        "a2a-chaos run{file} --seeds {} --out {}",
        m.seeds_count,
        sweep.display()
    ))
}

/// Picks the set to merge; prints what it passes over. Without a complete set, prints
/// every shard's state and returns the error to exit with.
fn choose(sets: &BTreeMap<u64, Set>) -> Result<&Set, InputError> {
    for set in sets.values() {
        let prints = set.fingerprints();
        if prints.len() > 1 {
            let of = |fp: &str| {
                set.shards
                    .values()
                    .find(|f| f.fingerprint.as_deref() == Some(fp))
                    .map_or(String::new(), |f| f.dir.display().to_string())
            };
            return Err(InputError::new(
                of(prints[1]),
                format!(
                    "is a shard of configuration {}, but {} is of {}: shards of different sweeps cannot be merged",
                    prints[1],
                    of(prints[0]),
                    prints[0]
                ),
            ));
        }
    }
    let complete: Vec<&Set> = sets.values().filter(|s| s.complete()).collect();
    let chosen = match complete[..] {
        [] => None,
        [one] => Some(one),
        ref many => {
            let mut prints: Vec<&str> = many.iter().flat_map(|s| s.fingerprints()).collect();
            prints.sort();
            prints.dedup();
            if prints.len() > 1 {
                return Err(InputError::new(
                    "merge",
                    format!(
                        "complete shard sets of {} shards are of different configurations: name the folders of one set (merge DIR/shard-*-of-N)",
                        many.iter().map(|s| s.count.to_string()).collect::<Vec<_>>().join(" and ")
                    ),
                ));
            }
            // The same sweep cut two ways merges to the same files; take the finer cut.
            many.last().copied()
        }
    };
    if let Some(set) = chosen {
        for other in sets.values().filter(|s| s.count != set.count) {
            let state = if other.complete() {
                "complete too".to_string()
            } else {
                format!("not complete: {}", gaps(other))
            };
            eprintln!(
                "note: passing over the set of {} shards ({state}); merging the set of {}",
                other.count, set.count
            );
        }
        return Ok(set);
    }
    println!("merge: no shard set is complete, so nothing is written");
    for set in sets.values() {
        println!("the set of {} shards:", set.count);
        for line in set.report() {
            println!("  {line}");
        }
    }
    let what: Vec<String> = sets.values().map(gaps).collect();
    // The recipe is for the set closest to done.
    let nearest = sets
        .values()
        .min_by_key(|s| (s.open().len(), std::cmp::Reverse(s.count)))
        .expect("at least one set");
    Err(InputError::new(
        "merge",
        format!(
            "{}; nothing was written: {}, then merge again",
            what.join("; "),
            batch::rerun_recipe(
                run_command(nearest).as_deref(),
                nearest.count,
                &nearest.open()
            )
        ),
    ))
}

/// Runs `a2a-chaos merge`; returns the exit code.
pub fn cmd_merge(dirs: Vec<PathBuf>, out: Option<PathBuf>, wide: bool) -> Result<i32, InputError> {
    if dirs.is_empty() {
        return Err(InputError::new(
            "merge",
            "name at least one shard directory",
        ));
    }
    let sets = census::group(gather(&dirs)?)?;
    let set = choose(&sets)?;
    let mut rows: BTreeMap<WorkItem, RunSummary> = BTreeMap::new();
    let mut first_dir: Option<PathBuf> = None;
    let mut manifests = Vec::new();
    for found in set.shards.values() {
        let dir = &found.dir;
        let m = found
            .manifest
            .clone()
            .expect("a complete set's shards are done");
        let origin = dir.join(MANIFEST).display().to_string();
        if let Some(f) = manifests.first() {
            let f: &crate::sweep::shard::Manifest = f;
            if m.experiment != f.experiment {
                return Err(InputError::new(
                    &origin,
                    format!(
                        "is a shard of `{}`, but {} is of `{}`: shards of different sweeps cannot be merged",
                        m.experiment,
                        first_dir.as_ref().map_or(String::new(), |p| p.display().to_string()),
                        f.experiment,
                    ),
                ));
            }
        }
        let csv_path = dir.join("runs.csv");
        let csv_origin = csv_path.display().to_string();
        let bytes = crate::input::read_bytes(&csv_path, crate::input::FileKind::RunsCsv)?;
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
        if first_dir.is_none() {
            first_dir = Some(dir.clone());
        }
        manifests.push(m);
    }
    let m = manifests.swap_remove(0);
    let dirs: Vec<PathBuf> = set.shards.values().map(|f| f.dir.clone()).collect();
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
    let parents: Vec<&Path> = dirs.iter().filter_map(|d| d.parent()).collect();
    let shared = parents
        .first()
        .filter(|p| parents.len() == dirs.len() && parents.iter().all(|q| q == *p));
    let out = match (out, shared) {
        (Some(out), _) => out,
        // The sweep's folder, which holds the shard folders.
        (None, Some(parent)) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        (None, _) => {
            // The manifest is a file on disk: its name must not lead out of results/.
            crate::names::check("the experiment name", &m.experiment).map_err(|e| {
                InputError::new(
                    dirs.first()
                        .map_or(String::new(), |d| d.join(MANIFEST).display().to_string()),
                    e.to_string(),
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
    let _lock = crate::files::OutLock::take(&out)?;
    write_outputs(exp.as_ref(), &m.experiment, &runs, &out)?;
    Ok(0)
}
