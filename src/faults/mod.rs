//! Faults: what the driver does to the cluster, when, drawn from the seed.
//!
//! A fault plans [`Scheduled`] actions inside the fault window from its rate and the run's
//! generator. With swarm testing on (the default), each seed first draws its own fault mix:
//! every fault is kept with probability 3/4 and its rate scaled by a factor in [0.25, 1.75],
//! so some seeds run with no kills and many partitions, others the reverse (TigerBeetle's
//! VOPR does the same). The resolved mix is printed with the seed.
//!
//! Each fault has a probability or rate and a stability window (how long what it breaks
//! stays broken); its file says both. After the window the driver heals everything, turns
//! every rate and fault point off, and restarts what is down (the liveness phase,
//! [`heal_all`]).
//!
//! Adding a fault is one file in this folder plus one line in [`FAULTS`].

mod buggify;
mod card;
mod hold;
mod kill;
mod kill_point;
mod kill_router;
mod kill_store;
mod latency;
mod link_partition;
mod lost_reply;
mod partition;

use std::collections::BTreeMap;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::buggify::{KillPoint, Point};
use crate::error::InputError;

pub use kill_point::{DOWN_MS as KILL_POINT_DOWN_MS, STABILITY_MS as KILL_POINT_STABILITY_MS};

/// One thing the driver does to the cluster.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Crash a host (`replica-1`, `store`, `router`, ...).
    Kill(String),
    /// Restart a crashed host (its software starts again from scratch).
    Restart(String),
    /// Drop all traffic between two hosts, both ways.
    Partition(String, String),
    /// Drop traffic from the first host to the second only.
    PartitionOneway(String, String),
    /// Restore traffic between two hosts.
    Repair(String, String),
    /// Restore every link and restart every crashed host.
    HealAll,
    /// Set the probability that the router loses a reply.
    LostReplyRate(f64),
    /// Lose the next reply the router forwards.
    DropNextReply,
    /// Set the maximum latency between two hosts (`None` restores the default).
    LinkLatency(String, String, Option<u64>),
    /// Hold every message between two hosts until released.
    Hold(String, String),
    /// Deliver the messages held between two hosts, and stop holding.
    Release(String, String),
    /// Set how often a BUGGIFY point fires (0 turns it off).
    Buggify(Point, f64),
    /// Arm a kill point with a probability (0 disarms it).
    KillAt(KillPoint, f64),
    /// Change the agent card the router serves (runs that simulate the card).
    Card(crate::card::CardChange),
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Action::Kill(h) => write!(f, "kill {h}"),
            Action::Restart(h) => write!(f, "restart {h}"),
            Action::Partition(a, b) => write!(f, "partition {a} <-> {b}"),
            Action::PartitionOneway(a, b) => write!(f, "partition {a} -> {b}"),
            Action::Repair(a, b) => write!(f, "repair {a} <-> {b}"),
            Action::HealAll => write!(f, "heal all"),
            Action::LostReplyRate(p) => write!(f, "lost-reply rate {p:.3}"),
            Action::DropNextReply => write!(f, "drop next reply"),
            Action::LinkLatency(a, b, Some(ms)) => write!(f, "latency {a} <-> {b} up to {ms} ms"),
            Action::LinkLatency(a, b, None) => write!(f, "latency {a} <-> {b} back to normal"),
            Action::Hold(a, b) => write!(f, "hold {a} <-> {b}"),
            Action::Release(a, b) => write!(f, "release {a} <-> {b}"),
            Action::Buggify(p, rate) => write!(f, "buggify {} {rate:.3}", p.name()),
            Action::KillAt(p, rate) => write!(f, "kill-at {} {rate:.3}", p.name()),
            Action::Card(c) => write!(f, "card {c}"),
        }
    }
}

/// An action at a simulated time.
#[derive(Debug, Clone, PartialEq)]
pub struct Scheduled {
    pub at_ms: u64,
    pub action: Action,
}

/// What a fault may know when it plans.
pub struct PlanInput {
    pub replicas: usize,
    pub window_ms: u64,
}

/// A kind of fault.
pub trait Fault {
    /// What the rate means, for `a2a-chaos list`.
    fn describe(&self) -> &'static str;
    /// Plans this fault's actions for one run.
    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled>;
}

/// The faults, by the name used in experiment files.
#[rustfmt::skip]
pub const FAULTS: &[(&str, &dyn Fault)] = &[
    ("kill", &kill::Kill),
    ("partition", &partition::Partition),
    ("lost-reply", &lost_reply::LostReply),
    ("latency", &latency::Latency),
    ("kill-store", &kill_store::KillStore),
    ("kill-router", &kill_router::KillRouter),
    ("link-partition", &link_partition::LinkPartition),
    ("hold", &hold::Hold),
    ("kill-at-point", &kill_point::KillPoint),
    ("buggify", &buggify::Buggify),
    ("card-move", &card::CardMove),
    ("card-no-streaming", &card::CardNoStreaming),
    ("card-key-revoked", &card::CardKeyRevoked),
    ("card-tampered", &card::CardTampered),
    ("card-foreign-origin", &card::CardForeignOrigin),
];

/// Whether any of these fault names changes the agent card (the run then simulates it).
pub fn any_card_fault<'a>(names: impl IntoIterator<Item = &'a String>) -> bool {
    names.into_iter().any(|n| n.starts_with("card-"))
}

/// Names of the faults.
pub fn names() -> Vec<&'static str> {
    FAULTS.iter().map(|(n, _)| *n).collect()
}

/// Longest fault window or liveness phase, in simulated ms (one hour).
pub const PHASE_MS_MAX: u64 = 3_600_000;

/// The `[faults]` table of an experiment.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub struct FaultSpec {
    /// Each seed draws its own mix of the faults below.
    #[serde(default = "yes")]
    pub swarm: bool,
    /// Faults are injected from 0 to this many simulated ms.
    #[serde(default = "default_window")]
    pub window_ms: u64,
    /// After the window everything is healed; every task that is not waiting for input must
    /// settle within this many simulated ms.
    #[serde(default = "default_liveness")]
    pub liveness_ms: u64,
    /// Rates by fault name (see [`FAULTS`]).
    #[serde(flatten)]
    pub rates: BTreeMap<String, f64>,
}

fn yes() -> bool {
    true
}
fn default_window() -> u64 {
    3000
}
fn default_liveness() -> u64 {
    4000
}

impl Default for FaultSpec {
    fn default() -> Self {
        FaultSpec {
            swarm: true,
            window_ms: default_window(),
            liveness_ms: default_liveness(),
            rates: BTreeMap::new(),
        }
    }
}

impl FaultSpec {
    /// Refuses unknown fault names, rates that are not finite and non-negative, and windows
    /// longer than [`PHASE_MS_MAX`].
    pub fn validate(&self, origin: &str) -> Result<(), InputError> {
        for (key, ms) in [
            ("window-ms", self.window_ms),
            ("liveness-ms", self.liveness_ms),
        ] {
            if ms > PHASE_MS_MAX {
                return Err(InputError::new(
                    origin,
                    format!(
                        "[faults] {key} = {ms} must be at most {PHASE_MS_MAX} (one simulated hour)"
                    ),
                ));
            }
        }
        for (name, rate) in &self.rates {
            if !FAULTS.iter().any(|(n, _)| n == name) {
                return Err(InputError::new(
                    origin,
                    format!(
                        "[faults] has unknown key `{name}`; faults: {}",
                        names().join(", ")
                    ),
                ));
            }
            if !rate.is_finite() || *rate < 0.0 {
                return Err(InputError::new(
                    origin,
                    format!("[faults] {name} = {rate} must be a number >= 0"),
                ));
            }
        }
        Ok(())
    }

    /// The rates this seed runs with: swarm-drawn, or as written.
    pub fn resolve(&self, rng: &mut ChaCha8Rng) -> BTreeMap<String, f64> {
        self.rates
            .iter()
            .map(|(name, rate)| {
                let rate = if self.swarm {
                    let keep = rng.random_bool(0.75);
                    let scale: f64 = rng.random_range(0.25..=1.75);
                    if keep {
                        rate * scale
                    } else {
                        0.0
                    }
                } else {
                    *rate
                };
                (name.clone(), rate)
            })
            .collect()
    }

    /// Plans every fault for one run, in time order.
    pub fn plan(
        &self,
        rates: &BTreeMap<String, f64>,
        input: &PlanInput,
        rng: &mut ChaCha8Rng,
    ) -> Vec<Scheduled> {
        let mut out = Vec::new();
        for (name, fault) in FAULTS {
            if let Some(rate) = rates.get(*name).filter(|r| **r > 0.0) {
                out.extend(fault.plan(*rate, input, rng));
            }
        }
        out.push(heal_all(self.window_ms));
        out.sort_by_key(|s| s.at_ms);
        out
    }
}

/// The start of the liveness phase.
pub fn heal_all(at_ms: u64) -> Scheduled {
    Scheduled {
        at_ms,
        action: Action::HealAll,
    }
}

/// Every host of a run with `replicas` replicas, in a fixed order.
pub fn hosts(replicas: usize) -> Vec<String> {
    let mut out = vec!["client".to_string(), "router".to_string()];
    out.extend((0..replicas).map(|i| format!("replica-{i}")));
    out.extend(["store", "ledger", "webhook"].map(String::from));
    out
}

/// Two distinct hosts drawn uniformly from `hosts` (at least two of them).
pub fn pick_pair(hosts: &[String], rng: &mut ChaCha8Rng) -> (String, String) {
    let a = rng.random_range(0..hosts.len());
    let mut b = rng.random_range(0..hosts.len() - 1);
    if b >= a {
        b += 1;
    }
    (hosts[a].clone(), hosts[b].clone())
}

/// Kills of one host at `rate` per second, each followed by a restart after a down time
/// drawn from `down_ms` (inclusive).
pub fn kill_and_restart(
    host: &str,
    rate: f64,
    input: &PlanInput,
    rng: &mut ChaCha8Rng,
    down_ms: (u64, u64),
) -> Vec<Scheduled> {
    let mut out = Vec::new();
    for at_ms in arrivals(rate, input.window_ms, rng) {
        let down = rng.random_range(down_ms.0..=down_ms.1);
        out.push(Scheduled {
            at_ms,
            action: Action::Kill(host.to_string()),
        });
        out.push(Scheduled {
            at_ms: at_ms + down,
            action: Action::Restart(host.to_string()),
        });
    }
    out
}

/// Start times of a Poisson process with `rate_per_s` events per second inside the window.
pub fn arrivals(rate_per_s: f64, window_ms: u64, rng: &mut ChaCha8Rng) -> Vec<u64> {
    let mut out = Vec::new();
    if rate_per_s <= 0.0 {
        return out;
    }
    let mut t = 0.0f64;
    loop {
        let u: f64 = rng.random_range(f64::EPSILON..1.0);
        t += -u.ln() / rate_per_s * 1000.0;
        if t >= window_ms as f64 || out.len() >= 1000 {
            return out;
        }
        out.push(t as u64);
    }
}
