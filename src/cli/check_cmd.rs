//! `a2a-chaos check`: a scenario or an experiment as a regression test.

use std::path::Path;

use crate::error::InputError;
use crate::output::report;
use crate::sim::{judge, ExpectOutcome, RunSummary, Sim};
use crate::sweep::runner::{self, SweepOptions};

use super::{load, print_findings, Loaded};

/// Builds the reproduce command of a run.
type Reproduce = Box<dyn Fn(&RunSummary) -> String>;

pub fn cmd_check(path: &Path, json: bool, jobs: usize) -> Result<i32, InputError> {
    let file = path.display().to_string();
    let (runs, met, reproduce): (Vec<RunSummary>, bool, Reproduce) = match load(path)? {
        Loaded::Scenario(script) => {
            let summary = Sim::from_scenario(&script)?.check().summary;
            let ExpectOutcome { expected, got, met } = judge(&script.file.expect, &summary);
            if !json {
                println!(
                    "{} ({} on {} replicas, {})",
                    script.file.name, script.file.model, script.file.replicas, script.file.routing
                );
                if let Some(pm) = &script.file.postmortem {
                    println!("postmortem: {pm}");
                }
                print_findings(&summary);
                println!(
                    "expected violations: [{}]; got: [{}]",
                    expected.join(", "),
                    got.join(", ")
                );
            }
            let f = file.clone();
            (
                vec![summary],
                met,
                Box::new(move |r: &RunSummary| format!("a2a-chaos replay {f} --seed {}", r.seed)),
            )
        }
        Loaded::Experiment(exp) => {
            let runs = runner::sweep(
                &exp,
                &SweepOptions {
                    jobs,
                    progress: !json,
                },
            );
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
            (
                runs,
                met,
                Box::new(move |r: &RunSummary| exp2.reproduce(r.seed, &r.model, &r.routing)),
            )
        }
    };
    let value = report::check_json(&file, &runs, met, reproduce);
    if json {
        println!("{value}");
    } else {
        println!("{}", expectations_line(met));
        if let Some(first) = value.get("first_violation").filter(|v| !v.is_null()) {
            println!("reproduce: {}", first["reproduce"].as_str().unwrap_or(""));
        }
    }
    Ok(if met { 0 } else { 1 })
}

/// The last line of a checked scenario: whether its `[expect]` held.
pub(crate) fn expectations_line(met: bool) -> &'static str {
    if met {
        "expectations met"
    } else {
        "expectations NOT met"
    }
}
