//! `a2a-chaos replay`: re-run one seed and print its trace, ending with `trace-hash:`.

use std::path::PathBuf;
use std::time::Instant;

use crate::error::InputError;
use crate::experiment::Experiment;
use crate::model::Profile;
use crate::sim::{summarise, Sim};
use crate::world;

use super::{load, print_findings, Loaded};

pub fn cmd_replay(
    path: Option<PathBuf>,
    seed: u64,
    model: Option<String>,
    routing: Option<String>,
    engine: Option<crate::engine::Engine>,
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
    let mut builder = match &loaded {
        Loaded::Scenario(script) => {
            let mut b = Sim::scenario_builder(script);
            if let Some(m) = &model {
                b.model(m.as_str());
            }
            b
        }
        Loaded::Experiment(exp) => {
            let profile = match &model {
                Some(m) => Profile::load(m)?,
                None => exp.profiles[0].clone(),
            };
            Sim::experiment_builder(exp, &profile, &exp.file.routing[0], seed)
        }
    };
    if let Some(e) = engine {
        builder.engine(e);
    }
    if let Some(r) = &routing {
        check_routing(r)?;
        builder.routing(r);
    }
    let sim = builder.seed(seed).keep_trace(true).build()?;
    let spec = sim.spec();
    let started = Instant::now();
    let record = sim.run();
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
    let findings = sim.findings(&record);
    let summary = summarise(&record, &findings, started.elapsed().as_millis() as u64);
    println!(
        "{} requests ({} ok, {} fail, {} info), {} effects, {} simulated ms",
        summary.requests, summary.ok, summary.fail, summary.info, summary.effects, summary.sim_ms
    );
    print_findings(&summary);
    println!("trace-hash: {}", record.trace_hash);
    Ok(0)
}
