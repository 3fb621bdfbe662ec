//! `heal`: every fault undone at once, the start of the liveness phase.
//!
//! The driver plans one at the end of every fault window ([`super::heal_all`]); a scenario
//! writes it as `heal = "all"`. Every link comes back, held messages are delivered, latency
//! returns to normal, fault points are turned off, the lost-reply rate goes to 0 and every
//! crashed host restarts. A live run restarts every killed replica.

use std::fmt;

use super::{ActionError, ActionKind, PeriodChange, Target};

/// Restore every link and restart every crashed host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealAll;

impl fmt::Display for HealAll {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "heal all")
    }
}

impl ActionKind for HealAll {
    const STEP: Option<&'static str> = Some("heal");

    fn from_step(value: &toml::Value) -> Result<Self, ActionError> {
        match value.as_str() {
            Some("all") => Ok(HealAll),
            Some(other) => Err(ActionError::Malformed(format!(
                "heal = \"{other}\": only \"all\" is supported"
            ))),
            None => Err(ActionError::Malformed(format!(
                "heal = {value}: only \"all\" is supported"
            ))),
        }
    }

    fn to_step(&self) -> toml::Value {
        "all".into()
    }

    fn apply(&self, target: &mut dyn Target) {
        target.heal_all();
    }

    fn periods(&self) -> Vec<PeriodChange> {
        vec![PeriodChange::CloseAll]
    }

    fn live(&self) -> Result<(), ActionError> {
        Ok(())
    }
}
