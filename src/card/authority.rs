//! The card publisher: every version of the agent's card, its signing keys, and the card
//! the router serves now.
//!
//! Version 1 is published at the start of the run, signed with `key-1`, naming
//! `http://router:8080/` as its execution URL with streaming on. Each [`CardChange`] the
//! driver applies makes a new document: a publisher's change (a move, a capability change,
//! a key rotation) is a new signed revision whose deadline is `max-age` after it, the time
//! by which a client honouring `Cache-Control` has seen it; a tampered copy is served but is
//! not a revision, and has no deadline.
//!
//! The authority is host-independent shared state, like the ledger's: the router serves
//! from it, the client's key provider asks it whether a key is trusted (as a JWKS fetch
//! would), and the checkers read it as ground truth. It also keeps the client's and the
//! extra hosts' logs, so the run hands one [`CardRecord`] to the checkers.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use http::{HeaderMap, Response, StatusCode};
use serde_json::{json, Value};

use super::cache::{CardFetch, CardUse};
use super::front_door::Ingress;
use super::{
    canonical_bytes, sign, CardChange, CardRecord, CardSetup, CARD_ORIGIN, FRONT_DOOR_PORT,
    TAMPER_HOST,
};
use crate::host::Host;
use crate::net::{self, BoxBody};
use crate::trace::{Event, Fnv, Trace};

/// One card document the authority published or served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardVersion {
    /// The publisher's revision this document is (a tampered copy keeps the revision it
    /// altered).
    pub revision: u64,
    /// The `ETag` it was served with (a hash of its bytes).
    pub etag: String,
    /// Made by the publisher (`false`: a tampered copy).
    pub legit: bool,
    /// When it started being served.
    pub published_ms: u64,
    /// When every client must be using it or something newer (publisher's revisions).
    pub deadline_ms: u64,
    /// What changed, in words.
    pub change: String,
    /// The execution URL it names.
    pub execution_url: String,
    /// Its streaming capability.
    pub streaming: bool,
    /// The key that signed it (`None`: unsigned).
    pub kid: Option<String>,
    /// The document as served.
    pub body: Value,
}

/// A signing key.
#[derive(Debug, Clone)]
struct SigningKey {
    secret: String,
    revoked_ms: Option<u64>,
}

#[derive(Debug)]
struct State {
    max_age_ms: u64,
    /// The card is served only to a caller with a valid bearer token (the model's
    /// `auth.card_bearer`, as the replicas check it).
    card_bearer: bool,
    versions: Vec<CardVersion>,
    /// Index of the document served now.
    current: usize,
    /// Index of the publisher's latest revision.
    latest: usize,
    keys: BTreeMap<String, SigningKey>,
    signing_kid: String,
    uses: Vec<CardUse>,
    fetches: Vec<CardFetch>,
    ingress: Vec<Ingress>,
}

/// The run's card publisher. Cloning shares it.
#[derive(Debug, Clone)]
pub struct CardAuthority {
    state: Rc<RefCell<State>>,
    trace: Trace,
}

fn key_secret(kid: &str) -> String {
    format!("agent card signing secret {kid}")
}

fn etag_of(body: &Value) -> String {
    let bytes = serde_json::to_vec(body).expect("a Value always serialises");
    let mut h = Fnv::default();
    h.write(&bytes);
    format!("\"{:016x}\"", h.0)
}

/// The unsigned payload of revision `revision`.
fn payload(revision: u64, url: &str, streaming: bool) -> Value {
    let mut card = crate::protocol::agent_card(
        "Scripted agent behind the router; its card is published by the simulation's card authority.",
        &format!("{}+card{revision}", env!("CARGO_PKG_VERSION")),
        url,
        streaming,
        true,
    );
    card["url"] = json!(url);
    card
}

fn signed(mut card: Value, kid: &str) -> Value {
    let signature = sign(&key_secret(kid), &canonical_bytes(&card));
    card["signatures"] = json!([{
        "protected": { "alg": "SIM-FNV1A", "kid": kid },
        "signature": signature
    }]);
    card
}

impl CardAuthority {
    /// A publisher with revision 1 served from the start; with `card_bearer`, only to
    /// callers with a valid bearer token.
    pub fn new(setup: CardSetup, card_bearer: bool, trace: Trace) -> Self {
        let url = format!("{CARD_ORIGIN}/");
        let body = signed(payload(1, &url, true), "key-1");
        let first = CardVersion {
            revision: 1,
            etag: etag_of(&body),
            legit: true,
            published_ms: 0,
            deadline_ms: 0,
            change: "first publication".into(),
            execution_url: url,
            streaming: true,
            kid: Some("key-1".into()),
            body,
        };
        let mut keys = BTreeMap::new();
        keys.insert(
            "key-1".to_string(),
            SigningKey {
                secret: key_secret("key-1"),
                revoked_ms: None,
            },
        );
        CardAuthority {
            state: Rc::new(RefCell::new(State {
                max_age_ms: setup.max_age_s * 1000,
                card_bearer,
                versions: vec![first],
                current: 0,
                latest: 0,
                keys,
                signing_kid: "key-1".into(),
                uses: Vec::new(),
                fetches: Vec::new(),
                ingress: Vec::new(),
            })),
            trace,
        }
    }

    /// Applies one change at `now` (ms).
    pub fn apply(&self, change: &CardChange, now: u64) {
        let mut s = self.state.borrow_mut();
        let latest = s.versions[s.latest].clone();
        let revision = latest.revision + 1;
        let mut url = latest.execution_url.clone();
        let mut streaming = latest.streaming;
        let mut what = change.to_string();
        match change {
            CardChange::MoveTo(host) => url = format!("http://{host}:{FRONT_DOOR_PORT}/"),
            CardChange::Streaming(on) => streaming = *on,
            CardChange::RevokeKey => {
                let old = s.signing_kid.clone();
                if let Some(k) = s.keys.get_mut(&old) {
                    k.revoked_ms = Some(now);
                }
                let kid = format!("key-{}", s.keys.len() + 1);
                s.keys.insert(
                    kid.clone(),
                    SigningKey {
                        secret: key_secret(&kid),
                        revoked_ms: None,
                    },
                );
                what = format!("{old} revoked, card re-signed with {kid}");
                s.signing_kid = kid;
            }
            CardChange::Tamper => {
                let mut body = latest.body.clone();
                let evil = format!("http://{TAMPER_HOST}:{FRONT_DOOR_PORT}/");
                body["url"] = evil.clone().into();
                body["supportedInterfaces"][0]["url"] = evil.clone().into();
                if let Some(map) = body.as_object_mut() {
                    map.remove("signatures");
                }
                let v = CardVersion {
                    revision: latest.revision,
                    etag: etag_of(&body),
                    legit: false,
                    published_ms: now,
                    deadline_ms: now,
                    change: "tampered copy: execution URL altered, signatures stripped".into(),
                    execution_url: evil,
                    streaming,
                    kid: None,
                    body,
                };
                s.versions.push(v);
                s.current = s.versions.len() - 1;
                return;
            }
        }
        let kid = s.signing_kid.clone();
        let body = signed(payload(revision, &url, streaming), &kid);
        let v = CardVersion {
            revision,
            etag: etag_of(&body),
            legit: true,
            published_ms: now,
            deadline_ms: now + s.max_age_ms,
            change: what,
            execution_url: url,
            streaming,
            kid: Some(kid),
            body,
        };
        s.versions.push(v);
        s.current = s.versions.len() - 1;
        s.latest = s.current;
    }

    /// Whether the agent streams now: the streaming capability of the publisher's latest
    /// revision (a tampered copy changes what clients read, not what the agent does). The
    /// replicas answer streaming methods by it.
    pub fn streams(&self) -> bool {
        let s = self.state.borrow();
        s.versions[s.latest].streaming
    }

    /// Whether the client's key provider trusts `kid` now, and its secret if so (the
    /// simulated stand-in for a public key).
    pub fn trusted_key(&self, kid: &str, now: u64) -> Option<String> {
        let s = self.state.borrow();
        let k = s.keys.get(kid)?;
        match k.revoked_ms {
            Some(at) if at <= now => None,
            _ => Some(k.secret.clone()),
        }
    }

    /// Serves the current card: `ETag`, `Cache-Control: max-age`, `Vary: A2A-Version` (as
    /// Mastra's server does), and `304 Not Modified` for a matching `If-None-Match`.
    pub fn serve(&self, headers: &HeaderMap) -> Response<BoxBody> {
        let s = self.state.borrow();
        if s.card_bearer {
            let header = headers.get("authorization").and_then(|h| h.to_str().ok());
            if let Err(e) = crate::auth::verify(header, crate::auth::ISSUER, CARD_ORIGIN) {
                self.trace
                    .record(Host::Router, Event::plain(format!("card GET -> 401 ({e})")));
                return net::json_response(
                    StatusCode::UNAUTHORIZED,
                    &json!({"error": e.to_string()}),
                );
            }
        }
        let v = &s.versions[s.current];
        let max_age = format!("max-age={}", s.max_age_ms / 1000);
        let not_modified = headers
            .get("if-none-match")
            .and_then(|h| h.to_str().ok())
            .is_some_and(|h| h == v.etag);
        self.trace.record(
            Host::Router,
            Event::plain(format!(
                "card GET -> {} revision {}{} etag {}",
                if not_modified { 304 } else { 200 },
                v.revision,
                if v.legit { "" } else { " (tampered)" },
                v.etag
            )),
        );
        let mut resp = if not_modified {
            Response::builder()
                .status(StatusCode::NOT_MODIFIED)
                .body(net::full(Vec::new()))
                .expect("static response parts are valid")
        } else {
            net::json_response(StatusCode::OK, &v.body)
        };
        let h = resp.headers_mut();
        for (name, value) in [
            ("etag", v.etag.clone()),
            ("cache-control", max_age),
            ("vary", "A2A-Version".to_string()),
        ] {
            h.insert(
                name,
                http::HeaderValue::from_str(&value).expect("ASCII header values"),
            );
        }
        resp
    }

    /// Records a client call's card decision.
    pub fn record_use(&self, u: CardUse) {
        self.state.borrow_mut().uses.push(u);
    }

    /// Records a client card fetch.
    pub fn record_fetch(&self, f: CardFetch) {
        self.state.borrow_mut().fetches.push(f);
    }

    /// Records a request an extra host received.
    pub fn record_ingress(&self, i: Ingress) {
        self.state.borrow_mut().ingress.push(i);
    }

    /// What the checkers read.
    pub fn record(&self) -> CardRecord {
        let s = self.state.borrow();
        let mut uses = s.uses.clone();
        uses.sort_by_key(|u| u.op_id);
        CardRecord {
            enabled: true,
            max_age_ms: s.max_age_ms,
            versions: s.versions.clone(),
            revoked: s
                .keys
                .iter()
                .filter_map(|(kid, k)| k.revoked_ms.map(|at| (kid.clone(), at)))
                .collect(),
            uses,
            fetches: s.fetches.clone(),
            ingress: s.ingress.clone(),
        }
    }

    /// The current card as served (for tests).
    pub fn current(&self) -> CardVersion {
        let s = self.state.borrow();
        s.versions[s.current].clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rotation_revokes_the_old_key_and_re_signs() {
        let a = CardAuthority::new(CardSetup::default(), false, Trace::new(false));
        assert!(a.trusted_key("key-1", 0).is_some());
        a.apply(&CardChange::RevokeKey, 100);
        assert!(a.trusted_key("key-1", 100).is_none());
        assert!(a.trusted_key("key-2", 100).is_some());
        let v = a.current();
        assert_eq!(
            (v.revision, v.kid.as_deref(), v.deadline_ms),
            (2, Some("key-2"), 2100)
        );
        let r = a.record();
        let first = r.versions[0].clone();
        assert_eq!(r.stale_at(&first, 2099), None);
        assert!(r.stale_at(&first, 2100).is_some());
    }

    #[test]
    fn a_tampered_copy_is_served_but_is_no_revision() {
        let a = CardAuthority::new(CardSetup::default(), false, Trace::new(false));
        a.apply(&CardChange::Tamper, 5);
        let v = a.current();
        assert!(!v.legit);
        assert_eq!(v.kid, None);
        assert!(v.execution_url.contains(TAMPER_HOST));
        let r = a.record();
        assert_eq!(r.stale_at(&r.versions[0], 1_000_000), None);
        a.apply(&CardChange::Streaming(false), 10);
        let v = a.current();
        assert!(v.legit && !v.streaming && v.execution_url.contains("router"));
        assert!(
            !a.streams(),
            "the agent stops streaming with the revision that says so"
        );
    }
}
