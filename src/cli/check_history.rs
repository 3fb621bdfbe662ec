//! `a2a-chaos check-history FILE.jsonl`: the checkers on a recorded history (see
//! [`crate::live::history`]).
//!
//! Output as `check`: each invariant's verdict, with the reason for each `unknown` the
//! history's data forces; `--json` prints the contract's object last (with `unknown_because`
//! and `partial`); `--timeline FILE.html` draws the history. Exit 0 when no invariant
//! failed and at least one was exercised, 1 when one failed or the recording exercised
//! nothing (every verdict unknown: an empty recording proves nothing, as a `check` that
//! exercised nothing), 2 for unusable input (a malformed recording among them: two lines
//! recording one request differently).

use std::path::{Path, PathBuf};

use crate::error::InputError;
use crate::live::history;
use crate::model::Profile;
use crate::output::{report, timeline};
use crate::sim::summarise;

use super::print_findings;

/// `check-history`'s arguments.
#[derive(clap::Args, Debug)]
pub struct CheckHistoryArgs {
    /// The history (JSONL, as `a2a-chaos proxy` writes it; docs/PEERS.md).
    pub file: PathBuf,
    /// The model whose promises the server makes (dedup-contract needs one).
    #[arg(long)]
    pub model: Option<String>,
    /// Print one JSON object as the last line of stdout.
    #[arg(long)]
    pub json: bool,
    /// Also draw the history as a timeline page.
    #[arg(long, value_name = "FILE.html")]
    pub timeline: Option<PathBuf>,
}

pub fn cmd_check_history(args: CheckHistoryArgs) -> Result<i32, InputError> {
    let file = args.file.display().to_string();
    let model = args.model.as_deref().map(Profile::load).transpose()?;
    let recorded = history::load(Path::new(&args.file), model)
        .map_err(|e| InputError::new(&file, e.to_string()))?;
    let checked = history::check_all(&recorded);
    let summary = summarise(&recorded.record, &checked.findings, 0);
    let failed = !summary.violated().is_empty();
    let exercised_nothing = summary
        .invariants
        .iter()
        .all(|i| i.verdict == crate::check::Verdict::Unknown);
    if !args.json {
        let r = &recorded.record;
        println!(
            "{file}: {} requests ({} ok, {} fail, {} info), {} effects, {} saves, {} final tasks{}",
            summary.requests,
            summary.ok,
            summary.fail,
            summary.info,
            r.effects.len(),
            r.saves.len(),
            if recorded.has_final {
                r.final_tasks.len()
            } else {
                0
            },
            if recorded.has_final {
                ""
            } else {
                " (none recorded)"
            }
        );
        print_findings(&summary);
        for (name, why) in &checked.unknown {
            println!("  unknown {name}: {why}");
        }
        for (name, why) in &checked.partial {
            println!("  partly {name}: {why}");
        }
        for note in &recorded.notes {
            println!("  note: {note}");
        }
        println!(
            "{}",
            if failed {
                "violations found"
            } else if exercised_nothing {
                "the recording exercised nothing: every invariant is unknown, so it proves nothing"
            } else {
                "no violations found"
            }
        );
    }
    if let Some(path) = &args.timeline {
        let page = timeline::Page {
            experiment: &file,
            reproduce: format!("a2a-chaos check-history {file}"),
            record: &recorded.record,
            findings: &checked.findings,
            sweep_hash: None,
        };
        super::run::write(path, &timeline::html(&page))?;
        if !args.json {
            println!("wrote {}", path.display());
        }
    }
    if args.json {
        let f = file.clone();
        let passed = !failed && !exercised_nothing;
        let mut value = report::check_json(&file, &[summary], passed, move |_| {
            format!("a2a-chaos check-history {f}")
        });
        value["unknown_because"] = serde_json::json!(checked.unknown);
        value["partial"] = serde_json::json!(checked.partial);
        value["notes"] = serde_json::json!(recorded.notes);
        println!("{value}");
    }
    Ok(if failed || exercised_nothing { 1 } else { 0 })
}
