//! The task table inside a store: what a save does to the stored copy of a task.
//!
//! [`TaskTable`] is the store's behaviour as a trait, so a design no knob describes can be
//! tested: implement it and hand a factory to [`crate::sim::Builder::store`]. Every
//! built-in store uses [`VersionedTable`]: the shared plain store and the shared versioned
//! store (whether a save compares versions is the replica's choice of [`SaveMode`], from the
//! model's `store.versioned`), and each pod's memory store. The save log the checkers read
//! is kept by the simulator around the table ([`super::StoreState`]), from what each save
//! returns, so a table cannot hide a lost write from them.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use a2a::Task;

use super::{SaveError, SaveMode};

/// What an accepted save stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// The task as stored (a cancel writes CANCELED onto the stored copy).
    pub task: Task,
    /// The version the save created.
    pub version: u64,
    /// The version it replaced (`None`: the task did not exist).
    pub before: Option<u64>,
}

/// A store's task table.
pub trait TaskTable: Debug {
    /// The task and its version, as a reader sees it now.
    fn get(&self, task_id: &str) -> Option<(Task, u64)>;
    /// The task's version, as a reader sees it now (`None`: no such task). What the store
    /// host's timing reads ([`super::OpTimes`]); a table need not override it.
    fn version(&self, task_id: &str) -> Option<u64> {
        self.get(task_id).map(|(_, version)| version)
    }
    /// Applies a save the writer built on `based_on` (the version it read); returns what it
    /// stored, or why it refused.
    fn save(
        &mut self,
        task: Task,
        mode: SaveMode,
        based_on: Option<u64>,
    ) -> Result<Stored, SaveError>;
    /// Snapshots of a task at each version after `after`, in version order (the event log a
    /// store-backed subscription tails). A table without one returns nothing.
    fn events_after(&self, task_id: &str, after: u64) -> Vec<(u64, Task)>;
    /// Every task and its version, in task-id order: the ground truth at the end of a run,
    /// and what the takeover sweeper and the dedup settlement scan.
    fn tasks(&self) -> Box<dyn Iterator<Item = (&Task, u64)> + '_>;
    /// Drops a task and its event log; whether it was there. Only a bounded long-lived store
    /// evicts ([`super::StoreState::evict`], `a2a-chaos serve`); a simulation never does, and
    /// a table that cannot forget keeps this default.
    fn remove(&mut self, _task_id: &str) -> bool {
        false
    }
    /// Keeps only the last `keep` events of each task's log (the same bounded store).
    fn trim_events(&mut self, _keep: usize) {}
    /// How many versions of a task its event log holds (what a bounded store weighs).
    fn events_kept(&self, _task_id: &str) -> usize {
        0
    }
}

/// Makes a fresh table: one for the shared store, one for each pod's memory at each start.
pub type TableFactory = Arc<dyn Fn() -> Box<dyn TaskTable> + Send + Sync>;

/// The built-in table: a version per task, an event log, and the three save modes of
/// A2A-BEHAVIOURS.md §2.1 — compare-and-swap on the version read, unconditional overwrite
/// (the legacy adapter: last writer wins), and the cancel special case that skips the
/// version check unless the task is missing or already terminal.
#[derive(Debug, Default)]
pub struct VersionedTable {
    tasks: BTreeMap<String, (Task, u64)>,
    events: BTreeMap<String, Vec<(u64, Task)>>,
}

impl TaskTable for VersionedTable {
    fn get(&self, task_id: &str) -> Option<(Task, u64)> {
        self.tasks.get(task_id).cloned()
    }

    fn version(&self, task_id: &str) -> Option<u64> {
        self.tasks.get(task_id).map(|(_, version)| *version)
    }

    fn save(
        &mut self,
        task: Task,
        mode: SaveMode,
        _based_on: Option<u64>,
    ) -> Result<Stored, SaveError> {
        let current = self
            .tasks
            .get(&task.id)
            .map(|(t, v)| (t.status.state.clone(), *v));
        let before = current.as_ref().map(|(_, v)| *v);
        match mode {
            SaveMode::Cas(prev) => {
                if prev != before {
                    return Err(SaveError::Conflict { current: before });
                }
            }
            SaveMode::Overwrite => {}
            SaveMode::Cancel | SaveMode::CancelWhole => match &current {
                Some((state, _)) if !state.is_terminal() => {}
                _ => return Err(SaveError::NotCancelable),
            },
        }
        let version = before.unwrap_or(0) + 1;
        let mut task = task;
        if mode == SaveMode::Cancel {
            // The cancel writes CANCELED onto the stored copy, keeping what others wrote.
            let (stored, _) = self.tasks.get(&task.id).expect("checked above");
            let mut canceled = stored.clone();
            canceled.status = task.status.clone();
            task = canceled;
        }
        self.events
            .entry(task.id.clone())
            .or_default()
            .push((version, task.clone()));
        self.tasks.insert(task.id.clone(), (task.clone(), version));
        Ok(Stored {
            task,
            version,
            before,
        })
    }

    fn events_after(&self, task_id: &str, after: u64) -> Vec<(u64, Task)> {
        self.events
            .get(task_id)
            .map(|evs| evs.iter().filter(|(v, _)| *v > after).cloned().collect())
            .unwrap_or_default()
    }

    fn tasks(&self) -> Box<dyn Iterator<Item = (&Task, u64)> + '_> {
        Box::new(self.tasks.values().map(|(t, v)| (t, *v)))
    }

    fn remove(&mut self, task_id: &str) -> bool {
        self.events.remove(task_id);
        self.tasks.remove(task_id).is_some()
    }

    fn trim_events(&mut self, keep: usize) {
        for log in self.events.values_mut() {
            let cut = log.len().saturating_sub(keep);
            log.drain(..cut);
        }
    }

    fn events_kept(&self, task_id: &str) -> usize {
        self.events.get(task_id).map_or(0, Vec::len)
    }
}
