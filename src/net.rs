//! HTTP/1.1 over turmoil's simulated TCP: one server loop and one client call.
//!
//! Every host in the simulation (router, replicas, store, ledger, webhook) serves hyper on a
//! [`turmoil::net::TcpListener`], and every outbound call opens a fresh connection. A fresh
//! connection per call is deliberate: turmoil has no TCP retransmit, so after a partition a
//! stream that lost data is dead, and reusing it would turn one lost packet into a hung host.
//!
//! Every client call carries a timeout: a partition or a held link could make a call wait
//! forever; a timed-out call is an `info` outcome (it may or may not have happened), never a
//! failure. A call to a crashed host does not wait: as a kernel would, it is refused, and a
//! call in flight to a host that dies is reset ([`crashed`]; turmoil by itself would queue
//! both until the host restarts and then serve them there).
//!
//! The transport seam: the same servers and clients also run over real TCP (`a2a-chaos serve`,
//! `a2a-chaos live`). A thread that installs a [`RealNet`] with [`install_real`] serves on the
//! real listeners it holds (one per port) and connects by host name to the real addresses it
//! maps; a thread without one (every simulation) uses turmoil, exactly as before. The choice
//! is one thread-local read per connection, so the simulation's cost and traces are unchanged.
//!
//! A real server faces clients nobody scripted, so on real TCP every door is bounded
//! ([`ServerLimits`], never applied in a simulation): at most `connections_max` connections
//! at once (at the limit the server stops accepting, and first sheds the oldest connection
//! that has not sent its request head yet, so idle sockets cannot starve real clients); a
//! request head must arrive within `header_timeout`, each piece of a request body within
//! `body_idle_timeout`, and a client that reads nothing of its answer for `write_stall_timeout`
//! is cut. A failed `accept` (EMFILE, ENFILE, ECONNABORTED, ...) is logged and retried after a
//! short backoff: the server never stops on one.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

/// Real TCP for the servers and clients of one thread (see the module docs).
#[derive(Debug)]
pub struct RealNet {
    /// Host name (`router`, `replica-1`, `ledger`) → the real address it answers on.
    hosts: RefCell<BTreeMap<String, SocketAddr>>,
    /// Listeners bound ahead of time, by the port a server asks for (`ledger::PORT`, ...).
    listeners: RefCell<BTreeMap<u16, std::net::TcpListener>>,
    /// When the live run started: the clock of [`crate::trace::now_ms`] outside a simulation.
    start: std::cell::Cell<Instant>,
    /// The same moment by the machine's wall clock, to place times other processes on this
    /// machine report ([`RealNet::ms_at_unix`]).
    start_unix: std::cell::Cell<std::time::SystemTime>,
    /// The bounds every server of this thread keeps.
    limits: std::cell::Cell<ServerLimits>,
}

/// The bounds of a real server (see the module docs). The simulation has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// Most connections served at once, per listener.
    pub connections_max: usize,
    /// How long a connection may take to send its request head.
    pub header_timeout: Duration,
    /// How long a request body may go without a byte.
    pub body_idle_timeout: Duration,
    /// How long a client may read nothing of its answer.
    pub write_stall_timeout: Duration,
}

/// Default time for a request head to arrive (ms).
pub const HEADER_TIMEOUT_MS: u64 = 10_000;

/// Most connections a server serves at once by default, whatever the descriptor limit.
pub const CONNECTIONS_MAX_DEFAULT: usize = 4096;

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            connections_max: ServerLimits::connections_for_fd_limit(fd_limit()),
            header_timeout: Duration::from_millis(HEADER_TIMEOUT_MS),
            body_idle_timeout: Duration::from_secs(10),
            write_stall_timeout: Duration::from_secs(60),
        }
    }
}

impl ServerLimits {
    /// The default connection limit for a process that may open `fds` descriptors: a
    /// quarter of them, less a reserve (every connection may need a few more: the call it
    /// makes to an upstream, the store or the ledger, and the other end when that is in
    /// this process), at least 16 and at most [`CONNECTIONS_MAX_DEFAULT`].
    pub fn connections_for_fd_limit(fds: u64) -> usize {
        (fds.saturating_sub(64) / 4).clamp(16, CONNECTIONS_MAX_DEFAULT as u64) as usize
    }
}

/// This process's soft limit on open descriptors (`RLIMIT_NOFILE`); 1024 when unknown.
pub fn fd_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_cur
    } else {
        1024
    }
}

impl RealNet {
    /// An empty map whose clock starts now.
    pub fn new() -> Rc<Self> {
        Rc::new(RealNet {
            hosts: RefCell::default(),
            listeners: RefCell::default(),
            start: std::cell::Cell::new(Instant::now()),
            start_unix: std::cell::Cell::new(std::time::SystemTime::now()),
            limits: std::cell::Cell::new(ServerLimits::default()),
        })
    }

    /// Sets the bounds the servers of this map keep (for servers started after the call).
    pub fn set_limits(&self, limits: ServerLimits) {
        self.limits.set(limits);
    }

    /// The bounds the servers of this map keep.
    pub fn limits(&self) -> ServerLimits {
        self.limits.get()
    }

    /// Starts the clock again (a pool's next scenario begins at 0 ms).
    pub fn restart_clock(&self) {
        self.start.set(Instant::now());
        self.start_unix.set(std::time::SystemTime::now());
    }

    /// The run's time (ms since it began) of a wall-clock instant another process on this
    /// machine reported, in ms since the Unix epoch; never later than now, never before 0.
    pub fn ms_at_unix(&self, unix_ms: f64) -> u64 {
        let start = self
            .start_unix
            .get()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0);
        let now = self.elapsed().as_millis() as u64;
        let at = (unix_ms - start).max(0.0) as u64;
        at.min(now)
    }

    /// Binds a real listener on `addr` (port 0 picks a free one) for the server that asks for
    /// `port`, and maps `host` to it; returns the bound address.
    pub fn bind(&self, host: &str, port: u16, addr: SocketAddr) -> std::io::Result<SocketAddr> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let bound = listener.local_addr()?;
        self.listeners.borrow_mut().insert(port, listener);
        self.map(host, bound);
        Ok(bound)
    }

    /// Maps a host name to a real address (a server this process does not run).
    pub fn map(&self, host: &str, addr: SocketAddr) {
        self.hosts.borrow_mut().insert(host.to_string(), addr);
    }

    /// The real address of a host, if mapped.
    pub fn addr(&self, host: &str) -> Option<SocketAddr> {
        self.hosts.borrow().get(host).copied()
    }

    /// Time since this map was made.
    pub fn elapsed(&self) -> Duration {
        self.start.get().elapsed()
    }
}

thread_local! {
    static REAL: RefCell<Option<Rc<RealNet>>> = const { RefCell::new(None) };
}

/// Makes this thread's servers and clients use real TCP through `net` (until [`uninstall_real`]).
pub fn install_real(net: Rc<RealNet>) {
    REAL.with(|r| *r.borrow_mut() = Some(net));
}

/// Returns this thread to turmoil's simulated network.
pub fn uninstall_real() {
    REAL.with(|r| *r.borrow_mut() = None);
}

/// This thread's real network, if one is installed.
pub fn real() -> Option<Rc<RealNet>> {
    REAL.with(|r| r.borrow().clone())
}

/// Any error a body or a service may end with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The response body every simulated server returns: a whole buffer or a stream of chunks.
pub type BoxBody = UnsyncBoxBody<Bytes, BoxError>;

/// Largest request or response body a simulated host accepts (1 MiB).
pub const BODY_BYTES_MAX: usize = 1 << 20;

/// A whole-buffer body.
pub fn full(bytes: impl Into<Bytes>) -> BoxBody {
    Full::new(bytes.into())
        .map_err(|never: Infallible| match never {})
        .boxed_unsync()
}

/// A JSON response with the given status.
pub fn json_response(status: StatusCode, value: &impl serde::Serialize) -> Response<BoxBody> {
    let body = serde_json::to_vec(value).expect("the simulator's answers always serialise");
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(full(body))
        .expect("static response parts are valid")
}

/// A streaming body fed by a channel; dropping the sender ends the body.
pub struct ChannelBody {
    rx: mpsc::Receiver<Bytes>,
}

impl ChannelBody {
    /// A body and the sender that feeds it, holding at most `capacity` unread chunks.
    pub fn channel(capacity: usize) -> (mpsc::Sender<Bytes>, BoxBody) {
        let (tx, rx) = mpsc::channel(capacity);
        (tx, ChannelBody { rx }.boxed_unsync())
    }
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.rx
            .poll_recv(cx)
            .map(|chunk| chunk.map(|b| Ok(Frame::data(b))))
    }
}

/// Serves HTTP/1.1 on `port` forever, one local task per connection.
///
/// `handler` is cloned into each connection. A handler that returns `Err` makes hyper close
/// the connection without answering (how the router loses a reply). hyper's date header
/// reads the wall clock, so it is turned off: responses must be a function of the seed alone.
pub async fn serve<H, F>(port: u16, handler: H) -> turmoil::Result
where
    H: Fn(Request<Incoming>) -> F + Clone + 'static,
    F: Future<Output = Result<Response<BoxBody>, BoxError>> + 'static,
{
    serve_until(port, handler, std::future::pending(), || ()).await
}

/// As [`serve`], until `stop` resolves: then the listener is closed (a connection attempt
/// is refused) while the connections already open are served to their end, and this waits
/// forever (a host whose software returns is an error to turmoil). `guard` is called for
/// each accepted connection, and what it returns lives as long as the connection (how a
/// replica counts the connections a graceful shutdown waits for).
pub async fn serve_until<H, F, S, G, T>(port: u16, handler: H, stop: S, guard: G) -> turmoil::Result
where
    H: Fn(Request<Incoming>) -> F + Clone + 'static,
    F: Future<Output = Result<Response<BoxBody>, BoxError>> + 'static,
    S: Future<Output = ()>,
    G: Fn() -> T,
    T: 'static,
{
    tokio::pin!(stop);
    if let Some(net) = real() {
        let listener =
            net.listeners.borrow_mut().remove(&port).ok_or_else(|| {
                format!("no real listener was bound for port {port} (RealNet::bind)")
            })?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        bounded::accept_until(&listener, net.limits(), stop.as_mut(), &handler, &guard).await;
    } else if crate::engine::core().is_some() {
        let listener = crate::engine::net::Listener::bind(port)?;
        let accept = async || listener.accept().await;
        accept_until(accept, stop.as_mut(), &handler, &guard).await?;
    } else {
        let listener = turmoil::net::TcpListener::bind(("0.0.0.0", port)).await?;
        let accept = async || listener.accept().await.map(|(stream, _peer)| stream);
        accept_until(accept, stop.as_mut(), &handler, &guard).await?;
    }
    // The listener is dropped: connection attempts are refused from now on.
    std::future::pending().await
}

/// Accepts connections and serves each ([`serve_connection`]) until `stop` resolves
/// (checked first, so a stop and a connection ready in the same poll end the loop).
async fn accept_until<S, H, F, G, T>(
    mut accept: impl AsyncFnMut() -> std::io::Result<S>,
    mut stop: Pin<&mut impl Future<Output = ()>>,
    handler: &H,
    guard: &G,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + 'static,
    H: Fn(Request<Incoming>) -> F + Clone + 'static,
    F: Future<Output = Result<Response<BoxBody>, BoxError>> + 'static,
    G: Fn() -> T,
    T: 'static,
{
    loop {
        tokio::select! {
            biased;
            () = &mut stop => return Ok(()),
            accepted = accept() => serve_connection(accepted?, handler.clone(), guard()),
        }
    }
}

mod bounded;
pub mod crashed;
pub mod oneway;

fn serve_connection<S, H, F, T>(stream: S, handler: H, guard: T)
where
    S: AsyncRead + AsyncWrite + Unpin + 'static,
    H: Fn(Request<Incoming>) -> F + Clone + 'static,
    F: Future<Output = Result<Response<BoxBody>, BoxError>> + 'static,
    T: 'static,
{
    crate::activity::spawn(async move {
        let _open = guard;
        let service = hyper::service::service_fn(&handler);
        let _ = hyper::server::conn::http1::Builder::new()
            .auto_date_header(false)
            .keep_alive(false)
            .serve_connection(TokioIo::new(stream), service)
            .await;
    });
}

/// Why an outbound call has no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// No answer within the timeout: the request may or may not have been processed.
    Timeout,
    /// The connection broke before a whole response arrived (a lost reply).
    Broken(String),
    /// No connection was made (refused: nothing listens, or the host is down): the server
    /// saw nothing of the request, so sending it elsewhere cannot run it twice.
    Unconnected(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Timeout => write!(f, "timed out"),
            // Worded as `Broken`: the traces pinned before the two were told apart hold it.
            CallError::Broken(why) | CallError::Unconnected(why) => {
                write!(f, "connection broke: {why}")
            }
        }
    }
}

/// An outbound HTTP call: method, host, port, path, headers and body.
#[derive(Debug, Clone)]
pub struct Call {
    pub host: Rc<str>,
    pub port: u16,
    pub method: http::Method,
    pub path: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Bytes,
    pub timeout: Duration,
    /// How many round trips the call stands for (what a one-way cut does to it).
    pub exchange: Exchange,
}

/// How many round trips a simulated call stands for, which decides what a one-way cut of
/// its answers' way does to it ([`oneway`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Exchange {
    /// One request, one answer (an HTTP call): the whole request is sent before any
    /// answer, so with the answers' way cut it still arrives and takes effect, and only
    /// its answer waits for the repair.
    #[default]
    RoundTrip,
    /// A conversation of several round trips, each statement sent once the answer to the
    /// last arrived: a SQL transaction (a2a-sdk's `DatabaseTaskStore.save` is a `session.merge`,
    /// a SELECT before the INSERT or UPDATE, then the COMMIT). With either way cut it takes
    /// no effect until the repair. Live: a one-way cut of PostgreSQL's answers to a replica
    /// kept its save from the database until the repair (`tests/fidelity/faults/store-answers-cut-holds-the-save-*`).
    Conversation,
}

impl Call {
    /// A JSON POST with no extra headers.
    pub fn post_json(
        host: impl Into<Rc<str>>,
        port: u16,
        path: &str,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Self {
        Call {
            host: host.into(),
            port,
            method: http::Method::POST,
            path: path.to_string(),
            headers: Vec::new(),
            body: Bytes::from(body),
            timeout,
            exchange: Exchange::RoundTrip,
        }
    }

    /// A GET with no body and no extra headers.
    pub fn get(host: impl Into<Rc<str>>, port: u16, path: &str, timeout: Duration) -> Self {
        Call {
            method: http::Method::GET,
            ..Call::post_json(host, port, path, Vec::new(), timeout)
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }
}

/// A response whose body has not been read yet (for SSE and for proxying).
pub struct Streaming {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Incoming,
}

impl Streaming {
    /// The response as a proxy passes it on: the same status and headers, the body
    /// streamed through as it arrives.
    ///
    /// Over real TCP the head goes out before the first body frame is read, as a proxy that
    /// does not buffer SSE passes it on: a replica that answers 200 and then breaks its body
    /// (Mastra's stream for a task it does not know) is seen to have answered, whether or not
    /// its break reaches the proxy before hyper has flushed the head. The simulation's bodies
    /// pass straight through, so its schedule and traces are unchanged.
    pub fn relay(self) -> Response<BoxBody> {
        let mut resp = Response::builder().status(self.status);
        for (name, value) in &self.headers {
            resp = resp.header(name, value);
        }
        let body = self.body.map_err(|e| Box::new(e) as BoxError);
        let body = if real().is_some() {
            HeadFirst {
                inner: body,
                yielded: false,
            }
            .boxed_unsync()
        } else {
            body.boxed_unsync()
        };
        resp.body(body).expect("upstream response parts are valid")
    }
}

/// A relayed body whose first poll is `Pending` (waking itself at once), so hyper flushes the
/// response head before the body can end the connection ([`Streaming::relay`]).
struct HeadFirst<B> {
    inner: B,
    yielded: bool,
}

impl<B: Body<Data = Bytes, Error = BoxError> + Unpin> Body for HeadFirst<B> {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if !self.yielded {
            self.yielded = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.yielded && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Sends `call` and returns the response head; the body is read by the caller.
/// The timeout covers connecting and the response head.
pub async fn send_streaming(call: &Call) -> Result<Streaming, CallError> {
    match tokio::time::timeout(call.timeout, as_a_kernel_would(call, send_inner(call))).await {
        Ok(result) => result,
        Err(_) => Err(CallError::Timeout),
    }
}

async fn send_inner(call: &Call) -> Result<Streaming, CallError> {
    if let Some(net) = real() {
        let connected = match net.addr(&call.host) {
            Some(addr) => tokio::net::TcpStream::connect(addr).await,
            None => tokio::net::TcpStream::connect((&*call.host, call.port)).await,
        };
        let stream = connected.map_err(|e| CallError::Unconnected(format!("connect: {e}")))?;
        let _ = stream.set_nodelay(true);
        return request_over(stream, call, None).await;
    }
    if crate::engine::core().is_some() {
        let stream = crate::engine::net::Stream::connect(&call.host, call.port)
            .await
            .map_err(|e| CallError::Unconnected(format!("connect: {e}")))?;
        let caller = oneway::Caller::Host(stream.local_host());
        return request_over(stream, call, Some(caller)).await;
    }
    let stream = turmoil::net::TcpStream::connect((&*call.host, call.port))
        .await
        .map_err(|e| CallError::Unconnected(format!("connect: {e}")))?;
    // The calling host, by the address its connection came from: one-way cuts are kept
    // per direction ([`oneway`]).
    let caller = stream
        .local_addr()
        .ok()
        .map(|a| oneway::Caller::Addr(a.ip()));
    request_over(stream, call, caller).await
}

/// Sends `call` over `stream`; `caller` (simulated calls only) waits out a one-way cut of
/// the request's way before sending (of both ways, for a [`Exchange::Conversation`]) and of
/// the answer's way before handing the answer over.
async fn request_over<S>(
    stream: S,
    call: &Call,
    caller: Option<oneway::Caller>,
) -> Result<Streaming, CallError>
where
    S: AsyncRead + AsyncWrite + Unpin + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| CallError::Broken(format!("handshake: {e}")))?;
    crate::activity::spawn(async move {
        let _ = connection.await;
    });
    let mut builder = Request::builder()
        .method(call.method.clone())
        .uri(&call.path)
        .header("host", &*call.host);
    if !call.body.is_empty() {
        builder = builder.header("content-type", "application/json");
    }
    for (name, value) in &call.headers {
        builder = builder.header(*name, value);
    }
    let request = builder
        .body(Full::new(call.body.clone()))
        .map_err(|e| CallError::Broken(format!("request: {e}")))?;
    let before = match call.exchange {
        Exchange::RoundTrip => oneway::Way::Request,
        Exchange::Conversation => oneway::Way::Both,
    };
    oneway::way_open(caller.as_ref(), &call.host, before).await;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| CallError::Broken(e.to_string()))?;
    oneway::way_open(caller.as_ref(), &call.host, oneway::Way::Answer).await;
    let (parts, body) = response.into_parts();
    Ok(Streaming {
        status: parts.status,
        headers: parts.headers,
        body,
    })
}

/// A whole response.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// Sends `call` and reads the whole response; the timeout covers all of it.
pub async fn send(call: &Call) -> Result<Reply, CallError> {
    let whole = async {
        let streaming = send_inner(call).await?;
        let body = read_body(streaming.body, BODY_BYTES_MAX).await?;
        Ok(Reply {
            status: streaming.status,
            headers: streaming.headers,
            body,
        })
    };
    match tokio::time::timeout(call.timeout, as_a_kernel_would(call, whole)).await {
        Ok(result) => result,
        Err(_) => Err(CallError::Timeout),
    }
}

/// A simulated call that fails as a kernel fails it when its host is down or dies
/// ([`crashed`]); a call on real TCP as it is.
async fn as_a_kernel_would<T>(
    call: &Call,
    run: impl Future<Output = Result<T, CallError>>,
) -> Result<T, CallError> {
    if real().is_some() {
        return run.await;
    }
    crashed::fail_with_host(&call.host, run).await
}

/// Reads a body to its end, refusing more than `limit` bytes.
pub async fn read_body(mut body: Incoming, limit: usize) -> Result<Bytes, CallError> {
    let mut buf = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| CallError::Broken(e.to_string()))?;
        if let Some(data) = frame.data_ref() {
            if buf.len() + data.len() > limit {
                return Err(CallError::Broken(format!("body over {limit} bytes")));
            }
            buf.extend_from_slice(data);
        }
    }
    Ok(Bytes::from(buf))
}

/// How much of an over-limit request body a server reads and drops before it answers, so
/// that a client still writing the body can read the refusal; past this it hangs up.
pub const DRAIN_BYTES_MAX: usize = 64 << 20;

/// Why a request body could not be had.
#[derive(Debug)]
pub enum BodyError {
    /// Over `limit` bytes; the rest was read and dropped (up to [`DRAIN_BYTES_MAX`]).
    TooLarge { limit: usize },
    /// The connection broke or timed out.
    Call(CallError),
}

/// Reads a request body to its end; one over [`BODY_BYTES_MAX`] bytes is read on and
/// dropped (at most [`DRAIN_BYTES_MAX`]) and refused, so the caller can answer it with a 413
/// the client sees, rather than a reset connection.
pub async fn read_request_or_drain(body: Incoming) -> Result<Bytes, BodyError> {
    let read = drain_request(body).await;
    // Over real TCP, the connection no longer waits on its client (it is not shed).
    bounded::body_read();
    read
}

async fn drain_request(mut body: Incoming) -> Result<Bytes, BodyError> {
    let mut buf = Vec::new();
    let mut over = false;
    let mut seen = 0usize;
    while let Some(frame) = next_request_frame(&mut body)
        .await
        .map_err(BodyError::Call)?
    {
        if let Some(data) = frame.data_ref() {
            seen = seen.saturating_add(data.len());
            if seen > BODY_BYTES_MAX {
                over = true;
                buf = Vec::new();
                if seen > DRAIN_BYTES_MAX {
                    break;
                }
            } else {
                buf.extend_from_slice(data);
            }
        }
    }
    if over {
        return Err(BodyError::TooLarge {
            limit: BODY_BYTES_MAX,
        });
    }
    Ok(Bytes::from(buf))
}

/// Reads a request body to its end, refusing more than [`BODY_BYTES_MAX`] bytes.
pub async fn read_request(body: Incoming) -> Result<Bytes, CallError> {
    let read = whole_request(body).await;
    // Over real TCP, the connection no longer waits on its client (it is not shed).
    bounded::body_read();
    read
}

async fn whole_request(mut body: Incoming) -> Result<Bytes, CallError> {
    let mut buf = Vec::new();
    while let Some(frame) = next_request_frame(&mut body).await? {
        if let Some(data) = frame.data_ref() {
            if buf.len() + data.len() > BODY_BYTES_MAX {
                return Err(CallError::Broken(format!(
                    "body over {BODY_BYTES_MAX} bytes"
                )));
            }
            buf.extend_from_slice(data);
        }
    }
    Ok(Bytes::from(buf))
}

/// The next frame of a request body. Over real TCP a body that sends nothing for the
/// server's `body_idle_timeout` is given up ([`ServerLimits`]); a simulation waits as it
/// always has.
async fn next_request_frame(body: &mut Incoming) -> Result<Option<Frame<Bytes>>, CallError> {
    let broken = |e: hyper::Error| CallError::Broken(e.to_string());
    match real() {
        Some(net) => {
            let idle = net.limits().body_idle_timeout;
            match tokio::time::timeout(idle, body.frame()).await {
                Ok(frame) => frame.transpose().map_err(broken),
                Err(_) => Err(CallError::Broken(format!(
                    "the request body sent nothing for {} ms",
                    idle.as_millis()
                ))),
            }
        }
        None => body.frame().await.transpose().map_err(broken),
    }
}
