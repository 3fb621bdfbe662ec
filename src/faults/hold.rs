//! `hold`: messages between two hosts are held, then released all at once.
//!
//! Rate: holds per simulated second. Each picks two distinct hosts uniformly, holds every
//! message between them (turmoil's `hold`) for 100 to 1000 ms (its stability window), then
//! releases them, so a burst of stale requests and answers lands together: a late save after
//! a newer one, a retry that overtakes its original, an effect that arrives after a cancel.
//! Nothing is lost, which is what makes it different from a partition.
//!
//! The actions: [`Hold`] (`hold = ["replica-0", "store"]`) and [`Release`] (`release =
//! [...]`).

use std::fmt;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{
    arrivals, hosts, step, ActionError, ActionKind, FaultKind, PlanInput, Scheduled, Target,
};
use crate::host::Host;

/// Hold every message between two hosts until released.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold(pub Host, pub Host);

impl fmt::Display for Hold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hold {} <-> {}", self.0, self.1)
    }
}

impl ActionKind for Hold {
    const STEP: Option<&'static str> = Some("hold");

    fn from_step(value: &toml::Value) -> Result<Self, ActionError> {
        step::pair(value).map(|(a, b)| Hold(a, b))
    }

    fn to_step(&self) -> toml::Value {
        step::pair_value(&self.0, &self.1)
    }

    fn apply(&self, target: &mut dyn Target) {
        target.hold(&self.0, &self.1);
    }

    fn link(&self) -> Option<(&Host, &Host)> {
        Some((&self.0, &self.1))
    }

    fn hosts(&self) -> Vec<&Host> {
        vec![&self.0, &self.1]
    }

    fn renamed(&self, rename: &dyn Fn(&Host) -> Host) -> Self {
        Hold(rename(&self.0), rename(&self.1))
    }
}

/// Deliver the messages held between two hosts, and stop holding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release(pub Host, pub Host);

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "release {} <-> {}", self.0, self.1)
    }
}

impl ActionKind for Release {
    const STEP: Option<&'static str> = Some("release");

    fn from_step(value: &toml::Value) -> Result<Self, ActionError> {
        step::pair(value).map(|(a, b)| Release(a, b))
    }

    fn to_step(&self) -> toml::Value {
        step::pair_value(&self.0, &self.1)
    }

    fn apply(&self, target: &mut dyn Target) {
        target.release(&self.0, &self.1);
    }

    fn link(&self) -> Option<(&Host, &Host)> {
        Some((&self.0, &self.1))
    }

    fn hosts(&self) -> Vec<&Host> {
        vec![&self.0, &self.1]
    }

    fn renamed(&self, rename: &dyn Fn(&Host) -> Host) -> Self {
        Release(rename(&self.0), rename(&self.1))
    }
}

/// The `hold` fault.
pub struct HoldLinks;

impl FaultKind for HoldLinks {
    fn describe(&self) -> &'static str {
        "holds of the messages between any two hosts per simulated second, released after 100-1000 ms"
    }

    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let all = hosts(input.replicas);
        let mut out = Vec::new();
        for at_ms in arrivals(rate, input.window_ms, rng) {
            let (a, b) = super::pick_pair(&all, rng);
            let length_ms = rng.random_range(100..=1000);
            out.push(Scheduled {
                at_ms,
                action: Hold(a.clone(), b.clone()).into(),
            });
            out.push(Scheduled {
                at_ms: at_ms + length_ms,
                action: Release(a, b).into(),
            });
        }
        out
    }
}
