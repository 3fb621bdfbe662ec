//! `latency`: a latency spike on one replica's link to the store.
//!
//! Rate: spikes per simulated second. Each raises the link's maximum latency to 50-300 ms
//! for 300-1000 ms, which widens the window between a read and the save based on it.
//!
//! The action: [`LinkLatency`] (`latency = { between = ["replica-0", "store"], max-ms =
//! 200 }`; without `max-ms` the link returns to normal). The simulation draws each
//! message's latency up to `max-ms`; a live run, on the links it carries
//! ([`super::live_link`]), delays every chunk both ways by `max-ms`, the worst case.

use std::fmt;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{
    arrivals, step, ActionError, ActionKind, FaultKind, PeriodChange, PlanInput, Scheduled, Target,
};
use crate::host::Host;

/// Highest link latency a step may ask for, simulated ms (an hour).
pub const MAX_MS_MAX: u64 = 3_600_000;

/// Set the maximum latency between two hosts (`None` restores the default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkLatency(pub Host, pub Host, pub Option<u64>);

impl fmt::Display for LinkLatency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.2 {
            Some(ms) => write!(f, "latency {} <-> {} up to {ms} ms", self.0, self.1),
            None => write!(f, "latency {} <-> {} back to normal", self.0, self.1),
        }
    }
}

/// The step's table.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct LatencyStep {
    between: [Host; 2],
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_ms: Option<u64>,
}

impl ActionKind for LinkLatency {
    const STEP: Option<&'static str> = Some("latency");

    fn from_step(value: &toml::Value) -> Result<Self, ActionError> {
        let s: LatencyStep = step::table(value)?;
        let [a, b] = s.between;
        Ok(LinkLatency(a, b, s.max_ms))
    }

    fn to_step(&self) -> toml::Value {
        step::value_of(&LatencyStep {
            between: [self.0.clone(), self.1.clone()],
            max_ms: self.2,
        })
    }

    fn apply(&self, target: &mut dyn Target) {
        target.link_latency(&self.0, &self.1, self.2);
    }

    fn link(&self) -> Option<(&Host, &Host)> {
        Some((&self.0, &self.1))
    }

    fn hosts(&self) -> Vec<&Host> {
        vec![&self.0, &self.1]
    }

    fn renamed(&self, rename: &dyn Fn(&Host) -> Host) -> Self {
        LinkLatency(rename(&self.0), rename(&self.1), self.2)
    }

    fn periods(&self) -> Vec<PeriodChange> {
        let link = format!("{}|{}", self.0, self.1);
        [&self.0, &self.1]
            .into_iter()
            .map(|h| {
                let (lane, kind, link) = (h.clone(), "latency", link.clone());
                match self.2 {
                    Some(_) => PeriodChange::Open { lane, kind, link },
                    None => PeriodChange::Close { lane, kind, link },
                }
            })
            .collect()
    }

    fn validate(&self) -> Result<(), ActionError> {
        match self.2 {
            Some(ms) if ms > MAX_MS_MAX => Err(ActionError::Invalid(format!(
                "latency max-ms = {ms} is more than {MAX_MS_MAX} ms"
            ))),
            _ => Ok(()),
        }
    }
}

/// The `latency` fault.
pub struct Latency;

impl FaultKind for Latency {
    fn describe(&self) -> &'static str {
        "replica<->store latency spikes per simulated second (50-300 ms for 300-1000 ms)"
    }

    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let mut out = Vec::new();
        for at_ms in arrivals(rate, input.window_ms, rng) {
            let host = Host::Replica(rng.random_range(0..input.replicas));
            let max_ms = rng.random_range(50..=300);
            let length_ms = rng.random_range(300..=1000);
            out.push(Scheduled {
                at_ms,
                action: LinkLatency(host.clone(), Host::Store, Some(max_ms)).into(),
            });
            out.push(Scheduled {
                at_ms: at_ms + length_ms,
                action: LinkLatency(host, Host::Store, None).into(),
            });
        }
        out
    }
}
