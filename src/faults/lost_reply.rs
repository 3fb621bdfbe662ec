//! `lost-reply`: the router lets a replica finish a request, then drops the answer.
//!
//! Rate: the probability, per forwarded request, that the reply is lost during the fault
//! window. The client sees a broken connection: an `info` outcome, which workload clients
//! answer by retrying with the same messageId.

use rand_chacha::ChaCha8Rng;

use super::{Action, Fault, PlanInput, Scheduled};

/// The lost-reply fault.
pub struct LostReply;

impl Fault for LostReply {
    fn describe(&self) -> &'static str {
        "probability that the router drops a reply after the replica answered"
    }

    fn plan(&self, rate: f64, _input: &PlanInput, _rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        vec![Scheduled {
            at_ms: 0,
            action: Action::LostReplyRate(rate.min(1.0)),
        }]
    }
}
