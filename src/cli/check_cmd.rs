//! `a2a-chaos check`: a scenario or an experiment as a regression test.
//!
//! The expectation is judged by [`crate::sim::judge`] (a scenario) or
//! [`crate::sim::judge_sweep`] (an experiment, per model × routing combination), which also
//! fail a check that exercised no invariant, an `[expect] exercised` invariant that was not
//! reached, and an expected violation of an invariant nothing exercised. Each reason is
//! printed with the command that reproduces it. `--junit FILE` writes the same verdicts as
//! JUnit XML ([`crate::output::junit`]); `--json` prints the contract's object last.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::InputError;
use crate::output::junit::{self, Case};
use crate::output::report;
use crate::output::terminal::{self, Paint};
use crate::sim::{judge, judge_sweep, Problem, RunSummary, Sim};
use crate::sweep::runner::{self, SweepOptions};

use super::{load, print_findings, Loaded};

/// Builds the reproduce command of a run.
type Reproduce = Box<dyn Fn(&RunSummary) -> String>;

/// What `check` was asked to do.
pub struct CheckArgs {
    /// The scenario or experiment file.
    pub path: PathBuf,
    /// Print the JSON object last.
    pub json: bool,
    /// Worker threads for an experiment.
    pub jobs: usize,
    /// Where to write the JUnit XML report.
    pub junit: Option<PathBuf>,
    /// The engine, instead of the file's.
    pub engine: Option<crate::engine::Engine>,
}

/// One judged unit: a scenario, or one model × routing combination of an experiment.
struct Judged {
    name: String,
    problems: Vec<Problem>,
    /// The runs it covers.
    runs: Vec<RunSummary>,
}

pub fn cmd_check(args: CheckArgs) -> Result<i32, InputError> {
    let CheckArgs {
        path,
        json,
        jobs,
        junit: junit_path,
        engine,
    } = args;
    let file = path.display().to_string();
    let paint = Paint(!json && terminal::colour_wanted());
    let (units, reproduce): (Vec<Judged>, Reproduce) = match load(&path)? {
        Loaded::Scenario(script) => {
            let mut builder = Sim::scenario_builder(&script);
            if let Some(e) = engine {
                builder.engine(e);
            }
            let checked = builder.build()?.check();
            let summary = checked.summary;
            let outcome = judge(&script.file.expect, &summary, checked.record.as_ref());
            if !json {
                println!(
                    "{} ({} on {} replicas, {})",
                    script.file.name, script.file.model, script.file.replicas, script.file.routing
                );
                if let Some(pm) = &script.file.postmortem {
                    print!("{}", terminal::wrap(pm, "postmortem:", "  "));
                }
                print_findings(&summary);
                println!(
                    "points fired: {}",
                    junit::points_line(&summary.points_fired)
                );
                println!(
                    "expected violations: [{}]; got: [{}]",
                    outcome.expected.join(", "),
                    outcome.got.join(", ")
                );
            }
            let f = file.clone();
            let unit = Judged {
                name: script.file.name.clone(),
                problems: outcome.problems,
                runs: vec![summary],
            };
            (
                vec![unit],
                Box::new(move |r: &RunSummary| format!("a2a-chaos replay {f} --seed {}", r.seed)),
            )
        }
        Loaded::Experiment(mut exp) => {
            if let Some(e) = engine {
                exp.file.engine = e;
            }
            if !json {
                super::run::print_resolved(&exp, jobs);
            }
            let runs = runner::sweep(
                &exp,
                &SweepOptions {
                    jobs,
                    progress: !json,
                },
            );
            let combos = judge_sweep(&exp, &runs);
            if !json {
                let by_model = report::violated_by_model(&runs);
                for (model, got) in &by_model {
                    let expected = exp.expected(model).map(|mut v| {
                        v.sort();
                        v
                    });
                    let ok = combos.iter().filter(|c| c.model == *model).all(|c| c.met());
                    println!(
                        "{model}: expected [{}], got [{}]{}",
                        expected.clone().unwrap_or_default().join(", "),
                        got.join(", "),
                        if ok { "" } else { "  <- not as expected" }
                    );
                }
                print!("{}", terminal::compact(&runs, paint));
            }
            let units = combos
                .into_iter()
                .map(|c| Judged {
                    name: format!("{} / {}", c.model, c.routing),
                    problems: c.problems,
                    runs: runs
                        .iter()
                        .filter(|r| r.model == c.model && r.routing == c.routing)
                        .cloned()
                        .collect(),
                })
                .collect();
            let exp2 = exp.clone();
            (
                units,
                Box::new(move |r: &RunSummary| exp2.reproduce(r.seed, &r.model, &r.routing)),
            )
        }
    };
    let met = units.iter().all(|u| u.problems.is_empty());
    let all: Vec<RunSummary> = units.iter().flat_map(|u| u.runs.clone()).collect();
    let scenario = units.len() == 1 && all.len() == 1;
    // Each reason with the command that shows it: the run it names, else the unit's first.
    let reproduce_ref = &reproduce;
    let reasons: Vec<(&Judged, String, String)> = units
        .iter()
        .flat_map(|u| {
            u.problems.iter().map(move |p| {
                let run = p
                    .seed()
                    .and_then(|s| u.runs.iter().find(|r| r.seed == s))
                    .or(u.runs.first());
                (u, p.to_string(), run.map(reproduce_ref).unwrap_or_default())
            })
        })
        .collect();
    if let Some(junit_path) = &junit_path {
        let classname = path
            .file_stem()
            .map_or(file.clone(), |s| s.to_string_lossy().into_owned());
        let cases: Vec<Case> = units
            .iter()
            .map(|u| Case {
                name: u.name.clone(),
                classname: classname.clone(),
                failures: reasons
                    .iter()
                    .filter(|(v, _, _)| std::ptr::eq(*v, u))
                    .map(|(_, why, cmd)| (why.clone(), cmd.clone()))
                    .collect(),
                out: case_out(&u.runs),
            })
            .collect();
        super::run::write(junit_path, junit::xml(&file, &cases).as_bytes())?;
    }
    let mut value = report::check_json(&file, &all, met, reproduce);
    value["problems"] = serde_json::Value::Array(
        reasons
            .iter()
            .map(|(u, why, cmd)| {
                let mut p = serde_json::json!({"problem": why, "reproduce": cmd});
                if !scenario {
                    p["combination"] = serde_json::Value::from(u.name.clone());
                }
                p
            })
            .collect(),
    );
    value["points_fired"] = serde_json::json!(sum_points(&all));
    if json {
        println!("{value}");
    } else {
        for (u, why, cmd) in &reasons {
            let lead = if scenario {
                "not met:".to_string()
            } else {
                format!("not met: {}:", u.name)
            };
            print!("{}", terminal::wrap(why, &lead, "    "));
            println!("    reproduce: {cmd}");
        }
        println!("{}", expectations_line(met));
        if let Some(first) = value.get("first_violation").filter(|v| !v.is_null()) {
            println!("reproduce: {}", first["reproduce"].as_str().unwrap_or(""));
        }
        if let Some(p) = &junit_path {
            println!("wrote {}", p.display());
        }
    }
    Ok(if met { 0 } else { 1 })
}

/// The points that fired over `runs`, summed per point.
fn sum_points(runs: &[RunSummary]) -> BTreeMap<String, u64> {
    let mut points = BTreeMap::new();
    for r in runs {
        for (k, n) in &r.points_fired {
            *points.entry(k.clone()).or_insert(0) += n;
        }
    }
    points
}

/// A JUnit case's `<system-out>`: each invariant's verdict over its runs, and the points
/// that fired.
fn case_out(runs: &[RunSummary]) -> Vec<String> {
    let mut out = vec![format!(
        "{} run{}",
        runs.len(),
        if runs.len() == 1 { "" } else { "s" }
    )];
    for inv in crate::check::names() {
        let refs: Vec<&RunSummary> = runs.iter().collect();
        let (v, e) = report::tally(&refs, inv);
        let verdict = match (v, e) {
            (_, 0) => "unknown".to_string(),
            (0, e) => format!("pass ({e} exercised)"),
            (v, e) => format!("fail in {v} ({e} exercised)"),
        };
        out.push(format!("{inv}: {verdict}"));
    }
    out.push(format!(
        "points fired: {}",
        junit::points_line(&sum_points(runs))
    ));
    out
}

/// The last line of a checked scenario: whether its `[expect]` held.
pub(crate) fn expectations_line(met: bool) -> &'static str {
    if met {
        "expectations met"
    } else {
        "expectations NOT met"
    }
}
