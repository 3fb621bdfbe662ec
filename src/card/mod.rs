//! Agent cards: what the agent publishes, what a client caches, what the run records.
//!
//! Issue 10 and hazard 7 of A2A-BEHAVIOURS.md §6 are about trust, not state: a card that was
//! fetchable is not a call that was authorised, and a verified card is not a URL entitled to
//! the caller's bearer token (the seeds on Mastra and Cognigy). Three pieces model it:
//!
//! - [`authority`]: the publisher. It holds every version of the card (execution URL,
//!   streaming flag, signing key, signature over the canonical bytes), the signing keys and
//!   their revocations, and the deadline by which each change must reach clients
//!   (`Cache-Control: max-age` after it). The router serves its current card at
//!   `http://router:8080/.well-known/agent-card.json` with an `ETag`. It is ground truth for
//!   the checkers, like the ledger.
//! - [`cache`]: the client's bootstrap, chosen by the profile's `[card]` knobs (lifetime,
//!   TTL or HTTP caching; no, if-present or required signatures; pinned origins or not). It
//!   tells the client where each call goes and whether to stream, and logs every decision.
//! - [`front_door`]: the extra hosts a card may name (`agent-v2.example` and the like), each
//!   a forwarding proxy to the router that records the credentials it received.
//!
//! Card simulation is off unless a run asks for it (a scenario with a `[card]` table or a
//! `card` step, an experiment naming a `card-*` fault): runs without it keep their hosts,
//! their client and their trace hashes. Signatures are FNV-1a over a key secret and the
//! card's canonical bytes, as [`crate::auth`] does for tokens: deterministic, and enough to
//! tell a card the key holder signed from one that was altered.

pub mod authority;
pub mod cache;
pub mod front_door;

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

use serde_json::Value;

pub use crate::faults::card::{
    valid_host, CardChange, CardStep, FOREIGN_HOST, MOVE_HOST, TAMPER_HOST,
};
pub use authority::{CardAuthority, CardVersion};

/// Where the card is served.
pub const CARD_PATH: &str = "/.well-known/agent-card.json";

/// The origin the card is served from: the audience of the agent's credentials.
pub const CARD_ORIGIN: &str = crate::auth::AGENT_AUDIENCE;

/// The port every extra host a card names listens on.
pub const FRONT_DOOR_PORT: u16 = 8080;

/// The `[card]` table of a scenario: the publisher's settings. Its presence (or any `card`
/// step) turns the card simulation on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CardSetup {
    /// `Cache-Control: max-age` of the served card, in seconds: how long after a change
    /// (a move, a capability change, a key rotation) a client may still use the previous
    /// card. Default 2.
    #[serde(default = "default_max_age_s")]
    pub max_age_s: u64,
}

fn default_max_age_s() -> u64 {
    2
}

impl Default for CardSetup {
    fn default() -> Self {
        CardSetup {
            max_age_s: default_max_age_s(),
        }
    }
}

/// Longest max-age a scenario may ask for (one simulated hour).
pub const MAX_AGE_S_MAX: u64 = 3600;

/// Refuses a model without `[card]` knobs for a run that simulates the card.
pub fn check_profile(
    profile: &crate::model::Profile,
    origin: &str,
) -> Result<(), crate::error::InputError> {
    if profile.card.is_some() {
        return Ok(());
    }
    Err(crate::error::InputError::new(
        origin,
        format!(
            "model `{}` has no [card] knobs, which a run that simulates the agent card needs (card.cache, card.ttl_ms, card.verify, card.pin_origins)",
            profile.name
        ),
    ))
}

/// The origin (`scheme://host:port`) of an `http://` URL.
pub fn origin_of(url: &str) -> Option<String> {
    let (host, port, _) = crate::protocol::parse_http_url(url)?;
    Some(format!("http://{host}:{port}"))
}

/// The execution URL a card names: its first `supportedInterfaces` entry, or its 0.3 `url`.
pub fn execution_url(card: &Value) -> Option<&str> {
    card.pointer("/supportedInterfaces/0/url")
        .and_then(Value::as_str)
        .or_else(|| card.get("url").and_then(Value::as_str))
}

/// Whether a card says it streams.
pub fn streams(card: &Value) -> bool {
    card.pointer("/capabilities/streaming")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The bytes a card's signatures cover: the card without `signatures`, as compact JSON
/// with keys in order (serde_json's map is ordered), standing in for JCS.
pub fn canonical_bytes(card: &Value) -> Vec<u8> {
    let mut payload = card.clone();
    if let Some(map) = payload.as_object_mut() {
        map.remove("signatures");
    }
    serde_json::to_vec(&payload).expect("a Value always serialises")
}

/// The simulated signature of `bytes` under a key's secret.
pub fn sign(secret: &str, bytes: &[u8]) -> String {
    let mut h = crate::trace::Fnv::default();
    h.write(secret.as_bytes());
    h.write(b"\0");
    h.write(bytes);
    format!("{:016x}", h.0)
}

/// The key ids a card's signatures name.
pub fn signature_kids(card: &Value) -> Vec<String> {
    card.get("signatures")
        .and_then(Value::as_array)
        .map(|sigs| {
            sigs.iter()
                .filter_map(|s| s.pointer("/protected/kid").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// What the run's card simulation left behind, for the checkers (empty when it was off).
#[derive(Debug, Clone, Default)]
pub struct CardRecord {
    /// Whether the run simulated the card at all.
    pub enabled: bool,
    /// `Cache-Control: max-age` of every served card, ms.
    pub max_age_ms: u64,
    /// Every card document the authority published or served, in order.
    pub versions: Vec<CardVersion>,
    /// Signing key id → when it was revoked.
    pub revoked: Vec<(String, u64)>,
    /// Every client call's card decision.
    pub uses: Vec<cache::CardUse>,
    /// Every card fetch the client made.
    pub fetches: Vec<cache::CardFetch>,
    /// Every request an extra host received.
    pub ingress: Vec<front_door::Ingress>,
}

impl CardRecord {
    /// The version served with this `ETag`.
    pub fn version(&self, etag: &str) -> Option<&CardVersion> {
        self.versions.iter().find(|v| v.etag == etag)
    }

    /// When the card first changed (a new version or a tampered copy), if it did.
    pub fn first_change_ms(&self) -> Option<u64> {
        self.versions.iter().skip(1).map(|v| v.published_ms).min()
    }

    /// Why the card version `v` is stale at `at_ms`, and when that happened: a later
    /// version the publisher made whose deadline has passed (its publication), or its
    /// signing key revoked longer than max-age ago (the revocation).
    pub fn stale_at(&self, v: &CardVersion, at_ms: u64) -> Option<(String, u64)> {
        if let Some(newer) = self
            .versions
            .iter()
            .find(|w| w.legit && w.revision > v.revision && w.deadline_ms <= at_ms)
        {
            return Some((
                format!(
                    "revision {} ({}) was published at {} ms with a deadline of {} ms",
                    newer.revision, newer.change, newer.published_ms, newer.deadline_ms
                ),
                newer.published_ms,
            ));
        }
        let kid = v.kid.as_deref()?;
        let (_, at) = self.revoked.iter().find(|(k, _)| k == kid)?;
        (at + self.max_age_ms <= at_ms).then(|| {
            (
                format!(
                    "its signing key {kid} was revoked at {at} ms (deadline {} ms)",
                    at + self.max_age_ms
                ),
                *at,
            )
        })
    }

    /// The earliest deadline of any change the publisher made, if any.
    pub fn first_deadline_ms(&self) -> Option<u64> {
        self.versions
            .iter()
            .filter(|v| v.legit && v.revision > 1)
            .map(|v| v.deadline_ms)
            .min()
    }

    /// The extra hosts named by the run's card versions.
    pub fn extra_hosts(&self) -> BTreeSet<String> {
        self.versions
            .iter()
            .filter_map(|v| crate::protocol::parse_http_url(&v.execution_url))
            .map(|(h, _, _)| h)
            .filter(|h| h != "router")
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Host;

    #[test]
    fn changes_read_back_from_their_words() {
        for c in [
            CardChange::MoveTo(Host::parse(MOVE_HOST)),
            CardChange::Streaming(false),
            CardChange::Streaming(true),
            CardChange::RevokeKey,
            CardChange::Tamper,
        ] {
            assert_eq!(CardChange::parse(&c.to_string()), Some(c.clone()), "{c}");
        }
        assert_eq!(CardChange::parse("move-to replica-0"), None);
        assert_eq!(CardChange::parse("move-to Evil Host"), None);
    }

    const CARD_SCENARIO: &str = r#"
name = "cards"
model = "mastra"
replicas = 1
[card]
max-age-s = 5
[[step]]
send = { conversation = "c1", turn = 1 }
[[step]]
card = { move-to = "agent-v2.example" }
[[step]]
concurrent = [{ card = { streaming = false } }, { card = { revoke-key = true } }]
[[step]]
card = { tamper = true }
[expect]
violations = ["card-freshness"]
"#;

    #[test]
    fn card_steps_and_the_card_table_write_back_to_the_same_scenario() {
        let s = crate::scenario::Script::parse(CARD_SCENARIO, "cards.toml").unwrap();
        assert_eq!(s.card_setup(), Some(CardSetup { max_age_s: 5 }));
        let back = crate::scenario::Script::parse(&s.to_toml(), "back.toml")
            .unwrap_or_else(|e| panic!("{e}\n{}", s.to_toml()));
        assert_eq!(back.steps, s.steps);
        assert_eq!(back.file, s.file);
        // A card step alone turns the simulation on, with the default max-age.
        let implicit = CARD_SCENARIO.replace("[card]\nmax-age-s = 5\n", "");
        let s = crate::scenario::Script::parse(&implicit, "x.toml").unwrap();
        assert_eq!(s.card_setup(), Some(CardSetup::default()));
    }

    #[test]
    fn bad_card_steps_and_card_less_models_are_refused() {
        let two = CARD_SCENARIO.replace(
            "card = { tamper = true }",
            "card = { tamper = true, revoke-key = true }",
        );
        let err = crate::scenario::Script::parse(&two, "x")
            .unwrap_err()
            .message;
        assert!(err.contains("one change"), "{err}");
        let bad_host = CARD_SCENARIO.replace("agent-v2.example", "replica-0");
        let err = crate::scenario::Script::parse(&bad_host, "x")
            .unwrap_err()
            .message;
        assert!(err.contains("move-to"), "{err}");
        let old_model = CARD_SCENARIO.replace(
            "model = \"mastra\"",
            "model = \"tests/models/naive-push-follows-redirects.toml\"",
        );
        let err = crate::scenario::Script::parse(&old_model, "x")
            .unwrap_err()
            .message;
        assert!(err.contains("no [card] knobs"), "{err}");
        let long = CARD_SCENARIO.replace("max-age-s = 5", "max-age-s = 99999");
        assert!(crate::scenario::Script::parse(&long, "x").is_err());
    }

    #[test]
    fn the_signature_covers_everything_but_the_signatures() {
        let card = serde_json::json!({"url": "http://router:8080/", "b": 1, "a": 2});
        let mut signed = card.clone();
        signed["signatures"] = serde_json::json!([{"protected": {"kid": "key-1"}}]);
        assert_eq!(canonical_bytes(&card), canonical_bytes(&signed));
        assert_eq!(signature_kids(&signed), vec!["key-1".to_string()]);
        let mut moved = card.clone();
        moved["url"] = "http://mitm.example:8080/".into();
        assert_ne!(
            sign("k", &canonical_bytes(&card)),
            sign("k", &canonical_bytes(&moved))
        );
        assert_eq!(
            origin_of("http://agent-v2.example:8080/").as_deref(),
            Some("http://agent-v2.example:8080")
        );
    }
}
