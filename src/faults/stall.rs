//! `stall-readers`: the readers of a replica's open subscriptions stop reading.
//!
//! A client whose SSE reader stops reading while its connection stays open: one that hung,
//! or one that walked away without closing the socket. The subscriptions open on the host
//! at that moment get no more events from then on. The simulated network has no flow
//! control, so the replica plays the stalled reader: its subscription streams stop
//! forwarding, and a model with `subscribe.stalled_tap` says what the full tap then does
//! to the task (a2aproject/a2a-python#1136: 1.1.3 and earlier stop the task, 1.1.4 and
//! later evict the tap). Subscriptions opened later read normally, and a restart of the
//! host ends them all.
//!
//! Rate: stalls per simulated second, each of a replica picked uniformly; a stalled reader
//! never reads again (no stability window: it is a client that went away, which a heal does
//! not bring back). Simulated only: a live run would need a client that stops reading a
//! real socket. No experiment draws it unless its `[faults]` table names it.
//!
//! The action: [`StallReaders`] (`stall-readers = "replica-0"`).

use std::fmt;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{arrivals, step, ActionError, ActionKind, FaultKind, PlanInput, Scheduled, Target};
use crate::host::Host;

/// The readers of a replica's open subscriptions stop reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StallReaders(pub Host);

impl fmt::Display for StallReaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "stall the readers of {}", self.0)
    }
}

impl ActionKind for StallReaders {
    const STEP: Option<&'static str> = Some("stall-readers");

    fn from_step(value: &toml::Value) -> Result<Self, ActionError> {
        step::host(value).map(StallReaders)
    }

    fn to_step(&self) -> toml::Value {
        step::host_value(&self.0)
    }

    fn apply(&self, target: &mut dyn Target) {
        target.stall_readers(&self.0);
    }

    fn hosts(&self) -> Vec<&Host> {
        vec![&self.0]
    }

    fn renamed(&self, rename: &dyn Fn(&Host) -> Host) -> Self {
        StallReaders(rename(&self.0))
    }

    fn validate(&self) -> Result<(), ActionError> {
        if !self.0.is_replica() {
            return Err(ActionError::Invalid(format!(
                "stall-readers: `{}` serves no subscription: name a replica",
                self.0
            )));
        }
        Ok(())
    }
}

/// The `stall-readers` fault.
pub struct StallReadersFault;

impl FaultKind for StallReadersFault {
    fn describe(&self) -> &'static str {
        "stalls per simulated second: the readers of a replica's open subscriptions stop reading for good"
    }

    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        arrivals(rate, input.window_ms, rng)
            .into_iter()
            .map(|at_ms| Scheduled {
                at_ms,
                action: StallReaders(Host::Replica(rng.random_range(0..input.replicas))).into(),
            })
            .collect()
    }
}
