//! Shrinking a disagreement: the fewest top-level steps on which the simulation and the
//! real system still differ the same way.
//!
//! Delta debugging (Zeller's ddmin) over the script's top-level steps: try dropping each of
//! `n` chunks, keep any candidate that still disagrees, and split finer when none does. A
//! candidate is kept when its simulated run and one live run differ on at least one of the
//! observables the original disagreement named (so the shrink cannot slide to another
//! difference); every candidate re-runs both worlds. A candidate that drops the
//! `hold-effect` of an effect it still awaits is not tried: without the hold the order it
//! fixed is left to real time. The result is confirmed with two live runs; if it turns out
//! unstable, the shrink gives back the original scenario.

use std::collections::BTreeSet;

use crate::error::InputError;
use crate::scenario::{EffectGate, Script, Step};

use super::{closest, run_case, simulate_orders, Live, Outcome, Status};

/// The most candidates one shrink runs (each costs a live run).
pub const CANDIDATES_MAX: usize = 40;

/// A shrunk disagreement.
#[derive(Debug, Clone)]
pub struct Shrunk {
    pub script: Script,
    /// The minimal scenario's comparison (two live runs).
    pub outcome: Outcome,
    /// Candidates tried.
    pub tried: usize,
}

/// Shrinks `script`, whose comparison found `differences`; `progress` hears of every kept
/// candidate.
pub fn shrink(
    script: &Script,
    live: &mut Live,
    original: &Outcome,
    progress: &mut dyn FnMut(&str),
) -> Result<Shrunk, InputError> {
    let keys: BTreeSet<String> = original
        .status
        .differences()
        .iter()
        .map(|d| d.what.clone())
        .collect();
    // Every candidate re-runs the original's seed: fresh replicas each time.
    let live = std::cell::RefCell::new(live.fresh_twin());
    let tried = std::cell::Cell::new(0usize);
    let still_differs = |steps: &[Step]| -> Result<bool, InputError> {
        if !holds_kept(steps) {
            return Ok(false);
        }
        tried.set(tried.get() + 1);
        let Ok(candidate) = Script::from_steps(&script.file, steps) else {
            return Ok(false);
        };
        let orders = simulate_orders(&candidate)?;
        let real = live.borrow_mut().observe(&candidate, 0)?;
        // Still differs when even the simulated order closest to the live run does.
        let (_, differ) = closest(&orders, &real);
        Ok(differ.iter().any(|d| keys.contains(&d.what)))
    };
    let mut steps = script.steps.clone();
    let mut n = 2usize;
    'outer: while steps.len() >= 2 && tried.get() < CANDIDATES_MAX {
        let chunk = steps.len().div_ceil(n);
        for start in (0..steps.len()).step_by(chunk) {
            if tried.get() >= CANDIDATES_MAX {
                break 'outer;
            }
            let mut candidate = steps.clone();
            candidate.drain(start..(start + chunk).min(steps.len()));
            if candidate.is_empty() {
                continue;
            }
            if still_differs(&candidate)? {
                steps = candidate;
                progress(&format!("{} steps still disagree", Step::count(&steps)));
                n = (n - 1).max(2);
                continue 'outer;
            }
        }
        if chunk == 1 {
            break;
        }
        n = (n * 2).min(steps.len());
    }
    let minimal = Script::from_steps(&script.file, &steps)?;
    let outcome = run_case(&minimal, &mut live.borrow_mut(), 2)?;
    if matches!(outcome.status, Status::Disagree(_)) {
        Ok(Shrunk {
            script: minimal,
            outcome,
            tried: tried.get(),
        })
    } else {
        progress("the shrunk scenario did not disagree twice over: keeping the original");
        Ok(Shrunk {
            script: script.clone(),
            outcome: original.clone(),
            tried: tried.get(),
        })
    }
}

/// Whether every effect `steps` await or release is held by one of them: a candidate
/// without the hold would leave the interleaving it fixed to real time.
fn holds_kept(steps: &[Step]) -> bool {
    fn gates(steps: &[Step], out: &mut Vec<(EffectGate, String, u32)>) {
        for step in steps {
            match step {
                Step::Concurrent(v) | Step::Sequence(v) => gates(v, out),
                Step::Effect(gate, t) => out.push((*gate, t.conversation.clone(), t.turn)),
                _ => {}
            }
        }
    }
    let mut all = Vec::new();
    gates(steps, &mut all);
    all.iter()
        .filter(|(gate, _, _)| *gate != EffectGate::Hold)
        .all(|(_, c, t)| {
            all.iter()
                .any(|(gate, c2, t2)| *gate == EffectGate::Hold && c2 == c && t2 == t)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(body: &str) -> Vec<Step> {
        let text = format!("name = \"t\"\nmodel = \"a2a-python-1.3-plain\"\n{body}");
        Script::parse(&text, "test").expect("parses").steps
    }

    #[test]
    fn a_candidate_that_drops_the_hold_of_an_awaited_effect_is_not_tried() {
        let held = steps(
            r#"
[[step]]
send = { conversation = "c1", turn = 1 }
[[step]]
hold-effect = { conversation = "c1", turn = 2 }
[[step]]
concurrent = [
  { send = { conversation = "c1", turn = 2 } },
  { sequence = [{ await-effect = { conversation = "c1", turn = 2 } }, { cancel = { conversation = "c1" } }, { release-effect = { conversation = "c1", turn = 2 } }] },
]
"#,
        );
        assert!(holds_kept(&held));
        let mut without_hold = held.clone();
        without_hold.remove(1);
        assert!(!holds_kept(&without_hold));
        // Dropping the whole interleaving (the await with it) is a fair candidate.
        assert!(holds_kept(&held[..1]));
    }
}
