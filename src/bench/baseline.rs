//! The bare-turmoil baseline and the idle floor.
//!
//! Both run a bare turmoil world configured like [`world::run`]'s (seed, epoch, tick,
//! latency, listener capacity) with the hosts of a standard run (`store`, `ledger`,
//! `webhook`, `replica-0..2`, `router`, `client`), serving HTTP/1.1 with hyper through
//! [`net::serve`] / [`net::send`] but with no A2A logic:
//!
//! - [`baseline_once`]: bare requests from `client` through `router` to a replica and on to
//!   `store`, either paced over a standard run's simulated time or back to back;
//! - [`idle_once`]: the same hosts serving nothing, which is what turmoil costs per tick
//!   whatever a run does (the idle floor).

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;

use crate::host::Host;
use crate::net::{self, BoxError, Call};
use crate::world;

/// The port every baseline host serves on.
const BASELINE_PORT: u16 = 9000;
/// Concurrent request loops in the baseline client (one per conversation).
pub(super) const BASELINE_LOOPS: u64 = 8;

/// A bare turmoil world configured like [`world::run`]'s: seed, epoch, tick, latency and
/// listener capacity.
fn bare_world<'a>(seed: u64) -> turmoil::Sim<'a> {
    world::turmoil_builder(seed, Duration::from_secs(600)).build()
}

/// The baseline's hosts, the same names as a standard run's: `store`, `ledger` and
/// `webhook` answer every request with `{}`; each replica makes one call to `store` per
/// request (like a save); `router` proxies round-robin to the replicas.
fn bare_hosts(sim: &mut turmoil::Sim<'_>, replicas: usize) {
    let timeout = Duration::from_secs(5);
    let leaf = |req: Request<Incoming>| async move {
        net::read_request(req.into_body())
            .await
            .map_err(|e| BoxError::from(e.to_string()))?;
        Ok::<_, BoxError>(Response::new(net::full(&b"{}"[..])))
    };
    for host in ["store", "ledger", "webhook"] {
        sim.host(host, move || net::serve(BASELINE_PORT, leaf));
    }
    let replica = move |req: Request<Incoming>| async move {
        let body = net::read_request(req.into_body())
            .await
            .map_err(|e| BoxError::from(e.to_string()))?;
        let call = Call::post_json("store", BASELINE_PORT, "/", body.to_vec(), timeout);
        let reply = net::send(&call)
            .await
            .map_err(|e| BoxError::from(e.to_string()))?;
        Ok::<_, BoxError>(Response::new(net::full(reply.body)))
    };
    for i in 0..replicas {
        sim.host(Host::Replica(i).to_string(), move || {
            net::serve(BASELINE_PORT, replica)
        });
    }
    sim.host("router", move || {
        let next = Rc::new(Cell::new(0usize));
        let handler = move |req: Request<Incoming>| {
            let next = next.clone();
            async move {
                let body = net::read_request(req.into_body())
                    .await
                    .map_err(|e| BoxError::from(e.to_string()))?;
                let k = next.get();
                next.set(k.wrapping_add(1));
                let host = Host::Replica(k % replicas.max(1)).to_string();
                let call = Call::post_json(host, BASELINE_PORT, "/", body.to_vec(), timeout);
                let reply = net::send(&call)
                    .await
                    .map_err(|e| BoxError::from(e.to_string()))?;
                Ok::<_, BoxError>(Response::new(net::full(reply.body)))
            }
        };
        net::serve(BASELINE_PORT, handler)
    });
}

/// Steps `sim` tick by tick, as the cluster driver does, until the client is done; returns
/// the simulated milliseconds.
fn step_to_end(mut sim: turmoil::Sim<'_>, what: &str) -> u64 {
    loop {
        match sim.step() {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => panic!("the {what} simulation failed: {e}"),
        }
    }
    sim.elapsed().as_millis() as u64
}

/// Runs one baseline simulation: `requests` bare HTTP calls from `client` through `router`
/// to a replica and on to `store`, in 8 loops. With `spread`, each loop starts its requests
/// at even intervals over that much simulated time (a paced run, as long as a standard
/// run); without, back to back. Returns (requests answered, simulated ms).
pub fn baseline_once(
    seed: u64,
    requests: u64,
    replicas: usize,
    spread: Option<Duration>,
) -> (u64, u64) {
    let mut sim = bare_world(seed);
    bare_hosts(&mut sim, replicas);
    let timeout = Duration::from_secs(5);
    let answered = Rc::new(Cell::new(0u64));
    {
        let answered = answered.clone();
        sim.client("client", async move {
            let start = tokio::time::Instant::now();
            let mut loops = Vec::new();
            for l in 0..BASELINE_LOOPS {
                let share = requests / BASELINE_LOOPS + u64::from(l < requests % BASELINE_LOOPS);
                let answered = answered.clone();
                loops.push(tokio::task::spawn_local(async move {
                    // Loop l's request i starts at (i + l/8) periods from the start.
                    let period = spread.map(|d| d / share.max(1) as u32);
                    for i in 0..share {
                        if let Some(p) = period {
                            let at = p * i as u32 + p * l as u32 / BASELINE_LOOPS as u32;
                            tokio::time::sleep_until(start + at).await;
                        }
                        let call =
                            Call::post_json("router", BASELINE_PORT, "/", b"{}".to_vec(), timeout);
                        if net::send(&call).await.is_ok() {
                            answered.set(answered.get() + 1);
                        }
                    }
                }));
            }
            for l in loops {
                l.await?;
            }
            Ok(())
        });
    }
    let sim_ms = step_to_end(sim, "baseline");
    (answered.get(), sim_ms)
}

/// Runs one idle simulation: the baseline's hosts, serving nothing, while the client sleeps
/// `sim_ms` simulated milliseconds. Returns the simulated ms it took.
pub fn idle_once(seed: u64, replicas: usize, sim_ms: u64) -> u64 {
    let mut sim = bare_world(seed);
    bare_hosts(&mut sim, replicas);
    sim.client("client", async move {
        tokio::time::sleep(Duration::from_millis(sim_ms)).await;
        Ok(())
    });
    step_to_end(sim, "idle")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_baseline_answers_every_request_deterministically() {
        let a = baseline_once(7, 20, 3, None);
        assert_eq!(a.0, 20);
        assert_eq!(a, baseline_once(7, 20, 3, None));
        let paced = baseline_once(7, 20, 3, Some(Duration::from_millis(2000)));
        assert_eq!(paced.0, 20);
        assert!(
            (1500..2100).contains(&paced.1),
            "paced over about 2 s (the last request starts one period before): {paced:?}"
        );
    }

    #[test]
    fn the_idle_floor_lasts_as_long_as_asked() {
        let ms = idle_once(3, 3, 500);
        assert!((500..510).contains(&ms), "{ms}");
    }
}
