//! The event engine's network: TCP-shaped connections between named hosts.
//!
//! A connection is two pipes, one per direction. Every write is a segment that arrives
//! after a latency drawn from the run's seed (from `min` to the link's `max`, whole
//! milliseconds, on turmoil's curve: mostly the minimum), and never before the segment
//! written ahead of it: a pipe is in order, as TCP is. A reader waiting for a segment waits on a timer at its arrival, so an idle
//! network costs nothing and the engine's clock jumps to the next arrival.
//!
//! Faults, as a kernel would see them:
//! - **A held link** (a partition both ways, a paused host, a `hold` step) delivers
//!   nothing either way until it is released, then everything it caught, in order, one
//!   latency after the release: what TCP's retransmits do for a cut shorter than the
//!   kernel's patience. A connection whose segments stay caught longer than that patience
//!   ([`DATA_PATIENCE`], Linux's `tcp_retries2 = 15`) is aborted: its reader gets
//!   `ETIMEDOUT`.
//! - **A one-way cut** is a held direction: what is sent that way waits for the repair
//!   (a stream's events stop flowing), while the other way flows.
//! - **A connection attempt** whose SYN's way is held or cut waits for the repair, or fails
//!   with `ETIMEDOUT` once Linux would have given up on its SYNs ([`SYN_PATIENCE`]). (A cut
//!   of the answering way alone lets the handshake through: see [`Stream::connect`].)
//!
//! What is caught arrives right after the repair, not at the sender's next retransmission
//! (RTO backoff: 0.2, 0.6, 1.4, 3 s... for data; 1, 3, 7 s... for a SYN). That is how the
//! live runs' link proxies behave (`crate::live::link`: bytes wait in loopback socket
//! buffers and flow the moment the link reopens), which is what the fidelity suite measures
//! the model against, and it is what a pooled connection (the real replicas keep one to
//! their database) sees of a short partition better than a fresh connection's SYN backoff
//! would: the simulation opens a connection per call where the real systems reuse one.
//! - **A host that dies** closes its sockets: its listeners are gone (a connection attempt
//!   is refused when its SYN arrives), and each connection it held ends for its peer once
//!   the segments already sent have arrived.
//! - **A slowed link** draws its latency up to a larger bound.
//!
//! The refusal of calls to a crashed host, and the one-way cuts of a call's request and
//! answer heads, are also kept by `crate::net`'s `crashed` and `oneway`, above any
//! transport (turmoil needs them): on this network they agree with what it does itself.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::{Buf, Bytes};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use super::HostName;

/// A link between two hosts, either way: the names in order.
type Link = (HostName, HostName);

/// One direction of a link: from, to.
type Way = (HostName, HostName);

fn link(a: &str, b: &str) -> Link {
    if a <= b {
        (a.into(), b.into())
    } else {
        (b.into(), a.into())
    }
}

fn way(from: &str, to: &str) -> Way {
    (from.into(), to.into())
}

/// The rate of the exponential curve latencies are drawn on: turmoil's default, `Exp(5)`.
const LATENCY_CURVE: f64 = 5.0;

/// A latency above the minimum on turmoil's curve, for a uniform draw `u` in [0, 1):
/// `range_ms` times an exponential of rate [`LATENCY_CURVE`] (mean a fifth of the range),
/// in whole ms, not capped. The simulated network and the live links
/// (`live::link::chunk_delay`) both draw with it.
pub(crate) fn curve_ms(range_ms: u64, u: f64) -> u64 {
    let x = -(1.0 - u).ln() / LATENCY_CURVE;
    (range_ms as f64 * x) as u64
}

/// How long a kernel keeps retransmitting unacknowledged data before it aborts the
/// connection: Linux's default `tcp_retries2 = 15` with a 200 ms minimum RTO, about 924.6 s.
pub const DATA_PATIENCE: Duration = Duration::from_millis(924_600);

/// When a connection attempt that got no answer fails, after its first SYN: Linux's default
/// `tcp_syn_retries = 6`, a 1 s initial RTO doubling (1, 3, 7, 15, 31, 63 s), then 127 s.
pub const SYN_PATIENCE: Duration = Duration::from_secs(127);

/// A stretch of time a way was held, for the segments it caught.
#[derive(Clone, Copy)]
struct Hold {
    since: Instant,
    until: Option<Instant>,
}

impl Hold {
    /// Whether this hold caught a segment due at `due` (it began before its arrival).
    fn caught(&self, due: Instant) -> bool {
        self.since <= due
    }

    /// When a segment due at `due` that this hold caught is given up on, if the hold lasts
    /// past the kernel's patience ([`DATA_PATIENCE`]).
    fn give_up(&self, due: Instant) -> Option<Instant> {
        let give_up = self.since.max(due) + DATA_PATIENCE;
        match self.until {
            Some(until) if until <= give_up => None,
            _ => Some(give_up),
        }
    }
}

/// The network of one run.
pub struct Net {
    rng: RefCell<ChaCha8Rng>,
    min_latency: Cell<Duration>,
    max_latency: Cell<Duration>,
    /// Links whose latency is drawn up to another bound.
    slowed: RefCell<BTreeMap<Link, Duration>>,
    held: RefCell<BTreeSet<Link>>,
    /// Ways cut one way only.
    cut: RefCell<BTreeSet<Way>>,
    /// The last hold of each way that was ever held (a way is held while its link is held
    /// or it is cut): what it caught arrives after its end, or never past the patience.
    holds: RefCell<BTreeMap<Way, Hold>>,
    /// Where a slowed link's latencies are drawn from instead of `rng`, when the run
    /// takes another draw of them ([`Net::redraw`]).
    slowed_rng: RefCell<Option<ChaCha8Rng>>,
    /// Readers and connection attempts waiting on a held link.
    hold_waiters: RefCell<Vec<Waker>>,
    /// Readers waiting for data with segments of their own in flight: a hold that begins
    /// wakes them, since their connection may time out on it.
    idle_senders: RefCell<Vec<Waker>>,
    listeners: RefCell<BTreeMap<(HostName, u16), SharedBacklog>>,
}

impl Net {
    pub(super) fn new(seed: u64) -> Self {
        Net {
            rng: RefCell::new(ChaCha8Rng::seed_from_u64(crate::seed::derive_seed(
                seed, "network", 0,
            ))),
            slowed_rng: RefCell::default(),
            min_latency: Cell::new(Duration::from_millis(1)),
            max_latency: Cell::new(Duration::from_millis(1)),
            slowed: RefCell::default(),
            held: RefCell::default(),
            cut: RefCell::default(),
            holds: RefCell::default(),
            hold_waiters: RefCell::default(),
            idle_senders: RefCell::default(),
            listeners: RefCell::default(),
        }
    }

    /// Draws the latencies of slowed links (a `latency` fault's) from draw `draw` of
    /// `seed`'s stream of them, from here on; every other link draws as before (the
    /// engine's own stream still advances at each slowed segment, so they keep their
    /// draws). Draw 0 is the engine's own stream: no change.
    pub fn redraw(&self, seed: u64, draw: u64) {
        *self.slowed_rng.borrow_mut() = crate::seed::redraw(seed, "network-slowed", draw);
    }

    /// The latency bounds of every link not slowed.
    pub fn set_latency(&self, min: Duration, max: Duration) {
        self.min_latency.set(min);
        self.max_latency.set(max.max(min));
    }

    /// Draws the link `a`–`b`'s latency up to `max` from now on (`None`: the default bound).
    pub fn set_link_max_latency(&self, a: &str, b: &str, max: Option<Duration>) {
        let mut slowed = self.slowed.borrow_mut();
        match max {
            Some(max) => slowed.insert(link(a, b), max),
            None => slowed.remove(&link(a, b)),
        };
    }

    /// Holds everything between `a` and `b`, both ways, until [`Net::release`].
    pub fn hold(&self, a: &str, b: &str) {
        let (ab, ba) = (self.is_held(a, b), self.is_held(b, a));
        self.held.borrow_mut().insert(link(a, b));
        self.held_from_now(a, b, ab);
        self.held_from_now(b, a, ba);
    }

    /// Lets the link `a`–`b` deliver again, what it caught first (a way still cut one way
    /// stays held).
    pub fn release(&self, a: &str, b: &str) {
        if self.held.borrow_mut().remove(&link(a, b)) {
            self.released_now(a, b);
            self.released_now(b, a);
        }
    }

    /// Cuts the way from `from` to `to` only, until [`Net::repair_oneway`].
    pub fn cut_oneway(&self, from: &str, to: &str) {
        let was = self.is_held(from, to);
        self.cut.borrow_mut().insert(way(from, to));
        self.held_from_now(from, to, was);
    }

    /// Repairs the way from `from` to `to` (a link still held stays held).
    pub fn repair_oneway(&self, from: &str, to: &str) {
        if self.cut.borrow_mut().remove(&way(from, to)) {
            self.released_now(from, to);
        }
    }

    /// Notes that the way `from`→`to` is held from now on, unless it `was` already. A hold
    /// that ended so recently that what it caught is still arriving is taken up again (it
    /// still holds what it caught, from when it began); otherwise a new hold begins. The
    /// readers waiting with segments of their own in flight look again: their connection
    /// may now time out.
    fn held_from_now(&self, from: &str, to: &str, was: bool) {
        if was {
            return;
        }
        let now = Instant::now();
        let mut holds = self.holds.borrow_mut();
        let entry = holds.entry(way(from, to)).or_insert(Hold {
            since: now,
            until: None,
        });
        match entry.until {
            Some(until) if until + self.min_latency.get() > now => entry.until = None,
            Some(_) => {
                *entry = Hold {
                    since: now,
                    until: None,
                }
            }
            None => {}
        }
        drop(holds);
        for w in self.idle_senders.borrow_mut().drain(..) {
            w.wake();
        }
    }

    /// Ends the hold of `from`→`to` if nothing holds it any more, and wakes what waits.
    fn released_now(&self, from: &str, to: &str) {
        if self.is_held(from, to) {
            return;
        }
        if let Some(h) = self.holds.borrow_mut().get_mut(&way(from, to)) {
            h.until.get_or_insert_with(Instant::now);
        }
        for w in self.hold_waiters.borrow_mut().drain(..) {
            w.wake();
        }
    }

    fn is_held(&self, from: &str, to: &str) -> bool {
        let held = self.held.borrow();
        let cut = self.cut.borrow();
        (!held.is_empty() && held.contains(&link(from, to)))
            || (!cut.is_empty() && cut.contains(&way(from, to)))
    }

    /// When a segment due at `due` on the way `from`→`to` is given up on: when the way's
    /// last hold caught it and lasts past the kernel's patience ([`DATA_PATIENCE`]).
    fn abort_at(&self, from: &str, to: &str, due: Instant) -> Option<Instant> {
        let h = self.last_hold(from, to).filter(|h| h.caught(due))?;
        h.give_up(due)
    }

    /// The last hold of the way `from`→`to`, if it was ever held.
    fn last_hold(&self, from: &str, to: &str) -> Option<Hold> {
        let holds = self.holds.borrow();
        if holds.is_empty() {
            return None;
        }
        holds.get(&way(from, to)).copied()
    }

    fn latency(&self, a: &str, b: &str) -> Duration {
        let min = self.min_latency.get();
        let slowed_max = {
            let slowed = self.slowed.borrow();
            if slowed.is_empty() {
                None
            } else {
                slowed.get(&link(a, b)).copied()
            }
        };
        let max = slowed_max.unwrap_or(self.max_latency.get());
        // turmoil's curve, so both engines draw alike: the minimum plus the range times an
        // exponential draw of rate 5 (mean a fifth of the range), in whole ms, capped.
        let range_ms = max.saturating_sub(min).as_millis() as u64;
        let mut u: f64 = self.rng.borrow_mut().random();
        if let (Some(rng), Some(_)) = (self.slowed_rng.borrow_mut().as_mut(), slowed_max) {
            u = rng.random();
        }
        (min + Duration::from_millis(curve_ms(range_ms, u))).min(max.max(min))
    }

    /// Waits while the way from `a` to `b` is held or cut.
    async fn open(&self, a: &str, b: &str) {
        self.wait_while(|| self.is_held(a, b)).await;
    }

    /// Waits while the link `a`–`b` is held both ways (a one-way cut does not hold it).
    async fn open_both_ways(&self, a: &str, b: &str) {
        self.wait_while(|| self.held.borrow().contains(&link(a, b)))
            .await;
    }

    /// Waits while `held` says so, woken by every release.
    async fn wait_while(&self, held: impl Fn() -> bool) {
        std::future::poll_fn(|cx| {
            if held() {
                self.hold_waiters.borrow_mut().push(cx.waker().clone());
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        })
        .await;
    }

    /// `host` died: its listeners are gone (connection attempts to it are refused).
    pub(super) fn host_died(&self, host: &str) {
        let gone: Vec<_> = self
            .listeners
            .borrow()
            .keys()
            .filter(|(h, _)| &**h == host)
            .cloned()
            .collect();
        for key in gone {
            if let Some(backlog) = self.listeners.borrow_mut().remove(&key) {
                let mut b = backlog.borrow_mut();
                b.open = false;
                b.ready.clear();
            }
        }
    }
}

/// A listener's backlog, shared by the listener and the network that fills it.
type SharedBacklog = Rc<RefCell<Backlog>>;

/// The connections a listener has accepted for its host and not yet handed over.
struct Backlog {
    ready: VecDeque<Stream>,
    waker: Option<Waker>,
    open: bool,
}

/// A listening socket of the current host.
pub struct Listener {
    core: Rc<super::Core>,
    key: (HostName, u16),
    backlog: SharedBacklog,
}

impl Listener {
    /// Listens on `port` of the current host.
    pub fn bind(port: u16) -> io::Result<Listener> {
        let (Some(core), Some(host)) = (super::core(), super::current_host()) else {
            return Err(io::Error::other("no event-engine host is running"));
        };
        let key = (host, port);
        let mut listeners = core.net.listeners.borrow_mut();
        if listeners.contains_key(&key) {
            return Err(io::ErrorKind::AddrInUse.into());
        }
        let backlog = Rc::new(RefCell::new(Backlog {
            ready: VecDeque::new(),
            waker: None,
            open: true,
        }));
        listeners.insert(key.clone(), backlog.clone());
        drop(listeners);
        Ok(Listener { core, key, backlog })
    }

    /// The next connection made to this listener.
    pub async fn accept(&self) -> io::Result<Stream> {
        std::future::poll_fn(|cx| {
            let mut b = self.backlog.borrow_mut();
            match b.ready.pop_front() {
                Some(stream) => Poll::Ready(Ok(stream)),
                None => {
                    b.waker = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let mut listeners = self.core.net.listeners.borrow_mut();
        if listeners
            .get(&self.key)
            .is_some_and(|b| Rc::ptr_eq(b, &self.backlog))
        {
            listeners.remove(&self.key);
        }
        let mut b = self.backlog.borrow_mut();
        b.open = false;
        b.ready.clear();
    }
}

/// One direction of a connection.
struct Pipe {
    from: HostName,
    to: HostName,
    /// Segments in flight or arrived and unread, with their arrival.
    segments: VecDeque<(Instant, Bytes)>,
    /// The arrival of the last segment written (the next may not arrive before it).
    last_at: Instant,
    /// The writer closed: the end of the stream arrives then.
    fin_at: Option<Instant>,
    reader_gone: bool,
    reader: Option<Waker>,
}

impl Pipe {
    fn new(from: &HostName, to: &HostName) -> Rc<RefCell<Pipe>> {
        Rc::new(RefCell::new(Pipe {
            from: from.clone(),
            to: to.clone(),
            segments: VecDeque::new(),
            last_at: Instant::now(),
            fin_at: None,
            reader_gone: false,
            reader: None,
        }))
    }

    fn wake_reader(&mut self) {
        if let Some(w) = self.reader.take() {
            w.wake();
        }
    }
}

/// One end of a connection.
pub struct Stream {
    core: Rc<super::Core>,
    rx: Rc<RefCell<Pipe>>,
    tx: Rc<RefCell<Pipe>>,
    /// The timer of the next arrival this end waits for.
    sleep: Option<Pin<Box<Sleep>>>,
    /// The timer of this end's abort, while its own segments are caught.
    abort_sleep: Option<Pin<Box<Sleep>>>,
}

impl Stream {
    /// Connects the current host to `port` on `host`: a SYN's latency there (the answer
    /// takes none, as in turmoil); refused if nothing listens there.
    pub async fn connect(host: &str, port: u16) -> io::Result<Stream> {
        let (Some(core), Some(from)) = (super::core(), super::current_host()) else {
            return Err(io::Error::other("no event-engine host is running"));
        };
        let to: HostName = host.into();
        let net = &core.net;
        if net.is_held(&from, &to)
            && tokio::time::timeout(SYN_PATIENCE, net.open(&from, &to))
                .await
                .is_err()
        {
            return Err(io::ErrorKind::TimedOut.into());
        }
        tokio::time::sleep(net.latency(&from, &to)).await;
        let backlog = net.listeners.borrow().get(&(to.clone(), port)).cloned();
        let Some(backlog) = backlog.filter(|b| b.borrow().open) else {
            return Err(io::ErrorKind::ConnectionRefused.into());
        };
        let (there, back) = (Pipe::new(&from, &to), Pipe::new(&to, &from));
        let server = Stream::new(core.clone(), there.clone(), back.clone());
        // The caller's end exists from now on: if this attempt is given up (a timeout, the
        // caller killed), dropping it closes the connection for the server too.
        let client = Stream::new(core.clone(), back, there);
        {
            let mut b = backlog.borrow_mut();
            b.ready.push_back(server);
            if let Some(w) = b.waker.take() {
                w.wake();
            }
        }
        // The answer to the SYN takes no time, as in turmoil: the handshake costs one
        // latency, where a kernel's costs a round trip (on the live runs' loopback, a few
        // microseconds either way; a second latency per connection made every simulated
        // exchange a millisecond slower than turmoil's and moved timing-sensitive races).
        // A cut of the answering way alone does not hold it back: such a cut loses what the
        // connection carries, as the live runs' link proxies model it (`crate::live::link`:
        // the client's handshake is with the proxy), where a kernel's own SYN-ACK would be
        // lost too and the attempt would retry. A link held both ways holds it.
        if tokio::time::timeout(SYN_PATIENCE, net.open_both_ways(&to, &from))
            .await
            .is_err()
        {
            return Err(io::ErrorKind::TimedOut.into());
        }
        Ok(client)
    }

    fn new(core: Rc<super::Core>, rx: Rc<RefCell<Pipe>>, tx: Rc<RefCell<Pipe>>) -> Stream {
        Stream {
            core,
            rx,
            tx,
            sleep: None,
            abort_sleep: None,
        }
    }

    /// The host at this end.
    pub fn local_host(&self) -> HostName {
        self.tx.borrow().from.clone()
    }

    /// When the connection is aborted because this end's oldest unread segment stays
    /// caught past the kernel's patience, if it will be.
    fn own_abort_at(&self) -> Option<Instant> {
        let tx = self.tx.borrow();
        let due = tx.segments.front()?.0;
        self.core.net.abort_at(&tx.from, &tx.to, due)
    }
}

/// Waits until `at` on the timer in `slot` (made anew when its deadline differs).
fn poll_at(slot: &mut Option<Pin<Box<Sleep>>>, at: Instant, cx: &mut Context<'_>) -> Poll<()> {
    match slot {
        Some(s) if s.deadline() == at => {}
        _ => *slot = Some(Box::pin(tokio::time::sleep_until(at))),
    }
    let out = slot.as_mut().expect("just set").as_mut().poll(cx);
    if out.is_ready() {
        *slot = None;
    }
    out
}

impl AsyncRead for Stream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        // This end's own oldest segment not yet read by the peer, caught past the kernel's
        // patience: the connection is aborted, whatever comes in.
        if let Some(at) = this.own_abort_at() {
            if at <= Instant::now() || poll_at(&mut this.abort_sleep, at, cx).is_ready() {
                return Poll::Ready(Err(io::ErrorKind::TimedOut.into()));
            }
        }
        loop {
            let (due, from, to) = {
                let rx = this.rx.borrow();
                let due = rx.segments.front().map(|(at, _)| *at).or(rx.fin_at);
                (due, rx.from.clone(), rx.to.clone())
            };
            let Some(due) = due else {
                this.rx.borrow_mut().reader = Some(cx.waker().clone());
                if !this.tx.borrow().segments.is_empty() {
                    let net = &this.core.net;
                    net.idle_senders.borrow_mut().push(cx.waker().clone());
                }
                return Poll::Pending;
            };
            let net = &this.core.net;
            let hold = net.last_hold(&from, &to).filter(|h| h.caught(due));
            if let Some(give_up) = hold.and_then(|h| h.give_up(due)) {
                // Caught, and the hold outlasts the kernel's patience.
                if give_up <= Instant::now() {
                    return Poll::Ready(Err(io::ErrorKind::TimedOut.into()));
                }
                net.hold_waiters.borrow_mut().push(cx.waker().clone());
                if poll_at(&mut this.sleep, give_up, cx).is_ready() {
                    return Poll::Ready(Err(io::ErrorKind::TimedOut.into()));
                }
                return Poll::Pending;
            }
            // Caught and released in time: it arrives one latency after the release.
            let due = match hold.and_then(|h| h.until) {
                Some(release) if release > due => release + net.min_latency.get(),
                _ => due,
            };
            if due > Instant::now() {
                match poll_at(&mut this.sleep, due, cx) {
                    Poll::Pending => return Poll::Pending,
                    // Check the link again: it may have been held meanwhile.
                    Poll::Ready(()) => continue,
                }
            }
            let mut rx = this.rx.borrow_mut();
            let Some((_, segment)) = rx.segments.front_mut() else {
                return Poll::Ready(Ok(())); // the end of the stream
            };
            let n = segment.len().min(buf.remaining());
            buf.put_slice(&segment[..n]);
            segment.advance(n);
            if segment.is_empty() {
                rx.segments.pop_front();
            }
            return Poll::Ready(Ok(()));
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        if self.own_abort_at().is_some_and(|at| at <= Instant::now()) {
            return Poll::Ready(Err(io::ErrorKind::TimedOut.into()));
        }
        let mut tx = self.tx.borrow_mut();
        if tx.reader_gone {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        }
        if tx.fin_at.is_some() {
            return Poll::Ready(Err(io::ErrorKind::NotConnected.into()));
        }
        let at = (Instant::now() + self.core.net.latency(&tx.from, &tx.to)).max(tx.last_at);
        tx.last_at = at;
        tx.segments.push_back((at, Bytes::copy_from_slice(buf)));
        tx.wake_reader();
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.close();
        Poll::Ready(Ok(()))
    }
}

impl Stream {
    /// Sends this end's FIN (once), after what it wrote.
    fn close(&self) {
        let mut tx = self.tx.borrow_mut();
        if tx.fin_at.is_none() {
            let at = (Instant::now() + self.core.net.latency(&tx.from, &tx.to)).max(tx.last_at);
            tx.fin_at = Some(at);
            tx.wake_reader();
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.close();
        let mut rx = self.rx.borrow_mut();
        rx.reader_gone = true;
        rx.segments.clear();
    }
}

#[cfg(test)]
mod tests;
