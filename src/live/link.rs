//! A link between two hosts of a live run, through a TCP proxy the tool owns: what lets the
//! simulation's network faults act on real TCP between real processes (issue 38).
//!
//! A [`Link`] listens on loopback and forwards each connection it accepts to the real
//! target, one pump per direction. A fault is a state of a direction, set by the driver
//! while the run goes on (Toxiproxy's toxics, Jepsen's grudges):
//! - **stopped** (`partition` both ways, `link-partition` one way, `hold`): the pump stops
//!   reading. Nothing is closed: the bytes wait in the kernels' socket buffers, a sender's
//!   writes block once its buffer is full, and the applications' own timeouts decide what
//!   happens, as on a network that loses every segment. When the direction reopens the pump
//!   reads again and what waited arrives at once, as TCP's retransmits deliver it after a
//!   short partition (turmoil's simulated TCP has no retransmit: a simulated partition
//!   loses what was in flight). A connection accepted while the way to the target is stopped
//!   is connected upstream only once it reopens: the client has a socket, but nothing it
//!   sends arrives, as when every SYN is lost.
//! - **delayed** (`latency`, up to `max-ms`): each chunk is written its delay after it was
//!   read, in order, the delay drawn as the simulated network draws a segment's latency
//!   (`chunk_delay`: turmoil's `Exp(5)` curve capped at `max-ms`, mostly short), so that
//!   a `latency` step is the same fault in both worlds. Until 2026-12-06 every chunk waited
//!   the whole `max-ms`, and the generated scenarios with a latency step ran their turns
//!   far slower live than simulated.
//!
//! A target that refuses the upstream connection (a killed process) resets the accepted one
//! at once, so the client learns of it as it would of a refused connection, not by a
//! timeout.

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Which way a fault acts on a link from `from` to `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// `from` → `to` (requests).
    Forward,
    /// `to` → `from` (answers).
    Backward,
    /// Both.
    Both,
}

impl Way {
    fn covers(self, forward: bool) -> bool {
        match self {
            Way::Both => true,
            Way::Forward => forward,
            Way::Backward => !forward,
        }
    }
}

/// The state of one direction of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flow {
    /// Nothing is forwarded (the pump does not read).
    pub stopped: bool,
    /// Each chunk is written this long after it was read.
    pub delay_ms: u64,
}

/// A proxied link from host `from` to host `to`.
pub struct Link {
    /// The host that connects.
    pub from: String,
    /// The host it connects to.
    pub to: String,
    addr: SocketAddr,
    /// Where accepted connections go: a restarted replica listens on a new port.
    target: Rc<Cell<SocketAddr>>,
    forward: Rc<watch::Sender<Flow>>,
    backward: Rc<watch::Sender<Flow>>,
}

impl Link {
    /// Starts a link from `from` to `to`, whose connections go to `target`: a listener on a
    /// free loopback port, served on the current `LocalSet` until the run's runtime ends.
    pub async fn start(from: &str, to: &str, target: SocketAddr) -> std::io::Result<Link> {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        let forward = Rc::new(watch::channel(Flow::default()).0);
        let backward = Rc::new(watch::channel(Flow::default()).0);
        let (f, b) = (forward.clone(), backward.clone());
        let target = Rc::new(Cell::new(target));
        let to_target = target.clone();
        tokio::task::spawn_local(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    // A failed accept (descriptors exhausted) is retried: a link never
                    // stops serving because of one.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let (f, b, target) = (f.subscribe(), b.subscribe(), to_target.get());
                tokio::task::spawn_local(async move { carry(client, target, f, b).await });
            }
        });
        Ok(Link {
            from: from.to_string(),
            to: to.to_string(),
            addr,
            target,
            forward,
            backward,
        })
    }

    /// Sends the connections accepted from now on to `target` (a restarted process's new
    /// address); connections already carried stay where they are.
    pub fn retarget(&self, target: SocketAddr) {
        self.target.set(target);
    }

    /// Where `from` connects instead of `to`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops forwarding `way` (a partition, or a hold released by [`Link::open`]).
    pub fn stop(&self, way: Way) {
        self.set(way, |f| f.stopped = true);
    }

    /// Forwards `way` again.
    pub fn open(&self, way: Way) {
        self.set(way, |f| f.stopped = false);
    }

    /// Delays every chunk on `way` by `ms` (0: none).
    pub fn delay(&self, way: Way, ms: u64) {
        self.set(way, |f| f.delay_ms = ms);
    }

    /// Every fault on the link gone: both ways forward at once.
    pub fn heal(&self) {
        self.set(Way::Both, |f| *f = Flow::default());
    }

    /// The state of one direction (`true`: forward).
    pub fn flow(&self, forward: bool) -> Flow {
        *if forward {
            &self.forward
        } else {
            &self.backward
        }
        .borrow()
    }

    fn set(&self, way: Way, change: impl Fn(&mut Flow)) {
        for (forward, sender) in [(true, &self.forward), (false, &self.backward)] {
            if way.covers(forward) {
                sender.send_modify(|f| change(f));
            }
        }
    }
}

/// One accepted connection: connected upstream once the forward way is open (reset at once
/// when the target refuses), then pumped both ways until either side closes.
async fn carry(
    client: TcpStream,
    target: SocketAddr,
    mut forward: watch::Receiver<Flow>,
    backward: watch::Receiver<Flow>,
) {
    if forward.wait_for(|f| !f.stopped).await.is_err() {
        return;
    }
    let upstream = match TcpStream::connect(target).await {
        Ok(s) => s,
        Err(_) => {
            // A reset, as the target's kernel answered the proxy.
            let _ = client.set_zero_linger();
            return;
        }
    };
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (up_read, up_write) = upstream.into_split();
    let there = tokio::task::spawn_local(pump(client_read, up_write, forward));
    let back = tokio::task::spawn_local(pump(up_read, client_write, backward));
    let _ = there.await;
    let _ = back.await;
}

/// The seed of the chunk delays a pump draws (live runs are not reproducible, but nothing
/// in them draws from an unseeded source).
const CHUNK_DELAY_SEED: u64 = 0x6c69_6e6b;

/// The delay of one chunk on a way slowed to `max_ms`, for a uniform draw `u` in [0, 1):
/// the simulated network's latency curve (`engine::net`, turmoil's): `max_ms` times an
/// exponential of rate 5 (mean a fifth of it), in whole ms, capped at `max_ms`.
pub(crate) fn chunk_delay(max_ms: u64, u: f64) -> u64 {
    crate::engine::net::curve_ms(max_ms, u).min(max_ms)
}

/// Copies `from` to `to` chunk by chunk, reading only while the flow is not stopped and
/// writing each chunk its delay after it was read ([`chunk_delay`]); a close on either side ends it (the
/// other side's write half is shut down, so a half-close travels on).
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut flow: watch::Receiver<Flow>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut rng = ChaCha8Rng::seed_from_u64(CHUNK_DELAY_SEED);
    loop {
        let Ok(state) = flow.wait_for(|f| !f.stopped).await.map(|f| *f) else {
            return;
        };
        let n = tokio::select! {
            biased;
            // A stop while waiting for bytes: leave them in the kernel until it reopens.
            changed = flow.changed() => {
                if changed.is_err() {
                    return;
                }
                continue;
            }
            read = from.read(&mut buf) => match read {
                Ok(0) | Err(_) => {
                    let _ = to.shutdown().await;
                    return;
                }
                Ok(n) => n,
            },
        };
        if state.delay_ms > 0 {
            let ms = chunk_delay(state.delay_ms, rng.random());
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// Runs `f` on a current-thread runtime with a `LocalSet`, as live runs do.
    fn local<T>(f: impl std::future::Future<Output = T>) -> T {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        tokio::task::LocalSet::new().block_on(&rt, f)
    }

    /// An echo server on loopback: what it reads, it writes back.
    async fn echo() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::task::spawn_local(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::task::spawn_local(async move {
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        addr
    }

    async fn round_trip(s: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
        s.write_all(b"ping").await.ok()?;
        let mut buf = [0u8; 4];
        tokio::time::timeout(within, s.read_exact(&mut buf))
            .await
            .ok()?
            .ok()?;
        Some(buf.to_vec())
    }

    #[test]
    fn a_link_forwards_both_ways() {
        local(async {
            let link = Link::start("a", "b", echo().await).await.unwrap();
            let mut s = TcpStream::connect(link.addr()).await.unwrap();
            assert_eq!(
                round_trip(&mut s, Duration::from_secs(2)).await.as_deref(),
                Some(&b"ping"[..])
            );
        });
    }

    #[test]
    fn a_stopped_way_holds_the_bytes_without_closing_and_delivers_them_when_it_reopens() {
        local(async {
            let link = Link::start("a", "b", echo().await).await.unwrap();
            let mut s = TcpStream::connect(link.addr()).await.unwrap();
            assert!(round_trip(&mut s, Duration::from_secs(2)).await.is_some());
            link.stop(Way::Backward);
            // The echo comes back to the proxy but not through it.
            assert!(round_trip(&mut s, Duration::from_millis(200))
                .await
                .is_none());
            link.heal();
            // What waited arrives, and the connection still works.
            let mut buf = [0u8; 8];
            tokio::time::timeout(Duration::from_secs(2), s.read_exact(&mut buf[..4]))
                .await
                .expect("the held echo arrives")
                .unwrap();
            assert_eq!(&buf[..4], b"ping");
            assert!(round_trip(&mut s, Duration::from_secs(2)).await.is_some());
        });
    }

    #[test]
    fn a_connection_made_during_a_partition_reaches_the_target_only_after_it() {
        local(async {
            let link = Link::start("a", "b", echo().await).await.unwrap();
            link.stop(Way::Both);
            let mut s = TcpStream::connect(link.addr()).await.unwrap();
            assert!(round_trip(&mut s, Duration::from_millis(200))
                .await
                .is_none());
            link.open(Way::Both);
            let mut buf = [0u8; 4];
            tokio::time::timeout(Duration::from_secs(2), s.read_exact(&mut buf))
                .await
                .expect("delivered after the partition")
                .unwrap();
            assert_eq!(&buf, b"ping");
        });
    }

    #[test]
    fn a_delayed_way_adds_its_latency() {
        local(async {
            let link = Link::start("a", "b", echo().await).await.unwrap();
            link.delay(Way::Forward, 150);
            let mut s = TcpStream::connect(link.addr()).await.unwrap();
            let started = Instant::now();
            assert!(round_trip(&mut s, Duration::from_secs(2)).await.is_some());
            // The seeded first draw, in ms: the chunk waited that long at least.
            let first = chunk_delay(150, ChaCha8Rng::seed_from_u64(CHUNK_DELAY_SEED).random());
            assert!(started.elapsed() >= Duration::from_millis(first));
            assert_eq!(link.flow(true).delay_ms, 150);
            assert_eq!(link.flow(false).delay_ms, 0);
        });
    }

    #[test]
    fn chunk_delays_follow_the_simulated_latency_curve() {
        assert_eq!(chunk_delay(200, 0.0), 0);
        assert_eq!(chunk_delay(200, 0.999_999), 200, "capped at max-ms");
        let mut rng = ChaCha8Rng::seed_from_u64(CHUNK_DELAY_SEED);
        let draws: Vec<u64> = (0..10_000)
            .map(|_| chunk_delay(200, rng.random()))
            .collect();
        let mean = draws.iter().sum::<u64>() as f64 / draws.len() as f64;
        // Exp(5) scaled to 200 ms: mean 40 ms (a little less, capped and floored).
        assert!((35.0..41.0).contains(&mean), "{mean}");
        assert!(draws.iter().all(|d| *d <= 200));
    }

    #[test]
    fn a_refused_target_resets_the_connection_at_once() {
        local(async {
            // A port nothing listens on.
            let closed = {
                let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                l.local_addr().unwrap()
            };
            let link = Link::start("router", "replica-0", closed).await.unwrap();
            let mut s = TcpStream::connect(link.addr()).await.unwrap();
            let started = Instant::now();
            let mut buf = [0u8; 1];
            let read = tokio::time::timeout(Duration::from_secs(2), s.read(&mut buf)).await;
            assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?}");
            assert!(started.elapsed() < Duration::from_secs(1));
        });
    }
}
