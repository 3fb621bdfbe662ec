//! Which simulated hosts are down, so that a call to one fails the way a kernel fails it.
//!
//! turmoil keeps the segments sent to a crashed host queued on the link and hands them to
//! the host once it restarts: a connection opened while the store is dead waits, and is then
//! accepted and served by the store's next life. A real kernel does neither. A process that
//! dies has its sockets closed at once: a connection attempt to its port is refused, and a
//! connection it had accepted is reset, so the caller's request fails at the moment of the
//! death, not at its timeout, and never reaches the next process. The live kill of the
//! store showed what that difference hides (`tests/fidelity/documented/kill-store-during-a-turn-*`):
//! the real a2a-sdk's background save fails at once and its task stays `submitted`, where the
//! queued save of the simulation waited out the restart and completed the turn, a false
//! `pass` on liveness.
//!
//! The world's driver tells this registry when it crashes a host and when it starts it
//! again ([`crashed`], [`restarted`]); [`super::send`] and [`super::send_streaming`] refuse a
//! call to a host that is down and reset a call in flight to a host that dies
//! ([`fail_with_host`]). Only simulated calls consult it: on real TCP the kernel does this
//! itself. The registry is per thread, like the simulation, and [`reset`] at the start of
//! every run.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::rc::Rc;

use tokio::sync::Notify;

use super::CallError;

#[derive(Default)]
struct HostLife {
    down: bool,
    /// How many times the host died.
    deaths: u64,
    died: Rc<Notify>,
}

thread_local! {
    static HOSTS: RefCell<BTreeMap<String, HostLife>> = const { RefCell::new(BTreeMap::new()) };
}

/// Forgets every host: a run starts with all of them up.
pub fn reset() {
    HOSTS.with(|h| h.borrow_mut().clear());
}

/// `host` died: calls to it are refused from now on, and the calls in flight to it fail.
pub fn crashed(host: &str) {
    let died = HOSTS.with(|h| {
        let mut hosts = h.borrow_mut();
        let life = hosts.entry(host.to_string()).or_default();
        life.down = true;
        life.deaths += 1;
        life.died.clone()
    });
    died.notify_waiters();
}

/// `host` runs again: calls reach it.
pub fn restarted(host: &str) {
    HOSTS.with(|h| {
        if let Some(life) = h.borrow_mut().get_mut(host) {
            life.down = false;
        }
    });
}

/// Whether `host` is down.
pub fn is_down(host: &str) -> bool {
    HOSTS.with(|h| h.borrow().get(host).is_some_and(|l| l.down))
}

/// Which life `host` is in: how many times it died so far (0 for a host never killed). A
/// connection made in one life is dead in the next.
pub fn life(host: &str) -> u64 {
    HOSTS.with(|h| h.borrow().get(host).map_or(0, |l| l.deaths))
}

/// Runs `call` to `host`: refused at once if the host is down, reset the moment the host
/// dies while the call is in flight.
pub async fn fail_with_host<T>(
    host: &str,
    call: impl Future<Output = Result<T, CallError>>,
) -> Result<T, CallError> {
    if is_down(host) {
        return Err(CallError::Unconnected(format!(
            "connect: connection refused ({host} is down)"
        )));
    }
    let died = HOSTS.with(|h| {
        h.borrow_mut()
            .entry(host.to_string())
            .or_default()
            .died
            .clone()
    });
    let death = died.notified();
    tokio::select! {
        biased;
        () = death => Err(CallError::Broken(format!("connection reset ({host} died)"))),
        result = call => result,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_call_to_a_host_that_is_down_is_refused_and_one_to_a_restarted_host_is_not() {
        reset();
        crashed("store");
        let refused = block_on(fail_with_host("store", async { Ok(()) }));
        assert!(matches!(refused, Err(CallError::Unconnected(why)) if why.contains("refused")));
        restarted("store");
        assert_eq!(block_on(fail_with_host("store", async { Ok(()) })), Ok(()));
        reset();
    }

    #[test]
    fn a_call_in_flight_is_reset_when_its_host_dies() {
        reset();
        let result = block_on(async {
            let call = fail_with_host("replica-0", std::future::pending::<Result<(), _>>());
            let kill = async {
                tokio::task::yield_now().await;
                crashed("replica-0");
                std::future::pending::<()>().await
            };
            tokio::select! {
                r = call => r,
                () = kill => unreachable!(),
            }
        });
        assert!(matches!(result, Err(CallError::Broken(why)) if why.contains("reset")));
        reset();
    }
}
