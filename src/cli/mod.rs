//! The command-line interface (the contract in `docs/CONTRACT.md`).
//!
//! Exit codes: 0 success (for `run`, whether or not violations were found; for `check`,
//! every expectation held), 1 an expectation did not hold, 2 unusable input.
//!
//! Argument parsing lives here; each command is one file beside this one.

mod bench;
mod check_cmd;
mod check_history;
pub mod fidelity;
mod hazard;
mod list;
pub mod live;
mod merge;
mod proxy;
mod replay;
mod run;
mod serve;
mod shrink;

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};

use crate::error::InputError;
use crate::experiment::Experiment;
use crate::scenario::Script;
use crate::sim::RunSummary;

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
        /// Where to write the results (default `results/<experiment-name>/`). With --shard,
        /// the sweep's folder: the shard writes its own shard-K-of-N/ inside it.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Worker threads (default: the CPUs this process may use: its affinity mask and
        /// CPU quota, which Slurm and Kubernetes set).
        #[arg(long)]
        jobs: Option<usize>,
        /// Override the experiment's seed count.
        #[arg(long)]
        seeds: Option<u64>,
        /// No progress bar and no table (unless --wide): one line of outcome, for batch logs.
        #[arg(long)]
        quiet: bool,
        /// Run only shard K of N (K from 0) and write it to `results/<name>/shard-K-of-N/`;
        /// `auto` takes it from a Kubernetes Indexed Job or a Slurm job array (contiguous,
        /// not stepped), checked against the shards already in the sweep's folder.
        #[arg(long, value_name = "K/N|auto")]
        shard: Option<String>,
        /// The shard count for `--shard auto` (default: $A2A_CHAOS_SHARDS, or the Slurm
        /// array's, or for a rerun of part of an array the count of the shards on disk).
        #[arg(long, value_name = "N")]
        shards: Option<u64>,
        /// Continue an interrupted sweep from the journal in the output directory.
        #[arg(long)]
        resume: bool,
        /// Stop after this many runs and keep the journal, as if interrupted (for tests).
        #[arg(long, hide = true)]
        stop_after: Option<usize>,
        /// Print the full table, one column per invariant, instead of the compact summary.
        #[arg(long)]
        wide: bool,
        /// The engine that runs the worlds, instead of the experiment's `engine`: `turmoil`
        /// (every host stepped one tick at a time) or `events` (time jumps to the next event).
        #[arg(long)]
        engine: Option<crate::engine::Engine>,
    },
    /// Merge the runs.csv of shards (`run --shard`) into the files an unsharded run writes;
    /// with a shard missing or unfinished, say which, write nothing and exit 2.
    Merge {
        /// Shard output directories, or a directory holding shard-K-of-N/ folders.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Where to write (default: the sweep's folder, which holds the shard-K-of-N/
        /// folders; `results/<experiment-name>/` when the shards are in several places).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the full table instead of the compact summary.
        #[arg(long)]
        wide: bool,
    },
    /// Run a scenario or an experiment as a regression test.
    Check {
        /// Scenario or experiment file (TOML).
        file: PathBuf,
        /// Print one JSON object as the last line of stdout.
        #[arg(long)]
        json: bool,
        /// Worker threads for experiments (default: the CPUs this process may use).
        #[arg(long)]
        jobs: Option<usize>,
        /// Also write the verdicts as JUnit XML to FILE (one test case per scenario, or per
        /// model x routing of an experiment).
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// The engine, instead of the file's (`turmoil` or `events`).
        #[arg(long)]
        engine: Option<crate::engine::Engine>,
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
        /// The engine, instead of the file's (`turmoil` or `events`).
        #[arg(long)]
        engine: Option<crate::engine::Engine>,
    },
    /// Minimise a failing run to a scripted scenario file.
    Shrink {
        /// Experiment or scenario file (default: the embedded default experiment).
        file: Option<PathBuf>,
        /// The failing seed (from `run`'s table or runs.csv).
        #[arg(long)]
        seed: u64,
        /// Model (default: the file's first, or the scenario's).
        #[arg(long)]
        model: Option<String>,
        /// Routing strategy (default: the file's first, or the scenario's).
        #[arg(long)]
        routing: Option<String>,
        /// The invariant to keep violated (default: the first the seed violates).
        #[arg(long)]
        invariant: Option<String>,
        /// Where to write the scenario (default `shrunk/<file>-seed-<N>-<model>-<routing>.toml`).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// List models, routing strategies, faults and invariants.
    List,
    /// Serve one simulated-behaviour replica on a real socket, for real A2A clients.
    Serve(serve::ServeArgs),
    /// Run a scenario live: real TCP, real replica processes (e.g. the a2a-python SDK).
    Live {
        /// Scenario file (TOML).
        #[arg(required_unless_present = "hazard", conflicts_with = "hazard")]
        file: Option<PathBuf>,
        /// Run a hazard's scenario by the hazard's name (h03-retry-after-lost-reply, or h03
        /// when it has one), held to the `[expect]` of --model, or to none.
        #[arg(long, value_name = "NAME")]
        hazard: Option<String>,
        /// With --hazard: the model whose expectations (and promises) apply; a model with
        /// no file for the hazard is held to none (every invariant must hold).
        #[arg(long, value_name = "MODEL", requires = "hazard")]
        model: Option<String>,
        #[command(flatten)]
        peer: live::PeerArgs,
        /// Print one JSON object as the last line of stdout.
        #[arg(long)]
        json: bool,
        /// Print the run's trace (client, router, ledger and reported saves) first.
        #[arg(long)]
        trace: bool,
    },
    /// Run a suite of scenarios simulated and live; print both verdicts side by side. With
    /// --generate N, draw N scenarios nobody chose per model instead and compare everything
    /// both worlds observe.
    Fidelity {
        /// The suite: a directory of scenario files (its `found/` too), or one file.
        #[arg(default_value = "tests/fidelity")]
        dir: PathBuf,
        #[command(flatten)]
        generate: fidelity::GenerateArgs,
        #[command(flatten)]
        peer: live::PeerArgs,
    },
    /// A recording reverse proxy in front of your own replicas: routes, records a history
    /// (JSONL), injects request faults, and serves the ledger.
    Proxy(proxy::ProxyArgs),
    /// Run every checker a recorded history supports (A2A 1.0 or 0.3 wire).
    CheckHistory(check_history::CheckHistoryArgs),
    /// Measure the simulator's speed on this machine against its targets.
    Bench(bench::BenchArgs),
}

/// What a file turned out to be.
pub enum Loaded {
    Scenario(Box<Script>),
    Experiment(Box<Experiment>),
}

/// Reads a scenario or experiment file, telling them apart by the `models` key.
pub fn load(path: &Path) -> Result<Loaded, InputError> {
    let origin = path.display().to_string();
    let text = crate::input::read_text(path, crate::input::FileKind::ScenarioOrExperiment)?;
    let value: toml::Table =
        toml::from_str(&text).map_err(|e| InputError::toml(&origin, &text, &e))?;
    if value.contains_key("models") {
        Experiment::parse(&text, &origin, Some(origin.clone()))
            .map(|e| Loaded::Experiment(Box::new(e)))
    } else {
        let script = Script::parse(&text, &origin)?;
        crate::check::validate_names(&script.file.expect.names(), &origin)?;
        Ok(Loaded::Scenario(Box::new(script)))
    }
}

/// `--jobs`, or the CPUs this process may run on. On Linux `available_parallelism` counts
/// the CPUs of the process's affinity mask (`sched_getaffinity`, which Slurm's task binding
/// and `taskset` set) and honours a cgroup CPU quota (a Kubernetes CPU limit), so a batch
/// job needs no `--jobs "$SLURM_CPUS_PER_TASK"`.
fn jobs(requested: Option<usize>) -> usize {
    requested
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1)
}

/// Runs the command; returns the exit code.
pub fn main(cli: Cli) -> i32 {
    crate::logging::init();
    let result = match cli.command {
        Command::Run {
            experiment,
            out,
            jobs: j,
            seeds,
            quiet,
            shard,
            shards,
            resume,
            stop_after,
            wide,
            engine,
        } => run::cmd_run(run::RunArgs {
            path: experiment,
            out,
            jobs: jobs(j),
            seeds,
            quiet,
            shard,
            shards,
            resume,
            stop_after,
            wide,
            engine,
        }),
        Command::Merge { dirs, out, wide } => merge::cmd_merge(dirs, out, wide),
        Command::Check {
            file,
            json,
            jobs: j,
            junit,
            engine,
        } => check_cmd::cmd_check(check_cmd::CheckArgs {
            path: file,
            json,
            jobs: jobs(j),
            junit,
            engine,
        }),
        Command::Replay {
            file,
            seed,
            model,
            routing,
            engine,
        } => replay::cmd_replay(file, seed, model, routing, engine),
        Command::Shrink {
            file,
            seed,
            model,
            routing,
            invariant,
            out,
        } => shrink::cmd_shrink(shrink::ShrinkArgs {
            file,
            seed,
            model,
            routing,
            invariant,
            out,
        }),
        Command::Bench(args) => bench::cmd_bench(args),
        Command::Serve(args) => serve::cmd_serve(args),
        Command::Proxy(args) => proxy::cmd_proxy(args),
        Command::CheckHistory(args) => check_history::cmd_check_history(args),
        Command::Live {
            file,
            hazard,
            model,
            peer,
            json,
            trace,
        } => match (file, hazard) {
            (Some(file), _) => live::cmd_live(&file, &peer, json, trace),
            (None, Some(name)) => {
                live::cmd_live_hazard(&name, model.as_deref(), &peer, json, trace)
            }
            (None, None) => unreachable!("clap requires a file or --hazard"),
        },
        Command::Fidelity {
            dir,
            generate,
            peer,
        } => match generate.generate {
            _ if !generate.merge.is_empty() => fidelity::cmd_merge(&generate),
            Some(n) => fidelity::cmd_generate(n, &generate, &dir, &peer),
            None => fidelity::cmd_fidelity(&dir, &peer, generate.repeat, generate.jobs.into()),
        },
        Command::List => {
            list::cmd_list();
            Ok(0)
        }
    };
    // A PostgreSQL server a live command started for its runs ends with the command.
    crate::live::postgres::stop_shared();
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

/// Prints each invariant's verdict for one run.
pub fn print_findings(summary: &RunSummary) {
    for i in &summary.invariants {
        println!(
            "  {:<22} {:<7} violations {:<3} exercised {}",
            i.name,
            i.verdict.word(),
            i.violations,
            i.exercised
        );
        if let Some(first) = &i.first {
            print!("{}", crate::output::terminal::wrap(first, "    ", "      "));
        }
        if let Some(note) = &i.note {
            print!(
                "{}",
                crate::output::terminal::wrap(&format!("({note})"), "    ", "      ")
            );
        }
    }
    if summary.availability.turns > 0 {
        println!("  {}", summary.availability.describe());
    }
    if let Some(e) = &summary.error {
        println!("  run error: {e}");
    }
}
