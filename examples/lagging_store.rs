//! A store design no knob describes, tested with a2a-chaos: a task table whose reads come
//! from a read replica that lags one save behind the primary (asynchronous replication),
//! while compare-and-swap saves are checked on the primary.
//!
//! `cargo run --example lagging_store` runs the pinned A→B→A continuation and a few seeds
//! of the default experiment on the `reference` model twice, with the built-in table and
//! with this one, and prints what each violates. The simulator keeps the save log around
//! the table, so the design cannot hide what it stored from the checkers.

use std::collections::BTreeMap;

use a2a::Task;
use a2a_chaos::scenario::Script;
use a2a_chaos::sim::Sim;
use a2a_chaos::store::{SaveError, SaveMode, Stored, TaskTable, VersionedTable};

/// The primary is the built-in table; the read replica serves each task one save late.
#[derive(Debug, Default)]
struct LaggingReplica {
    primary: VersionedTable,
    /// The copy a reader sees: the version before the latest save.
    replica: BTreeMap<String, (Task, u64)>,
}

impl TaskTable for LaggingReplica {
    fn get(&self, task_id: &str) -> Option<(Task, u64)> {
        // A task the replica has not caught up with yet is read from the primary.
        self.replica
            .get(task_id)
            .cloned()
            .or_else(|| self.primary.get(task_id))
    }

    fn save(
        &mut self,
        task: Task,
        mode: SaveMode,
        based_on: Option<u64>,
    ) -> Result<Stored, SaveError> {
        let previous = self.primary.get(&task.id);
        let stored = self.primary.save(task, mode, based_on)?;
        // Replication ships the version the save replaced.
        if let Some(p) = previous {
            self.replica.insert(stored.task.id.clone(), p);
        }
        Ok(stored)
    }

    fn events_after(&self, task_id: &str, after: u64) -> Vec<(u64, Task)> {
        self.primary.events_after(task_id, after)
    }

    fn tasks(&self) -> Box<dyn Iterator<Item = (&Task, u64)> + '_> {
        self.primary.tasks()
    }
}

fn main() -> Result<(), a2a_chaos::error::InputError> {
    let script = Script::load("tests/scenarios/h01-aba-continuation-reference.toml".as_ref())?;
    let builtin = Sim::from_scenario(&script)?.check().summary;
    let lagging = Sim::scenario_builder(&script)
        .store(LaggingReplica::default)
        .build()?
        .check()
        .summary;
    println!("{} on reference:", script.file.name);
    println!("  built-in table:      violates {:?}", builtin.violated());
    println!("  lagging read replica: violates {:?}", lagging.violated());

    println!("default experiment, reference, context-affinity, seeds 0..5:");
    for seed in 0..5 {
        let mut b = Sim::builder();
        b.model("reference").routing("context-affinity").seed(seed);
        let builtin = b.build()?.check().summary;
        let lagging = b.store(LaggingReplica::default).build()?.check().summary;
        println!(
            "  seed {seed}: built-in {:?}, lagging {:?}",
            builtin.violated(),
            lagging.violated()
        );
    }
    Ok(())
}
