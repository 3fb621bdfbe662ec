//! The router: an HTTP reverse proxy in front of the replicas.
//!
//! It reads the JSON-RPC body to find the routing key (`params.message.contextId`, or the
//! `X-A2A-Context-Id` header for body-less calls such as CancelTask), asks its [`Strategy`]
//! for a replica, forwards the request on a fresh connection and streams the answer back
//! (server-sent events included). A test or scenario may pin a request to one replica with
//! the `X-A2A-Chaos-Target` header.
//!
//! Which replicas are ready comes from the driver, as a Kubernetes endpoints controller
//! would tell a Service: a killed pod is removed at once and returns when restarted.
//!
//! The router also injects the request-level fault "lost reply": it forwards the request,
//! lets the replica finish it, and then drops the connection instead of answering.
//!
//! Adding a strategy is one file in this folder plus one line in [`STRATEGIES`].

mod affinity_failover;
mod context_affinity;
mod random;
mod round_robin;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use http::{Response, StatusCode};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use crate::host::Host;
use crate::net::{self, BoxBody, BoxError, Call};
use crate::trace::{Event, Trace};

pub use crate::protocol::{CONTEXT_HEADER, ROUTER_PORT as PORT, TARGET_HEADER};

/// What a strategy may look at to pick a replica.
#[derive(Debug, Clone)]
pub struct RouteInput<'a> {
    /// The routing key: contextId from the body or the context header.
    pub context_id: Option<&'a str>,
    /// Which replicas are ready, by index.
    pub ready: &'a [bool],
}

/// A routing strategy: picks the replica index for one request.
pub trait Strategy {
    /// Picks a replica in `0..input.ready.len()`.
    fn pick(&mut self, input: &RouteInput<'_>, rng: &mut ChaCha8Rng) -> usize;
}

/// Makes a fresh strategy (each router host gets its own state).
pub type MakeStrategy = fn() -> Box<dyn Strategy>;

/// The strategies, by name, with their constructors.
#[rustfmt::skip]
pub const STRATEGIES: &[(&str, MakeStrategy)] = &[
    ("round-robin", round_robin::new),
    ("context-affinity", context_affinity::new),
    ("random", random::new),
    ("affinity-failover", affinity_failover::new),
];

/// A strategy by name.
pub fn strategy(name: &str) -> Option<Box<dyn Strategy>> {
    maker(name).map(|make| make())
}

/// The constructor of the built-in strategy named `name`: where a name read from outside
/// becomes a strategy.
pub fn maker(name: &str) -> Option<MakeStrategy> {
    STRATEGIES.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// Names of the strategies.
pub fn names() -> Vec<&'static str> {
    STRATEGIES.iter().map(|(n, _)| *n).collect()
}

/// The stable hash of a context id onto `n` replicas (FNV-1a; never a seeded hasher).
pub fn context_slot(context_id: &str, n: usize) -> usize {
    (crate::trace::Fnv::of(context_id) % n as u64) as usize
}

/// State the driver shares with the router.
#[derive(Clone)]
pub struct RouterControl {
    /// Ready flag per replica.
    pub ready: Rc<RefCell<Vec<bool>>>,
    /// Probability that a reply is dropped after the replica answered.
    pub drop_reply_rate: Rc<Cell<f64>>,
    /// Drop the next reply, whatever the rate (scripted `drop-reply`).
    pub drop_next: Rc<Cell<bool>>,
    /// The card publisher, in runs that simulate the card: the router serves its card.
    pub cards: Rc<RefCell<Option<crate::card::CardAuthority>>>,
}

impl RouterControl {
    /// All `n` replicas ready, no replies dropped.
    pub fn new(n: usize) -> Self {
        RouterControl {
            ready: Rc::new(RefCell::new(vec![true; n])),
            drop_reply_rate: Rc::new(Cell::new(0.0)),
            drop_next: Rc::new(Cell::new(false)),
            cards: Rc::default(),
        }
    }
}

struct Router {
    strategy: RefCell<Box<dyn Strategy>>,
    rng: RefCell<ChaCha8Rng>,
    control: RouterControl,
    trace: Trace,
    forward_timeout: Duration,
}

/// The `router` host.
pub async fn serve(
    make: MakeStrategy,
    seed: u64,
    control: RouterControl,
    trace: Trace,
) -> turmoil::Result {
    let strategy = make();
    let router = Rc::new(Router {
        strategy: RefCell::new(strategy),
        rng: RefCell::new(ChaCha8Rng::seed_from_u64(crate::trace::derive_seed(
            seed, "router", 0,
        ))),
        control,
        trace,
        forward_timeout: Duration::from_secs(5),
    });
    net::serve(PORT, move |req| {
        let router = router.clone();
        async move { router.forward(req).await }
    })
    .await
}

impl Router {
    async fn forward(
        &self,
        req: http::Request<hyper::body::Incoming>,
    ) -> Result<Response<BoxBody>, BoxError> {
        if req.method() == http::Method::GET && req.uri().path() == crate::card::CARD_PATH {
            if let Some(cards) = self.control.cards.borrow().as_ref() {
                return Ok(cards.serve(req.headers()));
            }
        }
        let (parts, body) = req.into_parts();
        let body = match net::read_request(body).await {
            Ok(b) => b,
            Err(e) => {
                return Ok(net::json_response(
                    StatusCode::BAD_REQUEST,
                    &serde_json::json!({"error": e.to_string()}),
                ))
            }
        };
        let header = |name: &str| {
            parts
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let parsed: Option<Value> = serde_json::from_slice(&body).ok();
        let body_context = parsed
            .as_ref()
            .and_then(|v| v.pointer("/params/message/contextId"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let context = body_context.or_else(|| header(CONTEXT_HEADER));
        let method = parsed
            .as_ref()
            .and_then(|v| v.get("method"))
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        let ready = self.control.ready.borrow().clone();
        // The pin is text from outside: it becomes a host here.
        let pinned = header(TARGET_HEADER)
            .and_then(|t| Host::parse(&t).replica_index())
            .filter(|i| *i < ready.len());
        let index = match pinned {
            Some(i) => i,
            None => self.strategy.borrow_mut().pick(
                &RouteInput {
                    context_id: context.as_deref(),
                    ready: &ready,
                },
                &mut self.rng.borrow_mut(),
            ),
        };
        let target = Host::Replica(index);
        self.trace.record(
            Host::Router,
            Event::Forward {
                method: method.to_string(),
                context: context.clone(),
                target: target.clone(),
                pinned: pinned.is_some(),
            },
        );
        let mut call = Call::post_json(
            target.to_string(),
            crate::protocol::REPLICA_PORT,
            parts.uri.path(),
            body.to_vec(),
            self.forward_timeout,
        );
        call.method = parts.method.clone();
        for (name, keep) in [
            ("a2a-version", "a2a-version"),
            (CONTEXT_HEADER, CONTEXT_HEADER),
            ("authorization", "authorization"),
        ] {
            if let Some(v) = header(name) {
                call = call.header(keep, v);
            }
        }
        let upstream = match net::send_streaming(&call).await {
            Ok(r) => r,
            Err(e) => {
                self.trace.record(
                    Host::Router,
                    Event::Unreachable {
                        target: target.clone(),
                        error: e.to_string(),
                    },
                );
                return Ok(net::json_response(
                    StatusCode::BAD_GATEWAY,
                    &serde_json::json!({"error": format!("{target}: {e}")}),
                ));
            }
        };
        let drop_reply = self.control.drop_next.replace(false) || {
            let rate = self.control.drop_reply_rate.get();
            rate > 0.0 && self.rng.borrow_mut().random_bool(rate.min(1.0))
        };
        if drop_reply {
            // Let the replica finish its answer, then lose it.
            let _ = net::read_body(upstream.body, net::BODY_BYTES_MAX).await;
            self.trace.record(
                Host::Router,
                Event::DropReply {
                    method: method.to_string(),
                    target: target.clone(),
                },
            );
            return Err("reply dropped by fault injection".into());
        }
        Ok(upstream.relay())
    }
}
