//! Card faults: the agent card changes under a client that has cached it (A2A-BEHAVIOURS.md
//! §6.7, issue 10). One file for the five kinds, since each is one [`CardChange`].
//!
//! Rate: the probability that the change happens in a run (at most once; rates above 1
//! count as 1). A publisher's change (`card-move`, `card-no-streaming`, `card-key-revoked`)
//! happens at a uniform time inside the fault window, after clients have cached the card.
//! The trust faults (`card-tampered`, `card-foreign-origin`) happen at time 0, before the
//! first fetch, since they are about the card a client discovers. An experiment naming any
//! of them simulates the card in every run, whether or not the seed draws the change.

//!
//! The action: [`Card`] (`card = { move-to = "agent-v2.example" }`, `{ streaming = false }`,
//! `{ revoke-key = true }` or `{ tamper = true }`: one change per step).

use std::fmt;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{ActionError, ActionKind, FaultKind, PlanInput, Scheduled, Target};
use crate::host::{Host, REPLICA_PREFIX};

/// Where `card-move` moves the execution URL: the agent's next deployment, on another
/// origin.
pub const MOVE_HOST: &str = "agent-v2.example";

/// The execution origin of a `card-foreign-origin` card: signed by the agent's key, hosted
/// by somebody else.
pub const FOREIGN_HOST: &str = "agent.partner.example";

/// Where a tampered card sends its callers.
pub const TAMPER_HOST: &str = "mitm.example";

/// One change the publisher (or an attacker) makes to the card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CardChange {
    /// A new signed version naming `http://HOST:8080/` as the execution URL (HOST one the
    /// run does not have: [`valid_host`]).
    MoveTo(Host),
    /// A new signed version with the streaming capability set.
    Streaming(bool),
    /// The signing key is revoked and the card re-signed with a new key.
    RevokeKey,
    /// The served card is altered on its way (a compromised cache or proxy): the execution
    /// URL names [`TAMPER_HOST`] and the signatures are stripped, since the tamperer cannot
    /// sign. Not a version the publisher made.
    Tamper,
}

impl std::fmt::Display for CardChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CardChange::MoveTo(h) => write!(f, "move-to {h}"),
            CardChange::Streaming(true) => write!(f, "streaming on"),
            CardChange::Streaming(false) => write!(f, "streaming off"),
            CardChange::RevokeKey => write!(f, "revoke-key"),
            CardChange::Tamper => write!(f, "tamper"),
        }
    }
}

impl CardChange {
    /// Reads a change back from its words (`Display`).
    pub fn parse(text: &str) -> Option<CardChange> {
        match text {
            "streaming on" => Some(CardChange::Streaming(true)),
            "streaming off" => Some(CardChange::Streaming(false)),
            "revoke-key" => Some(CardChange::RevokeKey),
            "tamper" => Some(CardChange::Tamper),
            _ => text
                .strip_prefix("move-to ")
                .filter(|h| valid_host(h))
                .map(|h| CardChange::MoveTo(Host::parse(h))),
        }
    }

    /// The extra host this change makes the card name, if any.
    pub fn names_host(&self) -> Option<Host> {
        match self {
            CardChange::MoveTo(h) => Some(h.clone()),
            CardChange::Tamper => Some(Host::parse(TAMPER_HOST)),
            _ => None,
        }
    }
}

/// A host name a card may move to: lower-case letters, digits, `-` and `.`, not one of the
/// simulation's own hosts.
pub fn valid_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 63
        && host
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && matches!(Host::parse(host), Host::Other(_))
        && !host.starts_with(REPLICA_PREFIX)
}

/// A scenario's `card = { ... }` step: one change, one key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CardStep {
    /// `move-to = "agent-v2.example"`: a signed card naming `http://HOST:8080/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub move_to: Option<String>,
    /// `streaming = false`: a signed card with the streaming capability changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// `revoke-key = true`: the signing key revoked, the card re-signed with a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoke_key: Option<bool>,
    /// `tamper = true`: the served card altered (execution URL to `mitm.example`) and its
    /// signatures stripped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tamper: Option<bool>,
}

impl CardStep {
    /// The change this step makes, or why it is not one.
    pub fn change(&self) -> Result<CardChange, ActionError> {
        let mut found = Vec::new();
        if let Some(h) = &self.move_to {
            if !valid_host(h) {
                return Err(ActionError::Invalid(format!(
                    "card move-to = \"{h}\": a host name of lower-case letters, digits, `-` and `.`, not one of the simulation's hosts"
                )));
            }
            found.push(CardChange::MoveTo(Host::parse(h)));
        }
        if let Some(on) = self.streaming {
            found.push(CardChange::Streaming(on));
        }
        if self.revoke_key == Some(true) {
            found.push(CardChange::RevokeKey);
        }
        if self.tamper == Some(true) {
            found.push(CardChange::Tamper);
        }
        match found.len() {
            1 => Ok(found.pop().expect("one")),
            0 => Err(ActionError::Malformed(
                "a card step needs one of move-to, streaming, revoke-key = true, tamper = true"
                    .into(),
            )),
            _ => Err(ActionError::Malformed(
                "a card step makes one change; split it into several steps".into(),
            )),
        }
    }

    /// The step that makes `change`.
    pub fn of(change: &CardChange) -> CardStep {
        let mut s = CardStep::default();
        match change {
            CardChange::MoveTo(h) => s.move_to = Some(h.to_string()),
            CardChange::Streaming(on) => s.streaming = Some(*on),
            CardChange::RevokeKey => s.revoke_key = Some(true),
            CardChange::Tamper => s.tamper = Some(true),
        }
        s
    }

    /// The step as an inline TOML table (host names need no escaping).
    pub fn to_inline(&self) -> String {
        match self.change() {
            Ok(CardChange::MoveTo(h)) => format!("{{ move-to = \"{h}\" }}"),
            Ok(CardChange::Streaming(on)) => format!("{{ streaming = {on} }}"),
            Ok(CardChange::RevokeKey) => "{ revoke-key = true }".into(),
            Ok(CardChange::Tamper) | Err(_) => "{ tamper = true }".into(),
        }
    }
}

/// Change the agent card the router serves (runs that simulate the card).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card(pub CardChange);

impl fmt::Display for Card {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "card {}", self.0)
    }
}

impl ActionKind for Card {
    const STEP: Option<&'static str> = Some("card");

    fn from_step(value: &toml::Value) -> Result<Self, ActionError> {
        let s: CardStep = super::step::table(value)?;
        s.change().map(Card)
    }

    fn to_step(&self) -> toml::Value {
        super::step::value_of(&CardStep::of(&self.0))
    }

    fn apply(&self, target: &mut dyn Target) {
        target.card(&self.0);
    }
}

fn once(rate: f64, at_ms: u64, change: CardChange, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
    if rng.random_bool(rate.clamp(0.0, 1.0)) {
        vec![Scheduled {
            at_ms,
            action: Card(change).into(),
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

impl FaultKind for CardMove {
    fn describe(&self) -> &'static str {
        "probability that the card moves its execution URL to another origin mid-run"
    }

    fn rate(&self) -> super::Rate {
        super::Rate::Probability
    }

    fn changes_card(&self) -> bool {
        true
    }

    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let at = some_time(input, rng);
        once(rate, at, CardChange::MoveTo(Host::parse(MOVE_HOST)), rng)
    }
}

/// `card-no-streaming`: the card turns streaming off.
pub struct CardNoStreaming;

impl FaultKind for CardNoStreaming {
    fn describe(&self) -> &'static str {
        "probability that the card turns its streaming capability off mid-run"
    }

    fn rate(&self) -> super::Rate {
        super::Rate::Probability
    }

    fn changes_card(&self) -> bool {
        true
    }

    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let at = some_time(input, rng);
        once(rate, at, CardChange::Streaming(false), rng)
    }
}

/// `card-key-revoked`: the card's signing key is revoked and the card re-signed.
pub struct CardKeyRevoked;

impl FaultKind for CardKeyRevoked {
    fn describe(&self) -> &'static str {
        "probability that the card's signing key is revoked (and the card re-signed) mid-run"
    }

    fn rate(&self) -> super::Rate {
        super::Rate::Probability
    }

    fn changes_card(&self) -> bool {
        true
    }

    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let at = some_time(input, rng);
        once(rate, at, CardChange::RevokeKey, rng)
    }
}

/// `card-tampered`: the served card is altered and its signatures stripped.
pub struct CardTampered;

impl FaultKind for CardTampered {
    fn describe(&self) -> &'static str {
        "probability that the card a client discovers was altered (execution URL to mitm.example, signatures stripped)"
    }

    fn rate(&self) -> super::Rate {
        super::Rate::Probability
    }

    fn changes_card(&self) -> bool {
        true
    }

    fn plan(&self, rate: f64, _input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        once(rate, 0, CardChange::Tamper, rng)
    }
}

/// `card-foreign-origin`: a card signed by the agent's key names an execution origin
/// outside the caller's allowlist.
pub struct CardForeignOrigin;

impl FaultKind for CardForeignOrigin {
    fn describe(&self) -> &'static str {
        "probability that the card a client discovers is signed but names a foreign execution origin"
    }

    fn rate(&self) -> super::Rate {
        super::Rate::Probability
    }

    fn changes_card(&self) -> bool {
        true
    }

    fn plan(&self, rate: f64, _input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        once(rate, 0, CardChange::MoveTo(Host::parse(FOREIGN_HOST)), rng)
    }
}
