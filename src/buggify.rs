//! Fault points inside the code, in the spirit of FoundationDB's BUGGIFY.
//!
//! Two kinds of point, both off unless a fault turns them on:
//! - **BUGGIFY points** ([`Point`]) make the code itself misbehave where it is allowed to: an
//!   extra delay between a turn's effect and its save, a phantom writer that makes a CAS save
//!   conflict, a slow event poll. The `buggify` fault decides, per run and from the seed, which
//!   points are enabled and how often each fires.
//! - **Kill points** ([`KillPoint`]) mark that a replica has reached a moment worth dying
//!   at: during its business effect, between the effect and the save, during a stream. When
//!   the `kill-at-point` fault arms a point, reaching it queues a crash of that replica with
//!   the fault's probability; the driver carries it out at once or a few ms later (see
//!   [`crate::world`]).
//!
//! Every decision is drawn from one generator seeded by `derive_seed(seed, "buggify", 0)`, and
//! nothing is drawn while no point is on, so runs without these faults are unchanged. Each
//! firing is counted by name ([`Chaos::fired`]): the `sometimes` counters that show a point
//! was reached.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::faults::{KillPoint, Point};
use crate::host::Host;

/// The run's fault points: which are on, the generator, the crashes owed and the counters.
#[derive(Debug)]
pub struct Chaos {
    rng: ChaCha8Rng,
    buggify: BTreeMap<Point, f64>,
    kill_at: BTreeMap<KillPoint, f64>,
    kills: VecDeque<(Host, KillPoint)>,
    /// Where a kill's delay is drawn from instead of `rng`, when the run takes another draw
    /// of its faults' timing ([`Chaos::redraw_delays`]).
    delay_rng: Option<ChaCha8Rng>,
    /// How often each point fired (`buggify:conflict-on-save`, `kill-at:effect`, ...).
    pub fired: BTreeMap<String, u64>,
    /// Every firing in order: simulated ms on the host where it fired, and the point's name
    /// as [`Chaos::fired`] counts it. Kept out of the trace, so it changes no trace hash.
    pub firings: Vec<(u64, String)>,
    /// When the last slowed event poll ends, simulated ms (0: none fired).
    pub poll_slowed_until_ms: u64,
}

/// Shared handle to a run's fault points.
pub type SharedChaos = Rc<RefCell<Chaos>>;

impl Chaos {
    /// Every point off, with the run's generator.
    pub fn new(seed: u64) -> Chaos {
        Chaos {
            rng: ChaCha8Rng::seed_from_u64(crate::trace::derive_seed(seed, "buggify", 0)),
            buggify: BTreeMap::new(),
            kill_at: BTreeMap::new(),
            kills: VecDeque::new(),
            delay_rng: None,
            fired: BTreeMap::new(),
            firings: Vec::new(),
            poll_slowed_until_ms: 0,
        }
    }

    /// Draws each kill's delay from draw `draw` of `seed`'s stream of them, from here on;
    /// the points' own generator still advances as before, so everything else keeps its
    /// draws. Draw 0 is the points' own generator: no change.
    pub fn redraw_delays(&mut self, seed: u64, draw: u64) {
        self.delay_rng = crate::seed::redraw(seed, "kill-delays", draw);
    }

    /// A shared handle to [`Chaos::new`].
    pub fn shared(seed: u64) -> SharedChaos {
        Rc::new(RefCell::new(Chaos::new(seed)))
    }

    /// Sets how often a BUGGIFY point fires (0 turns it off).
    pub fn set_buggify(&mut self, point: Point, probability: f64) {
        if probability > 0.0 {
            self.buggify.insert(point, probability.min(1.0));
        } else {
            self.buggify.remove(&point);
        }
    }

    /// Arms a kill point with a probability (0 disarms it).
    pub fn set_kill_at(&mut self, point: KillPoint, probability: f64) {
        if probability > 0.0 {
            self.kill_at.insert(point, probability.min(1.0));
        } else {
            self.kill_at.remove(&point);
        }
    }

    /// Turns every point off and forgets crashes not carried out (the liveness phase).
    pub fn clear(&mut self) {
        self.buggify.clear();
        self.kill_at.clear();
        self.kills.clear();
    }

    /// Whether `point` fires now. Draws nothing when the point is off.
    pub fn buggify(&mut self, point: Point) -> bool {
        let Some(p) = self.buggify.get(&point).copied() else {
            return false;
        };
        let fires = self.rng.random_bool(p);
        if fires {
            self.count(format!("buggify:{}", point.name()));
        }
        fires
    }

    /// A duration in `[lo, hi]` ms from the points' generator (for a point that fired).
    pub fn draw_ms(&mut self, lo: u64, hi: u64) -> u64 {
        self.rng.random_range(lo..=hi)
    }

    /// `host` reached `point`: queues its crash when the point is armed and fires.
    pub fn reached(&mut self, host: impl Into<Host>, point: KillPoint) {
        let Some(p) = self.kill_at.get(&point).copied() else {
            return;
        };
        if self.rng.random_bool(p) {
            self.kills.push_back((host.into(), point));
            crate::engine::nudge();
        }
    }

    /// Crashes owed, oldest first, with the delay each should land after.
    pub fn take_kills(&mut self) -> Vec<(Host, KillPoint, u64)> {
        let owed: Vec<(Host, KillPoint)> = self.kills.drain(..).collect();
        owed.into_iter()
            .map(|(host, point)| {
                let drawn = self.rng.random_range(0..=point.delay_ms_max());
                let delay = match self.delay_rng.as_mut() {
                    Some(rng) => rng.random_range(0..=point.delay_ms_max()),
                    None => drawn,
                };
                (host, point, delay)
            })
            .collect()
    }

    /// Counts a crash carried out at a kill point.
    pub fn count_kill(&mut self, point: KillPoint) {
        self.count(format!("kill-at:{}", point.name()));
    }

    /// Counts one firing of `name` and notes when it happened.
    fn count(&mut self, name: String) {
        self.firings.push((crate::trace::now_ms(), name.clone()));
        *self.fired.entry(name).or_default() += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_that_are_off_never_fire_and_draw_nothing() {
        let mut a = Chaos::new(3);
        let mut b = Chaos::new(3);
        for _ in 0..100 {
            assert!(!a.buggify(Point::ConflictOnSave));
            a.reached(Host::Replica(0), KillPoint::Effect);
        }
        assert!(a.take_kills().is_empty());
        assert!(a.fired.is_empty());
        // Nothing was drawn: both generators are where they started.
        assert_eq!(a.draw_ms(0, 1_000_000), b.draw_ms(0, 1_000_000));
    }

    #[test]
    fn an_enabled_point_fires_about_as_often_as_asked_and_is_counted() {
        let mut c = Chaos::new(1);
        c.set_buggify(Point::DelayBeforeSave, 0.25);
        let fired = (0..4000)
            .filter(|_| c.buggify(Point::DelayBeforeSave))
            .count() as u64;
        assert!((800..1200).contains(&fired), "{fired}");
        assert_eq!(c.fired["buggify:delay-before-save"], fired);
        c.clear();
        assert!(!c.buggify(Point::DelayBeforeSave));
    }

    #[test]
    fn an_armed_kill_point_queues_crashes_with_a_bounded_delay() {
        let mut c = Chaos::new(2);
        c.set_kill_at(KillPoint::AfterEffect, 1.0);
        c.reached(Host::Replica(1), KillPoint::AfterEffect);
        c.reached(Host::Replica(2), KillPoint::Effect);
        let kills = c.take_kills();
        assert_eq!(kills.len(), 1);
        assert_eq!(kills[0].0, Host::Replica(1));
        assert!(kills[0].2 <= KillPoint::AfterEffect.delay_ms_max());
    }

    #[test]
    fn another_draw_moves_the_kills_delays_and_nothing_else() {
        let delays = |draw: u64| {
            let mut c = Chaos::new(5);
            c.redraw_delays(5, draw);
            c.set_kill_at(KillPoint::Effect, 1.0);
            let mut out = Vec::new();
            for i in 0..20 {
                c.reached(Host::Replica(i % 3), KillPoint::Effect);
                out.extend(c.take_kills().into_iter().map(|k| k.2));
            }
            (out, c.draw_ms(0, 1_000_000))
        };
        let (own, after) = delays(0);
        assert_eq!(delays(0), (own.clone(), after), "draw 0 is the seed's own");
        let (other, other_after) = delays(3);
        assert_ne!(own, other, "another draw, other delays");
        assert!(other.iter().all(|d| *d <= KillPoint::Effect.delay_ms_max()));
        // The points' own generator advanced as before.
        assert_eq!(after, other_after);
    }

    #[test]
    fn names_round_trip() {
        use crate::faults::buggify::POINTS;
        use crate::faults::kill_point::KILL_POINTS;
        for p in POINTS {
            assert_eq!(Point::parse(p.name()), Some(*p));
        }
        for k in KILL_POINTS {
            assert_eq!(KillPoint::parse(k.name()), Some(*k));
        }
    }
}
