//! An invariant of your own, checked beside the built-in ones: `turn-order` — in every
//! final task, the turns' artifacts appear in the order of their turns (`turn-1` before
//! `turn-2`), as a client reading the task expects. A whole-task overwrite by a stale
//! writer, or a turn re-run after a later one, breaks it.
//!
//! `cargo run --example turn_order` checks it on a few seeds of the default experiment for
//! two models and prints its verdict with the built-in invariants'. It fails on
//! `reference`, seed 3: the workload sends turns 2 and 3 of `c3` at once (a user who typed
//! twice); the reference answers the later-arriving one 409 "busy", the client retries it,
//! and turn 3's artifact is saved before turn 2's. No built-in invariant promises turn
//! order — which is what an invariant of your own is for.

use a2a_chaos::check::{Checker, Class, Finding, Invariant, Violation, ViolationKind};
use a2a_chaos::sim::Sim;
use a2a_chaos::world::RunRecord;

struct TurnOrder;

/// The invariant's name, declared once.
const TURN_ORDER: Invariant = Invariant::new("turn-order");

/// How it breaks.
const OUT_OF_ORDER: ViolationKind = ViolationKind::new("out-of-order");

impl Checker for TurnOrder {
    fn name(&self) -> Invariant {
        TURN_ORDER
    }

    fn describe(&self) -> &'static str {
        "in every final task, the turns' artifacts appear in turn order"
    }

    fn class(&self) -> Class {
        Class::Always
    }

    fn check(&self, run: &RunRecord) -> Finding {
        let mut violations = Vec::new();
        let mut exercised = 0;
        for (id, task) in &run.final_tasks {
            let turns: Vec<u32> = task
                .artifacts
                .iter()
                .flatten()
                .filter_map(|a| a.name.as_deref()?.strip_prefix("turn-")?.parse().ok())
                .collect();
            if turns.len() < 2 {
                continue;
            }
            exercised += 1;
            if turns.windows(2).any(|w| w[0] >= w[1]) {
                violations.push(
                    Violation::new(
                        OUT_OF_ORDER,
                        format!("task {id} ends with its turns' artifacts in the order {turns:?}"),
                    )
                    .task(id),
                );
            }
        }
        Finding {
            invariant: TURN_ORDER,
            violations,
            exercised,
        }
    }
}

fn main() -> Result<(), a2a_chaos::error::InputError> {
    for model in ["mastra", "reference"] {
        for seed in 0..4 {
            let checked = Sim::builder()
                .model(model)
                .routing("round-robin")
                .seed(seed)
                .checker(TurnOrder)
                .build()?
                .check();
            let mine = checked
                .summary
                .invariants
                .iter()
                .find(|i| i.name == TURN_ORDER)
                .expect("the checker ran");
            println!(
                "{model:<10} seed {seed}: turn-order {} (exercised {}), built-in violated {:?}",
                mine.verdict.word(),
                mine.exercised,
                checked
                    .summary
                    .violated()
                    .into_iter()
                    .filter(|n| *n != TURN_ORDER)
                    .collect::<Vec<_>>()
            );
        }
    }
    Ok(())
}
