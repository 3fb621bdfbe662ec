//! `drain`: a replica pod is shut down gracefully (SIGTERM, as a rolling deploy or a node
//! drain does), then killed when its grace period is over, and restarts.
//!
//! Beside `kill` (SIGKILL, everything in flight lost at once), a drain gives the pod its
//! chance: it leaves the router's endpoints and refuses new connections, the streams it
//! serves end as the model's `handler.sse_grace_ms` says, and it exits once no connection is
//! left open, or at the grace period (Kubernetes' `terminationGracePeriodSeconds`, 30 s by
//! default), whichever comes first (`crate::replica::DrainSignal`). The exit is recorded
//! as a `kill` of the host: runs still going there die with it. A `restart` of a pod still
//! draining waits for its exit.
//!
//! What it shows: a2a-python ends every SSE stream at SIGTERM (sse-starlette's
//! `shutdown_grace_period` defaults to 0; a2aproject/a2a-python#1221), so with no request
//! left the pod exits at once and the run of a streamed turn dies with it: the client's
//! stream ends with no final state and no error, and the task stays working. A server that
//! keeps its streams for the grace period lets the turn finish and deliver its final event.
//!
//! Rate: drains per simulated second. Each drain picks a replica uniformly, with a grace
//! period of 1 to 5 s (choice: longer than any turn here, shorter than the liveness phase),
//! cut short to end with the fault window (a pod is never SIGKILLed after the heal),
//! and asks for its restart 200 to 1000 ms after SIGTERM (the restart waits for the exit).
//!
//! The action: [`Drain`] (`drain = "replica-1"`, with the 30 s grace period, or `drain = {
//! host = "replica-1", grace-ms = 5000 }`). A live run sends SIGTERM to the replica's
//! process and SIGKILL when the grace period is over.

use std::fmt;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{
    arrivals, kill, step, ActionError, ActionKind, FaultKind, PlanInput, Scheduled, Target,
};
use crate::host::Host;

/// Kubernetes' default `terminationGracePeriodSeconds`, in ms: the grace period of a drain
/// step that names only its host.
pub const GRACE_MS_DEFAULT: u64 = 30_000;

/// The longest grace period a drain may have (10 minutes).
pub const GRACE_MS_MAX: u64 = 600_000;

/// SIGTERM a replica; SIGKILL it `grace_ms` later if it has not exited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drain {
    pub host: Host,
    pub grace_ms: u64,
}

/// The table form of a drain step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct DrainStep {
    host: Host,
    #[serde(default = "grace_default")]
    grace_ms: u64,
}

fn grace_default() -> u64 {
    GRACE_MS_DEFAULT
}

impl fmt::Display for Drain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "drain {} (grace {} ms)", self.host, self.grace_ms)
    }
}

impl ActionKind for Drain {
    const STEP: Option<&'static str> = Some("drain");

    fn from_step(value: &toml::Value) -> Result<Self, ActionError> {
        if value.is_str() {
            return Ok(Drain {
                host: step::host(value)?,
                grace_ms: GRACE_MS_DEFAULT,
            });
        }
        let s: DrainStep = step::table(value)?;
        Ok(Drain {
            host: s.host,
            grace_ms: s.grace_ms,
        })
    }

    fn to_step(&self) -> toml::Value {
        if self.grace_ms == GRACE_MS_DEFAULT {
            return step::host_value(&self.host);
        }
        step::value_of(&DrainStep {
            host: self.host.clone(),
            grace_ms: self.grace_ms,
        })
    }

    fn apply(&self, target: &mut dyn Target) {
        target.drain(&self.host, self.grace_ms);
    }

    fn hosts(&self) -> Vec<&Host> {
        vec![&self.host]
    }

    fn renamed(&self, rename: &dyn Fn(&Host) -> Host) -> Self {
        Drain {
            host: rename(&self.host),
            grace_ms: self.grace_ms,
        }
    }

    fn validate(&self) -> Result<(), ActionError> {
        if !self.host.is_replica() {
            return Err(ActionError::Invalid(format!(
                "`drain` drains a replica pod (replica-N), not `{}`",
                self.host
            )));
        }
        if self.grace_ms > GRACE_MS_MAX {
            return Err(ActionError::Invalid(format!(
                "drain grace-ms = {} must be at most {GRACE_MS_MAX}",
                self.grace_ms
            )));
        }
        Ok(())
    }

    fn live(&self) -> Result<(), ActionError> {
        Ok(())
    }
}

/// The `drain` fault: graceful shutdowns of replicas, each followed by a restart.
pub struct DrainReplicas;

impl FaultKind for DrainReplicas {
    fn describe(&self) -> &'static str {
        "graceful replica shutdowns (SIGTERM) per simulated second; grace 1-5 s, restart 200-1000 ms after the drain"
    }

    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let mut out = Vec::new();
        for at_ms in arrivals(rate, input.window_ms, rng) {
            let host = Host::Replica(rng.random_range(0..input.replicas));
            let grace_ms: u64 = rng.random_range(1000..=5000);
            let down_ms = rng.random_range(200..=1000);
            // Over by the end of the window: no SIGKILL lands in the liveness phase.
            let grace_ms = grace_ms.min(input.window_ms - at_ms);
            out.push(Scheduled {
                at_ms,
                action: Drain {
                    host: host.clone(),
                    grace_ms,
                }
                .into(),
            });
            // Waits for the exit, if the pod is still draining by then.
            out.push(Scheduled {
                at_ms: at_ms + down_ms,
                action: kill::Restart(host).into(),
            });
        }
        out
    }
}
