//! The command-line interface (the contract in `../shared/CONTRACT.md`).
//!
//! Exit codes: 0 success (for `run`, whether or not violations were found; for `check`,
//! every expectation held), 1 an expectation did not hold, 2 unusable input.

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};

use crate::check::{self, Verdict};
use crate::cluster::{self, RunSpec, Workload};
use crate::error::InputError;
use crate::experiment::Experiment;
use crate::faults::FaultSpec;
use crate::model::Profile;
use crate::replica::Timing;
use crate::report;
use crate::runner::{self, RunSummary, SweepOptions};
use crate::scenario::Script;
use crate::webhook::WebhookMode;

/// Deterministic multi-replica chaos simulator for A2A servers.
#[derive(Parser, Debug)]
#[command(name = "a2a-chaos", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run an experiment (a sweep); with no file, the embedded default.
    Run {
        /// Experiment file (TOML).
        experiment: Option<PathBuf>,
        /// Where to write runs.csv and summary.csv (default results/<experiment-name>/).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Worker threads (default: every core).
        #[arg(long)]
        jobs: Option<usize>,
        /// Override the experiment's seed count.
        #[arg(long)]
        seeds: Option<u64>,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Run a scenario or an experiment as a regression test.
    Check {
        /// Scenario or experiment file (TOML).
        file: PathBuf,
        /// Print one JSON object as the last line of stdout.
        #[arg(long)]
        json: bool,
        /// Worker threads for experiments (default: every core).
        #[arg(long)]
        jobs: Option<usize>,
    },
    /// Re-run one seed and print its trace; the last line is `trace-hash: <hex>`.
    Replay {
        /// Scenario or experiment file (default: the embedded default experiment).
        file: Option<PathBuf>,
        #[arg(long)]
        seed: u64,
        /// Model (default: the file's first, or the scenario's).
        #[arg(long)]
        model: Option<String>,
        /// Routing strategy (default: the file's first, or the scenario's).
        #[arg(long)]
        routing: Option<String>,
    },
    /// List models, routing strategies, faults and invariants.
    List,
}

/// What a file turned out to be.
pub enum Loaded {
    Scenario(Box<Script>),
    Experiment(Box<Experiment>),
}

/// Reads a scenario or experiment file, telling them apart by the `models` key.
pub fn load(path: &Path) -> Result<Loaded, InputError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| InputError::new(&origin, format!("cannot read: {e}")))?;
    let value: toml::Table = toml::from_str(&text).map_err(|e| InputError::toml(&origin, &text, &e))?;
    if value.contains_key("models") {
        Experiment::parse(&text, &origin, Some(origin.clone())).map(|e| Loaded::Experiment(Box::new(e)))
    } else {
        Script::parse(&text, &origin).map(|s| Loaded::Scenario(Box::new(s)))
    }
}

fn jobs(requested: Option<usize>) -> usize {
    requested
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1)
}

/// Runs the command; returns the exit code.
pub fn main(cli: Cli) -> i32 {
    crate::logging::init();
    let result = match cli.command {
        Command::Run { experiment, out, jobs: j, seeds, quiet } => cmd_run(experiment, out, jobs(j), seeds, quiet),
        Command::Check { file, json, jobs: j } => cmd_check(&file, json, jobs(j)),
        Command::Replay { file, seed, model, routing } => cmd_replay(file, seed, model, routing),
        Command::List => {
            cmd_list();
            Ok(0)
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

fn cmd_run(path: Option<PathBuf>, out: Option<PathBuf>, jobs: usize, seeds: Option<u64>, quiet: bool) -> Result<i32, InputError> {
    let mut exp = match &path {
        Some(p) => Experiment::load(p)?,
        None => Experiment::default_experiment(),
    };
    if let Some(n) = seeds {
        if n == 0 || n > crate::experiment::SEEDS_MAX {
            return Err(InputError::new("--seeds", format!("{n} must be 1..={}", crate::experiment::SEEDS_MAX)));
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
    let runs = runner::sweep(&exp, &SweepOptions { jobs, progress: !quiet });
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
        report::write_atomic(p, &bytes).map_err(|e| InputError::new(p.display().to_string(), format!("cannot write: {e}")))
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
                println!("  {} / {} / {inv}: seed {}: {detail}", g.model, g.routing, r.seed);
                println!("    reproduce: {}", exp.reproduce(r.seed, g.model, g.routing));
            }
        }
    }
    if printed {
        println!();
    }
}

/// The spec of a scenario run.
pub fn scenario_spec(script: &Script, profile: Profile, routing: &str, seed: u64, keep_trace: bool) -> RunSpec {
    RunSpec {
        seed,
        profile: Rc::new(profile),
        routing: routing.to_string(),
        replicas: script.file.replicas,
        workload: Workload::Scripted(Rc::new(script.clone())),
        faults: FaultSpec {
            swarm: false,
            window_ms: 0,
            liveness_ms: 0,
            rates: Default::default(),
        },
        timing: Timing::default(),
        webhook: WebhookMode::Ok,
        keep_trace,
        budget: Duration::from_secs(600),
    }
}

/// Runs a scenario once and summarises it.
pub fn run_scenario(script: &Script) -> Result<RunSummary, InputError> {
    let profile = Profile::load(&script.file.model)?;
    let spec = scenario_spec(script, profile, &script.file.routing, script.file.seed, false);
    let started = Instant::now();
    let record = cluster::run(&spec);
    Ok(runner::summarise(&record, started.elapsed().as_millis() as u64))
}

fn cmd_check(path: &Path, json: bool, jobs: usize) -> Result<i32, InputError> {
    let file = path.display().to_string();
    let (runs, met, reproduce): (Vec<RunSummary>, bool, Box<dyn Fn(&RunSummary) -> String>) = match load(path)? {
        Loaded::Scenario(script) => {
            let summary = run_scenario(&script)?;
            let mut expected = script.file.expect.violations.clone();
            expected.sort();
            let mut got: Vec<String> = summary.violated().iter().map(|s| s.to_string()).collect();
            got.sort();
            let met = got == expected && summary.error.is_none();
            if !json {
                println!("{} ({} on {} replicas, {})", script.file.name, script.file.model, script.file.replicas, script.file.routing);
                if let Some(pm) = &script.file.postmortem {
                    println!("postmortem: {pm}");
                }
                print_findings(&summary);
                println!("expected violations: [{}]; got: [{}]", expected.join(", "), got.join(", "));
            }
            let f = file.clone();
            (vec![summary], met, Box::new(move |r: &RunSummary| format!("a2a-chaos replay {f} --seed {}", r.seed)))
        }
        Loaded::Experiment(exp) => {
            let runs = runner::sweep(&exp, &SweepOptions { jobs, progress: !json });
            let by_model = report::violated_by_model(&runs);
            let mut met = runs.iter().all(|r| r.error.is_none());
            for (model, got) in &by_model {
                let expected = exp.expected(model).map(|mut v| {
                    v.sort();
                    v
                });
                let ok = match &expected {
                    Some(e) => e == got,
                    None => got.is_empty(),
                };
                if !json {
                    println!(
                        "{model}: expected [{}], got [{}]{}",
                        expected.clone().unwrap_or_default().join(", "),
                        got.join(", "),
                        if ok { "" } else { "  <- not as expected" }
                    );
                }
                met &= ok;
            }
            if !json {
                print!("{}", report::table(&runs));
            }
            let exp2 = exp.clone();
            (runs, met, Box::new(move |r: &RunSummary| exp2.reproduce(r.seed, &r.model, &r.routing)))
        }
    };
    let value = report::check_json(&file, &runs, met, reproduce);
    if json {
        println!("{value}");
    } else {
        println!("{}", if met { "expectations met" } else { "expectations NOT met" });
        if let Some(first) = value.get("first_violation").filter(|v| !v.is_null()) {
            println!("reproduce: {}", first["reproduce"].as_str().unwrap_or(""));
        }
    }
    Ok(if met { 0 } else { 1 })
}

fn print_findings(summary: &RunSummary) {
    for i in &summary.invariants {
        println!(
            "  {:<22} {:<7} violations {:<3} exercised {}",
            i.name,
            i.verdict.word(),
            i.violations,
            i.exercised
        );
        if let Some(first) = &i.first {
            println!("    {first}");
        }
    }
    if let Some(e) = &summary.error {
        println!("  run error: {e}");
    }
}

fn cmd_replay(path: Option<PathBuf>, seed: u64, model: Option<String>, routing: Option<String>) -> Result<i32, InputError> {
    let loaded = match &path {
        Some(p) => load(p)?,
        None => Loaded::Experiment(Box::new(Experiment::default_experiment())),
    };
    let check_routing = |r: &str| {
        if crate::router::strategy(r).is_none() {
            Err(InputError::new("--routing", format!("unknown routing `{r}`; known: {}", crate::router::names().join(", "))))
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
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed ^ 0xfa17_0000_0000_0000);
    let rates = spec.faults.resolve(&mut rng);
    println!(
        "seed {seed}  model {}  routing {}  replicas {}  faults: {}",
        spec.profile.name,
        spec.routing,
        spec.replicas,
        cluster::describe_rates(&rates)
    );
    let started = Instant::now();
    let record = cluster::run(&spec);
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

fn cmd_list() {
    println!("models (models/*.toml, or a path to your own profile):");
    for name in crate::model::names() {
        let p = Profile::load(name).expect("built-in profiles load");
        println!("  {name:<26} {}", p.description);
    }
    println!("routing strategies:");
    for name in crate::router::names() {
        println!("  {name}");
    }
    println!("faults ([faults] keys):");
    for (name, fault) in crate::faults::FAULTS {
        println!("  {name:<12} {}", fault.describe());
    }
    println!("invariants:");
    for (name, checker) in check::CHECKERS {
        println!("  {name:<22} {}", checker.describe());
    }
    println!("  not checked yet: {}", check::NOT_YET_CHECKED.join(", "));
    let _ = Verdict::Pass;
}
