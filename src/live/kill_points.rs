//! `kill-at` on real processes: a replica is SIGKILLed at a point of its work that it
//! reports to the run's ledger (issue 38).
//!
//! The simulation kills a replica where its code marks a point ([`crate::buggify`]). A real
//! replica marks nothing, but it reports its business effect to the ledger and waits for
//! the answer, so the ledger knows two of the points while the replica stands still at them:
//! - `effect` (the effect's request is on the wire): the replica is killed as its report
//!   arrives, before the ledger applies it, so the effect does not happen (the simulation's
//!   crash lands within a few ms of the point, before or after the effect lands);
//! - `after-effect` (the effect is done, the result not saved): the ledger applies the
//!   effect, kills the replica, and never answers.
//!
//! `stream` is refused live: no report marks a stream. As in the simulation, a point fires
//! with its probability (drawn from the run's seed, in the order the points are reached),
//! no point kill lands within [`crate::faults::KILL_POINT_STABILITY_MS`] of the last one
//! unless a `kill-at` step armed a point since, and the replica restarts after a down time
//! drawn from [`crate::faults::kill_point::DOWN_MS`].

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::faults::KillPoint;
use crate::host::Host;

/// What kills a replica that reached a point: the pool's driver (`replica-N`, the point,
/// its down time in ms).
pub type Killer = Rc<dyn Fn(&Host, KillPoint, u64)>;

/// The armed points of the scenario being served, and how to kill.
pub struct Points {
    armed: BTreeMap<KillPoint, f64>,
    rng: ChaCha8Rng,
    /// No point kill before this run time (the stability window of the last one).
    next_ms: u64,
    killer: Option<Killer>,
    /// How often each point fired, by name (`kill-at:effect`).
    fired: BTreeMap<String, u64>,
}

impl Default for Points {
    fn default() -> Self {
        Points::new(0)
    }
}

/// The points of a live run, shared by its driver and its ledger.
pub type SharedPoints = Rc<RefCell<Points>>;

impl Points {
    /// Nothing armed; draws from `seed`.
    pub fn new(seed: u64) -> Points {
        Points {
            armed: BTreeMap::new(),
            rng: ChaCha8Rng::seed_from_u64(crate::seed::derive_seed(seed, "live-kill-points", 0)),
            next_ms: 0,
            killer: None,
            fired: BTreeMap::new(),
        }
    }

    /// Begins a scenario: nothing armed, draws from its seed, `killer` kills.
    pub fn begin(&mut self, seed: u64, killer: Killer) {
        *self = Points::new(seed);
        self.killer = Some(killer);
    }

    /// Arms `point` with `probability` (0 disarms it). Arming ends the stability window of
    /// an earlier point kill, as in the simulation (`world::driver`): the window keeps a
    /// point armed once from killing in a storm, and a point armed again by a later step is
    /// the scenario asking for that kill. The window is measured in each world's own time,
    /// so a kill it spared simulated could land live (Mastra seed 337 of generation 4).
    pub fn arm(&mut self, point: KillPoint, probability: f64) {
        if probability > 0.0 {
            self.next_ms = 0;
            self.armed.insert(point, probability.min(1.0));
        } else {
            self.armed.remove(&point);
        }
    }

    /// Disarms every point (`heal = "all"`).
    pub fn disarm_all(&mut self) {
        self.armed.clear();
    }

    /// How often each point fired in the scenario, by `kill-at:<point>`.
    pub fn fired(&self) -> BTreeMap<String, u64> {
        self.fired.clone()
    }

    /// `replica` reached `point` at run time `now_ms`: whether it is killed there. When it
    /// is, the killer has killed it before this returns.
    pub fn reached(points: &SharedPoints, replica: &Host, point: KillPoint, now_ms: u64) -> bool {
        let (killer, down) = {
            let mut p = points.borrow_mut();
            let Some(&probability) = p.armed.get(&point) else {
                return false;
            };
            if now_ms < p.next_ms || !p.rng.random_bool(probability) {
                return false;
            }
            let (lo, hi) = crate::faults::kill_point::DOWN_MS;
            let down = p.rng.random_range(lo..=hi);
            p.next_ms = now_ms + crate::faults::KILL_POINT_STABILITY_MS;
            *p.fired
                .entry(format!("kill-at:{}", point.name()))
                .or_default() += 1;
            (p.killer.clone(), down)
        };
        match killer {
            Some(kill) => {
                kill(replica, point, down);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn counting() -> (SharedPoints, Rc<Cell<u32>>) {
        let kills = Rc::new(Cell::new(0));
        let k = kills.clone();
        let points: SharedPoints = Rc::default();
        points
            .borrow_mut()
            .begin(7, Rc::new(move |_, _, _| k.set(k.get() + 1)));
        (points, kills)
    }

    /// Whether replica `replica` is killed on reaching `point` at run time `at_ms`.
    fn reaches(points: &SharedPoints, replica: usize, point: KillPoint, at_ms: u64) -> bool {
        Points::reached(points, &Host::Replica(replica), point, at_ms)
    }

    #[test]
    fn an_unarmed_point_never_kills() {
        let (points, kills) = counting();
        assert!(!reaches(&points, 0, KillPoint::Effect, 10));
        assert_eq!(kills.get(), 0);
    }

    #[test]
    fn an_armed_point_kills_once_per_stability_window() {
        let (points, kills) = counting();
        points.borrow_mut().arm(KillPoint::AfterEffect, 1.0);
        assert!(reaches(&points, 0, KillPoint::AfterEffect, 10));
        assert!(!reaches(&points, 1, KillPoint::AfterEffect, 20));
        let later = 10 + crate::faults::KILL_POINT_STABILITY_MS;
        assert!(reaches(&points, 1, KillPoint::AfterEffect, later));
        assert_eq!(kills.get(), 2);
        assert_eq!(points.borrow().fired()["kill-at:after-effect"], 2);
        points.borrow_mut().disarm_all();
        assert!(!reaches(&points, 0, KillPoint::AfterEffect, 10_000));
    }

    #[test]
    fn a_point_armed_again_kills_inside_the_window() {
        let (points, kills) = counting();
        points.borrow_mut().arm(KillPoint::AfterEffect, 1.0);
        assert!(reaches(&points, 0, KillPoint::AfterEffect, 10));
        // A later step arms a point: the window of the first kill spares nobody.
        points.borrow_mut().arm(KillPoint::AfterEffect, 0.0);
        points.borrow_mut().arm(KillPoint::Effect, 1.0);
        assert!(reaches(&points, 0, KillPoint::Effect, 20));
        assert_eq!(kills.get(), 2);
    }
}
