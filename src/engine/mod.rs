//! The event engine: every host of a run on one paused tokio runtime, and simulated time
//! that jumps straight to the next thing that can happen.
//!
//! turmoil (the other engine, [`Engine::Turmoil`]) gives each host its own runtime and
//! advances all of them one fixed tick at a time, whether or not anything is due: most of
//! a run's wall time goes to idle ticks. Here all hosts share one current-thread runtime
//! built with `start_paused(true)` and the run's seed (`rng_seed`, so `select!` draws
//! from it too). When no task can run, tokio moves the clock to the earliest timer: a model
//! timer, a client's timeout, a segment's delivery ([`net`]), the driver's next planned
//! fault. Nothing is ever stepped through; one seed still gives one order of events.
//!
//! What turmoil's runtimes gave for free is rebuilt here:
//! - **Hosts.** Each task knows its host: a host's software, and every task it spawns
//!   through [`spawn`], is polled inside [`HostScoped`], which sets the thread's current
//!   host, and is registered with that host. [`Core::crash`] aborts every task of a host
//!   (its memory, connections and timers die with them); [`Core::bounce`] starts its
//!   software again from the factory, as a new process.
//! - **Time.** [`elapsed`] is the runtime's clock since the run began: the same
//!   millisecond for every host, as turmoil's simulated elapsed time is.
//! - **The network.** [`net`]: connections between hosts whose segments arrive after a
//!   latency drawn from the seed, in order, held while their link is held.
//!
//! The engine is installed for the thread while a run lasts ([`Core::install`]); code
//! that asks for the current host or the simulated clock outside a run gets `None`.

pub mod net;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::{AbortHandle, JoinHandle};

/// Which engine runs a simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    /// turmoil 0.7: every host on its own runtime, all stepped one tick at a time.
    Turmoil,
    /// This module: one paused runtime; time jumps to the next event.
    #[default]
    Events,
}

impl Engine {
    /// The engine's name on the command line and in files.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Turmoil => "turmoil",
            Engine::Events => "events",
        }
    }
}

/// A name that is no engine ([`Engine`]'s `FromStr`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown engine `{0}`: expected `turmoil` or `events`")]
pub struct UnknownEngine(pub String);

impl std::str::FromStr for Engine {
    type Err = UnknownEngine;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "turmoil" => Ok(Engine::Turmoil),
            "events" => Ok(Engine::Events),
            other => Err(UnknownEngine(other.to_string())),
        }
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a host runs: called once at the start and again at every restart.
pub type Software = Rc<dyn Fn() -> Pin<Box<dyn Future<Output = HostResult>>>>;

/// What a host's software ends with (it normally never ends).
pub type HostResult = Result<(), Box<dyn std::error::Error>>;

/// The name of a host, shared by every task of it.
pub type HostName = Rc<str>;

/// One host: its software and the tasks of its current life.
struct Slot {
    software: Software,
    running: bool,
    /// Which life the host is in: 1 at the start, one more at each restart.
    life: u64,
    tasks: Vec<AbortHandle>,
    /// Tasks registered since the list was last pruned of finished ones.
    since_pruned: usize,
}

/// The host a task belongs to, and in which of its lives it was spawned.
#[derive(Debug, Clone)]
pub struct Owner {
    pub host: HostName,
    /// `None` for the client and the driver's own tasks, which have no life to end.
    life: Option<u64>,
}

/// The engine of one run, shared by its driver and its hosts.
pub struct Core {
    start: tokio::time::Instant,
    hosts: RefCell<BTreeMap<HostName, Slot>>,
    /// The network between the hosts.
    pub net: net::Net,
    /// Woken when something the driver must act on happened (a scenario's command, a kill
    /// point reached, a drained connection closed): see [`nudge`].
    nudge: Notify,
    /// The first host software that failed: the run is over.
    failed: RefCell<Option<String>>,
    failed_notify: Notify,
}

thread_local! {
    static CORE: RefCell<Option<Rc<Core>>> = const { RefCell::new(None) };
    static CURRENT: RefCell<Option<Owner>> = const { RefCell::new(None) };
}

/// The engine of the thread's run, if one is running.
pub fn core() -> Option<Rc<Core>> {
    CORE.with(|c| c.borrow().clone())
}

/// The host whose task is running now (inside an event-engine run).
pub fn current_host() -> Option<HostName> {
    CURRENT.with(|c| c.borrow().as_ref().map(|o| o.host.clone()))
}

/// Simulated time since the run began, inside an event-engine run.
pub fn elapsed() -> Option<Duration> {
    CORE.with(|c| c.borrow().as_ref().map(|core| core.start.elapsed()))
}

/// Tells the driver something may be owed to it now (no-op outside an event-engine run).
pub fn nudge() {
    CORE.with(|c| {
        if let Some(core) = c.borrow().as_ref() {
            core.nudge.notify_one();
        }
    });
}

/// `tokio::task::spawn_local`, owned by the current host: the task dies with it. Outside an
/// event-engine run (turmoil's hosts have a runtime each; a live run has real processes)
/// it is `spawn_local` itself.
///
/// A task spawned by a life of a host that has ended (by a future dropped as its host was
/// killed) is aborted at once: on turmoil it would have died with the host's runtime.
pub fn spawn<F>(work: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let owner = CURRENT.with(|c| c.borrow().clone());
    match (core(), owner) {
        (Some(core), Some(owner)) => {
            let handle = tokio::task::spawn_local(HostScoped::new(owner.clone(), work));
            core.register(&owner, handle.abort_handle());
            handle
        }
        _ => tokio::task::spawn_local(work),
    }
}

/// A future polled, and dropped, as a task of its owner: the thread's current host is the
/// owner's while it runs, so what it spawns (even from a destructor, as a killed host's
/// futures are dropped) belongs to the same host and life.
pub struct HostScoped<F> {
    owner: Owner,
    inner: Option<Pin<Box<F>>>,
}

impl<F: Future> HostScoped<F> {
    fn new(owner: Owner, inner: F) -> Self {
        HostScoped {
            owner,
            inner: Some(Box::pin(inner)),
        }
    }
}

/// Runs `f` with the thread's current host set to `owner` (restored after, even on a panic).
fn scoped<R>(owner: &Owner, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Owner>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| *c.borrow_mut() = self.0.take());
        }
    }
    let _restore = Restore(CURRENT.with(|c| c.replace(Some(owner.clone()))));
    f()
}

impl<F: Future> Future for HostScoped<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let inner = this.inner.as_mut().expect("polled after it finished");
        scoped(&this.owner, || inner.as_mut().poll(cx))
    }
}

impl<F> Drop for HostScoped<F> {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            scoped(&self.owner, move || drop(inner));
        }
    }
}

impl Core {
    /// A new engine for a run drawn from `seed`, installed on this thread until the
    /// returned guard drops. Must be called inside the run's runtime (it reads its clock).
    pub fn install(seed: u64) -> (Rc<Core>, Installed) {
        let core = Rc::new(Core {
            start: tokio::time::Instant::now(),
            hosts: RefCell::default(),
            net: net::Net::new(seed),
            nudge: Notify::new(),
            failed: RefCell::default(),
            failed_notify: Notify::new(),
        });
        CORE.with(|c| *c.borrow_mut() = Some(core.clone()));
        (core, Installed(()))
    }

    /// Adds a host and starts its software.
    pub fn host(self: &Rc<Self>, name: &str, software: Software) {
        let name: HostName = name.into();
        self.hosts.borrow_mut().insert(
            name.clone(),
            Slot {
                software,
                running: false,
                life: 0,
                tasks: Vec::new(),
                since_pruned: 0,
            },
        );
        self.start_software(&name);
    }

    /// Runs `work` as a task of `name`, a host with no software of its own to restart (the
    /// client, the driver).
    pub fn task<F>(self: &Rc<Self>, name: &str, work: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let owner = Owner {
            host: name.into(),
            life: None,
        };
        tokio::task::spawn_local(HostScoped::new(owner, work))
    }

    fn start_software(self: &Rc<Self>, name: &HostName) {
        let (software, life) = {
            let mut hosts = self.hosts.borrow_mut();
            let slot = hosts.get_mut(name).expect("host was added");
            slot.running = true;
            slot.life += 1;
            (slot.software.clone(), slot.life)
        };
        let owner = Owner {
            host: name.clone(),
            life: Some(life),
        };
        // The software is made as the new life's, so what it spawns is that life's.
        let run = scoped(&owner, || software());
        let core = Rc::downgrade(self);
        let who = name.clone();
        let handle = tokio::task::spawn_local(HostScoped::new(owner.clone(), async move {
            if let Err(e) = run.await {
                if let Some(core) = core.upgrade() {
                    core.fail(format!("host {who} failed: {e}"));
                }
            }
        }));
        self.register(&owner, handle.abort_handle());
    }

    /// Files `task` under its owner's life; a task of a life that has ended is aborted.
    fn register(&self, owner: &Owner, task: AbortHandle) {
        let Some(life) = owner.life else {
            return; // a task of the client or the driver: they are never killed
        };
        let mut hosts = self.hosts.borrow_mut();
        let Some(slot) = hosts.get_mut(&owner.host) else {
            return;
        };
        if !slot.running || slot.life != life {
            task.abort();
            return;
        }
        // Forget finished tasks now and then, so a long run's list stays short.
        slot.since_pruned += 1;
        if slot.since_pruned >= 256 {
            slot.since_pruned = 0;
            slot.tasks.retain(|t| !t.is_finished());
        }
        slot.tasks.push(task);
    }

    /// Kills `name`: every task of its current life is aborted, its listeners close and
    /// its connections end (the network forgets its listeners).
    pub fn crash(&self, name: &str) {
        let tasks = {
            let mut hosts = self.hosts.borrow_mut();
            let Some(slot) = hosts.get_mut(name) else {
                return;
            };
            slot.running = false;
            std::mem::take(&mut slot.tasks)
        };
        for t in tasks {
            t.abort();
        }
        self.net.host_died(name);
    }

    /// Starts `name` again if it is down: a new process, its software called afresh.
    pub fn bounce(self: &Rc<Self>, name: &str) {
        let key = {
            let hosts = self.hosts.borrow();
            match hosts.get_key_value(name) {
                Some((key, slot)) if !slot.running => key.clone(),
                _ => return,
            }
        };
        self.start_software(&key);
    }

    /// Ends the run with `why` (the first failure wins).
    pub fn fail(&self, why: String) {
        let mut failed = self.failed.borrow_mut();
        if failed.is_none() {
            *failed = Some(why);
            self.failed_notify.notify_waiters();
        }
    }

    /// Resolves with the first failure of a host's software.
    pub async fn failure(&self) -> String {
        loop {
            let notified = self.failed_notify.notified();
            if let Some(why) = self.failed.borrow().clone() {
                return why;
            }
            notified.await;
        }
    }

    /// Waits for a [`nudge`] (`true`) or until `deadline` (`false`), whichever comes first.
    pub async fn wait_nudge(&self, deadline: Option<tokio::time::Instant>) -> bool {
        match deadline {
            Some(at) => {
                tokio::select! {
                    biased;
                    () = self.nudge.notified() => true,
                    () = tokio::time::sleep_until(at) => false,
                }
            }
            None => {
                self.nudge.notified().await;
                true
            }
        }
    }

    /// The instant `ms` simulated milliseconds after the run began.
    pub fn at_ms(&self, ms: u64) -> tokio::time::Instant {
        self.start + Duration::from_millis(ms)
    }
}

/// Keeps an engine installed on its thread; dropping it uninstalls the engine.
pub struct Installed(());

impl Drop for Installed {
    fn drop(&mut self) {
        CORE.with(|c| *c.borrow_mut() = None);
        CURRENT.with(|c| *c.borrow_mut() = None);
    }
}

/// Runs `f` on a fresh engine for `seed`, on this thread: a current-thread runtime with
/// paused time, a `LocalSet` for the hosts' tasks, the engine installed while it lasts. A
/// task that panics stops the run with its panic, as a panic in a turmoil host does (the
/// caller's `contain` reports its first message).
pub fn run<F, Fut>(seed: u64, f: F) -> Fut::Output
where
    F: FnOnce(Rc<Core>) -> Fut,
    Fut: Future,
{
    let rt = runtime(seed);
    #[cfg_attr(not(tokio_unstable), allow(unused_mut))]
    let mut local = tokio::task::LocalSet::new();
    #[cfg(tokio_unstable)]
    local.unhandled_panic(tokio::runtime::UnhandledPanic::ShutdownRuntime);
    local.block_on(&rt, async move {
        let (core, _installed) = Core::install(seed);
        f(core).await
    })
}

/// A current-thread runtime with paused time, its scheduler's choices drawn from `seed`.
fn runtime(seed: u64) -> tokio::runtime::Runtime {
    let mut b = tokio::runtime::Builder::new_current_thread();
    b.enable_time().start_paused(true);
    #[cfg(tokio_unstable)]
    b.rng_seed(tokio::runtime::RngSeed::from_bytes(&seed.to_le_bytes()));
    #[cfg(not(tokio_unstable))]
    let _ = seed;
    b.build().expect("a current-thread runtime builds")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn idle_time_is_skipped_and_a_crash_aborts_every_task_of_the_host() {
        run(1, |core| async move {
            let ticks = Rc::new(Cell::new(0u32));
            let t = ticks.clone();
            core.host(
                "h",
                Rc::new(move || {
                    let t = t.clone();
                    Box::pin(async move {
                        // A child task, spawned as the host's software would.
                        let t2 = t.clone();
                        spawn(async move {
                            loop {
                                tokio::time::sleep(Duration::from_secs(60)).await;
                                t2.set(t2.get() + 1);
                            }
                        });
                        std::future::pending::<()>().await;
                        Ok(())
                    })
                }),
            );
            tokio::time::sleep(Duration::from_secs(600) + Duration::from_millis(1)).await;
            assert_eq!(ticks.get(), 10, "ten minutes of timers, skipped to");
            assert_eq!(elapsed().unwrap().as_secs(), 600);
            core.crash("h");
            tokio::time::sleep(Duration::from_secs(600)).await;
            assert_eq!(
                ticks.get(),
                10,
                "the crashed host's child task died with it"
            );
            core.bounce("h");
            tokio::time::sleep(Duration::from_secs(61)).await;
            assert_eq!(ticks.get(), 11, "the restarted host runs again");
        });
    }

    /// A killed host's futures are dropped as its: what a destructor spawns then belongs
    /// to the life that ended and dies at once (on turmoil it died with the runtime).
    #[test]
    fn a_task_spawned_while_a_killed_host_is_dropped_dies_with_it() {
        struct SpawnsOnDrop(Rc<Cell<u32>>);
        impl Drop for SpawnsOnDrop {
            fn drop(&mut self) {
                let fired = self.0.clone();
                spawn(async move {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    fired.set(fired.get() + 1);
                });
            }
        }
        run(2, |core| async move {
            let fired = Rc::new(Cell::new(0u32));
            let f = fired.clone();
            core.host(
                "h",
                Rc::new(move || {
                    let guard = SpawnsOnDrop(f.clone());
                    Box::pin(async move {
                        let _guard = guard;
                        std::future::pending::<()>().await;
                        Ok(())
                    })
                }),
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
            core.crash("h");
            core.bounce("h");
            tokio::time::sleep(Duration::from_secs(5)).await;
            assert_eq!(fired.get(), 0, "the old life's timer fired after its death");
        });
    }
}
