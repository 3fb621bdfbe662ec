//! `lost-reply`: the router lets a replica finish a request, then drops the answer.
//!
//! Rate: the probability, per forwarded request, that the reply is lost during the fault
//! window. The client sees a broken connection: an `info` outcome, which workload clients
//! answer by retrying with the same messageId.
//!
//! The actions: [`LostReplyRate`] (no scenario step: a script says which reply to lose) and
//! [`DropNextReply`] (`drop-reply = true`: the router loses the next reply it forwards;
//! live runs can do it too).

use std::fmt;

use rand_chacha::ChaCha8Rng;

use super::{ActionError, ActionKind, FaultKind, PeriodChange, PlanInput, Scheduled, Target};
use crate::host::Host;

/// Set the probability that the router loses a reply.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LostReplyRate(pub f64);

impl fmt::Display for LostReplyRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lost-reply rate {:.3}", self.0)
    }
}

impl ActionKind for LostReplyRate {
    const STEP: Option<&'static str> = None;

    fn from_step(_value: &toml::Value) -> Result<Self, ActionError> {
        Err(ActionError::Malformed(
            "the lost-reply rate has no step; use drop-reply = true".into(),
        ))
    }

    fn to_step(&self) -> toml::Value {
        self.0.into()
    }

    fn apply(&self, target: &mut dyn Target) {
        target.lost_reply_rate(self.0);
    }

    fn periods(&self) -> Vec<PeriodChange> {
        let (lane, kind, link) = (Host::Router, "lost-reply", String::new());
        let mut out = vec![PeriodChange::Close {
            lane: lane.clone(),
            kind,
            link: link.clone(),
        }];
        // A rate that prints as 0.000 shades nothing.
        if format!("{:.3}", self.0).parse::<f64>().unwrap_or(0.0) > 0.0 {
            out.push(PeriodChange::Open { lane, kind, link });
        }
        out
    }
}

/// Lose the next reply the router forwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropNextReply;

impl fmt::Display for DropNextReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "drop next reply")
    }
}

impl ActionKind for DropNextReply {
    const STEP: Option<&'static str> = Some("drop-reply");

    fn from_step(value: &toml::Value) -> Result<Self, ActionError> {
        match value.as_bool() {
            Some(true) => Ok(DropNextReply),
            _ => Err(ActionError::Malformed(format!(
                "drop-reply = {value}: only true is an action"
            ))),
        }
    }

    fn to_step(&self) -> toml::Value {
        true.into()
    }

    fn apply(&self, target: &mut dyn Target) {
        target.drop_next_reply();
    }

    fn live(&self) -> Result<(), ActionError> {
        Ok(())
    }
}

/// The `lost-reply` fault.
pub struct LostReply;

impl FaultKind for LostReply {
    fn describe(&self) -> &'static str {
        "probability that the router drops a reply after the replica answered"
    }

    fn rate(&self) -> super::Rate {
        super::Rate::Probability
    }

    fn plan(&self, rate: f64, _input: &PlanInput, _rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        vec![Scheduled {
            at_ms: 0,
            action: LostReplyRate(rate.min(1.0)).into(),
        }]
    }
}
