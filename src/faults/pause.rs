//! `pause`: a replica freezes (a stalled pod, a long garbage-collection pause, a VM
//! migration) and later goes on from where it stopped, its memory intact.
//!
//! The actions: [`Pause`] (`pause = "replica-1"`) and [`Resume`] (`resume = "replica-1"`).
//! Live, a pause is SIGSTOP and a resume SIGCONT: the process runs nothing, its sockets stay
//! open, the kernel keeps accepting and buffering what peers send it, and on SIGCONT it
//! finds everything at once, its timers past due. The simulation has no frozen host
//! (turmoil steps every running host), so there a pause holds every link of the host both
//! ways until the resume: nothing reaches it or leaves it, and what waited arrives at once.
//! The difference: a paused simulated host's own timers still fire during the pause (a
//! store call may time out inside it), where a stopped process's fire only when it
//! continues. Both keep the host's memory, which is what makes a pause different from a
//! kill; the router keeps sending it requests, as a load balancer whose health check has not
//! noticed yet.

use std::fmt;

use super::{step, ActionError, ActionKind, PeriodChange, Target};
use crate::host::Host;

/// Freeze a replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pause(pub Host);

impl fmt::Display for Pause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pause {}", self.0)
    }
}

impl ActionKind for Pause {
    const STEP: Option<&'static str> = Some("pause");

    fn from_step(value: &toml::Value) -> Result<Self, ActionError> {
        step::host(value).map(Pause)
    }

    fn to_step(&self) -> toml::Value {
        step::host_value(&self.0)
    }

    fn apply(&self, target: &mut dyn Target) {
        target.pause(&self.0);
    }

    fn hosts(&self) -> Vec<&Host> {
        vec![&self.0]
    }

    fn renamed(&self, rename: &dyn Fn(&Host) -> Host) -> Self {
        Pause(rename(&self.0))
    }

    fn periods(&self) -> Vec<PeriodChange> {
        vec![PeriodChange::Open {
            lane: self.0.clone(),
            kind: "paused",
            link: String::new(),
        }]
    }

    fn validate(&self) -> Result<(), ActionError> {
        replica_only(&self.to_string(), &self.0)
    }

    fn live(&self) -> Result<(), ActionError> {
        Ok(())
    }
}

/// Let a paused replica go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resume(pub Host);

impl fmt::Display for Resume {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "resume {}", self.0)
    }
}

impl ActionKind for Resume {
    const STEP: Option<&'static str> = Some("resume");

    fn from_step(value: &toml::Value) -> Result<Self, ActionError> {
        step::host(value).map(Resume)
    }

    fn to_step(&self) -> toml::Value {
        step::host_value(&self.0)
    }

    fn apply(&self, target: &mut dyn Target) {
        target.resume(&self.0);
    }

    fn hosts(&self) -> Vec<&Host> {
        vec![&self.0]
    }

    fn renamed(&self, rename: &dyn Fn(&Host) -> Host) -> Self {
        Resume(rename(&self.0))
    }

    fn periods(&self) -> Vec<PeriodChange> {
        vec![PeriodChange::Close {
            lane: self.0.clone(),
            kind: "paused",
            link: String::new(),
        }]
    }

    fn validate(&self) -> Result<(), ActionError> {
        replica_only(&self.to_string(), &self.0)
    }

    fn live(&self) -> Result<(), ActionError> {
        Ok(())
    }
}

/// Only replicas pause: the project's own hosts (router, ledger, webhook) are the
/// instruments, and a frozen store is a partition of every replica from it.
fn replica_only(what: &str, host: &Host) -> Result<(), ActionError> {
    if host.is_replica() {
        Ok(())
    } else {
        Err(ActionError::Invalid(format!(
            "`{what}`: only a replica can be paused (to freeze the store, partition every replica from it)"
        )))
    }
}
