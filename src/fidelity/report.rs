//! What `fidelity --generate` writes: one row per scenario, a summary per model, and every
//! disagreement as a scenario file under `tests/fidelity/found/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::InputError;
use crate::scenario::Script;

use super::Outcome;

/// One generated scenario's row.
#[derive(Debug, Clone)]
pub struct Row {
    pub model: String,
    pub seed: u64,
    pub replicas: usize,
    pub steps: usize,
    /// `agree`, `unstable`, `documented` (a disagreement the profile explains) or
    /// `DISAGREE`.
    pub status: &'static str,
    /// The differences, `; `-separated (empty for an agreement).
    pub differences: String,
    /// The found scenario a disagreement was shrunk to, when it was.
    pub found: Option<String>,
    pub sim_wall_ms: u64,
    pub live_wall_ms: u64,
}

impl Row {
    /// The row of one compared scenario.
    pub fn of(model: &str, script: &Script, outcome: &Outcome) -> Row {
        Row {
            model: model.to_string(),
            seed: script.file.seed,
            replicas: script.file.replicas,
            steps: script.step_count(),
            status: outcome.status.word(),
            differences: outcome
                .status
                .differences()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
            found: None,
            sim_wall_ms: outcome.sim_wall_ms,
            live_wall_ms: outcome.live_wall_ms,
        }
    }
}

/// `runs.csv`: one row per scenario.
pub fn runs_csv(rows: &[Row]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let header = [
        "model",
        "seed",
        "replicas",
        "steps",
        "status",
        "differences",
        "found",
        "sim_wall_ms",
        "live_wall_ms",
    ];
    w.write_record(header).expect("writes to memory");
    for r in rows {
        w.write_record([
            r.model.clone(),
            r.seed.to_string(),
            r.replicas.to_string(),
            r.steps.to_string(),
            r.status.to_string(),
            r.differences.clone(),
            r.found.clone().unwrap_or_default(),
            r.sim_wall_ms.to_string(),
            r.live_wall_ms.to_string(),
        ])
        .expect("writes to memory");
    }
    String::from_utf8(w.into_inner().expect("flushes to memory")).expect("UTF-8 in, UTF-8 out")
}

/// Per model: scenarios, agreements, unstable ones, disagreements, the unstable share and
/// the mean wall time per scenario.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelSummary {
    pub scenarios: usize,
    pub agree: usize,
    pub unstable: usize,
    /// Disagreements the profile explains.
    pub documented: usize,
    pub disagree: usize,
    pub live_wall_ms: u64,
    pub sim_wall_ms: u64,
}

impl ModelSummary {
    /// Unstable scenarios as a share of all.
    pub fn unstable_share(&self) -> f64 {
        self.unstable as f64 / self.scenarios.max(1) as f64
    }
    /// Agreements as a share of the stable scenarios (documented disagreements count as
    /// disagreements).
    pub fn agreement(&self) -> f64 {
        self.agree as f64 / (self.agree + self.documented + self.disagree).max(1) as f64
    }
}

/// The summary of every model in `rows`, by model name.
pub fn summarise(rows: &[Row]) -> BTreeMap<String, ModelSummary> {
    let mut out: BTreeMap<String, ModelSummary> = BTreeMap::new();
    for r in rows {
        let s = out.entry(r.model.clone()).or_default();
        s.scenarios += 1;
        match r.status {
            "agree" => s.agree += 1,
            "unstable" => s.unstable += 1,
            "documented" => s.documented += 1,
            _ => s.disagree += 1,
        }
        s.live_wall_ms += r.live_wall_ms;
        s.sim_wall_ms += r.sim_wall_ms;
    }
    out
}

/// `summary.csv`.
pub fn summary_csv(summary: &BTreeMap<String, ModelSummary>) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let header = [
        "model",
        "scenarios",
        "agree",
        "unstable",
        "documented",
        "disagree",
        "agreement",
        "unstable_share",
        "mean_sim_wall_ms",
        "mean_live_wall_ms",
    ];
    w.write_record(header).expect("writes to memory");
    for (model, s) in summary {
        let n = s.scenarios.max(1) as u64;
        w.write_record([
            model.clone(),
            s.scenarios.to_string(),
            s.agree.to_string(),
            s.unstable.to_string(),
            s.documented.to_string(),
            s.disagree.to_string(),
            format!("{:.3}", s.agreement()),
            format!("{:.3}", s.unstable_share()),
            (s.sim_wall_ms / n).to_string(),
            (s.live_wall_ms / n).to_string(),
        ])
        .expect("writes to memory");
    }
    String::from_utf8(w.into_inner().expect("flushes to memory")).expect("UTF-8 in, UTF-8 out")
}

/// The summary as a Markdown table (the README's fidelity section).
pub fn summary_table(summary: &BTreeMap<String, ModelSummary>) -> String {
    let mut out = String::from(
        "| model | scenarios | agree | unstable | documented | disagree | agreement (stable) | live s/scenario |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (model, s) in summary {
        out.push_str(&format!(
            "| {model} | {} | {} | {} ({:.0}%) | {} | {} | {:.1}% | {:.1} |\n",
            s.scenarios,
            s.agree,
            s.unstable,
            100.0 * s.unstable_share(),
            s.documented,
            s.disagree,
            100.0 * s.agreement(),
            s.live_wall_ms as f64 / 1000.0 / s.scenarios.max(1) as f64
        ));
    }
    out
}

/// The rows of a `runs.csv` this module wrote; `Err` names the file and the line.
pub fn read_runs_csv(path: &Path) -> Result<Vec<Row>, InputError> {
    let origin = path.display().to_string();
    let mut reader = csv::Reader::from_path(path)
        .map_err(|e| InputError::new(&origin, format!("cannot read: {e}")))?;
    let mut rows = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let line = i + 2;
        let bad = |why: String| InputError::new(&origin, format!("line {line}: {why}"));
        let record = record.map_err(|e| bad(e.to_string()))?;
        if record.len() != 9 {
            return Err(bad(format!("{} fields, expected 9", record.len())));
        }
        let number = |k: usize| -> Result<u64, InputError> {
            record[k]
                .parse()
                .map_err(|_| bad(format!("`{}` is not a number", &record[k])))
        };
        let status = match &record[4] {
            "agree" => "agree",
            "unstable" => "unstable",
            "documented" => "documented",
            "DISAGREE" => "DISAGREE",
            other => return Err(bad(format!("unknown status `{other}`"))),
        };
        rows.push(Row {
            model: record[0].to_string(),
            seed: number(1)?,
            replicas: number(2)? as usize,
            steps: number(3)? as usize,
            status,
            differences: record[5].to_string(),
            found: (!record[6].is_empty()).then(|| record[6].to_string()),
            sim_wall_ms: number(7)?,
            live_wall_ms: number(8)?,
        });
    }
    Ok(rows)
}

/// The rows of several batches' `runs.csv` as one: a (model, seed) in a later batch
/// replaces the earlier row (a re-run), and rows are sorted by model, then seed.
pub fn merge_rows(batches: Vec<Vec<Row>>) -> Vec<Row> {
    let mut by_key: BTreeMap<(String, u64), Row> = BTreeMap::new();
    for row in batches.into_iter().flatten() {
        by_key.insert((row.model.clone(), row.seed), row);
    }
    by_key.into_values().collect()
}

/// Writes the results directory: `runs.csv`, `summary.csv`, `summary.md`.
pub fn write_results(dir: &Path, rows: &[Row]) -> Result<(), InputError> {
    let io = |e: std::io::Error| InputError::new(dir.display().to_string(), e.to_string());
    std::fs::create_dir_all(dir).map_err(io)?;
    let summary = summarise(rows);
    let write = crate::files::write_atomic;
    write(&dir.join("runs.csv"), runs_csv(rows).as_bytes()).map_err(io)?;
    write(&dir.join("summary.csv"), summary_csv(&summary).as_bytes()).map_err(io)?;
    write(&dir.join("summary.md"), summary_table(&summary).as_bytes()).map_err(io)?;
    Ok(())
}

/// Writes a disagreement's minimal scenario to `dir/<name>.toml`: both outcomes as comments,
/// an undiagnosed postmortem line to replace with the cause once found, and `[expect]` set to
/// what the real system violated (so `check` fails on it until the model is fixed).
pub fn write_found(
    dir: &Path,
    script: &Script,
    outcome: &Outcome,
    reproduce: &str,
) -> Result<PathBuf, InputError> {
    let io = |e: std::io::Error| InputError::new(dir.display().to_string(), e.to_string());
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut file = script.file.clone();
    file.name = script.file.name.replacen("gen-", "found-", 1);
    file.step = script.steps.clone();
    let differences: Vec<String> = outcome
        .status
        .differences()
        .iter()
        .map(ToString::to_string)
        .collect();
    file.description = Some(format!(
        "Found by `{reproduce}`, shrunk to {} steps.",
        script.step_count()
    ));
    file.postmortem = Some(format!(
        "Undiagnosed: the simulation and the real peer differ: {}",
        differences.join("; ")
    ));
    file.expect.violations = outcome
        .real
        .verdicts
        .iter()
        .filter(|(_, v)| v.as_str() == "fail")
        .map(|(k, _)| k.clone())
        .collect();
    // A difference in what the worlds observe can come from a run that exercised no
    // invariant; `check` would call that vacuous, so the file says it is meant.
    let exercised_any = [&outcome.simulated, &outcome.real]
        .iter()
        .any(|o| o.verdicts.values().any(|v| v.as_str() != "unknown"));
    file.expect.allow_unexercised = !exercised_any;
    let mut text = String::new();
    for (side, obs) in [("simulated", &outcome.simulated), ("real", &outcome.real)] {
        text.push_str(&format!("# {side}:\n"));
        for (op, outcomes) in &obs.ops {
            text.push_str(&format!("#   {op}: {}\n", outcomes.join(", ")));
        }
        for (turn, (arrived, applied)) in &obs.effects {
            text.push_str(&format!(
                "#   effects of {turn}: {arrived} arrived, {applied} applied\n"
            ));
        }
        for (conversation, task) in &obs.tasks {
            text.push_str(&format!("#   final task of {conversation}: {task}\n"));
        }
        let failed: Vec<&str> = obs
            .verdicts
            .iter()
            .filter(|(_, v)| v.as_str() == "fail")
            .map(|(k, _)| k.as_str())
            .collect();
        text.push_str(&format!("#   violated: [{}]\n", failed.join(", ")));
    }
    let body = Script::from_file(file, "found scenario")?.to_toml();
    text.push_str(&body);
    let path = dir.join(format!(
        "{}.toml",
        script.file.name.replacen("gen-", "found-", 1)
    ));
    crate::files::write_atomic(&path, text.as_bytes()).map_err(io)?;
    Ok(path)
}
