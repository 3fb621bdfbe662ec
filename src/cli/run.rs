//! `a2a-chaos run`: sweep an experiment, print the summary table, write the CSV files.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::check;
use crate::cluster;
use crate::error::InputError;
use crate::experiment::Experiment;
use crate::report;
use crate::runner::{self, RunSummary, SweepOptions};

pub fn cmd_run(
    path: Option<PathBuf>,
    out: Option<PathBuf>,
    jobs: usize,
    seeds: Option<u64>,
    quiet: bool,
) -> Result<i32, InputError> {
    let mut exp = match &path {
        Some(p) => Experiment::load(p)?,
        None => Experiment::default_experiment(),
    };
    if let Some(n) = seeds {
        if n == 0 || n > crate::experiment::SEEDS_MAX {
            return Err(InputError::new(
                "--seeds",
                format!("{n} must be 1..={}", crate::experiment::SEEDS_MAX),
            ));
        }
        exp.file.seeds.count = n;
    }
    let out = out.unwrap_or_else(|| Path::new("results").join(&exp.file.name));
    println!(
        "experiment {} ({}): {} models x {} routing x {} seeds from {} = {} runs, {} replicas, {jobs} threads",
        exp.file.name,
        exp.origin,
        exp.profiles.len(),
        exp.file.routing.len(),
        exp.file.seeds.count,
        exp.file.seeds.start,
        exp.profiles.len() as u64 * exp.file.routing.len() as u64 * exp.file.seeds.count,
        exp.file.replicas,
    );
    println!(
        "faults: {} (swarm {}), window {} ms, then heal and {} ms to settle",
        cluster::describe_rates(&exp.file.faults.rates.clone().into_iter().collect()),
        if exp.file.faults.swarm { "on" } else { "off" },
        exp.file.faults.window_ms,
        exp.file.faults.liveness_ms
    );
    let started = Instant::now();
    let runs = runner::sweep(
        &exp,
        &SweepOptions {
            jobs,
            progress: !quiet,
        },
    );
    let wall = started.elapsed();
    println!();
    print!("{}", report::table(&runs));
    println!();
    print_first_failures(&exp, &runs);
    let requests: u64 = runs.iter().map(|r| r.requests).sum();
    let sim_ms: u64 = runs.iter().map(|r| r.sim_ms).sum();
    println!(
        "{} runs in {:.1} s wall: {:.0} simulated requests per wall-second, {:.0}x real time",
        runs.len(),
        wall.as_secs_f64(),
        requests as f64 / wall.as_secs_f64().max(1e-9),
        sim_ms as f64 / 1000.0 / wall.as_secs_f64().max(1e-9)
    );
    let runs_csv = out.join("runs.csv");
    let summary_csv = out.join("summary.csv");
    let write = |p: &Path, bytes: Vec<u8>| {
        report::write_atomic(p, &bytes)
            .map_err(|e| InputError::new(p.display().to_string(), format!("cannot write: {e}")))
    };
    write(&runs_csv, report::runs_csv(&runs))?;
    write(&summary_csv, report::summary_csv(&runs))?;
    println!("wrote {} and {}", runs_csv.display(), summary_csv.display());
    Ok(0)
}

fn print_first_failures(exp: &Experiment, runs: &[RunSummary]) {
    let mut printed = false;
    for g in report::groups(runs) {
        for inv in check::names() {
            if let Some(r) = g.runs.iter().find(|r| r.violated().contains(&inv)) {
                if !printed {
                    println!("first violation per model x routing x invariant:");
                    printed = true;
                }
                let detail = r
                    .invariants
                    .iter()
                    .find(|i| i.name == inv)
                    .and_then(|i| i.first.clone())
                    .unwrap_or_default();
                println!(
                    "  {} / {} / {inv}: seed {}: {detail}",
                    g.model, g.routing, r.seed
                );
                println!(
                    "    reproduce: {}",
                    exp.reproduce(r.seed, g.model, g.routing)
                );
            }
        }
    }
    if printed {
        println!();
    }
}
