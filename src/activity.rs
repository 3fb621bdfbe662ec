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
//! Outside a simulated run (live mode, `serve`) nothing is installed and a guard counts
//! nothing. The count is read, never written, by the simulation's logic, so it changes no
//! trace. The lowest layer: it depends on nothing in the crate.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;

thread_local! {
    static CURRENT: RefCell<Option<Activity>> = const { RefCell::new(None) };
}

/// The count of pieces of work in flight in one run.
#[derive(Debug, Clone, Default)]
pub struct Activity(Rc<Cell<usize>>);

impl Activity {
    /// Makes a fresh count the thread's current one until the returned handle is dropped.
    pub fn install() -> Installed {
        let activity = Activity::default();
        CURRENT.with(|c| *c.borrow_mut() = Some(activity.clone()));
        Installed(activity)
    }

    /// Pieces of work in flight now.
    pub fn busy(&self) -> usize {
        self.0.get()
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

/// `tokio::task::spawn_local`, counting the task as work in flight for as long as it lives.
pub fn spawn<F>(work: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let guard = Guard::new();
    tokio::task::spawn_local(async move {
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
}
