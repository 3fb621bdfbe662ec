//! The client's card bootstrap: fetch, verify, cache, and the route of every call.
//!
//! As the seeds describe Mastra's `A2AAgent` and Cognigy's client node: the client fetches
//! `/.well-known/agent-card.json` from the agent's origin with `A2A-Version: 1.0`, checks
//! it as its profile's `[card]` knobs say, and takes the execution URL and the streaming
//! capability from it. Every call then goes to that URL, carrying the caller's bearer token
//! as every call does ([`crate::auth::authorization_for`]). When the card is fetched again is the policy:
//!
//! - `lifetime`: never (Mastra: the bootstrap is cached for the object's lifetime unless
//!   `forceRefresh`);
//! - `ttl`: after `ttl_ms`, whatever the server said (Cognigy: 10 minutes);
//! - `http`: after the served `Cache-Control: max-age`, counted from when the fetch was
//!   sent, with a conditional GET (`If-None-Match`) answered `304` when nothing changed.
//!
//! Signatures are checked only on a real fetch or a revalidation, never on a cache hit
//! (Mastra's hook runs only on a real fetch): `none`, `if-present` (an unsigned card passes,
//! as `verifyAgentCardSignatureIfPresent` lets it) or `required`. The key provider is the
//! authority's current key set, as a JWKS fetch would be. With `pin_origins`, a card whose
//! execution origin is not the card's own origin (the audience of the credential) is
//! refused. A refused card is never used, nor is the card it was meant to replace: the
//! client fails closed, and every call is a definite `fail` that sent nothing until a card
//! passes.
//!
//! The fetch carries the caller's token unless the profile turns discovery credentials off
//! (`card.discovery_credential = false`, Cognigy's default: discovery needs no key). Either
//! way a fetched card is only that: the card was fetchable. It authorises nothing, and every
//! call still carries its principal's token, which the server checks on its own.
//!
//! Every call's decision ([`CardUse`]) and every fetch ([`CardFetch`]) is logged in the
//! authority, for the `credential-audience` and `card-freshness` checkers.

use std::cell::RefCell;
use std::time::Duration;

use serde_json::Value;

use super::{canonical_bytes, execution_url, origin_of, sign, streams, CardAuthority};
use super::{CARD_ORIGIN, CARD_PATH};
use crate::auth;
use crate::host::Host;
use crate::model::{CardCache, CardKnobs, CardVerify};
use crate::net::{self, Call};
use crate::trace::{now_ms, Event, Tone, Trace};

/// One client call's card decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardUse {
    /// The history op it belongs to.
    pub op_id: u64,
    /// When the call was invoked, ms.
    pub invoke_ms: u64,
    /// The op, as tables name it (`send c1#2`).
    pub label: String,
    /// The JSON-RPC method.
    pub method: String,
    /// The `ETag` of the card the call used (`None`: no card passed).
    pub etag: Option<String>,
    /// The origin the call was sent to (`None`: not sent).
    pub origin: Option<String>,
    /// The audience of the credential the call carried (`None`: no credential).
    pub credential_audience: Option<String>,
    /// Whose credential it was.
    pub principal: String,
    /// Why the client did not send the call.
    pub refused: Option<String>,
}

/// One card fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardFetch {
    /// When the request was sent, ms.
    pub at_ms: u64,
    /// When the answer was read, ms.
    pub complete_ms: u64,
    /// The HTTP status (`None`: no answer).
    pub status: Option<u16>,
    /// The `ETag` served.
    pub etag: Option<String>,
    /// `accepted ...`, `refused: ...`, `not modified`, `failed: ...`.
    pub outcome: String,
    /// Whose credential the fetch carried, and its audience (`None`: discovery without
    /// credentials, the profile's `card.discovery_credential = false`). A fetch that
    /// succeeded shows the card is fetchable, not that any call is authorised.
    pub credential: Option<(String, String)>,
}

/// Where a call goes, from the card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub host: String,
    pub port: u16,
    pub path: String,
    /// `http://host:port`.
    pub origin: String,
    /// The card's streaming capability.
    pub streaming: bool,
    /// The card's `ETag`.
    pub etag: String,
}

#[derive(Debug, Clone)]
struct Cached {
    body: Value,
    etag: String,
    route: Route,
    /// When the fetch that got it (or last revalidated it) was sent.
    base_ms: u64,
    /// `Cache-Control: max-age` it came with, ms.
    max_age_ms: u64,
    /// The key whose signature verified (`None`: not checked, or unsigned and let through).
    kid: Option<String>,
}

/// A client's card cache: one per client object.
pub struct CardClient {
    knobs: CardKnobs,
    authority: CardAuthority,
    timeout: Duration,
    trace: Trace,
    cached: RefCell<Option<Cached>>,
    /// One bootstrap at a time: concurrent calls wait for the fetch in flight.
    gate: tokio::sync::Mutex<()>,
}

impl CardClient {
    /// A client with an empty cache, fetching with `timeout`.
    pub fn new(
        knobs: CardKnobs,
        authority: CardAuthority,
        timeout: Duration,
        trace: Trace,
    ) -> Self {
        CardClient {
            knobs,
            authority,
            timeout,
            trace,
            cached: RefCell::new(None),
            gate: tokio::sync::Mutex::new(()),
        }
    }

    /// Whether the card the client would use now says the agent streams (`None`: no card
    /// passes).
    pub async fn streams(&self, principal: &str) -> Option<bool> {
        self.card(principal).await.ok().map(|c| c.route.streaming)
    }

    /// The route of one call as `principal`, logged as op `op_id`: the card's execution
    /// URL (where the call carries the principal's token), or why nothing is sent.
    pub async fn route(
        &self,
        op_id: u64,
        invoke_ms: u64,
        principal: &str,
        label: &str,
        method: &str,
        needs_streaming: bool,
    ) -> Result<Route, NotSent> {
        let result = match self.card(principal).await {
            Ok(c) if needs_streaming && !c.route.streaming => Err((
                Some(c.etag),
                "the card says the agent does not stream".to_string(),
            )),
            Ok(c) => Ok(c.route),
            Err(why) => Err((None, why)),
        };
        let mut u = CardUse {
            op_id,
            invoke_ms,
            label: label.to_string(),
            method: method.to_string(),
            etag: None,
            origin: None,
            credential_audience: None,
            principal: principal.to_string(),
            refused: None,
        };
        match &result {
            Ok(r) => {
                u.etag = Some(r.etag.clone());
                u.origin = Some(r.origin.clone());
                u.credential_audience = auth::authorization_for(principal)
                    .and_then(|h| auth::claims_unverified(h.strip_prefix("Bearer ")?))
                    .map(|c| c.audience);
            }
            Err((etag, why)) => {
                u.etag = etag.clone();
                u.refused = Some(why.clone());
            }
        }
        self.authority.record_use(u);
        result.map_err(|(_, why)| NotSent(why))
    }

    /// The card to use now: the cached one while the policy keeps it, else fetched.
    async fn card(&self, principal: &str) -> Result<Cached, String> {
        let _one_at_a_time = self.gate.lock().await;
        let now = now_ms();
        let prior = self.cached.borrow().clone();
        if let Some(c) = &prior {
            let fresh = match self.knobs.cache {
                CardCache::Lifetime => true,
                CardCache::Ttl => now < c.base_ms + self.knobs.ttl_ms,
                CardCache::Http => now < c.base_ms + c.max_age_ms,
            };
            if fresh {
                return Ok(c.clone());
            }
        }
        self.fetch(prior, principal).await
    }

    /// Fetches the card, with the caller's token (its audience is the card's origin).
    async fn fetch(&self, prior: Option<Cached>, principal: &str) -> Result<Cached, String> {
        let at_ms = now_ms();
        let mut call = Call::get(
            "router",
            crate::protocol::ROUTER_PORT,
            CARD_PATH,
            self.timeout,
        )
        .header("a2a-version", "1.0");
        // Discovery carries the caller's credential only where the client is set to
        // (Cognigy's "Use Authentication for Agent Discovery" is off by default); every
        // call carries it regardless.
        let credential =
            auth::authorization_for(principal).filter(|_| self.knobs.fetch_with_credential());
        if let Some(a) = &credential {
            call = call.header("authorization", a.clone());
        }
        let conditional = self.knobs.cache == CardCache::Http;
        if let (true, Some(p)) = (conditional, &prior) {
            call = call.header("if-none-match", p.etag.clone());
        }
        let reply = net::send(&call).await;
        let mut log = CardFetch {
            at_ms,
            complete_ms: now_ms(),
            status: None,
            etag: None,
            outcome: String::new(),
            credential: credential
                .as_deref()
                .and_then(|h| auth::claims_unverified(h.strip_prefix("Bearer ")?))
                .map(|c| (principal.to_string(), c.audience)),
        };
        let result = match reply {
            Err(e) => Err(format!("card fetch failed: {e}")),
            Ok(reply) => {
                log.status = Some(reply.status.as_u16());
                let header = |name: &str| {
                    reply
                        .headers
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string)
                };
                log.etag = header("etag");
                let max_age_ms = header("cache-control")
                    .and_then(|v| {
                        v.split(',')
                            .find_map(|d| d.trim().strip_prefix("max-age=")?.parse::<u64>().ok())
                    })
                    .unwrap_or(0)
                    * 1000;
                match (reply.status.as_u16(), prior) {
                    (304, Some(mut p)) => {
                        // Revalidated: the same card, checked again against today's keys.
                        self.verify(&p.body, at_ms).map(|kid| {
                            p.base_ms = at_ms;
                            p.max_age_ms = max_age_ms;
                            p.kid = kid;
                            p
                        })
                    }
                    (200, _) => match serde_json::from_slice::<Value>(&reply.body) {
                        Err(e) => Err(format!("unreadable card: {e}")),
                        Ok(body) => self.accept(
                            body,
                            log.etag.clone().unwrap_or_default(),
                            at_ms,
                            max_age_ms,
                        ),
                    },
                    (status, _) => Err(format!("card fetch answered HTTP {status}")),
                }
            }
        };
        log.outcome = match &result {
            Ok(c) if log.status == Some(304) => format!("not modified; kept {}", c.etag),
            Ok(c) => format!(
                "accepted ({}): calls go to {}, streaming {}",
                match (&c.kid, self.knobs.verify) {
                    (Some(k), _) => format!("signed by {k}"),
                    (None, CardVerify::None) => "signature not checked".into(),
                    (None, _) => "unsigned, let through".into(),
                },
                c.route.origin,
                if c.route.streaming { "on" } else { "off" }
            ),
            Err(why) => format!("refused: {why}"),
        };
        self.trace.record(
            Host::Client,
            Event::note(
                if log.outcome.starts_with("refused") {
                    Tone::Bad
                } else {
                    Tone::Plain
                },
                format!(
                    "card fetch -> {} {}",
                    log.status.map_or("-".to_string(), |s| s.to_string()),
                    log.outcome
                ),
            ),
        );
        self.authority.record_fetch(log);
        match &result {
            Ok(c) => *self.cached.borrow_mut() = Some(c.clone()),
            // A card that was refused is forgotten; one that could not be fetched is kept
            // for the next revalidation, but not used.
            Err(_) if self.knobs.cache != CardCache::Http => *self.cached.borrow_mut() = None,
            Err(_) => {}
        }
        result
    }

    /// Checks a freshly fetched card and makes it the cache entry.
    fn accept(
        &self,
        body: Value,
        etag: String,
        at_ms: u64,
        max_age_ms: u64,
    ) -> Result<Cached, String> {
        let kid = self.verify(&body, at_ms)?;
        let url = execution_url(&body).ok_or("the card names no execution URL")?;
        let (host, port, path) = crate::protocol::parse_http_url(url)
            .ok_or_else(|| format!("the card's execution URL `{url}` is not an http:// URL"))?;
        let origin = origin_of(url).unwrap_or_default();
        if self.knobs.pin_origins && origin != CARD_ORIGIN {
            return Err(format!(
                "the card names execution origin {origin}, outside the allowlist [{CARD_ORIGIN}]"
            ));
        }
        let route = Route {
            host,
            port,
            path,
            origin,
            streaming: streams(&body),
            etag: etag.clone(),
        };
        Ok(Cached {
            body,
            etag,
            route,
            base_ms: at_ms,
            max_age_ms,
            kid,
        })
    }

    /// The signature policy: `Ok` with the key that verified, if any.
    fn verify(&self, card: &Value, now: u64) -> Result<Option<String>, String> {
        let signatures = card
            .get("signatures")
            .and_then(Value::as_array)
            .filter(|s| !s.is_empty());
        let signatures = match (self.knobs.verify, signatures) {
            (CardVerify::None, _) | (CardVerify::IfPresent, None) => return Ok(None),
            (CardVerify::Required, None) => return Err("the card is unsigned".into()),
            (_, Some(s)) => s,
        };
        let bytes = canonical_bytes(card);
        let mut kids = Vec::new();
        for sig in signatures {
            let kid = sig
                .pointer("/protected/kid")
                .and_then(Value::as_str)
                .unwrap_or("?");
            kids.push(kid.to_string());
            let given = sig.get("signature").and_then(Value::as_str).unwrap_or("");
            if let Some(secret) = self.authority.trusted_key(kid, now) {
                if sign(&secret, &bytes) == given {
                    return Ok(Some(kid.to_string()));
                }
            }
        }
        Err(format!(
            "no signature verifies (key {}: unknown, revoked, or the payload was altered)",
            kids.join(", ")
        ))
    }
}

/// Why the card client sent no call ([`CardClient::route`]): no card passes its checks, or
/// the card says the agent cannot do what the call needs. The reason is the card layer's
/// own sentence, as the trace and the call's `fail` show it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotSent(pub String);
