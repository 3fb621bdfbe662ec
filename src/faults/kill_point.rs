//! `kill-at-point`: a replica is killed at a chosen moment of its work.
//!
//! Rate: the probability that a replica reaching an armed point is killed there. Each run
//! arms each point with probability 2/3 (at least one): during a business effect (the
//! ledger call is on the wire), between the effect and the save, during a stream. A killed
//! replica restarts after 200 to 1000 ms, and no other point kill lands within 300 ms of
//! one (the stability window), so a run is not one long outage. See [`crate::buggify`] for
//! how a replica marks a point and [`crate::world`] for how the driver crashes it.
//!
//! The action: [`KillAt`] (`kill-at = { point = "after-effect", probability = 1.0 }`).

use std::fmt;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::buggify::PointStep;
use super::{step, ActionError, ActionKind, FaultKind, PlanInput, Scheduled, Target};

/// Shortest time between two point kills, simulated ms.
pub const STABILITY_MS: u64 = 300;

/// Down time of a replica killed at a point, simulated ms.
pub const DOWN_MS: (u64, u64) = (200, 1000);

/// A moment at which a replica may be killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum KillPoint {
    /// Its business effect is on the wire (the ledger call has begun).
    Effect,
    /// The effect is done and the result is not saved yet.
    AfterEffect,
    /// It is streaming events to a client (a streaming send or a resubscribe).
    Stream,
}

/// Every kill point, in a fixed order.
pub const KILL_POINTS: &[KillPoint] =
    &[KillPoint::Effect, KillPoint::AfterEffect, KillPoint::Stream];

impl KillPoint {
    /// The name used in traces and counters.
    pub fn name(self) -> &'static str {
        match self {
            KillPoint::Effect => "effect",
            KillPoint::AfterEffect => "after-effect",
            KillPoint::Stream => "stream",
        }
    }

    /// The point named `name`.
    pub fn parse(name: &str) -> Option<KillPoint> {
        KILL_POINTS.iter().copied().find(|p| p.name() == name)
    }

    /// How long after reaching the point the crash lands, drawn from `[0, max]` ms: long
    /// enough for an effect's request to be on the wire or at the ledger, short enough that
    /// the save after it has not happened.
    pub fn delay_ms_max(self) -> u64 {
        match self {
            KillPoint::Effect => 12,
            KillPoint::AfterEffect => 2,
            KillPoint::Stream => 50,
        }
    }
}

/// Arm a kill point with a probability (0 disarms it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KillAt(pub KillPoint, pub f64);

impl fmt::Display for KillAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kill-at {} {:.3}", self.0.name(), self.1)
    }
}

impl ActionKind for KillAt {
    const STEP: Option<&'static str> = Some("kill-at");

    fn from_step(value: &toml::Value) -> Result<Self, ActionError> {
        let s: PointStep = step::table(value)?;
        let point = KillPoint::parse(&s.point).ok_or_else(|| {
            ActionError::Invalid(format!(
                "kill-at point `{}` is unknown; points: {}",
                s.point,
                KILL_POINTS
                    .iter()
                    .map(|p| p.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        Ok(KillAt(point, s.probability))
    }

    fn to_step(&self) -> toml::Value {
        step::value_of(&PointStep {
            point: self.0.name().into(),
            probability: self.1,
        })
    }

    fn apply(&self, target: &mut dyn Target) {
        target.kill_at(self.0, self.1);
    }

    fn validate(&self) -> Result<(), ActionError> {
        step::probability("kill-at", self.1)
    }

    /// Live, the ledger kills a replica at the points it reports (`live::kill_points`):
    /// `effect` and `after-effect`; no report marks a stream.
    fn live(&self) -> Result<(), ActionError> {
        match self.0 {
            KillPoint::Effect | KillPoint::AfterEffect => Ok(()),
            KillPoint::Stream => Err(ActionError::NotLive(format!(
                "`{self}` is unsupported in live mode: no report of a real replica marks a stream (effect and after-effect can be made live)"
            ))),
        }
    }
}

/// The `kill-at-point` fault.
pub struct KillAtPoint;

impl FaultKind for KillAtPoint {
    fn describe(&self) -> &'static str {
        "probability that a replica is killed on reaching an armed point (effect, after-effect, stream); restarts after 200-1000 ms"
    }

    fn rate(&self) -> super::Rate {
        super::Rate::Probability
    }

    fn plan(&self, rate: f64, _input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let mut armed: Vec<_> = KILL_POINTS
            .iter()
            .copied()
            .filter(|_| rng.random_bool(2.0 / 3.0))
            .collect();
        if armed.is_empty() {
            armed.push(KILL_POINTS[rng.random_range(0..KILL_POINTS.len())]);
        }
        armed
            .into_iter()
            .map(|point| Scheduled {
                at_ms: 0,
                action: KillAt(point, rate.min(1.0)).into(),
            })
            .collect()
    }
}
