//! `--shard auto`: the shard a batch system's environment gives, trusted only when the
//! environment is consistent with itself and with the shards already on disk.
//!
//! - **Kubernetes Indexed Job.** The index is `JOB_COMPLETION_INDEX`; the count comes from
//!   `--shards N` or `A2A_CHAOS_SHARDS`, because Kubernetes does not export the Job's
//!   `completions`. A restarted pod (`restartPolicy: OnFailure`) sees the same variables and
//!   resumes its journal.
//! - **Slurm job array.** The index is `SLURM_ARRAY_TASK_ID` less the array's first task id
//!   (`SLURM_ARRAY_TASK_MIN`), out of `SLURM_ARRAY_TASK_COUNT` (or `--shards N`). A stepped
//!   array (`--array=0-6:2`, `SLURM_ARRAY_TASK_STEP` > 1) or one with gaps (`--array=0,2,5`:
//!   `MAX - MIN + 1 != COUNT`) is refused: its task ids are not shard indexes. A requeued
//!   task (`scontrol requeue`) sees the same variables and resumes its journal.
//!
//! A one-task rerun, `sbatch --array=1 job.sh`, is an array of its own: `COUNT` is 1 and
//! `MIN` is 1. Taken at its word it would run the whole sweep as shard 0/1. So when the
//! sweep's folder already holds a larger shard set of the same configuration
//! ([`crate::sweep::census`]), that set's count wins, and the index is the task id less the
//! first task id of the array that ran the set, which every manifest written under Slurm
//! records ([`crate::sweep::shard::Shard::array_first`]). When no manifest records it, the
//! run is refused with the two commands that rerun one shard: `scontrol requeue` of the
//! original task, or `--shard K/N --resume`.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::InputError;
use crate::sweep::census::{self, Set};
use crate::sweep::shard::Shard;

/// The shard `--shard auto` settled on, and what the user should know about how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Auto {
    /// The shard to run.
    pub shard: Shard,
    /// Notes for stderr: where the shard came from when that was not plain.
    pub notes: Vec<String>,
}

/// How to run one shard again, for messages: `open` are the shards not done; `command` is
/// the sweep's `a2a-chaos run ...` with its --seeds and --out, when known.
pub fn rerun_recipe(command: Option<&str>, count: u64, open: &[u64]) -> String {
    let which = match open {
        [] => String::new(),
        [k] => format!(" (here K = {k})"),
        ks => format!(" (here K = {})", census::list(ks)),
    };
    let run = match command {
        Some(c) => format!("`{c} --shard K/{count} --resume`"),
        None => format!(
            "`a2a-chaos run EXP --shard K/{count} --resume` with the sweep's --seeds and --out"
        ),
    };
    format!(
        "to run one shard again, requeue its task of the original array (`scontrol requeue <array job id>_<task id>`; it resumes its journal), or run {run}{which}"
    )
}

/// Resolves `--shard auto` for the sweep whose shard folders live in `sweep` and whose
/// configuration has `fingerprint`. `shards` is the `--shards` flag; `env` reads a variable
/// (`std::env::var` in the binary).
pub fn resolve(
    shards: Option<u64>,
    sweep: &Path,
    fingerprint: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Auto, InputError> {
    let found: Vec<_> = census::scan(sweep)?
        .into_iter()
        .filter(|f| f.fingerprint.as_deref() == Some(fingerprint))
        .collect();
    let sets = census::group(found)?;
    decide(shards, &sets, &sweep.display().to_string(), env)
}

/// A variable as a non-negative integer; empty counts as unset.
fn number(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Result<Option<u64>, InputError> {
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
}

/// The decision, given the shard sets of this configuration already on disk.
pub fn decide(
    shards: Option<u64>,
    sets: &BTreeMap<u64, Set>,
    sweep: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Auto, InputError> {
    if let Some(index) = number(env, "JOB_COMPLETION_INDEX")? {
        let count = match shards {
            Some(n) => n,
            None => number(env, "A2A_CHAOS_SHARDS")?.ok_or_else(|| {
                InputError::new(
                    "--shard auto",
                    "JOB_COMPLETION_INDEX is set but the shard count is not: pass --shards N (the Job's completions) or set A2A_CHAOS_SHARDS",
                )
            })?,
        };
        let shard = Shard::new(index, count, "$JOB_COMPLETION_INDEX")?;
        return Ok(Auto {
            shard,
            notes: other_sets(sets, count, sweep),
        });
    }
    let Some(id) = number(env, "SLURM_ARRAY_TASK_ID")? else {
        return Err(InputError::new(
            "--shard auto",
            "found neither JOB_COMPLETION_INDEX (Kubernetes Indexed Job) nor SLURM_ARRAY_TASK_ID (Slurm job array); use --shard K/N",
        ));
    };
    if let Some(step) = number(env, "SLURM_ARRAY_TASK_STEP")? {
        if step > 1 {
            return Err(InputError::new(
                "$SLURM_ARRAY_TASK_STEP",
                format!(
                    "the job array is stepped (step {step}, as in --array=0-6:{step}), so its task ids are not shard indexes: submit a contiguous range such as --array=0-3, or run --shard K/N"
                ),
            ));
        }
    }
    let min = number(env, "SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
    let max = number(env, "SLURM_ARRAY_TASK_MAX")?;
    let count_env = number(env, "SLURM_ARRAY_TASK_COUNT")?;
    let below = || {
        InputError::new(
            "$SLURM_ARRAY_TASK_ID",
            format!("{id} is below SLURM_ARRAY_TASK_MIN {min}"),
        )
    };
    let contiguous = match (count_env, max) {
        (Some(c), Some(max)) => max.checked_sub(min).map(|d| d + 1) == Some(c),
        _ => true,
    };
    let gaps = || {
        InputError::new(
            "--shard auto",
            format!(
                "the job array has gaps (SLURM_ARRAY_TASK_MIN {min}, MAX {}, but COUNT {}), so its task ids are not shard indexes: submit a contiguous range such as --array=0-3, or pass --shards N",
                max.unwrap_or(0),
                count_env.unwrap_or(0)
            ),
        )
    };
    let plain = |count: u64| -> Result<Auto, InputError> {
        let index = id.checked_sub(min).ok_or_else(below)?;
        let mut shard = Shard::new(index, count, "$SLURM_ARRAY_TASK_ID")?;
        shard.array_first = Some(min);
        Ok(Auto {
            shard,
            notes: other_sets(sets, count, sweep),
        })
    };
    // The environment describes the whole array: trust it.
    if let Some(c) = count_env {
        let agrees = shards.is_none_or(|n| n == c);
        let on_disk = sets.is_empty() || sets.contains_key(&c) || sets.keys().all(|n| *n < c);
        if c == 1 && shards.is_none() && sets.is_empty() {
            return Err(InputError::new(
                "--shard auto",
                format!(
                    "SLURM_ARRAY_TASK_COUNT is 1: an array of one task is how one task of a sweep's array is rerun, but {sweep} holds no shard of this configuration to place it among (check --out and --seeds); pass --shards 1 to run the whole sweep as one shard, or --shard K/N"
                ),
            ));
        }
        if agrees && (shards.is_some() || on_disk) {
            if !contiguous {
                return Err(gaps());
            }
            return plain(c);
        }
    }
    // A partial rerun (fewer tasks than the sweep has shards), or --shards says otherwise.
    let count = match shards {
        Some(n) => n,
        None => {
            let c = count_env.ok_or_else(|| {
                InputError::new(
                    "--shard auto",
                    "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not: pass --shards N",
                )
            })?;
            let larger: Vec<u64> = sets.keys().copied().filter(|n| *n > c).collect();
            match larger[..] {
                [n] => n,
                _ => {
                    return Err(InputError::new(
                        "--shard auto",
                        format!(
                            "SLURM_ARRAY_TASK_COUNT is {c}, but {sweep} holds shard sets of {} of this sweep: pass --shards N to say which this task belongs to",
                            census::list(&larger)
                        ),
                    ))
                }
            }
        }
    };
    let set = sets.get(&count);
    let open = set.map_or_else(|| (0..count).collect(), Set::open);
    let Some(first) = set.and_then(Set::array_first) else {
        if count_env.is_none_or(|c| c == count) && contiguous {
            // --shards N agrees with the environment (or Slurm gave no count); no set of N
            // on disk to ask.
            return plain(count);
        }
        return Err(InputError::new(
            "--shard auto",
            format!(
                "SLURM_ARRAY_TASK_COUNT is {} but the sweep has {count} shards, so this is a rerun of part of the array, and no finished shard in {sweep} records the first task id of the original array, so task id {id} cannot be placed; {}",
                count_env.map_or("unset".to_string(), |c| c.to_string()),
                rerun_recipe(None, count, &open)
            ),
        ));
    };
    let index = id.checked_sub(first).ok_or_else(|| {
        InputError::new(
            "$SLURM_ARRAY_TASK_ID",
            format!("{id} is below {first}, the first task id of the array that ran {sweep}"),
        )
    })?;
    let mut shard = Shard::new(index, count, "$SLURM_ARRAY_TASK_ID")?;
    shard.array_first = Some(first);
    let mut notes = vec![format!(
        "SLURM_ARRAY_TASK_COUNT is {}, but {sweep} holds a sweep of {count} shards (not done: {}): this task is taken as a rerun of shard {shard}, its task id {id} less {first}, the first task id of the array that ran them; to start a new sweep of {c} shards instead, pass --shards {c} or another --out",
        count_env.map_or("unset".to_string(), |c| c.to_string()),
        if open.is_empty() { "none".to_string() } else { census::list(&open) },
        c = count_env.unwrap_or(1),
    )];
    notes.extend(other_sets(sets, count, sweep));
    Ok(Auto { shard, notes })
}

/// Notes naming the shard sets of other counts that `merge` will name and pass over.
fn other_sets(sets: &BTreeMap<u64, Set>, count: u64, sweep: &str) -> Vec<String> {
    sets.keys()
        .filter(|n| **n != count)
        .map(|n| {
            format!(
                "{sweep} also holds shard-*-of-{n}/ folders of this sweep; this run adds to the set of {count}, and merge names the others and passes over them"
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    fn at(index: u64, count: u64, first: Option<u64>) -> Shard {
        let mut s = Shard::new(index, count, "t").unwrap();
        s.array_first = first;
        s
    }

    #[test]
    fn a_kubernetes_indexed_job_gives_the_index_and_the_flag_or_variable_the_count() {
        let none = BTreeMap::new();
        let k8s = [("JOB_COMPLETION_INDEX", "3"), ("A2A_CHAOS_SHARDS", "8")];
        let got = decide(None, &none, "d", &env(&k8s)).unwrap();
        assert_eq!(got.shard, at(3, 8, None));
        let got = decide(Some(4), &none, "d", &env(&k8s)).unwrap();
        assert_eq!(got.shard, at(3, 4, None));
        assert!(decide(None, &none, "d", &env(&[("JOB_COMPLETION_INDEX", "3")])).is_err());
        let err = decide(Some(3), &none, "d", &env(&k8s)).unwrap_err();
        assert!(err.message.contains("out of range"), "{err}");
        assert!(decide(None, &none, "d", &env(&[])).is_err());
    }

    #[test]
    fn a_whole_slurm_array_gives_task_id_less_min_of_count() {
        let none = BTreeMap::new();
        let slurm = [
            ("SLURM_ARRAY_TASK_ID", "5"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_MAX", "8"),
            ("SLURM_ARRAY_TASK_COUNT", "8"),
            ("SLURM_ARRAY_TASK_STEP", "1"),
        ];
        let got = decide(None, &none, "d", &env(&slurm)).unwrap();
        assert_eq!(got.shard, at(4, 8, Some(1)));
        assert!(got.notes.is_empty());
    }

    #[test]
    fn stepped_and_gapped_arrays_are_refused() {
        let none = BTreeMap::new();
        let stepped = [
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_MAX", "6"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
            ("SLURM_ARRAY_TASK_STEP", "2"),
        ];
        let err = decide(None, &none, "d", &env(&stepped)).unwrap_err();
        assert!(err.message.contains("stepped"), "{err}");
        let gapped = [
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_MAX", "5"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ];
        let err = decide(None, &none, "d", &env(&gapped)).unwrap_err();
        assert!(err.message.contains("gaps"), "{err}");
    }

    #[test]
    fn a_one_task_rerun_without_a_recorded_first_task_id_is_refused_with_the_recipe() {
        let none = BTreeMap::new();
        let rerun = [
            ("SLURM_ARRAY_TASK_ID", "1"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_MAX", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "1"),
        ];
        // Nothing on disk: an array of one is not taken as the whole sweep.
        let err = decide(None, &none, "d", &env(&rerun)).unwrap_err();
        assert!(err.message.contains("--shards 1"), "{err}");
        // --shards 4 and nothing on disk: the task id cannot be placed.
        let err = decide(Some(4), &none, "d", &env(&rerun)).unwrap_err();
        assert!(err.message.contains("--shard K/4 --resume"), "{err}");
        assert!(err.message.contains("scontrol requeue"), "{err}");
    }
}
