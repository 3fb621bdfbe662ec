//! Graceful shutdown: what a replica does between SIGTERM (a `drain` fault,
//! [`crate::faults::drain`]) and its exit.
//!
//! At the drain the pod leaves the router's endpoints (the driver marks it not ready) and
//! stops accepting connections: its listener is closed, so a connection attempt is refused.
//! The streams it serves end `handler.sse_grace_ms` after the server notices (at once, or at
//! the next look of a watcher polling every `handler.sse_exit_poll_ms` since the first stream
//! of the process, as sse-starlette's does): the body just ends, with no error event, as
//! sse-starlette ends an `EventSourceResponse` (a2a-python: a grace of 0 ms). It
//! exits once it holds no connection, as uvicorn does after waiting for in-flight requests
//! (not for background runs), or when the fault's grace period is over (SIGKILL); the
//! driver turns either into a crash of the host. Whatever runs it still had going dies with
//! it, so a run whose stream was cut is never finished there.
//!
//! Knobs read: `handler.sse_grace_ms`, `handler.sse_exit_poll_ms` (a drain of a model without it is refused:
//! [`crate::model::Profile::check_drain`]).

use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use tokio::sync::watch;

use super::Replica;
use crate::trace::now_ms;

/// The drain state one replica slot shares with the driver, across the slot's boots (and
/// the other client-side signal the driver gives a replica: `stall-readers`).
pub struct DrainSignal {
    /// When SIGTERM came (simulated ms), this boot; `None` while the pod serves.
    begun: watch::Sender<Option<u64>>,
    /// The boot the counters below belong to.
    boot: Cell<u32>,
    /// Connections this boot holds open (a request being answered, a stream being sent).
    connections: Cell<usize>,
    /// When this boot began its first stream (where a polling shutdown watcher starts).
    first_stream_ms: Cell<Option<u64>>,
    /// When the readers of the subscriptions open then stopped reading, this boot
    /// ([`crate::faults::stall`]); `None`: every reader reads.
    readers_stalled_ms: Cell<Option<u64>>,
}

impl DrainSignal {
    /// A signal for a replica slot that has not booted yet.
    pub fn new() -> Rc<DrainSignal> {
        Rc::new(DrainSignal {
            begun: watch::Sender::new(None),
            boot: Cell::new(0),
            connections: Cell::new(0),
            first_stream_ms: Cell::new(None),
            readers_stalled_ms: Cell::new(None),
        })
    }

    /// SIGTERM, at `now_ms`.
    pub fn begin(&self, now_ms: u64) {
        self.begun.send_replace(Some(now_ms));
    }

    /// The readers of the subscriptions open now stop reading (`stall-readers`, at `now_ms`).
    pub fn stall_readers(&self, now_ms: u64) {
        self.readers_stalled_ms.set(Some(now_ms));
    }

    /// Whether the reader of a subscription opened at `opened_ms` has stopped reading.
    pub(super) fn reader_stalled(&self, opened_ms: u64) -> bool {
        self.readers_stalled_ms
            .get()
            .is_some_and(|at| at >= opened_ms)
    }

    /// How many connections the pod still holds open.
    pub fn connections(&self) -> usize {
        self.connections.get()
    }

    /// A new boot of the slot: serving, no connection held.
    pub(super) fn boot(&self, boot: u32) {
        self.boot.set(boot);
        self.connections.set(0);
        self.first_stream_ms.set(None);
        self.readers_stalled_ms.set(None);
        self.begun.send_replace(None);
    }

    /// When SIGTERM came: waits for it.
    pub(super) async fn begun(&self) -> u64 {
        let mut rx = self.begun.subscribe();
        // The sender lives in `self`: it cannot be dropped while this waits.
        let at = rx.wait_for(Option::is_some).await.ok().and_then(|at| *at);
        match at {
            Some(at) => at,
            None => std::future::pending().await,
        }
    }

    /// Counts one open connection until the guard is dropped.
    pub(super) fn connection(self: &Rc<Self>) -> Connection {
        self.connections.set(self.connections.get() + 1);
        Connection {
            signal: self.clone(),
            boot: self.boot.get(),
        }
    }
}

/// One open connection of a replica, counted while it lives.
pub(super) struct Connection {
    signal: Rc<DrainSignal>,
    boot: u32,
}

impl Drop for Connection {
    fn drop(&mut self) {
        // A connection of an earlier boot (its tasks dropped with the crashed host) is not
        // one of this boot's.
        if self.signal.boot.get() == self.boot {
            let open = self.signal.connections.get();
            self.signal.connections.set(open.saturating_sub(1));
            // A draining pod whose last connection closed exits: the driver acts on it.
            if open <= 1 && self.signal.begun.borrow().is_some() {
                crate::engine::nudge();
            }
        }
    }
}

impl Replica {
    /// Resolves when a stream this replica begins now must end: `handler.sse_grace_ms`
    /// after the server notices SIGTERM; never for a model that does not say (no drain
    /// reaches one).
    pub(super) fn stream_cut(&self) -> impl Future<Output = ()> + 'static {
        let drain = self.faults.drain.clone();
        let first = drain.first_stream_ms.get().unwrap_or_else(now_ms);
        drain.first_stream_ms.set(Some(first));
        let grace = self.profile.handler.sse_grace_ms;
        let poll = self.profile.handler.sse_exit_poll_ms.unwrap_or(0);
        async move {
            let since = drain.begun().await;
            let Some(grace) = grace else {
                return std::future::pending().await;
            };
            let left = (noticed(since, first, poll) + grace).saturating_sub(now_ms());
            tokio::time::sleep(Duration::from_millis(left)).await;
        }
    }
}

/// When a watcher that looks every `poll` ms from `first` on (at once, for 0) notices a
/// SIGTERM sent at `since`.
fn noticed(since: u64, first: u64, poll: u64) -> u64 {
    if poll == 0 || since <= first {
        return since;
    }
    first + (since - first).div_ceil(poll) * poll
}

#[cfg(test)]
mod tests {
    use super::noticed;

    #[test]
    fn a_polling_watcher_notices_at_its_next_look() {
        assert_eq!(noticed(61, 2, 0), 61);
        assert_eq!(noticed(61, 2, 500), 502);
        assert_eq!(noticed(502, 2, 500), 502);
        assert_eq!(noticed(503, 2, 500), 1002);
    }
}
