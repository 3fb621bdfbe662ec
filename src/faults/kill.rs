//! `kill`: a replica pod dies (SIGKILL: memory gone, in-flight requests lost) and restarts.
//!
//! Rate: kills per simulated second. Each kill picks a replica uniformly and restarts it
//! after 200 to 1000 ms (choice: about the time a Kubernetes pod takes to be replaced on a
//! warm node, scaled to the short runs here).
//!
//! The actions: [`Kill`] (`kill = "replica-1"`) crashes any host but the client, and
//! [`Restart`] (`restart = "replica-1"`) starts it again. A live run kills a replica with
//! SIGKILL and restarts its process; `kill = "store"` SIGKILLs every process of the run's
//! own PostgreSQL server and `restart = "store"` starts it again on its data, which it
//! recovers from its log (`live::postgres`).

use std::fmt;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{
    arrivals, step, ActionError, ActionKind, FaultKind, PeriodChange, PlanInput, Scheduled, Target,
};
use crate::host::Host;

/// Crash a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kill(pub Host);

impl fmt::Display for Kill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kill {}", self.0)
    }
}

impl ActionKind for Kill {
    const STEP: Option<&'static str> = Some("kill");

    fn from_step(value: &toml::Value) -> Result<Self, ActionError> {
        step::host(value).map(Kill)
    }

    fn to_step(&self) -> toml::Value {
        step::host_value(&self.0)
    }

    fn apply(&self, target: &mut dyn Target) {
        target.crash(&self.0);
    }

    fn hosts(&self) -> Vec<&Host> {
        vec![&self.0]
    }

    fn renamed(&self, rename: &dyn Fn(&Host) -> Host) -> Self {
        Kill(rename(&self.0))
    }

    fn periods(&self) -> Vec<PeriodChange> {
        vec![PeriodChange::Open {
            lane: self.0.clone(),
            kind: "down",
            link: String::new(),
        }]
    }

    fn validate(&self) -> Result<(), ActionError> {
        if self.0 == Host::Client {
            return Err(ActionError::Invalid(
                "the client cannot be killed: it runs the script".into(),
            ));
        }
        Ok(())
    }

    fn live(&self) -> Result<(), ActionError> {
        live_replica(&self.to_string(), &self.0)
    }
}

/// Start a crashed host again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restart(pub Host);

impl fmt::Display for Restart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "restart {}", self.0)
    }
}

impl ActionKind for Restart {
    const STEP: Option<&'static str> = Some("restart");

    fn from_step(value: &toml::Value) -> Result<Self, ActionError> {
        step::host(value).map(Restart)
    }

    fn to_step(&self) -> toml::Value {
        step::host_value(&self.0)
    }

    fn apply(&self, target: &mut dyn Target) {
        target.restart(&self.0);
    }

    fn hosts(&self) -> Vec<&Host> {
        vec![&self.0]
    }

    fn renamed(&self, rename: &dyn Fn(&Host) -> Host) -> Self {
        Restart(rename(&self.0))
    }

    fn periods(&self) -> Vec<PeriodChange> {
        vec![PeriodChange::Close {
            lane: self.0.clone(),
            kind: "down",
            link: String::new(),
        }]
    }

    fn live(&self) -> Result<(), ActionError> {
        live_replica(&self.to_string(), &self.0)
    }
}

/// A live run kills and restarts replica processes (SIGKILL) and the store (its own
/// PostgreSQL server: SIGKILL to every process of it, then a restart that recovers).
fn live_replica(what: &str, host: &Host) -> Result<(), ActionError> {
    if host.is_replica() || *host == Host::Store {
        Ok(())
    } else {
        Err(ActionError::NotLive(format!(
            "`{what}` is unsupported in live mode: only replica processes and the store (the run's own PostgreSQL server) can be killed and restarted"
        )))
    }
}

/// The `kill` fault: replica kills, each followed by a restart.
pub struct KillReplicas;

impl FaultKind for KillReplicas {
    fn describe(&self) -> &'static str {
        "replica kills per simulated second; each restarts after 200-1000 ms"
    }

    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let mut out = Vec::new();
        for at_ms in arrivals(rate, input.window_ms, rng) {
            let host = Host::Replica(rng.random_range(0..input.replicas));
            let down_ms = rng.random_range(200..=1000);
            out.push(Scheduled {
                at_ms,
                action: Kill(host.clone()).into(),
            });
            out.push(Scheduled {
                at_ms: at_ms + down_ms,
                action: Restart(host).into(),
            });
        }
        out
    }
}
