//! `a2a-chaos run`: sweep an experiment, print the summary table, write the results.
//!
//! Output, under `--out` (default `results/<experiment-name>/`), every file written atomically:
//! `runs.csv`, `summary.csv`, `chart.svg` and one `timeline-*.html` per (model, routing)
//! combination with a violation, for its first failing seed.
//!
//! `--shard K/N` (or `--shard auto`, from a Kubernetes Indexed Job or a Slurm array) runs
//! only that shard's work items and writes `runs.csv` and `shard.json` into
//! `results/<experiment-name>/shard-K-of-N/`; `a2a-chaos merge` joins the shards.
//!
//! Every finished run is journaled as it arrives (see [`crate::sweep::journal`]); `--resume`
//! continues an interrupted sweep from its journal without repeating finished runs, and
//! ends with the same files as a sweep that went straight through.
//!
//! What it prints fits 100 columns: the resolved configuration (saying which tables came
//! from the embedded default), progress on stderr ([`crate::sweep::progress`]), the first
//! violation of each kind with its reproduce command, then the compact summary per model ×
//! routing ([`crate::output::terminal::compact`]; `--wide` prints the full table instead).
//! `--quiet`, for batch logs, prints neither the progress, the violations nor the table
//! (unless `--wide` asks for it): one line says how many runs violated something, and the
//! files hold the rest.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::check;
use crate::error::InputError;
use crate::experiment::{self, Experiment};
use crate::files::OutLock;
use crate::output::{report, terminal};
use crate::sim::RunSummary;
use crate::sweep::batch;
use crate::sweep::journal::{Journal, NotThisSweep};
use crate::sweep::runner::{self, Progress, SweepOptions, WorkItem, WorkList};
use crate::sweep::shard::{self, Manifest, Shard};
use crate::workload::WorkloadSpec;
use crate::world;

/// What `run` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct RunArgs {
    /// The experiment file; `None` for the embedded default.
    pub path: Option<PathBuf>,
    /// Output directory.
    pub out: Option<PathBuf>,
    /// Worker threads.
    pub jobs: usize,
    /// Seed count override.
    pub seeds: Option<u64>,
    /// No progress bar, and one line instead of the first violations and the table.
    pub quiet: bool,
    /// `K/N` or `auto`.
    pub shard: Option<String>,
    /// The shard count for `--shard auto` when the environment does not give it.
    pub shards: Option<u64>,
    /// Continue from the journal in the output directory.
    pub resume: bool,
    /// Stop after this many runs, keeping the journal (as if interrupted); for tests.
    pub stop_after: Option<usize>,
    /// Print the full table (every invariant a column) instead of the compact summary.
    pub wide: bool,
    /// The engine, instead of the experiment's.
    pub engine: Option<crate::engine::Engine>,
}

/// Loads the experiment and the text it came from (`None` for the embedded default).
fn load(path: &Option<PathBuf>) -> Result<(Experiment, Option<String>), InputError> {
    match path {
        Some(p) => {
            let origin = p.display().to_string();
            let text = crate::input::read_text(p, crate::input::FileKind::Experiment)?;
            let exp = Experiment::parse(&text, &origin, Some(origin.clone()))?;
            Ok((exp, Some(text)))
        }
        None => Ok((Experiment::default_experiment(), None)),
    }
}

/// Runs `a2a-chaos run`; returns the exit code (0 whether or not violations were found).
pub fn cmd_run(args: RunArgs) -> Result<i32, InputError> {
    let (mut exp, text) = load(&args.path)?;
    if let Some(engine) = args.engine {
        exp.file.engine = engine;
    }
    if let Some(n) = args.seeds {
        if n == 0 || n > experiment::SEEDS_MAX {
            return Err(InputError::new(
                "--seeds",
                format!("{n} must be 1..={}", experiment::SEEDS_MAX),
            ));
        }
        exp.file.seeds.count = n;
        if exp.file.seeds.start.checked_add(n).is_none() {
            return Err(InputError::new(
                "--seeds",
                "seeds.start + --seeds overflows",
            ));
        }
    }
    refuse_duplicates(&exp)?;
    let shard = match args.shard.as_deref() {
        None => {
            if args.shards.is_some() {
                return Err(InputError::new(
                    "--shards",
                    "only means something with --shard auto",
                ));
            }
            None
        }
        Some("auto") => {
            let sweep = shard::sweep_dir(args.out.as_deref(), &exp.file.name);
            let fingerprint = runner::fingerprint(&exp);
            let auto = batch::resolve(args.shards, &sweep, &fingerprint, &|k| {
                std::env::var(k).ok()
            })?;
            for note in &auto.notes {
                eprintln!("note: {note}");
            }
            Some(auto.shard)
        }
        Some(text) => {
            if args.shards.is_some() {
                return Err(InputError::new(
                    "--shards",
                    "--shard K/N already gives the count; --shards goes with --shard auto",
                ));
            }
            Some(Shard::parse(text)?)
        }
    };
    let out = match &shard {
        Some(s) => shard::shard_dir(args.out.as_deref(), &exp.file.name, s)?,
        None => args
            .out
            .clone()
            .unwrap_or_else(|| Path::new("results").join(&exp.file.name)),
    };

    // One run at a time in a folder: a second one would truncate this one's journal.
    let _lock = OutLock::take(&out)?;
    clean_stale_temporaries(&out);
    let all = WorkList::of(&exp);
    let mine_count = match &shard {
        Some(s) => s.count_in(all.len()),
        None => all.len(),
    };
    let mut done_items = BTreeSet::new();
    // Every journaled run must be one of this sweep's runs, once: anything else means the
    // journal was written by another run or edited, and is refused rather than merged.
    let mut accept = |run: &RunSummary| -> Result<(), NotThisSweep> {
        let item = runner::check_row(&exp, run)?;
        let position = all.position(&item).expect("check_row found it in the list");
        if let Some(s) = &shard {
            if !s.owns(position as usize) {
                return Err(NotThisSweep::OtherShard {
                    seed: run.seed,
                    model: run.model.clone(),
                    routing: run.routing.clone(),
                    shard: s.to_string(),
                });
            }
        }
        if !done_items.insert(item) {
            return Err(NotThisSweep::Twice {
                seed: run.seed,
                model: run.model.clone(),
                routing: run.routing.clone(),
            });
        }
        Ok(())
    };
    let fingerprint = runner::fingerprint(&exp);
    let journal_key = format!(
        "{fingerprint}/{}",
        shard.map_or("all".to_string(), |s| s.to_string())
    );
    let in_dir = |e: std::io::Error| {
        InputError::new(out.display().to_string(), format!("cannot write: {e}"))
    };
    let (mut journal, resumed) = if args.resume {
        match Journal::resume(&out, &exp.file.name, &journal_key, &mut accept)? {
            Some((j, r)) => {
                if r.torn {
                    eprintln!("resume: the journal's last line was torn by the interruption; that run is done again");
                }
                (j, r.runs)
            }
            None => {
                // A batch script passes --resume on every attempt, so the first one has no
                // journal: that is the normal case, not news, in a --quiet log.
                if !args.quiet {
                    eprintln!(
                        "resume: no journal in {}, so nothing to resume: running every seed",
                        out.display()
                    );
                }
                (
                    Journal::create(&out, &exp.file.name, &journal_key).map_err(in_dir)?,
                    Vec::new(),
                )
            }
        }
    } else {
        if Journal::path_in(&out).exists() {
            eprintln!(
                "note: {} holds the journal of an unfinished sweep; starting over (use --resume to continue it)",
                Journal::path_in(&out).display()
            );
        }
        (
            Journal::create(&out, &exp.file.name, &journal_key).map_err(in_dir)?,
            Vec::new(),
        )
    };
    let mut done: Vec<(WorkItem, RunSummary)> = Vec::new();
    for run in resumed {
        if let Some(item) = runner::item_of(&exp, &run) {
            done.push((item, run));
        }
    }
    let done_items: BTreeSet<WorkItem> = done.iter().map(|(i, _)| *i).collect();
    let pending_count = mine_count.saturating_sub(done_items.len() as u64);
    let (take, interrupted) = match args.stop_after {
        Some(n) if (n as u64) < pending_count => (n as u64, true),
        _ => (pending_count, false),
    };
    let mine: Box<dyn Iterator<Item = WorkItem> + Send> = match &shard {
        Some(s) => Box::new(s.items(&all)),
        None => Box::new(all.iter()),
    };
    let pending = mine
        .filter(|i| !done_items.contains(i))
        .take(usize::try_from(take).unwrap_or(usize::MAX));

    print_resolved(&exp, args.jobs);
    if let Some(s) = &shard {
        println!("shard {s} ({mine_count} of the {} runs)", all.len());
    }
    if !done.is_empty() {
        println!(
            "resumed: {} runs from the journal, {} to go",
            done.len(),
            take
        );
    }
    let started = Instant::now();
    let progress = Progress {
        done: done.len(),
        violating: done
            .iter()
            .filter(|(_, r)| !r.violated().is_empty() || r.error.is_some())
            .count(),
        total: usize::try_from(mine_count).unwrap_or(usize::MAX),
    };
    let fresh = runner::sweep_items(
        &exp,
        pending,
        &SweepOptions {
            jobs: args.jobs,
            progress: !args.quiet,
        },
        progress,
        |_, run| journal.append(run),
    )
    .map_err(|e| {
        InputError::new(
            Journal::path_in(&out).display().to_string(),
            format!("cannot append: {e}"),
        )
    })?;
    let wall = started.elapsed();
    let ran = fresh.len();
    let requests: u64 = fresh.iter().map(|(_, r)| r.requests).sum();
    let sim_ms: u64 = fresh.iter().map(|(_, r)| r.sim_ms).sum();
    if interrupted {
        println!(
            "stopped after {ran} runs (--stop-after); the journal in {} keeps them: continue with --resume",
            out.display()
        );
        return Ok(0);
    }
    done.extend(fresh);
    done.sort_by_key(|(item, _)| *item);
    let runs: Vec<RunSummary> = done.into_iter().map(|(_, r)| r).collect();

    // The details first, the summary last: what stays on the screen is which design fails
    // what, and how often.
    println!();
    if args.quiet && !args.wide {
        // A batch log wants the outcome, not the table: summary.csv (or merge) has it.
        // `--wide` asks for the table outright, so it still prints.
        let violating = runs
            .iter()
            .filter(|r| !r.violated().is_empty() || r.error.is_some())
            .count();
        println!(
            "{violating} of {} runs violated an invariant or failed (--quiet: the table is in summary.csv, or merge's)",
            runs.len()
        );
    } else {
        print_first_failures(&exp, &runs);
        print_summary(&runs, args.wide);
        println!();
    }
    println!(
        "{ran} runs in {:.1} s wall: {:.0} simulated requests per wall-second, {:.0}x real time",
        wall.as_secs_f64(),
        requests as f64 / wall.as_secs_f64().max(1e-9),
        sim_ms as f64 / 1000.0 / wall.as_secs_f64().max(1e-9)
    );
    match &shard {
        Some(s) => {
            let runs_csv = out.join("runs.csv");
            write(&runs_csv, &report::runs_csv(&runs))?;
            let manifest = out.join(crate::sweep::shard::MANIFEST);
            write(
                &manifest,
                &Manifest::new(&exp, text, *s, runs.len() as u64).to_bytes(),
            )?;
            let all_shards = shard::sweep_dir(args.out.as_deref(), &exp.file.name)
                .display()
                .to_string();
            println!(
                "wrote {} and {}; once every shard is done, join them with `a2a-chaos merge {all_shards}`",
                runs_csv.display(),
                manifest.display(),
            );
        }
        None => write_outputs(Some(&exp), &exp.file.name, &runs, &out)?,
    }
    journal.finish().map_err(|e| {
        InputError::new(
            out.display().to_string(),
            format!("cannot remove the journal: {e}"),
        )
    })?;
    Ok(0)
}

/// Prints the experiment as it will run, each line within 100 columns: its size, its
/// faults and its workload, saying which came from the embedded default.
pub(super) fn print_resolved(exp: &Experiment, jobs: usize) {
    let runs = exp.profiles.len() as u64 * exp.file.routing.len() as u64 * exp.file.seeds.count;
    print!(
        "{}",
        terminal::wrap(
            &format!(
                "{} ({}): {} models x {} routing x {} seeds from {} = {runs} runs, {} replicas, {jobs} threads",
                exp.file.name,
                exp.origin,
                exp.profiles.len(),
                exp.file.routing.len(),
                exp.file.seeds.count,
                exp.file.seeds.start,
                exp.file.replicas,
            ),
            "experiment",
            "  ",
        )
    );
    let from_default = |table: &str| {
        if exp.defaulted.contains(&table) {
            format!(" (the file has no [{table}]: the embedded default's)")
        } else {
            String::new()
        }
    };
    let f = &exp.file.faults;
    let rates = if f.none {
        "none (none = true)".to_string()
    } else {
        format!(
            "{} (swarm {})",
            world::describe_rates(&f.rates),
            if f.swarm { "on" } else { "off" }
        )
    };
    print!(
        "{}",
        terminal::wrap(
            &format!(
                "{rates}, window {} ms, then heal and {} ms to settle{}",
                f.window_ms,
                f.liveness_ms,
                from_default("faults")
            ),
            "faults:",
            "  ",
        )
    );
    print!(
        "{}",
        terminal::wrap(
            &format!(
                "{}{}",
                describe_workload(&exp.file.workload),
                from_default("workload")
            ),
            "workload:",
            "  ",
        )
    );
}

/// A workload as one line: its size, retries, every rate that is not 0, and swarm.
pub(super) fn describe_workload(w: &WorkloadSpec) -> String {
    let mut parts = vec![
        format!("{} conversations x {} turns", w.conversations, w.turns),
        format!("retries {}", w.retries),
    ];
    if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(w) {
        for (key, value) in fields {
            let rate = value.as_f64().filter(|r| *r > 0.0);
            if let (Some(name), Some(rate)) = (key.strip_suffix("-rate"), rate) {
                if matches!(name, "double-cancel" | "cancel-resend") && w.rate("cancel-rate") == 0.0
                {
                    continue;
                }
                parts.push(format!("{name} {rate}"));
            }
        }
    }
    format!(
        "{} (swarm {})",
        parts.join(", "),
        if w.swarm { "on" } else { "off" }
    )
}

/// The summary of a sweep on the terminal: compact, or the full table with `wide`.
pub(super) fn print_summary(runs: &[RunSummary], wide: bool) {
    if wide {
        print!("{}", report::table(runs));
    } else {
        print!(
            "{}",
            terminal::compact(runs, terminal::Paint(terminal::colour_wanted()))
        );
        println!("(every invariant of every combination: summary.csv and chart.svg; --wide prints it here)");
    }
}

/// Work items are found again by model and routing name, so each may appear only once.
fn refuse_duplicates(exp: &Experiment) -> Result<(), InputError> {
    for (i, p) in exp.profiles.iter().enumerate() {
        if exp.profiles[..i].iter().any(|q| q.name == p.name) {
            return Err(InputError::new(
                &exp.origin,
                format!("model `{}` is listed twice", p.name),
            ));
        }
    }
    for (i, r) in exp.file.routing.iter().enumerate() {
        if exp.file.routing[..i].contains(r) {
            return Err(InputError::new(
                &exp.origin,
                format!("routing `{r}` is listed twice"),
            ));
        }
    }
    Ok(())
}

/// Removes temporary files that a sweep killed while writing its outputs left behind
/// (`runs.csv.tmp-<pid>`, ...). Only names this command writes are touched.
fn clean_stale_temporaries(out: &Path) {
    let Ok(entries) = std::fs::read_dir(out) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some((base, pid)) = name.rsplit_once(".tmp-") else {
            continue;
        };
        let ours = [
            "runs.csv",
            "summary.csv",
            "chart.svg",
            crate::sweep::shard::MANIFEST,
        ]
        .contains(&base)
            || (base.starts_with("timeline-") && base.ends_with(".html"));
        if ours && !pid.is_empty() && pid.chars().all(|c| c.is_ascii_digit()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Writes a file atomically, naming it in the error.
pub(super) fn write(path: &Path, bytes: &[u8]) -> Result<(), InputError> {
    report::write_atomic(path, bytes)
        .map_err(|e| InputError::new(path.display().to_string(), format!("cannot write: {e}")))
}

/// Writes `runs.csv`, `summary.csv`, `chart.svg` and, when the experiment is at hand, the
/// timelines of the first failing seed of each combination. `runs` must be sorted by work
/// item.
pub(super) fn write_outputs(
    exp: Option<&Experiment>,
    name: &str,
    runs: &[RunSummary],
    out: &Path,
) -> Result<(), InputError> {
    let runs_csv = out.join("runs.csv");
    let summary_csv = out.join("summary.csv");
    let chart = out.join("chart.svg");
    write(&runs_csv, &report::runs_csv(runs))?;
    write(&summary_csv, &report::summary_csv(runs))?;
    write(
        &chart,
        &crate::output::chart::svg(name, &report::summary_rows(runs)),
    )?;
    println!(
        "wrote {}, {} and {}",
        runs_csv.display(),
        summary_csv.display(),
        chart.display()
    );
    if let Some(exp) = exp {
        let timelines =
            crate::output::timeline::write_first_failures(exp, runs, out).map_err(|e| {
                InputError::new(
                    out.display().to_string(),
                    format!("cannot write a timeline: {e}"),
                )
            })?;
        for t in &timelines {
            println!("wrote {}", t.display());
        }
    }
    Ok(())
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
                print!(
                    "{}",
                    terminal::wrap(
                        &format!(
                            "{} / {} / {inv}: seed {}: {detail}",
                            g.model, g.routing, r.seed
                        ),
                        "  ",
                        "      ",
                    )
                );
                println!("    $ {}", exp.reproduce(r.seed, g.model, g.routing));
            }
        }
    }
    if printed {
        println!();
    }
}
