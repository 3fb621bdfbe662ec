//! The bare baseline and the idle floor.
//!
//! Both run a bare world configured like [`world::run`]'s (seed, epoch, tick, latency,
//! listener capacity), on either engine, with the hosts of a standard run (`store`,
//! `ledger`, `webhook`, `replica-0..2`, `router`, `client`), serving HTTP/1.1 with hyper
//! through [`net::serve`] / [`net::send`] but with no A2A logic:
//!
//! - [`baseline_once`]: bare requests from `client` through `router` to a replica and on to
//!   `store`, either paced over a standard run's simulated time or back to back;
//! - [`idle_once`]: the same hosts serving nothing on turmoil, which is what turmoil costs
//!   per tick whatever a run does (the idle floor; the event engine has none).

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;

use crate::engine::{Engine, Software};
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

/// Adds a host running the software it is given (on either engine).
type AddHost<'a> = &'a mut dyn FnMut(String, Software);

/// The baseline's hosts, the same names as a standard run's: `store`, `ledger` and
/// `webhook` answer every request with `{}`; each replica makes one call to `store` per
/// request (like a save); `router` proxies round-robin to the replicas.
fn bare_hosts(add: AddHost<'_>, replicas: usize) {
    let timeout = Duration::from_secs(5);
    let leaf = |req: Request<Incoming>| async move {
        net::read_request(req.into_body())
            .await
            .map_err(|e| BoxError::from(e.to_string()))?;
        Ok::<_, BoxError>(Response::new(net::full(&b"{}"[..])))
    };
    for host in ["store", "ledger", "webhook"] {
        add(
            host.into(),
            Rc::new(move || Box::pin(net::serve(BASELINE_PORT, leaf))),
        );
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
        add(
            Host::Replica(i).to_string(),
            Rc::new(move || Box::pin(net::serve(BASELINE_PORT, replica))),
        );
    }
    add(
        "router".into(),
        Rc::new(move || {
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
            Box::pin(net::serve(BASELINE_PORT, handler))
        }),
    );
}

/// Runs the bare hosts and `client` on `engine` until the client is done; returns the
/// simulated milliseconds. On turmoil the world is stepped tick by tick, as a run's driver
/// steps it; on the event engine the clock jumps.
fn run_bare(
    engine: Engine,
    seed: u64,
    replicas: usize,
    client: Pin<Box<dyn Future<Output = turmoil::Result>>>,
    what: &str,
) -> u64 {
    match engine {
        Engine::Turmoil => {
            let mut sim = bare_world(seed);
            bare_hosts(
                &mut |name, software| sim.host(name, move || software()),
                replicas,
            );
            sim.client("client", client);
            loop {
                match sim.step() {
                    Ok(true) => break,
                    Ok(false) => {}
                    Err(e) => panic!("the {what} simulation failed: {e}"),
                }
            }
            sim.elapsed().as_millis() as u64
        }
        Engine::Events => crate::engine::run(seed, |core| async move {
            world::configure_event_net(&core);
            bare_hosts(&mut |name, software| core.host(&name, software), replicas);
            match core.task("client", client).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => panic!("the {what} simulation failed: {e}"),
                Err(e) => panic!("the {what} simulation failed: {e}"),
            }
            crate::engine::elapsed().unwrap_or_default().as_millis() as u64
        }),
    }
}

/// Runs one baseline simulation on `engine`: `requests` bare HTTP calls from `client`
/// through `router` to a replica and on to `store`, in 8 loops. With `spread`, each loop
/// starts its requests at even intervals over that much simulated time (a paced run, as
/// long as a standard run); without, back to back. Returns (requests answered, simulated
/// ms).
pub fn baseline_once(
    engine: Engine,
    seed: u64,
    requests: u64,
    replicas: usize,
    spread: Option<Duration>,
) -> (u64, u64) {
    let timeout = Duration::from_secs(5);
    let answered = Rc::new(Cell::new(0u64));
    let client = {
        let answered = answered.clone();
        Box::pin(async move {
            let start = tokio::time::Instant::now();
            let mut loops = Vec::new();
            for l in 0..BASELINE_LOOPS {
                let share = requests / BASELINE_LOOPS + u64::from(l < requests % BASELINE_LOOPS);
                let answered = answered.clone();
                loops.push(crate::engine::spawn(async move {
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
        })
    };
    let sim_ms = run_bare(engine, seed, replicas, client, "baseline");
    (answered.get(), sim_ms)
}

/// Runs one idle simulation on turmoil: the baseline's hosts, serving nothing, while the
/// client sleeps `sim_ms` simulated milliseconds. Returns the simulated ms it took. (The
/// event engine's idle floor is nothing: its clock jumps over idle time.)
pub fn idle_once(seed: u64, replicas: usize, sim_ms: u64) -> u64 {
    let client = Box::pin(async move {
        tokio::time::sleep(Duration::from_millis(sim_ms)).await;
        Ok(())
    });
    run_bare(Engine::Turmoil, seed, replicas, client, "idle")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_baseline_answers_every_request_deterministically_on_both_engines() {
        for engine in [Engine::Turmoil, Engine::Events] {
            let a = baseline_once(engine, 7, 20, 3, None);
            assert_eq!(a.0, 20, "{engine}");
            assert_eq!(a, baseline_once(engine, 7, 20, 3, None), "{engine}");
            let paced = baseline_once(engine, 7, 20, 3, Some(Duration::from_millis(2000)));
            assert_eq!(paced.0, 20, "{engine}");
            assert!(
                (1500..2100).contains(&paced.1),
                "{engine}: paced over about 2 s (the last request starts one period before): {paced:?}"
            );
        }
    }

    #[test]
    fn the_idle_floor_lasts_as_long_as_asked() {
        let ms = idle_once(3, 3, 500);
        assert!((500..510).contains(&ms), "{ms}");
    }
}
