//! `partition`: a replica loses the store (both ways) for a while.
//!
//! Rate: partitions per simulated second; each lasts 200 to 800 ms. A replica cut from the
//! store still answers clients, which is exactly when stale reads and half-done turns
//! happen. In the simulation what is sent over a cut waits for the repair, as TCP's
//! retransmits deliver what a short partition caught: both ways turmoil holds the link, one
//! way the calls keep the cut themselves (`world::driver`, `net::oneway`; turmoil's own
//! partition drops what it catches and its TCP never resends, issue 42).
//!
//! The actions: [`Partition`] (`partition = ["replica-0", "store"]`, both ways),
//! [`PartitionOneway`] (`partition-oneway = [...]`, from the first host to the second) and
//! [`Repair`] (`repair = [...]`, one link back, both ways). Live, the links a run carries
//! through its own proxies ([`super::live_link`]) stop forwarding without closing a socket:
//! what was sent waits in the kernels' buffers, and TCP delivers it after the repair unless
//! an application's own timeout gave up first (`live::link`).

use std::fmt;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{
    arrivals, step, ActionError, ActionKind, FaultKind, PeriodChange, PlanInput, Scheduled, Target,
};
use crate::host::Host;

/// The two hosts of a link.
fn link_hosts<'a>(a: &'a Host, b: &'a Host) -> Vec<&'a Host> {
    vec![a, b]
}

/// A partition period opens on both hosts' lanes.
fn opens(a: &Host, b: &Host) -> Vec<PeriodChange> {
    let link = format!("{a}|{b}");
    [a, b]
        .into_iter()
        .map(|h| PeriodChange::Open {
            lane: h.clone(),
            kind: "partition",
            link: link.clone(),
        })
        .collect()
}

/// Drop all traffic between two hosts, both ways.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition(pub Host, pub Host);

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "partition {} <-> {}", self.0, self.1)
    }
}

impl ActionKind for Partition {
    const STEP: Option<&'static str> = Some("partition");

    fn from_step(value: &toml::Value) -> Result<Self, ActionError> {
        step::pair(value).map(|(a, b)| Partition(a, b))
    }

    fn to_step(&self) -> toml::Value {
        step::pair_value(&self.0, &self.1)
    }

    fn apply(&self, target: &mut dyn Target) {
        target.partition(&self.0, &self.1, false);
    }

    fn link(&self) -> Option<(&Host, &Host)> {
        Some((&self.0, &self.1))
    }

    fn hosts(&self) -> Vec<&Host> {
        link_hosts(&self.0, &self.1)
    }

    fn renamed(&self, rename: &dyn Fn(&Host) -> Host) -> Self {
        Partition(rename(&self.0), rename(&self.1))
    }

    fn periods(&self) -> Vec<PeriodChange> {
        opens(&self.0, &self.1)
    }
}

/// Drop traffic from the first host to the second only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionOneway(pub Host, pub Host);

impl fmt::Display for PartitionOneway {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "partition {} -> {}", self.0, self.1)
    }
}

impl ActionKind for PartitionOneway {
    const STEP: Option<&'static str> = Some("partition-oneway");

    fn from_step(value: &toml::Value) -> Result<Self, ActionError> {
        step::pair(value).map(|(a, b)| PartitionOneway(a, b))
    }

    fn to_step(&self) -> toml::Value {
        step::pair_value(&self.0, &self.1)
    }

    fn apply(&self, target: &mut dyn Target) {
        target.partition(&self.0, &self.1, true);
    }

    fn link(&self) -> Option<(&Host, &Host)> {
        Some((&self.0, &self.1))
    }

    fn hosts(&self) -> Vec<&Host> {
        link_hosts(&self.0, &self.1)
    }

    fn renamed(&self, rename: &dyn Fn(&Host) -> Host) -> Self {
        PartitionOneway(rename(&self.0), rename(&self.1))
    }

    fn periods(&self) -> Vec<PeriodChange> {
        opens(&self.0, &self.1)
    }
}

/// Restore traffic between two hosts, both ways.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repair(pub Host, pub Host);

impl fmt::Display for Repair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "repair {} <-> {}", self.0, self.1)
    }
}

impl ActionKind for Repair {
    const STEP: Option<&'static str> = Some("repair");

    fn from_step(value: &toml::Value) -> Result<Self, ActionError> {
        step::pair(value).map(|(a, b)| Repair(a, b))
    }

    fn to_step(&self) -> toml::Value {
        step::pair_value(&self.0, &self.1)
    }

    fn apply(&self, target: &mut dyn Target) {
        target.repair(&self.0, &self.1);
    }

    fn link(&self) -> Option<(&Host, &Host)> {
        Some((&self.0, &self.1))
    }

    fn hosts(&self) -> Vec<&Host> {
        link_hosts(&self.0, &self.1)
    }

    fn renamed(&self, rename: &dyn Fn(&Host) -> Host) -> Self {
        Repair(rename(&self.0), rename(&self.1))
    }

    fn periods(&self) -> Vec<PeriodChange> {
        let (a, b) = (&self.0, &self.1);
        let mut out = Vec::new();
        for link in [format!("{a}|{b}"), format!("{b}|{a}")] {
            for h in [a, b] {
                out.push(PeriodChange::Close {
                    lane: h.clone(),
                    kind: "partition",
                    link: link.clone(),
                });
            }
        }
        out
    }
}

/// The `partition` fault: replica↔store partitions, each repaired after a while.
pub struct ReplicaStorePartition;

impl FaultKind for ReplicaStorePartition {
    fn describe(&self) -> &'static str {
        "replica<->store partitions per simulated second; each lasts 200-800 ms"
    }

    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let mut out = Vec::new();
        for at_ms in arrivals(rate, input.window_ms, rng) {
            let host = Host::Replica(rng.random_range(0..input.replicas));
            let length_ms = rng.random_range(200..=800);
            out.push(Scheduled {
                at_ms,
                action: Partition(host.clone(), Host::Store).into(),
            });
            out.push(Scheduled {
                at_ms: at_ms + length_ms,
                action: Repair(host, Host::Store).into(),
            });
        }
        out
    }
}
