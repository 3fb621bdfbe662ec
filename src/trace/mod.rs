//! The ordered event trace of one run and its hash.
//!
//! Every host appends what it did (a routed request, a store save, a ledger effect, a fault)
//! as a typed [`Event`] with the simulated time. The simulation runs all hosts on one thread in an order fixed by
//! the seed, so the trace is a function of the seed alone; its FNV-1a hash is how a test or a
//! user checks that a seed replays exactly, in this process or another.

pub mod event;

pub use crate::seed::{derive_seed, Fnv};

use std::cell::RefCell;
use std::fmt::Write as _;
use std::rc::Rc;
use std::time::Duration;

pub use event::{Event, Reply, Tone};

use crate::host::Host;

/// One line of the trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceEvent {
    /// Simulated milliseconds since the start of the run.
    pub at_ms: u64,
    /// The host that recorded it (`router`, `replica-1`, `driver`, ...).
    pub host: Host,
    /// What happened.
    pub event: Event,
}

impl std::fmt::Display for TraceEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:>7} ms  {:<10} {}", self.at_ms, self.host, self.event)
    }
}

/// A shared, append-only trace. Cloning shares the same trace.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    events: Rc<RefCell<Vec<TraceEvent>>>,
    hash: Rc<RefCell<Fnv>>,
    keep: bool,
}

impl Trace {
    /// A trace that keeps its events (for replay) or only hashes them (for sweeps).
    pub fn new(keep_events: bool) -> Self {
        Trace {
            events: Rc::default(),
            hash: Rc::default(),
            keep: keep_events,
        }
    }

    /// Records an event at the current simulated time of the calling host.
    pub fn record(&self, host: impl Into<Host>, event: Event) {
        self.record_at(now_ms(), host, event);
    }

    /// Records an event at a given simulated time (used by the driver between steps). The
    /// hash covers `at_ms|host|event` as the host and the event print.
    pub fn record_at(&self, at_ms: u64, host: impl Into<Host>, event: Event) {
        let host = host.into();
        let mut line = String::with_capacity(96);
        let _ = writeln!(line, "{at_ms}|{host}|{event}");
        tracing::debug!(target: "a2a_chaos::trace", host = &*host.name(), "{event}");
        self.hash.borrow_mut().write(line.as_bytes());
        if self.keep {
            self.events
                .borrow_mut()
                .push(TraceEvent { at_ms, host, event });
        }
    }

    /// The events recorded so far (empty unless the trace keeps events).
    pub fn events(&self) -> Vec<TraceEvent> {
        self.events.borrow().clone()
    }

    /// The hash of every event recorded so far, as 16 hex digits.
    pub fn hash_hex(&self) -> String {
        format!("{:016x}", self.hash.borrow().0)
    }
}

/// The fixed simulated epoch: 2026-01-01T00:00:00Z.
pub const EPOCH_SECS: u64 = 1_767_225_600;

/// The simulated wall clock: the fixed epoch plus [`now`] (in `serve` and live runs, the
/// epoch plus the real time since the process's network was made), to the millisecond. It
/// is what a status timestamp says, so it replays with the seed.
pub fn wall_clock() -> chrono::DateTime<chrono::Utc> {
    let ms = EPOCH_SECS * 1000 + now_ms();
    chrono::DateTime::from_timestamp_millis(ms as i64).unwrap_or_default()
}

/// Simulated time since the start of the run, in milliseconds, on the calling host.
/// Outside a simulation it is the real time since the thread's [`crate::net::RealNet`] was
/// made (a live run), or zero.
pub fn now_ms() -> u64 {
    now().as_millis() as u64
}

/// Simulated time since the start of the run on the calling host (real time in a live run).
pub fn now() -> Duration {
    turmoil::sim_elapsed()
        .or_else(crate::engine::elapsed)
        .or_else(|| crate::net::real().map(|net| net.elapsed()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_the_published_test_vector() {
        assert_eq!(Fnv::of("a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn derived_seeds_do_not_collide_across_neighbours() {
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..64 {
            for index in 0..64 {
                assert!(seen.insert(derive_seed(seed, "workload", index)));
            }
        }
        assert_ne!(derive_seed(0, "router", 0), derive_seed(0, "faults", 0));
    }

    #[test]
    fn hash_depends_on_order() {
        let a = Trace::new(false);
        a.record_at(1, Host::Driver, Event::plain("one"));
        a.record_at(2, Host::Driver, Event::plain("two"));
        let b = Trace::new(false);
        b.record_at(2, Host::Driver, Event::plain("two"));
        b.record_at(1, Host::Driver, Event::plain("one"));
        assert_ne!(a.hash_hex(), b.hash_hex());
    }
}
