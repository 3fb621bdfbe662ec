//! Card faults: the agent card changes under a client that has cached it (A2A-BEHAVIOURS.md
//! §6.7, issue 10). One file for the five kinds, since each is one [`CardChange`].
//!
//! Rate: the probability that the change happens in a run (at most once; rates above 1
//! count as 1). A publisher's change (`card-move`, `card-no-streaming`, `card-key-revoked`)
//! happens at a uniform time inside the fault window, after clients have cached the card.
//! The trust faults (`card-tampered`, `card-foreign-origin`) happen at time 0, before the
//! first fetch, since they are about the card a client discovers. An experiment naming any
//! of them simulates the card in every run, whether or not the seed draws the change.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{Action, Fault, PlanInput, Scheduled};
use crate::card::{CardChange, FOREIGN_HOST, MOVE_HOST};

fn once(rate: f64, at_ms: u64, change: CardChange, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
    if rng.random_bool(rate.clamp(0.0, 1.0)) {
        vec![Scheduled {
            at_ms,
            action: Action::Card(change),
        }]
    } else {
        Vec::new()
    }
}

fn some_time(input: &PlanInput, rng: &mut ChaCha8Rng) -> u64 {
    rng.random_range(0..input.window_ms.max(1))
}

/// `card-move`: the card's execution URL moves to `agent-v2.example`.
pub struct CardMove;

impl Fault for CardMove {
    fn describe(&self) -> &'static str {
        "probability that the card moves its execution URL to another origin mid-run"
    }

    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let at = some_time(input, rng);
        once(rate, at, CardChange::MoveTo(MOVE_HOST.into()), rng)
    }
}

/// `card-no-streaming`: the card turns streaming off.
pub struct CardNoStreaming;

impl Fault for CardNoStreaming {
    fn describe(&self) -> &'static str {
        "probability that the card turns its streaming capability off mid-run"
    }

    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let at = some_time(input, rng);
        once(rate, at, CardChange::Streaming(false), rng)
    }
}

/// `card-key-revoked`: the card's signing key is revoked and the card re-signed.
pub struct CardKeyRevoked;

impl Fault for CardKeyRevoked {
    fn describe(&self) -> &'static str {
        "probability that the card's signing key is revoked (and the card re-signed) mid-run"
    }

    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let at = some_time(input, rng);
        once(rate, at, CardChange::RevokeKey, rng)
    }
}

/// `card-tampered`: the served card is altered and its signatures stripped.
pub struct CardTampered;

impl Fault for CardTampered {
    fn describe(&self) -> &'static str {
        "probability that the card a client discovers was altered (execution URL to mitm.example, signatures stripped)"
    }

    fn plan(&self, rate: f64, _input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        once(rate, 0, CardChange::Tamper, rng)
    }
}

/// `card-foreign-origin`: a card signed by the agent's key names an execution origin
/// outside the caller's allowlist.
pub struct CardForeignOrigin;

impl Fault for CardForeignOrigin {
    fn describe(&self) -> &'static str {
        "probability that the card a client discovers is signed but names a foreign execution origin"
    }

    fn plan(&self, rate: f64, _input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        once(rate, 0, CardChange::MoveTo(FOREIGN_HOST.into()), rng)
    }
}
