//! `a2a-chaos proxy`: a recording reverse proxy in front of a user's real replicas.
//!
//! Real sockets, real time (tokio, never turmoil): it listens on one address, routes each
//! A2A JSON-RPC request to one of the `--upstream` URLs with one of the router's strategies
//! ([`crate::router::STRATEGIES`], the same code the simulation routes with), streams the
//! answer back (server-sent events included) and writes every request, answer and event
//! to a history file ([`super::recording`]). It also serves the live ledger
//! ([`super::observer`]: `/effect`, `/save`, `/read`, the same bodies as in `live`), so
//! replicas using the adapters report their effects and saves into the same history.
//!
//! Request-level faults, each deterministic from `--seed`: client request `k` (1-based,
//! JSON-RPC POSTs only) is hit by a fault with period `N` when `(k + seed) % N == 0`.
//! - duplicate: once the original's answer has arrived, the same request is sent again,
//!   routed as a new request; its answer is recorded and not relayed;
//! - drop reply: the upstream's whole answer is read and recorded, then the client's
//!   connection is closed without an answer (the client sees `info`: unknown outcome);
//! - delay: the request waits before it is forwarded.
//!
//! The ledger's effects and saves are written as they arrive (every 100 ms), so a proxy that
//! is killed keeps them up to its last flush. It stops on Ctrl-C, SIGTERM, `--duration-ms`
//! or `--max-requests`; then it asks every upstream for every task it saw (GetTask, or
//! tasks/get on the 0.3 wire) and writes the copies as `final-task` lines, the last effects
//! and saves, and a `stop` line. As a load balancer it rewrites the agent card's URLs to
//! its own, and can health-check, retry on the next upstream and keep sticky sessions
//! (`balancer.rs`).
//!
//! The faults' periods are in `faults.rs`, the final read (with the credentials it sends)
//! in `final_read.rs`. The listener and the ledger keep the bounds of
//! [`crate::net::ServerLimits`]; the run ends in [`Stopped`]: as asked, or a failure.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{Response, StatusCode};
use http_body_util::BodyExt;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use crate::error::InputError;
use crate::host::Host;
use crate::net::{self, BoxBody, BoxError, Call, RealNet};
use crate::router::{RouteInput, Strategy, CONTEXT_HEADER, TARGET_HEADER};
use crate::trace::{now_ms, Trace};

use super::recording::{Line, Recorder, SaveLine};
use super::wire;
use super::{observer, recording};

mod balancer;
mod faults;
mod final_read;

pub use balancer::Balancer;
pub use faults::Faults;

/// Request headers passed on to the upstream (the rest are hop-by-hop or the proxy's).
const FORWARDED: &[&str] = &[
    "a2a-version",
    "authorization",
    "accept",
    "x-a2a-extensions",
    CONTEXT_HEADER,
];

/// What `a2a-chaos proxy` was asked to do.
#[derive(Debug, Clone)]
pub struct ProxyOptions {
    pub listen: SocketAddr,
    /// Where the ledger listens (port 0: any free one, printed).
    pub ledger_listen: SocketAddr,
    /// `http://host:port[/path]`, one per replica.
    pub upstreams: Vec<String>,
    pub routing: String,
    pub seed: u64,
    pub out: PathBuf,
    pub faults: Faults,
    pub duration: Option<Duration>,
    pub max_requests: Option<u64>,
    /// Read every task back from every upstream when stopping.
    pub final_read: bool,
    /// How long one forwarded request may take to answer its head.
    pub forward_timeout: Duration,
    /// The Bearer token the final read sends (`--token`); without it, each task is read
    /// with the `Authorization` its client sent.
    pub token: Option<String>,
    /// Overwrite an existing history (`--force`); without it one is refused.
    pub force: bool,
    /// The bounds of the proxy's listener and ledger.
    pub limits: net::ServerLimits,
    /// Health checks, retries, sticky sessions, the card rewrite.
    pub balancer: Balancer,
}

struct Upstream {
    /// `replica-i`, mapped to its address in the proxy's [`RealNet`].
    name: String,
    /// The URL's path, prefixed to every request's path.
    prefix: String,
}

struct Proxy {
    upstreams: Vec<Upstream>,
    strategy: RefCell<Box<dyn Strategy>>,
    rng: RefCell<ChaCha8Rng>,
    options: ProxyOptions,
    recorder: Recorder,
    /// Recorded exchanges, client requests and injected duplicates alike.
    seq: Cell<u64>,
    /// Client JSON-RPC requests (what the fault periods count).
    requests: Cell<u64>,
    completed: Cell<u64>,
    /// Task id → context id, learned from answers: GetTask and CancelTask carry no context.
    contexts: RefCell<BTreeMap<String, String>>,
    /// Task id → the `Authorization` of the first request whose answer named it: what the
    /// final read sends (a server scoping tasks to their owner answers only them).
    credentials: RefCell<BTreeMap<String, String>>,
    /// A 0.3 method was seen: read the final tasks with tasks/get.
    v03: Cell<bool>,
    /// Which upstreams are in the rotation (all, without health checks).
    ready: Rc<RefCell<Vec<bool>>>,
    done: Rc<tokio::sync::Notify>,
    /// How many of the ledger's effects and saves are in the file.
    flushed: Cell<(usize, usize)>,
}

/// How often the ledger's new effects and saves are written to the history.
const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// Runs the proxy until it is stopped; prints its addresses first and a summary last.
pub fn run(options: ProxyOptions) -> Result<Stopped, InputError> {
    if options.upstreams.is_empty() {
        return Err(InputError::new(
            "--upstream",
            "name at least one upstream URL",
        ));
    }
    let strategy = crate::router::strategy(&options.routing).ok_or_else(|| {
        InputError::new(
            "--routing",
            format!(
                "unknown routing strategy `{}`; known: {}",
                options.routing,
                crate::router::names().join(", ")
            ),
        )
    })?;
    let net = RealNet::new();
    net.set_limits(options.limits);
    let mut upstreams = Vec::new();
    for (i, url) in options.upstreams.iter().enumerate() {
        let (host, port, prefix) = crate::protocol::parse_http_url(url).ok_or_else(|| {
            InputError::new(
                "--upstream",
                format!("`{url}` is not an http://host:port URL"),
            )
        })?;
        let addr = (host.as_str(), port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| InputError::new("--upstream", format!("cannot resolve `{url}`")))?;
        let name = Host::Replica(i).to_string();
        net.map(&name, addr);
        upstreams.push(Upstream {
            name,
            prefix: prefix.trim_end_matches('/').to_string(),
        });
    }
    let bind = |host: &str, port: u16, addr: SocketAddr, flag: &str| {
        net.bind(host, port, addr)
            .map_err(|e| InputError::new(flag, format!("cannot listen on {addr}: {e}")))
    };
    let listen = bind("proxy", crate::router::PORT, options.listen, "--listen")?;
    let ledger = bind(
        "ledger",
        crate::ground::ledger::PORT,
        options.ledger_listen,
        "--ledger-listen",
    )?;
    let recorder = Recorder::create(&options.out, options.force).map_err(|e| {
        InputError::new(
            options.out.display().to_string(),
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                "a history is there already: pass --force to overwrite it, or choose another --out"
                    .to_string()
            } else {
                format!("cannot write: {e}")
            },
        )
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| InputError::new("proxy", format!("cannot start a runtime: {e}")))?;
    recorder.write(&Line::Start {
        version: recording::VERSION,
        tool: format!("a2a-chaos {}", env!("CARGO_PKG_VERSION")),
        upstreams: options.upstreams.clone(),
        routing: options.routing.clone(),
        seed: options.seed,
        faults: options.faults.describe(),
    });
    let rng = ChaCha8Rng::seed_from_u64(crate::trace::derive_seed(options.seed, "router", 0));
    let proxy = Rc::new(Proxy {
        upstreams,
        strategy: RefCell::new(strategy),
        rng: RefCell::new(rng),
        options: options.clone(),
        recorder,
        seq: Cell::new(0),
        requests: Cell::new(0),
        completed: Cell::new(0),
        contexts: RefCell::default(),
        credentials: RefCell::default(),
        v03: Cell::new(false),
        ready: Rc::new(RefCell::new(vec![true; options.upstreams.len()])),
        done: Rc::new(tokio::sync::Notify::new()),
        flushed: Cell::new((0, 0)),
    });
    println!(
        "proxy on http://{listen}/ -> {} upstream(s) ({} routing, seed {}); ledger on http://{ledger}/ (POST /effect, /save, /read); recording to {}",
        proxy.upstreams.len(),
        options.routing,
        options.seed,
        options.out.display()
    );
    for f in options.faults.describe() {
        println!("fault: {f}");
    }
    for b in options.balancer.describe() {
        println!("balancer: {b}");
    }
    use std::io::Write as _;
    let _ = std::io::stdout().flush();

    net::install_real(net.clone());
    let ground = observer::Ground::default();
    let local = tokio::task::LocalSet::new();
    let reason = local.block_on(&runtime, async {
        let (g, t) = (ground.clone(), Trace::new(false));
        tokio::task::spawn_local(async move { observer::serve(g, t).await });
        if let Some(every) = options.balancer.health_every {
            let upstreams = proxy
                .upstreams
                .iter()
                .map(|u| (u.name.clone(), u.prefix.clone()))
                .collect();
            let ready = proxy.ready.clone();
            tokio::task::spawn_local(balancer::health_checks(upstreams, ready, every));
        }
        let p = proxy.clone();
        let served = tokio::task::spawn_local(async move {
            net::serve(crate::router::PORT, move |req| {
                let p = p.clone();
                async move { p.handle(req).await }
            })
            .await
            .map_err(|e| e.to_string())
        });
        // The ledger's effects and saves go to the file as they arrive, so a proxy that is
        // killed keeps what it heard up to its last flush.
        let flushing = {
            let (p, g) = (proxy.clone(), ground.clone());
            tokio::task::spawn_local(async move {
                loop {
                    tokio::time::sleep(FLUSH_EVERY).await;
                    p.flush_ground(&g);
                }
            })
        };
        let reason = tokio::select! {
            // The listener survives failed accepts (net::ServerLimits): its end is a failure.
            r = served => Stopped::Failed(match r {
                Ok(Err(e)) => format!("the listener failed: {e}"),
                _ => "the listener stopped".to_string(),
            }),
            why = stop_signal() => Stopped::Asked(why),
            _ = async {
                match options.duration {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            } => Stopped::Asked("--duration-ms elapsed".to_string()),
            _ = proxy.done.notified() => Stopped::Asked("--max-requests reached".to_string()),
        };
        if options.final_read {
            proxy.read_final_tasks().await;
        }
        flushing.abort();
        proxy.flush_ground(&ground);
        reason
    });
    net::uninstall_real();
    let (effects, saves) = proxy.flushed.get();
    proxy.recorder.write(&Line::Stop {
        at_ms: net.elapsed().as_millis() as u64,
        reason: reason.why().to_string(),
        requests: proxy.requests.get(),
    });
    println!(
        "stopped ({}): {} requests, {} effects, {} saves; {} lines in {}",
        reason.why(),
        proxy.requests.get(),
        effects,
        saves,
        proxy.recorder.lines(),
        options.out.display()
    );
    Ok(reason)
}

/// Why the proxy stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// As asked: a signal, `--duration-ms` or `--max-requests` (exit 0).
    Asked(String),
    /// Something broke (exit 1).
    Failed(String),
}

impl Stopped {
    /// The reason in words, as the `stop` line records it.
    pub fn why(&self) -> &str {
        match self {
            Stopped::Asked(w) | Stopped::Failed(w) => w,
        }
    }
}

/// Ctrl-C or SIGTERM, by name.
async fn stop_signal() -> String {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            return tokio::select! {
                _ = tokio::signal::ctrl_c() => "interrupted".to_string(),
                _ = term.recv() => "SIGTERM".to_string(),
            };
        }
    }
    let _ = tokio::signal::ctrl_c().await;
    "interrupted".to_string()
}

/// What an answer's head says: the replica that named itself, and whether a stream follows.
fn head_of(headers: &http::HeaderMap) -> (Option<String>, bool) {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    (
        text(crate::protocol::REPLICA_HEADER).map(str::to_string),
        text("content-type").is_some_and(|v| v.starts_with("text/event-stream")),
    )
}

fn bad_gateway(why: String) -> Response<BoxBody> {
    net::json_response(
        StatusCode::BAD_GATEWAY,
        &serde_json::json!({ "error": why }),
    )
}

impl Proxy {
    /// Writes the effects and saves the ledger received since the last flush, in arrival
    /// order (check-history puts saves back in the store's order).
    fn flush_ground(&self, ground: &observer::Ground) {
        let (effects, saves) = self.flushed.get();
        let new_effects = ground.ledger.borrow().effects()[effects..].to_vec();
        for e in &new_effects {
            self.recorder.write(&Line::Effect(e.clone()));
        }
        let new_saves = ground.saves_from(saves);
        for s in &new_saves {
            self.recorder.write(&Line::Save(SaveLine::of(s)));
        }
        self.flushed
            .set((effects + new_effects.len(), saves + new_saves.len()));
    }

    fn next_seq(&self) -> u64 {
        self.seq.set(self.seq.get() + 1);
        self.seq.get()
    }

    /// Learns the tasks an answer names: their contexts (for routing), and the credentials
    /// of the request that saw them (the final read sends the same, unless `--token`).
    fn learn(&self, result: &Value, authorization: Option<&str>) {
        let mut contexts = self.contexts.borrow_mut();
        for (task, context) in wire::task_refs(result) {
            if let Some(a) = authorization {
                self.credentials
                    .borrow_mut()
                    .entry(task.clone())
                    .or_insert_with(|| a.to_string());
            }
            if !context.is_empty() {
                contexts.insert(task, context);
            }
        }
    }

    /// The upstream for a request: pinned by `x-a2a-chaos-target`, else by its sticky
    /// cookie while that upstream is in the rotation, else the strategy's pick by the
    /// request's context (the message's, or its task's, or the header's).
    fn pick(
        &self,
        body: &Value,
        header_context: Option<&str>,
        pinned: Option<&str>,
        cookie: Option<&str>,
    ) -> usize {
        let n = self.upstreams.len();
        // The pin is text from outside: it becomes a host here.
        let index = |t: &str| Host::parse(t).replica_index().filter(|i| *i < n);
        if let Some(i) = pinned.and_then(index) {
            return i;
        }
        let ready = self.ready.borrow().clone();
        let sticky = cookie.filter(|_| self.options.balancer.sticky_cookie);
        if let Some(i) = balancer::sticky_target(sticky).as_deref().and_then(index) {
            if ready[i] {
                return i;
            }
        }
        let context = body
            .pointer("/params/message/contextId")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| {
                wire::request_task(body).and_then(|t| self.contexts.borrow().get(&t).cloned())
            })
            .or_else(|| header_context.map(str::to_string));
        self.strategy.borrow_mut().pick(
            &RouteInput {
                context_id: context.as_deref(),
                ready: &ready,
            },
            &mut self.rng.borrow_mut(),
        )
    }

    fn call(&self, i: usize, path: &str, body: Bytes, headers: &[(&'static str, String)]) -> Call {
        let up = &self.upstreams[i];
        let mut call = Call::post_json(
            up.name.clone(),
            0,
            &format!("{}{}", up.prefix, path),
            Vec::new(),
            self.options.forward_timeout,
        );
        call.body = body;
        call.headers = headers.to_vec();
        call
    }

    async fn handle(
        self: Rc<Self>,
        req: http::Request<hyper::body::Incoming>,
    ) -> Result<Response<BoxBody>, BoxError> {
        let (parts, body) = req.into_parts();
        let header = |name: &str| {
            parts
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let headers: Vec<(&'static str, String)> = FORWARDED
            .iter()
            .filter_map(|h| header(h).map(|v| (*h, v)))
            .collect();
        let auth = header("authorization");
        let cookie = header("cookie");
        let body = match net::read_request(body).await {
            Ok(b) => b,
            Err(e) => {
                return Ok(net::json_response(
                    StatusCode::BAD_REQUEST,
                    &serde_json::json!({"error": e.to_string()}),
                ))
            }
        };
        let path = parts.uri.path().to_string();
        let parsed: Option<Value> = serde_json::from_slice(&body).ok();
        let Some(json) = parsed.filter(|_| parts.method == http::Method::POST) else {
            // Not JSON-RPC (the agent card, a health check): passed on, not recorded.
            let i = self.pick(
                &Value::Null,
                None,
                header(TARGET_HEADER).as_deref(),
                cookie.as_deref(),
            );
            if parts.method == http::Method::GET
                && self.options.balancer.rewrite_card
                && balancer::is_card_path(&path)
            {
                let origin = header("host").unwrap_or_else(|| self.options.listen.to_string());
                return Ok(self.card(i, &path, &headers, &origin).await);
            }
            let mut call = self.call(i, &path, body, &headers);
            call.method = parts.method.clone();
            return Ok(match net::send_streaming(&call).await {
                Ok(up) => up.relay(),
                Err(e) => bad_gateway(format!("{}: {e}", self.upstreams[i].name)),
            });
        };
        if json
            .get("method")
            .and_then(Value::as_str)
            .is_some_and(wire::is_v03)
        {
            self.v03.set(true);
        }
        let k = self.requests.get() + 1;
        self.requests.set(k);
        let faults = self.options.faults;
        let seed = self.options.seed;
        let mut delayed_ms = 0;
        if faults.delay_ms > 0 && Faults::hits(Some(faults.delay_every.max(1)), k, seed) {
            tokio::time::sleep(Duration::from_millis(faults.delay_ms)).await;
            delayed_ms = faults.delay_ms;
        }
        let duplicate = Faults::hits(faults.duplicate_every, k, seed);
        let drop_reply = Faults::hits(faults.drop_reply_every, k, seed);
        let mut i = self.pick(
            &json,
            header(CONTEXT_HEADER).as_deref(),
            header(TARGET_HEADER).as_deref(),
            cookie.as_deref(),
        );
        let mut tried = Vec::new();
        let (seq, upstream) = loop {
            let seq = self.next_seq();
            self.recorder.write(&Line::Request {
                seq,
                at_ms: now_ms(),
                replica: Some(self.upstreams[i].name.clone()),
                a2a_version: header("a2a-version"),
                body: json.clone(),
                duplicate_of: None,
                delayed_ms,
            });
            let call = self.call(i, &path, body.clone(), &headers);
            let sent = net::send_streaming(&call).await;
            tried.push(i);
            let next = self
                .options
                .balancer
                .retry_next
                .then(|| self.next_untried(&tried))
                .flatten();
            match (sent, next) {
                (Ok(up), Some(n)) if up.status == StatusCode::BAD_GATEWAY => {
                    // A 502 the client never sees: recorded as a dropped answer, retried.
                    let (by, _) = head_of(&up.headers);
                    let status = up.status.as_u16();
                    let bytes = net::read_body(up.body, net::BODY_BYTES_MAX).await;
                    let value = bytes.ok().and_then(|b| serde_json::from_slice(&b).ok());
                    self.respond_line(seq, status, i, by, value, false, true, None);
                    i = n;
                }
                (Ok(up), _) => break (seq, up),
                (Err(net::CallError::Unconnected(e)), Some(n)) => {
                    let why = format!(
                        "{}: {e}; retried on the next upstream",
                        self.upstreams[i].name
                    );
                    self.respond_line(seq, 0, i, None, None, false, false, Some(why));
                    i = n;
                }
                (Err(e), _) => {
                    let why = format!("{}: {e}", self.upstreams[i].name);
                    self.respond_line(seq, 0, i, None, None, false, false, Some(why.clone()));
                    self.complete();
                    return Ok(bad_gateway(why));
                }
            }
        };
        let status = upstream.status;
        let (answered_by, is_sse) = head_of(&upstream.headers);
        let mut head = Response::builder().status(status);
        for (name, value) in &upstream.headers {
            if name != http::header::CONTENT_LENGTH && name != http::header::TRANSFER_ENCODING {
                head = head.header(name, value);
            }
        }
        if self.options.balancer.sticky_cookie {
            head = head.header(
                http::header::SET_COOKIE,
                balancer::sticky_cookie(&self.upstreams[i].name),
            );
        }
        if is_sse {
            self.respond_line(
                seq,
                status.as_u16(),
                i,
                answered_by,
                None,
                true,
                false,
                None,
            );
            let again = duplicate.then(|| (path.clone(), body.clone(), headers.clone()));
            if drop_reply {
                let _ = self
                    .relay_events(seq, upstream.body, None, true, auth.as_deref())
                    .await;
                if let Some((p, b, h)) = again {
                    self.duplicate(seq, &json, &p, b, &h).await;
                }
                self.complete();
                return Err("reply dropped by fault injection".into());
            }
            let (tx, out) = net::ChannelBody::channel(16);
            let me = self.clone();
            tokio::task::spawn_local(async move {
                me.relay_events(seq, upstream.body, Some(&tx), false, auth.as_deref())
                    .await;
                if let Some((p, b, h)) = again {
                    me.duplicate(seq, &json, &p, b, &h).await;
                }
                me.complete();
                drop(tx);
            });
            return Ok(head.body(out).expect("upstream response parts are valid"));
        }
        let answer = net::read_body(upstream.body, net::BODY_BYTES_MAX).await;
        let mut bytes = match answer {
            Ok(b) => b,
            Err(e) => {
                let why = format!("{}: {e}", self.upstreams[i].name);
                self.respond_line(
                    seq,
                    status.as_u16(),
                    i,
                    answered_by,
                    None,
                    false,
                    false,
                    Some(why.clone()),
                );
                self.complete();
                return Ok(bad_gateway(why));
            }
        };
        let mut value = serde_json::from_slice::<Value>(&bytes).ok();
        if self.options.balancer.rewrite_card && balancer::is_card_method(&json) {
            // The extended card comes back through the proxy too, as the well-known one does.
            if let Some(answer) = value.as_mut() {
                let origin = header("host").unwrap_or_else(|| self.options.listen.to_string());
                let prefix = &self.upstreams[i].prefix;
                if balancer::rewrite_extended_card(answer, &origin, prefix) {
                    bytes = serde_json::to_vec(answer)
                        .expect("JSON re-serialises")
                        .into();
                }
            }
        }
        if let Some(result) = value.as_ref().and_then(|v| v.get("result")) {
            self.learn(result, auth.as_deref());
        }
        self.respond_line(
            seq,
            status.as_u16(),
            i,
            answered_by,
            value,
            false,
            drop_reply,
            None,
        );
        if duplicate {
            self.duplicate(seq, &json, &path, body, &headers).await;
        }
        self.complete();
        if drop_reply {
            return Err("reply dropped by fault injection".into());
        }
        Ok(head
            .body(net::full(bytes))
            .expect("upstream response parts are valid"))
    }

    #[allow(clippy::too_many_arguments)]
    fn respond_line(
        &self,
        seq: u64,
        status: u16,
        upstream: usize,
        answered_by: Option<String>,
        body: Option<Value>,
        stream: bool,
        dropped: bool,
        error: Option<String>,
    ) {
        self.recorder.write(&Line::Response {
            seq,
            at_ms: now_ms(),
            status,
            replica: Some(answered_by.unwrap_or_else(|| self.upstreams[upstream].name.clone())),
            body,
            stream,
            dropped,
            error,
        });
    }

    fn complete(&self) {
        self.completed.set(self.completed.get() + 1);
        if self
            .options
            .max_requests
            .is_some_and(|m| self.completed.get() >= m)
        {
            self.done.notify_one();
        }
    }

    /// Reads a stream to its end, recording each event (and passing the bytes to `tx`
    /// when the client is to see them); records the `end`.
    async fn relay_events(
        &self,
        seq: u64,
        mut body: hyper::body::Incoming,
        tx: Option<&tokio::sync::mpsc::Sender<Bytes>>,
        dropped: bool,
        authorization: Option<&str>,
    ) {
        let mut buf = BytesMut::new();
        let mut scanned = 0;
        let mut error = None;
        let mut client_gone = false;
        loop {
            match body.frame().await {
                None => break,
                Some(Err(e)) => {
                    error = Some(format!("stream broke: {e}"));
                    break;
                }
                Some(Ok(frame)) => {
                    let Some(data) = frame.data_ref() else {
                        continue;
                    };
                    if let (Some(tx), false) = (tx, client_gone) {
                        client_gone = tx.send(data.clone()).await.is_err();
                    }
                    buf.extend_from_slice(data);
                    loop {
                        match crate::protocol::sse::take_event_from(&mut buf, &mut scanned) {
                            Ok(Some(event)) => {
                                let data = serde_json::from_str::<Value>(&event)
                                    .unwrap_or(Value::String(event));
                                if let Some(result) = data.get("result") {
                                    self.learn(result, authorization);
                                }
                                self.recorder.write(&Line::Event {
                                    seq,
                                    at_ms: now_ms(),
                                    data,
                                });
                            }
                            Ok(None) => break,
                            Err(e) => {
                                error = Some(e.to_string());
                                buf.clear();
                                scanned = 0;
                                break;
                            }
                        }
                    }
                }
            }
        }
        self.recorder.write(&Line::End {
            seq,
            at_ms: now_ms(),
            error,
            dropped,
        });
    }
}
