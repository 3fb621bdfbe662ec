//! Shrinking a disagreement: the fewest top-level steps on which the simulation and the
//! real system still differ the same way.
//!
//! Delta debugging (Zeller's ddmin) over the script's top-level steps: try dropping each of
//! `n` chunks, keep any candidate that still disagrees, and split finer when none does. A
//! candidate is kept when its simulated run and one live run differ on at least one of the
//! observables the original disagreement named (so the shrink cannot slide to another
//! difference); every candidate re-runs both worlds. The result is confirmed with two live
//! runs; if it turns out unstable, the shrink gives back the original scenario.

use std::collections::BTreeSet;

use crate::error::InputError;
use crate::scenario::{Script, Step};

use super::{run_case, simulate, Live, Outcome, Status};

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
        tried.set(tried.get() + 1);
        let Ok(candidate) = Script::from_steps(&script.file, steps) else {
            return Ok(false);
        };
        let simulated = simulate(&candidate)?;
        let real = live.borrow_mut().observe(&candidate, 0)?;
        Ok(simulated
            .diff(&real, "simulated", "real")
            .iter()
            .any(|d| keys.contains(&d.what)))
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
