//! The fallback when no layout of the converted run reproduces: shrink the experiment's
//! generated workload (conversations, turns, fault kinds, replicas) while the seed still
//! violates the invariant, then convert again.

use crate::check::{self, Verdict};
use crate::experiment::Experiment;
use crate::model::Profile;
use crate::sim::Sim;
use crate::world::RunRecord;

/// Runs one seed of an experiment with its trace kept.
pub(super) fn run_experiment(
    exp: &Experiment,
    profile: &Profile,
    routing: &str,
    seed: u64,
) -> RunRecord {
    Sim::experiment_builder(exp, profile, routing, seed)
        .keep_trace(true)
        .build()
        .expect("a run of a validated experiment builds")
        .run()
}

/// Shrinks the experiment's generated workload while the seed still violates `invariant`.
pub(super) fn reduce_experiment(
    exp: &Experiment,
    profile: &Profile,
    routing: &str,
    seed: u64,
    invariant: crate::check::Invariant,
    runs: &mut usize,
    notes: &mut Vec<String>,
) -> Experiment {
    let mut exp = exp.clone();
    let still = |e: &Experiment, runs: &mut usize| {
        *runs += 1;
        let Ok(sim) = Sim::from_experiment(e, profile, routing, seed) else {
            return false;
        };
        let r = sim.run();
        r.error.is_none()
            && check::check_all(&r)
                .iter()
                .any(|f| f.invariant == invariant && f.verdict() == Verdict::Fail)
    };
    let mut tried = |exp: &mut Experiment,
                     change: &dyn Fn(&mut Experiment) -> bool,
                     what: String,
                     runs: &mut usize| {
        let mut candidate = exp.clone();
        if change(&mut candidate) && still(&candidate, runs) {
            notes.push(what);
            *exp = candidate;
            true
        } else {
            false
        }
    };
    loop {
        let c = exp.file.workload.conversations;
        if c <= 1
            || !tried(
                &mut exp,
                &|e| {
                    e.file.workload.conversations = (c / 2).max(1);
                    true
                },
                format!("workload: {c} -> {} conversations", (c / 2).max(1)),
                runs,
            )
        {
            break;
        }
    }
    loop {
        let t = exp.file.workload.turns;
        if t <= 1
            || !tried(
                &mut exp,
                &|e| {
                    e.file.workload.turns = t - 1;
                    true
                },
                format!("workload: {t} -> {} turns", t - 1),
                runs,
            )
        {
            break;
        }
    }
    let kinds: Vec<String> = exp.file.faults.rates.keys().cloned().collect();
    for kind in kinds {
        tried(
            &mut exp,
            &|e| match e.file.faults.rates.get_mut(&kind) {
                Some(r) if *r > 0.0 => {
                    *r = 0.0;
                    true
                }
                _ => false,
            },
            format!("faults: no {kind}"),
            runs,
        );
    }
    loop {
        let r = exp.file.replicas;
        if r <= 1
            || !tried(
                &mut exp,
                &|e| {
                    e.file.replicas = r - 1;
                    true
                },
                format!("replicas: {r} -> {}", r - 1),
                runs,
            )
        {
            break;
        }
    }
    exp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shrink::{convert, target};

    #[test]
    fn the_fallback_shrinks_the_generated_workload_while_the_seed_still_fails() {
        let exp = Experiment::parse(
            include_str!("../../tests/experiments/classic-swarm.toml"),
            "classic-swarm.toml",
            None,
        )
        .unwrap();
        let profile = Profile::load("a2a-python-1.3-memory").unwrap();
        let (mut runs, mut notes) = (0, Vec::new());
        let reduced = reduce_experiment(
            &exp,
            &profile,
            "round-robin",
            15,
            crate::check::Invariant::NO_LOST_WRITES,
            &mut runs,
            &mut notes,
        );
        let w = &reduced.file.workload;
        assert!(
            w.conversations < exp.file.workload.conversations || w.turns < exp.file.workload.turns,
            "{notes:?}"
        );
        assert!(!notes.is_empty());
        let record = run_experiment(&reduced, &profile, "round-robin", 15);
        let (invariant, _) =
            target(&record, Some(crate::check::Invariant::NO_LOST_WRITES)).unwrap();
        assert_eq!(invariant, "no-lost-writes");
        // Its conversion is much smaller than the original run's.
        assert!(convert(&record).events.len() < 20, "{notes:?}");
    }
}
