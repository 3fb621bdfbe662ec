//! `a2a-chaos fidelity`: a suite of scenarios run both ways, simulated and live.
//!
//! Each scenario file in the suite directory (default `tests/fidelity/`) runs once in the
//! simulator with its model's profile and once live against the real implementation the
//! profile's `[fidelity]` table names. The table compares the two verdicts of every
//! invariant either run exercised. A disagreement is accepted only when the profile's
//! `[fidelity.notes]` explains it under `"scenario-name/invariant"`; any other disagreement,
//! or a live run that did not finish, makes the command exit 1.

use std::path::{Path, PathBuf};

use crate::check::Verdict;
use crate::error::InputError;
use crate::live;
use crate::model::Profile;
use crate::scenario::Script;
use crate::sim::{RunSummary, Sim};

use super::live::{check_peer, PeerArgs};

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

/// The scenario files of a suite, in name order.
pub fn suite(dir: &Path) -> Result<Vec<PathBuf>, InputError> {
    let origin = dir.display().to_string();
    let entries = std::fs::read_dir(dir)
        .map_err(|e| InputError::new(&origin, format!("cannot read the suite: {e}")))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(InputError::new(&origin, "the suite has no .toml scenario"));
    }
    Ok(files)
}

/// Compares the two summaries of one scenario.
pub fn compare(
    script: &Script,
    profile: &Profile,
    sim: &RunSummary,
    real: &RunSummary,
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

pub fn cmd_fidelity(dir: &Path, peer: &PeerArgs) -> Result<i32, InputError> {
    let files = suite(dir)?;
    let options = peer.options();
    // Everything is read and checked before anything runs.
    let mut scripts = Vec::new();
    for path in &files {
        let origin = path.display().to_string();
        let script = Script::load(path)?;
        live::validate(&script, &origin)?;
        let profile = Profile::load(&script.file.model)?;
        check_peer(&profile, &options, &origin)?;
        scripts.push((origin, script, profile));
    }
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    for (origin, script, profile) in &scripts {
        eprintln!("fidelity: {origin}: simulated, then live");
        let sim = Sim::from_scenario(script)?.check().summary;
        let (real, _) = live::run_scenario(script, profile.clone(), &options)?;
        if let Some(e) = &real.error {
            failed.push(format!("{origin}: the live run did not finish: {e}"));
        }
        if let Some(e) = &sim.error {
            failed.push(format!("{origin}: the simulated run did not finish: {e}"));
        }
        rows.extend(compare(script, profile, &sim, &real));
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
    for f in &failed {
        println!("{f}");
    }
    println!(
        "{} scenarios, {} verdicts compared: {} agree, {} documented, {} undocumented disagreements",
        scripts.len(),
        rows.len(),
        rows.iter().filter(|r| r.status == "agree").count(),
        rows.iter().filter(|r| r.status == "documented").count(),
        disagreements
    );
    Ok(if disagreements == 0 && failed.is_empty() {
        0
    } else {
        1
    })
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
