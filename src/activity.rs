//! Work in flight in a simulated run: the count the driver reads to know a run has settled.
//!
//! Every task the simulated hosts spawn for a piece of work (a served connection, an
//! outbound call, a background turn, a push, a timer that may still change a task, a
//! client's concurrent operation) is spawned through [`spawn`], which holds a [`Guard`] for
//! as long as the task lives. The guard counts on the thread's current [`Activity`], which
//! `world::run` installs for its run; a crashed host drops its tasks, and so their guards.
//! Loops that run for a host's whole life (the takeover sweeper, the outbox deliverer) are
//! spawned directly: they are the system at rest, and the settle rule asks instead whether
//! they have anything left to do.
//!
//! A model timer that may change a task when it fires (an input wait's expiry, a task
//! timeout) is spawned through [`spawn_timer`] with the simulated ms it fires at: it is
//! counted apart, by its deadline, so the settle rule can tell a timer that would fire
//! before the run's final read (work still to come) from one that would not (a run that
//! stepped its bound out would not have seen it fire either).
//!
//! Outside a simulated run (live mode, `serve`) nothing is installed and a guard counts
//! nothing. The count is read, never written, by the simulation's logic, so it changes no
//! trace. The lowest layer: it depends on nothing in the crate.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::rc::Rc;

thread_local! {
    static CURRENT: RefCell<Option<Activity>> = const { RefCell::new(None) };
}

/// The count of pieces of work in flight in one run, and the model timers still waiting,
/// by the simulated ms they fire at.
#[derive(Debug, Clone, Default)]
pub struct Activity(Rc<Cell<usize>>, Rc<RefCell<BTreeMap<u64, usize>>>);

impl Activity {
    /// Makes a fresh count the thread's current one until the returned handle is dropped.
    pub fn install() -> Installed {
        let activity = Activity::default();
        CURRENT.with(|c| *c.borrow_mut() = Some(activity.clone()));
        Installed(activity)
    }

    /// Pieces of work in flight now (model timers not included).
    pub fn busy(&self) -> usize {
        self.0.get()
    }

    /// Model timers still pending that fire at or before `until_ms` (simulated ms).
    pub fn timers_due_by(&self, until_ms: u64) -> usize {
        self.1.borrow().range(..=until_ms).map(|(_, n)| n).sum()
    }
}

/// The installed count; dropping it uninstalls it.
#[derive(Debug)]
pub struct Installed(Activity);

impl Installed {
    /// The count this handle installed.
    pub fn activity(&self) -> Activity {
        self.0.clone()
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        CURRENT.with(|c| *c.borrow_mut() = None);
    }
}

/// One piece of work in flight, counted on the activity current when it was made.
#[derive(Debug)]
pub struct Guard(Option<Activity>);

impl Guard {
    /// Counts one piece of work on the thread's current activity (none: counts nothing).
    pub fn new() -> Guard {
        let activity = CURRENT.with(|c| c.borrow().clone());
        if let Some(a) = &activity {
            a.0.set(a.0.get() + 1);
        }
        Guard(activity)
    }
}

impl Default for Guard {
    fn default() -> Self {
        Guard::new()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(a) = &self.0 {
            a.0.set(a.0.get() - 1);
        }
    }
}

/// A model timer pending, counted on the activity current when it was made by the
/// simulated ms it fires at, until it has fired and done its work (or its host died).
#[derive(Debug)]
pub struct TimerGuard(Option<Activity>, u64);

impl TimerGuard {
    /// Counts a timer firing at `at_ms` on the thread's current activity (none: nothing).
    pub fn new(at_ms: u64) -> TimerGuard {
        let activity = CURRENT.with(|c| c.borrow().clone());
        if let Some(a) = &activity {
            *a.1.borrow_mut().entry(at_ms).or_default() += 1;
        }
        TimerGuard(activity, at_ms)
    }
}

impl Drop for TimerGuard {
    fn drop(&mut self) {
        if let Some(a) = &self.0 {
            let mut timers = a.1.borrow_mut();
            if let Some(n) = timers.get_mut(&self.1) {
                *n -= 1;
                if *n == 0 {
                    timers.remove(&self.1);
                }
            }
        }
    }
}

/// `tokio::task::spawn_local` for a model timer that fires at `at_ms` (simulated ms) and
/// may then change a task: counted by its deadline ([`Activity::timers_due_by`]) for as
/// long as it lives, not as work in flight.
pub fn spawn_timer<F>(at_ms: u64, work: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let guard = TimerGuard::new(at_ms);
    crate::engine::spawn(async move {
        let _guard = guard;
        work.await
    })
}

/// `tokio::task::spawn_local`, counting the task as work in flight for as long as it lives.
pub fn spawn<F>(work: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let guard = Guard::new();
    crate::engine::spawn(async move {
        let _guard = guard;
        work.await
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_count_on_the_installed_activity_only() {
        let outside = Guard::new();
        let installed = Activity::install();
        let a = installed.activity();
        assert_eq!(a.busy(), 0);
        let one = Guard::new();
        let two = Guard::new();
        assert_eq!(a.busy(), 2);
        drop(one);
        assert_eq!(a.busy(), 1);
        drop(installed);
        // A guard outlives the installation and still counts down on its own activity.
        let after = Guard::new();
        drop(two);
        assert_eq!(a.busy(), 0);
        drop((outside, after));
        assert_eq!(a.busy(), 0);
    }

    #[test]
    fn timers_count_by_deadline_apart_from_work() {
        let installed = Activity::install();
        let a = installed.activity();
        let early = TimerGuard::new(1_000);
        let late = TimerGuard::new(600_000);
        let twin = TimerGuard::new(600_000);
        assert_eq!(a.busy(), 0);
        assert_eq!(a.timers_due_by(999), 0);
        assert_eq!(a.timers_due_by(1_000), 1);
        assert_eq!(a.timers_due_by(600_000), 3);
        drop((early, twin));
        assert_eq!(a.timers_due_by(u64::MAX), 1);
        drop(late);
        assert_eq!(a.timers_due_by(u64::MAX), 0);
    }
}
