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
//! Scripted only (no `[faults]` rate draws it), and simulated only: a live run would need
//! a client that stops reading a real socket.
//!
//! The action: [`StallReaders`] (`stall-readers = "replica-0"`).

use std::fmt;

use super::{step, ActionKind, Target};

/// The readers of a replica's open subscriptions stop reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StallReaders(pub String);

impl fmt::Display for StallReaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "stall the readers of {}", self.0)
    }
}

impl ActionKind for StallReaders {
    const STEP: Option<&'static str> = Some("stall-readers");

    fn from_step(value: &toml::Value) -> Result<Self, String> {
        step::host(value).map(StallReaders)
    }

    fn to_step(&self) -> toml::Value {
        self.0.as_str().into()
    }

    fn apply(&self, target: &mut dyn Target) {
        target.stall_readers(&self.0);
    }

    fn hosts(&self) -> Vec<&str> {
        vec![&self.0]
    }

    fn renamed(&self, rename: &dyn Fn(&str) -> String) -> Self {
        StallReaders(rename(&self.0))
    }

    fn validate(&self) -> Result<(), String> {
        if !self.0.starts_with("replica-") {
            return Err(format!(
                "stall-readers: `{}` serves no subscription: name a replica",
                self.0
            ));
        }
        Ok(())
    }
}
