//! `a2a-chaos replay`: re-run one seed and print its trace, ending with `trace-hash:`.

use std::path::PathBuf;
use std::time::Instant;

use crate::error::InputError;
use crate::model::Profile;
use crate::sweep::experiment::Experiment;
use crate::sweep::runner::{self};
use crate::world;

use super::{load, print_findings, scenario_spec, Loaded};

pub fn cmd_replay(
    path: Option<PathBuf>,
    seed: u64,
    model: Option<String>,
    routing: Option<String>,
) -> Result<i32, InputError> {
    let loaded = match &path {
        Some(p) => load(p)?,
        None => Loaded::Experiment(Box::new(Experiment::default_experiment())),
    };
    let check_routing = |r: &str| {
        if crate::router::strategy(r).is_none() {
            Err(InputError::new(
                "--routing",
                format!(
                    "unknown routing `{r}`; known: {}",
                    crate::router::names().join(", ")
                ),
            ))
        } else {
            Ok(())
        }
    };
    let spec = match &loaded {
        Loaded::Scenario(script) => {
            let profile = Profile::load(model.as_deref().unwrap_or(&script.file.model))?;
            let routing = routing.unwrap_or_else(|| script.file.routing.clone());
            check_routing(&routing)?;
            scenario_spec(script, profile, &routing, seed, true)
        }
        Loaded::Experiment(exp) => {
            let profile = match &model {
                Some(m) => Profile::load(m)?,
                None => exp.profiles[0].clone(),
            };
            let routing = routing.unwrap_or_else(|| exp.file.routing[0].clone());
            check_routing(&routing)?;
            runner::spec_for(exp, &profile, &routing, seed, true)
        }
    };
    crate::world::check_card_profile(&spec)?;
    let started = Instant::now();
    let record = world::run(&spec);
    // The header uses the fault mix the run resolved, not a second derivation of it.
    println!(
        "seed {seed}  model {}  routing {}  replicas {}  faults: {}",
        spec.profile.name,
        spec.routing,
        spec.replicas,
        world::describe_resolved(&record)
    );
    for event in &record.trace {
        println!("{event}");
    }
    println!();
    let summary = runner::summarise(&record, started.elapsed().as_millis() as u64);
    println!(
        "{} requests ({} ok, {} fail, {} info), {} effects, {} simulated ms",
        summary.requests, summary.ok, summary.fail, summary.info, summary.effects, summary.sim_ms
    );
    print_findings(&summary);
    println!("trace-hash: {}", record.trace_hash);
    Ok(0)
}
