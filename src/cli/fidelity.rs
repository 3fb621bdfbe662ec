//! `a2a-chaos fidelity`: a suite of scenarios run both ways, simulated and live.
//!
//! Each scenario file in the suite directory (default `tests/fidelity/`) runs once in the
//! simulator with its model's profile and once live against the real implementation the
//! profile's `[fidelity]` table names. The table compares the two verdicts of every
//! invariant either run exercised. A disagreement is accepted only when the profile's
//! `[fidelity.notes]` explains it under `"scenario-name/invariant"`; any other disagreement,
//! or a live run that did not finish, makes the command exit 1; so does any difference in
//! the other observables ([`crate::fidelity::Observables`]: outcomes, effects, final
//! tasks) unless `[fidelity.notes]` explains it under `"scenario-name/observables"`. The suite's `found/`
//! directory (disagreements `--generate` found, shrunk) belongs to the suite.
//!
//! `fidelity --generate N` draws N scenarios per model instead ([`crate::fidelity`]),
//! compares every observable, shrinks each disagreement into `found/`, and writes
//! `results/fidelity-generated/`. `fidelity --merge DIR...` joins the `runs.csv` of batches
//! run apart (a later directory's row replaces an earlier one of the same model and seed)
//! and writes the summaries again from the rows alone.

use std::path::{Path, PathBuf};

use crate::check::Verdict;
use crate::error::InputError;
use crate::live;
use crate::model::Profile;
use crate::scenario::Script;
use crate::sim::RunSummary;
use crate::strategies::Generation;

use super::live::{check_peer, PeerArgs};
use crate::fidelity::{self as differential, report, Status};

/// The flags of `fidelity --generate`.
#[derive(clap::Args, Debug, Clone)]
pub struct GenerateArgs {
    /// Draw this many scenarios per model (scenario seeds S, S+1, ...) instead of running
    /// the suite.
    #[arg(long)]
    pub generate: Option<u64>,
    /// The first scenario seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// A model to compare (repeatable); default every built-in model with a `[fidelity]`
    /// table.
    #[arg(long = "model")]
    pub models: Vec<String>,
    /// Where the results go; default `results/fidelity-generated` for generator 1,
    /// `results/fidelity-concurrent` for generator 2, `results/fidelity-faults` for 3,
    /// `results/fidelity-shapes` for 4, `results/fidelity-clients` for 5,
    /// `results/fidelity-agents` for 6. Rows already there are kept: a (model, seed) run
    /// again replaces its row, as `--merge` does, so a one-seed rerun (a reproduce
    /// command) updates that seed's row and never drops the others.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Which generation of the scenario generator draws (a seed names a scenario only
    /// with its generation): 1, the envelope of 2026-12-01 (no races); 2, which adds
    /// races: two or three calls on one task at once; 3, which adds faults around turns:
    /// partitions, holds and latency of a replica's links, pauses, kills at a point; 4,
    /// which adds the request shapes official clients send: a follow-up with its taskId
    /// and no contextId; 5, which adds what clients that know nothing of a2a-chaos send:
    /// messages with no scripted data part, and two different answers of one wait at once;
    /// 6, which adds agents of other shapes: progress updates, no effect, a cancel
    /// mid-think, every turn thinking 200 ms (default: 2, until generation 3 has a
    /// committed batch).
    #[arg(long, default_value_t = crate::strategies::Generation::LATEST.number())]
    pub generator: u32,
    /// Report disagreements without shrinking them into the suite's found/.
    #[arg(long)]
    pub no_shrink: bool,
    /// Print the scenario files and run nothing.
    #[arg(long)]
    pub print: bool,
    /// Without --generate: run each scenario live this many times and print, for each run,
    /// the simulated order it matched or its differences from the closest one (races: which
    /// orders real time takes); the verdict table is the first run's.
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Without --generate: how many scenarios run live at once, each on replicas, ports
    /// and a database of its own (the comparisons and the table stay in file order).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=16))]
    pub jobs: u16,
    /// Merge the runs.csv of batches run apart (on several machines, or seeds continued
    /// later) into --out, and rerun nothing: a (model, seed) in a later directory replaces
    /// the earlier row. Repeatable.
    #[arg(long, value_name = "DIR")]
    pub merge: Vec<PathBuf>,
}

/// The first live run of every scenario, `jobs` at a time (each `live::run_scenario`
/// starts replicas, ports and a database of its own), in file order.
fn live_runs(
    scripts: &[(String, Script, Profile)],
    options: &live::LiveOptions,
    jobs: usize,
) -> Vec<Result<(crate::sim::RunSummary, crate::world::RunRecord), InputError>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let done = std::sync::Mutex::new((0..scripts.len()).map(|_| None).collect::<Vec<_>>());
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, scripts.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((origin, script, profile)) = scripts.get(i) else {
                    break;
                };
                eprintln!("fidelity: {origin}: live");
                let run = live::run_scenario(script, profile.clone(), options);
                done.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(run);
            });
        }
    });
    done.into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|run| run.expect("every scenario was run"))
        .collect()
}

/// `fidelity --merge DIR...`: one results directory of several batches.
pub fn cmd_merge(args: &GenerateArgs) -> Result<i32, InputError> {
    let mut batches = Vec::new();
    for dir in &args.merge {
        batches.push(report::read_runs_csv(&dir.join("runs.csv"))?);
    }
    let rows = report::merge_rows(batches);
    let out = args.out_dir()?;
    report::write_results(&out, &rows)?;
    print!("{}", report::summary_table(&report::summarise(&rows)));
    println!(
        "merged {} batches into {} scenarios: {}",
        args.merge.len(),
        rows.len(),
        out.display()
    );
    Ok(0)
}

impl GenerateArgs {
    /// The generation `--generator` names, or why there is none.
    pub fn generation(&self) -> Result<Generation, InputError> {
        Generation::from_number(self.generator).ok_or_else(|| {
            InputError::new(
                "--generator",
                format!("no generator {}; there are 1 to 6", self.generator),
            )
        })
    }

    /// `--out`, or the generation's results directory.
    pub fn out_dir(&self) -> Result<PathBuf, InputError> {
        Ok(match &self.out {
            Some(out) => out.clone(),
            None => PathBuf::from(match self.generation()? {
                Generation::Classic => "results/fidelity-generated",
                Generation::Concurrent => "results/fidelity-concurrent",
                Generation::Faults => "results/fidelity-faults",
                Generation::Shapes => "results/fidelity-shapes",
                Generation::Clients => "results/fidelity-clients",
                Generation::Agents => "results/fidelity-agents",
            }),
        })
    }
}

/// One row of the table.
#[derive(Debug, Clone)]
pub struct Row {
    pub scenario: String,
    pub model: String,
    pub invariant: String,
    pub simulated: Verdict,
    pub real: Verdict,
    /// `agree`, `documented` or `DISAGREE`.
    pub status: &'static str,
    pub note: Option<String>,
}

/// The scenario files of a suite and of its `found/` directory, in name order; a file is a
/// suite of one.
pub fn suite(dir: &Path) -> Result<Vec<PathBuf>, InputError> {
    let origin = dir.display().to_string();
    if dir.is_file() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let toml_files = |dir: &Path| -> Result<Vec<PathBuf>, InputError> {
        let entries = std::fs::read_dir(dir)
            .map_err(|e| InputError::new(&origin, format!("cannot read the suite: {e}")))?;
        Ok(entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect())
    };
    let mut files = toml_files(dir)?;
    files.sort();
    let found = dir.join("found");
    if found.is_dir() {
        let mut more = toml_files(&found)?;
        more.sort();
        files.extend(more);
    }
    if files.is_empty() {
        return Err(InputError::new(&origin, "the suite has no .toml scenario"));
    }
    Ok(files)
}

/// Compares the two summaries of one scenario. `blind` names the invariants whose
/// simulated violations the live observer cannot see ([`differential::Observables::blind`]):
/// a simulated `fail` against a real `pass` there is `unseen`, not a disagreement.
pub fn compare(
    script: &Script,
    profile: &Profile,
    sim: &RunSummary,
    real: &RunSummary,
    blind: &std::collections::BTreeSet<crate::check::Invariant>,
) -> Vec<Row> {
    let notes = profile
        .fidelity
        .as_ref()
        .map(|f| f.notes.clone())
        .unwrap_or_default();
    let mut rows = Vec::new();
    for s in &sim.invariants {
        let r = real
            .invariants
            .iter()
            .find(|r| r.name == s.name)
            .map_or(Verdict::Unknown, |r| r.verdict);
        if s.verdict == Verdict::Unknown && r == Verdict::Unknown {
            continue;
        }
        let key = format!("{}/{}", script.file.name, s.name);
        let note = notes.get(&key).cloned();
        let status = if s.verdict == r {
            "agree"
        } else if blind.contains(&s.name)
            && crate::fidelity::observe::unseen_pair(s.name, Some(s.verdict), Some(r))
        {
            "unseen"
        } else if note.is_some() {
            "documented"
        } else {
            "DISAGREE"
        };
        rows.push(Row {
            scenario: script.file.name.clone(),
            model: profile.name.clone(),
            invariant: s.name.to_string(),
            simulated: s.verdict,
            real: r,
            status,
            note,
        });
    }
    rows
}

pub fn cmd_fidelity(
    dir: &Path,
    peer: &PeerArgs,
    repeat: usize,
    jobs: usize,
) -> Result<i32, InputError> {
    let files = suite(dir)?;
    let options = peer.options()?;
    // Everything is read and checked before anything runs.
    let mut scripts = Vec::new();
    for path in &files {
        let origin = path.display().to_string();
        let script = Script::load(path)?;
        live::validate(&script, &origin, options.allow_loopback_push)?;
        let profile = Profile::load(&script.file.model)?;
        check_peer(&profile, &options, &origin)?;
        scripts.push((origin, script, profile));
    }
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    let mut observed = Vec::new();
    let mut lives = live_runs(&scripts, &options, jobs).into_iter();
    for (origin, script, profile) in &scripts {
        eprintln!("fidelity: {origin}: simulated, and compared with its live run");
        // Every order of the scenario's races (just the scenario when it has none).
        let orders: Vec<_> = differential::patterns::order_variants(script)
            .iter()
            .map(|variant| differential::twin(variant).map(|sim| sim.check()))
            .collect::<Result<_, _>>()?;
        let (real, record) = lives.next().expect("a live run per scenario")?;
        // Beyond verdicts, everything both worlds observe (as `--generate` compares), on
        // the simulated order closest to the live run.
        let observed_orders: Vec<differential::Observables> = orders
            .iter()
            .map(|checked| match &checked.record {
                Some(r) => differential::Observables::of_simulated(r, &checked.summary),
                None => differential::Observables {
                    error: checked.summary.error.clone(),
                    ..Default::default()
                },
            })
            .collect();
        let live_observed = differential::Observables::of(&record, &real);
        let (order, _) = differential::closest(&observed_orders, &live_observed);
        for run in 1..=repeat.max(1) {
            if repeat < 2 {
                break;
            }
            let again = if run == 1 {
                live_observed.clone()
            } else {
                let (summary, record) = live::run_scenario(script, profile.clone(), &options)?;
                differential::Observables::of(&record, &summary)
            };
            match differential::closest(&observed_orders, &again) {
                (i, d) if d.is_empty() => println!("live run {run}: simulated order {i}"),
                (i, d) => {
                    println!("live run {run}: no simulated order; closest {i}:");
                    for d in d {
                        println!("    {d}");
                    }
                }
            }
        }
        let checked = &orders[order];
        let sim = checked.summary.clone();
        let simulated = checked
            .record
            .as_ref()
            .map(|_| observed_orders[order].clone());
        if order > 0 {
            eprintln!(
                "fidelity: {origin}: the live run took the race order of simulated variant {order}"
            );
        }
        if let Some(simulated) = &simulated {
            let differ = simulated.diff(&live_observed, "simulated", "real");
            let key = format!("{}/observables", script.file.name);
            let noted = profile
                .fidelity
                .as_ref()
                .is_some_and(|f| f.notes.contains_key(&key));
            if !differ.is_empty() && !noted {
                observed.push((script.file.name.clone(), differ));
            }
        }
        if let Some(e) = &real.error {
            failed.push(format!("{origin}: the live run did not finish: {e}"));
        }
        if let Some(e) = &sim.error {
            failed.push(format!("{origin}: the simulated run did not finish: {e}"));
        }
        let blind = simulated.map(|o| o.blind).unwrap_or_default();
        rows.extend(compare(script, profile, &sim, &real, &blind));
    }
    print!("{}", table(&rows));
    let disagreements = rows.iter().filter(|r| r.status == "DISAGREE").count();
    for r in rows
        .iter()
        .filter(|r| r.note.is_some() && r.status == "documented")
    {
        println!(
            "documented: {}/{} on {}: {}",
            r.scenario,
            r.invariant,
            r.model,
            r.note.as_deref().unwrap_or("")
        );
    }
    for (scenario, differ) in &observed {
        for d in differ {
            println!("DISAGREE {scenario}: {d}");
        }
    }
    for f in &failed {
        println!("{f}");
    }
    println!(
        "{} scenarios, {} verdicts compared: {} agree, {} documented, {} unseen by the live observer, {} undocumented disagreements; observables differ in {} scenarios",
        scripts.len(),
        rows.len(),
        rows.iter().filter(|r| r.status == "agree").count(),
        rows.iter().filter(|r| r.status == "documented").count(),
        rows.iter().filter(|r| r.status == "unseen").count(),
        disagreements,
        observed.len()
    );
    Ok(
        if disagreements == 0 && failed.is_empty() && observed.is_empty() {
            0
        } else {
            1
        },
    )
}

/// The table as text.
pub fn table(rows: &[Row]) -> String {
    let header = [
        "scenario",
        "model",
        "invariant",
        "simulated",
        "real",
        "agreement",
    ];
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|r| {
            [
                r.scenario.clone(),
                r.model.clone(),
                r.invariant.clone(),
                r.simulated.word().to_string(),
                r.real.word().to_string(),
                r.status.to_string(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.len());
        }
    }
    let mut out = String::new();
    let mut line = |row: [&str; 6]| {
        let parts: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(parts.join("  ").trim_end());
        out.push('\n');
    };
    line(header);
    for row in &cells {
        line([&row[0], &row[1], &row[2], &row[3], &row[4], &row[5]]);
    }
    out
}

/// `fidelity --generate N`: N generated scenarios per model, each simulated once and live
/// twice, compared on every observable; exit 1 on any disagreement the profile's
/// `[fidelity.notes]` does not explain under the found scenario's name
/// (`found-<model>-<seed>`).
pub fn cmd_generate(
    n: u64,
    args: &GenerateArgs,
    suite_dir: &Path,
    peer: &PeerArgs,
) -> Result<i32, InputError> {
    let options = peer.options()?;
    let generation = args.generation()?;
    let out = args.out_dir()?;
    let models: Vec<String> = if args.models.is_empty() {
        crate::model::names()
            .into_iter()
            .filter(|m| Profile::load(m).is_ok_and(|p| p.fidelity.is_some()))
            .map(str::to_string)
            .collect()
    } else {
        args.models.clone()
    };
    if n == 0 {
        return Err(InputError::new(
            "--generate",
            "generate at least 1 scenario",
        ));
    }
    if args.print {
        for model in &models {
            Profile::load(model)?;
            for seed in args.seed..args.seed + n {
                println!(
                    "{}",
                    differential::generated_by(model, seed, generation).to_toml()
                );
            }
        }
        return Ok(0);
    }
    // Every model is loaded and its peer checked before anything runs.
    let mut profiles = Vec::new();
    for model in &models {
        let profile = Profile::load(model)?;
        check_peer(&profile, &options, &format!("--model {model}"))?;
        profiles.push((model.clone(), profile));
    }
    // The rows a batch finds in --out stay; its own replace those of the same seeds.
    let mut kept = match out.join("runs.csv") {
        csv if csv.is_file() => report::read_runs_csv(&csv)?,
        _ => Vec::new(),
    };
    let earlier = kept.len();
    let found_dir = suite_dir.join("found");
    let total = n * profiles.len() as u64;
    let mut rows = Vec::new();
    let mut done = 0;
    for (model, profile) in &profiles {
        eprintln!("fidelity: {model}: starting two pools of 3 real replicas");
        let replicas = *crate::strategies::ScenarioConfig::live(model.as_str())
            .replicas
            .end();
        // The pools' replicas think as the generation's scenarios say (200 ms from
        // generation 6 on; the peer's default before it).
        let think_ms =
            crate::strategies::ScenarioConfig::live_generation(model.as_str(), generation).think_ms;
        let pooled = live::LiveOptions {
            think_ms,
            ..options.clone()
        };
        let mut live = differential::Live::pooled(profile, &pooled, replicas)?;
        for seed in args.seed..args.seed + n {
            done += 1;
            let script = differential::generated_by(model, seed, generation);
            let outcome = differential::run_case(&script, &mut live, 2)?;
            let mut row = report::Row::of(model, &script, &outcome, generation);
            let found_name = script.file.name.replacen("gen-", "found-", 1);
            let explained = profile
                .fidelity
                .as_ref()
                .and_then(|f| f.notes.get(&found_name));
            let word = match (&outcome.status, explained) {
                (Status::Disagree(_), Some(_)) => "documented",
                (status, _) => status.word(),
            };
            let races = match row.patterns.join(" ") {
                p if p.is_empty() => String::new(),
                p => format!("; {p}"),
            };
            eprintln!(
                "fidelity: [{done}/{total}] {model} seed {seed} ({} steps{races}): {word} ({:.1} s live)",
                script.step_count(),
                outcome.live_wall_ms as f64 / 1000.0
            );
            if let (Status::Disagree(_), Some(note)) = (&outcome.status, explained) {
                // Pinned under found/ and explained in the profile: documented.
                row.status = "documented";
                eprintln!("  documented ({found_name}): {note}");
            } else if let Status::Disagree(differences) = &outcome.status {
                let reproduce = differential::reproduce_command(model, seed, generation);
                for d in differences {
                    eprintln!("  {d}");
                }
                eprintln!("  reproduce: {reproduce}");
                if !args.no_shrink {
                    let shrunk =
                        differential::shrink::shrink(&script, &mut live, &outcome, &mut |what| {
                            eprintln!("  shrink: {what}")
                        })?;
                    let path = report::write_found(
                        &found_dir,
                        &shrunk.script,
                        &shrunk.outcome,
                        &reproduce,
                    )?;
                    eprintln!(
                        "  shrunk to {} steps in {} candidates: {}",
                        shrunk.script.step_count(),
                        shrunk.tried,
                        path.display()
                    );
                    row.found = Some(path.display().to_string());
                }
            }
            // The results so far, so a long batch cut short keeps what it measured.
            kept = report::merge_rows(vec![std::mem::take(&mut kept), vec![row.clone()]]);
            report::write_results(&out, &kept)?;
            rows.push(row);
        }
    }
    let summary = report::summarise(&rows);
    print!("{}", report::summary_table(&summary));
    for r in rows.iter().filter(|r| r.status == "DISAGREE") {
        println!("DISAGREE {} seed {}: {}", r.model, r.seed, r.differences);
    }
    match earlier {
        0 => println!("results: {}", out.display()),
        n => println!(
            "results: {} (this batch's {} rows merged with the {n} already there)",
            out.display(),
            rows.len()
        ),
    }
    Ok(if summary.values().all(|s| s.disagree == 0) {
        0
    } else {
        1
    })
}
