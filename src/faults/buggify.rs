//! `buggify`: fault points inside the replica and store code, FoundationDB style.
//!
//! Rate: the probability that an enabled point fires each time the code passes it. Each run
//! enables each point with probability 1/2 (at least one), from the seed: an extra
//! 200-1500 ms between a turn's effect and its save, a phantom writer that makes a CAS save
//! conflict, a subscriber's event poll slowed by 1-3 s. Points are off again from the
//! liveness phase on. See [`crate::buggify`] for where the code passes them.
//!
//! The action: [`Buggify`] (`buggify = { point = "conflict-on-save", probability = 1.0 }`).

use std::fmt;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{step, ActionError, ActionKind, FaultKind, PlanInput, Scheduled, Target};

/// A BUGGIFY point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Point {
    /// The replica waits 200-1500 ms more between its effect and its save.
    DelayBeforeSave,
    /// The store lets a phantom writer bump the task's version just before a CAS save, so the
    /// save conflicts (the writer changes nothing else).
    ConflictOnSave,
    /// A subscriber's event poll takes 1-3 s longer.
    SlowEventPoll,
}

/// Every BUGGIFY point, in a fixed order.
pub const POINTS: &[Point] = &[
    Point::DelayBeforeSave,
    Point::ConflictOnSave,
    Point::SlowEventPoll,
];

impl Point {
    /// The name used in traces and counters.
    pub fn name(self) -> &'static str {
        match self {
            Point::DelayBeforeSave => "delay-before-save",
            Point::ConflictOnSave => "conflict-on-save",
            Point::SlowEventPoll => "slow-event-poll",
        }
    }

    /// The point named `name`.
    pub fn parse(name: &str) -> Option<Point> {
        POINTS.iter().copied().find(|p| p.name() == name)
    }
}

/// A `buggify` or `kill-at` step: a fault point and how often it fires (0 turns it off).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointStep {
    /// The point's name.
    pub point: String,
    /// The probability that it fires each time it is reached.
    pub probability: f64,
}

/// Set how often a BUGGIFY point fires (0 turns it off).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Buggify(pub Point, pub f64);

impl fmt::Display for Buggify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "buggify {} {:.3}", self.0.name(), self.1)
    }
}

impl ActionKind for Buggify {
    const STEP: Option<&'static str> = Some("buggify");

    fn from_step(value: &toml::Value) -> Result<Self, ActionError> {
        let s: PointStep = step::table(value)?;
        let point = Point::parse(&s.point).ok_or_else(|| {
            ActionError::Invalid(format!(
                "buggify point `{}` is unknown; points: {}",
                s.point,
                POINTS
                    .iter()
                    .map(|p| p.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        Ok(Buggify(point, s.probability))
    }

    fn to_step(&self) -> toml::Value {
        step::value_of(&PointStep {
            point: self.0.name().into(),
            probability: self.1,
        })
    }

    fn apply(&self, target: &mut dyn Target) {
        target.buggify(self.0, self.1);
    }

    fn validate(&self) -> Result<(), ActionError> {
        step::probability("buggify", self.1)
    }
}

/// The `buggify` fault.
pub struct BuggifyPoints;

impl FaultKind for BuggifyPoints {
    fn describe(&self) -> &'static str {
        "probability that an enabled code fault point fires (delay-before-save, conflict-on-save, slow-event-poll)"
    }

    fn rate(&self) -> super::Rate {
        super::Rate::Probability
    }

    fn plan(&self, rate: f64, _input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let mut enabled: Vec<_> = POINTS
            .iter()
            .copied()
            .filter(|_| rng.random_bool(0.5))
            .collect();
        if enabled.is_empty() {
            enabled.push(POINTS[rng.random_range(0..POINTS.len())]);
        }
        enabled
            .into_iter()
            .map(|point| Scheduled {
                at_ms: 0,
                action: Buggify(point, rate.min(1.0)).into(),
            })
            .collect()
    }
}
