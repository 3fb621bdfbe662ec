//! `a2a-chaos bench`: measure the simulator on this machine and report the figures as
//! ratios against their targets (see [`crate::bench`]).
//!
//! Prints the load average first (the machine may be shared, so the figures can be noisy),
//! then one table, and writes `results/bench.csv` (or `--out`) atomically.

use std::path::PathBuf;

use clap::Args;

use crate::bench::{self, BenchSize};
use crate::error::InputError;

/// What `bench` was asked to do.
#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// A short run (a few seconds; the figures are only indicative).
    #[arg(long)]
    pub quick: bool,
    /// Where to write the CSV (default results/bench.csv).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Only hazard discovery: per model, seeds and wall-seconds from seed 0 until each
    /// documented hazard (A2A-BEHAVIOURS.md §6) first appears under the default experiment;
    /// then each hazard reported upstream, on the model that has it (not with --model).
    #[arg(long)]
    pub hazards: bool,
    /// With --hazards: most seeds per model.
    #[arg(long, default_value_t = 500)]
    pub hazard_seeds: u64,
    /// With --hazards: most wall-seconds per model.
    #[arg(long, default_value_t = 120.0)]
    pub hazard_wall_s: f64,
    /// With --hazards: search only this model (repeatable; default every built-in model).
    #[arg(long = "model", value_name = "MODEL", requires = "hazards")]
    pub models: Vec<String>,
}

/// Runs `a2a-chaos bench`; returns the exit code (0 whether or not the targets are met).
pub fn cmd_bench(args: BenchArgs) -> Result<i32, InputError> {
    if args.hazards {
        if !(args.hazard_wall_s.is_finite() && args.hazard_wall_s > 0.0) {
            return Err(InputError::new(
                "--hazard-wall-s",
                format!(
                    "{} must be a positive number of seconds",
                    args.hazard_wall_s
                ),
            ));
        }
        for m in &args.models {
            if !crate::model::names().contains(&m.as_str()) {
                return Err(InputError::new(
                    "--model",
                    format!(
                        "`{m}` is not a built-in model (one of: {})",
                        crate::model::names().join(", ")
                    ),
                ));
            }
        }
        let searches = bench::discover_all(
            &args.models,
            args.hazard_seeds,
            std::time::Duration::from_secs_f64(args.hazard_wall_s),
            |line| println!("- {line}"),
        );
        println!();
        print!("{}", bench::documented_table(&searches));
        if args.models.is_empty() {
            // The hazards reported upstream, each on the model (or SDK version) that has it.
            let upstream = bench::discover_upstream(
                args.hazard_seeds,
                std::time::Duration::from_secs_f64(args.hazard_wall_s),
                |line| println!("- {line}"),
            );
            println!();
            print!("{}", bench::upstream_table(&upstream));
        }
        return Ok(0);
    }
    let size = if args.quick {
        BenchSize::quick()
    } else {
        BenchSize::full()
    };
    match bench::load_average() {
        Some((_, all)) => println!(
            "load average {all} on {} cores: other work on this machine makes every figure noisy",
            std::thread::available_parallelism().map_or(1, |n| n.get())
        ),
        None => println!("load average unknown: figures may be noisy"),
    }
    let report = bench::run(size, |line| println!("- {line}"));
    println!();
    print!("{}", report.table());
    let out = args
        .out
        .unwrap_or_else(|| PathBuf::from("results").join("bench.csv"));
    report
        .write_csv(&out)
        .map_err(|e| InputError::new(out.display().to_string(), format!("cannot write: {e}")))?;
    println!();
    println!("wrote {} ({:.1} s)", out.display(), report.wall_s);
    Ok(0)
}
