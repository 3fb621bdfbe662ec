//! The two engines a run's world can run on: turmoil, stepped one tick at a time, and the
//! event engine ([`crate::engine`]), whose clock jumps to the next event. Both run the same
//! hosts, the same client and the same [`Driver`]; only how time passes differs.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use crate::engine::Software;

use super::driver::Driver;
use super::RunSpec;

/// The hosts of a run, in the order they are added (turmoil gives addresses in that order).
#[derive(Default)]
pub(super) struct Hosts(Vec<(String, Software)>);

impl Hosts {
    /// Adds a host whose software `software` starts (again at every restart).
    pub(super) fn add(
        &mut self,
        name: impl Into<String>,
        software: impl Fn() -> Pin<Box<dyn Future<Output = turmoil::Result>>> + 'static,
    ) {
        self.0.push((name.into(), Rc::new(software)));
    }
}

/// How a run ended, on either engine.
pub(super) struct Ended {
    /// Simulated time when the client finished (or the run was stopped).
    pub(super) sim_ms: u64,
    /// How many times the driver looked at the world: each tick on turmoil, each wake on
    /// the event engine.
    pub(super) steps: u64,
    /// Why the run did not finish, if it did not.
    pub(super) error: Option<String>,
}

/// Runs the world on turmoil: the driver acts between ticks, every tick.
pub(super) fn run_turmoil(
    spec: &RunSpec,
    hosts: Hosts,
    client: Pin<Box<dyn Future<Output = turmoil::Result>>>,
    driver: &mut Driver,
) -> Ended {
    let mut sim = super::turmoil_builder(spec.seed, spec.budget)
        .tick_duration(spec.tick)
        .build();
    for (name, software) in hosts.0 {
        sim.host(name, move || software());
    }
    sim.client("client", client);
    let mut steps = 0u64;
    let mut error = None;
    loop {
        let now = sim.elapsed().as_millis() as u64;
        driver.act(&mut sim, now);
        steps += 1;
        match sim.step() {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => {
                error = Some(format!(
                    "the run did not finish: {e} (budget {} simulated s)",
                    spec.budget.as_secs()
                ));
                break;
            }
        }
    }
    Ended {
        sim_ms: sim.elapsed().as_millis() as u64,
        steps,
        error,
    }
}

/// Runs the world on the event engine: the driver acts when something is due (a planned
/// action's time, a drain's deadline) or when it is nudged (a scenario's command, a kill
/// point reached, a drained connection closed); otherwise the clock jumps.
pub(super) fn run_events(
    spec: &RunSpec,
    hosts: Hosts,
    client: Pin<Box<dyn Future<Output = turmoil::Result>>>,
    driver: &mut Driver,
) -> Ended {
    crate::engine::run(spec.timing_seed(), |core| async move {
        super::configure_event_net(&core);
        core.net.redraw(spec.seed, spec.fault_draw);
        for (name, software) in hosts.0 {
            core.host(&name, software);
        }
        let client = core.task("client", client);
        let steps = std::cell::Cell::new(0u64);
        let mut world = core.clone();
        let drive = async {
            loop {
                let now = crate::trace::now_ms();
                driver.act(&mut world, now);
                steps.set(steps.get() + 1);
                let next = driver.next_due_ms().map(|ms| core.at_ms(ms));
                if core.wait_nudge(next).await {
                    // What a nudge owes is applied at the next millisecond, as turmoil
                    // applies it between ticks: never in the millisecond that asked for it
                    // (a scenario's restart step in the same ms as the ack before it).
                    let next_ms = crate::trace::now_ms() + 1;
                    tokio::time::sleep_until(core.at_ms(next_ms)).await;
                }
            }
        };
        let budget = tokio::time::sleep(spec.budget);
        let error = tokio::select! {
            biased;
            why = core.failure() => Some(why),
            finished = client => match finished {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(format!("the client failed: {e}")),
                Err(e) => Some(format!("the client's task failed: {e}")),
            },
            () = budget => Some(format!(
                "the run did not finish: ran for {:?} without completing (budget {} simulated s)",
                spec.budget,
                spec.budget.as_secs()
            )),
            () = drive => unreachable!("the driver never ends"),
        };
        Ended {
            sim_ms: crate::trace::now_ms(),
            steps: steps.get(),
            error,
        }
    })
}
