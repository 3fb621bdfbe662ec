//! What `fidelity --generate` writes: one row per scenario, a summary per model, and every
//! disagreement as a scenario file under `tests/fidelity/found/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::check::Verdict;
use crate::error::InputError;
use crate::scenario::Script;
use crate::strategies::Generation;

use super::{patterns, Outcome};

/// A scenario's step kinds and concurrency patterns, each once, in first-seen order.
fn names(script: &Script) -> (Vec<String>, Vec<String>) {
    let once = |v: Vec<String>| {
        let mut seen = std::collections::BTreeSet::new();
        v.into_iter().filter(|x| seen.insert(x.clone())).collect()
    };
    (
        once(patterns::kinds(script)),
        once(patterns::patterns(script)),
    )
}

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
    /// The generation that drew the scenario ([`Generation`]).
    pub generator: Generation,
    /// The kinds of its steps, each once, in first-seen order ([`patterns::kinds`]).
    pub kinds: Vec<String>,
    /// Its concurrency patterns, each once ([`patterns::patterns`]).
    pub patterns: Vec<String>,
    /// The simulated orders the live runs matched, by index (`Outcome::orders`).
    pub orders: Vec<usize>,
}

impl Row {
    /// The row of one compared scenario, drawn by `generator`.
    pub fn of(model: &str, script: &Script, outcome: &Outcome, generator: Generation) -> Row {
        let (kinds, patterns) = names(script);
        Row {
            generator,
            kinds,
            patterns,
            orders: outcome.orders.clone(),
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
        "generator",
        "kinds",
        "patterns",
        "orders",
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
            r.generator.number().to_string(),
            r.kinds.join(" "),
            r.patterns.join(" "),
            r.orders
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" "),
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
    summarise_by(rows, |r| vec![r.model.clone()])
}

/// The summary of every step kind in `rows`: a scenario counts once for each kind it holds.
pub fn summarise_kinds(rows: &[Row]) -> BTreeMap<String, ModelSummary> {
    summarise_by(rows, |r| r.kinds.clone())
}

/// The summary of every concurrency pattern in `rows`: a scenario counts once for each
/// pattern it holds; `none` for a scenario with no two calls in flight at once. A race
/// counts under its calls (`race:cancel+next`) and, apart, under where they went
/// (`race@1`: one replica, `race@2`, `race@3`, `race@r`: one or more through the router).
pub fn summarise_patterns(rows: &[Row]) -> BTreeMap<String, ModelSummary> {
    summarise_by(rows, |r| {
        if r.patterns.is_empty() {
            return vec!["none".to_string()];
        }
        r.patterns
            .iter()
            .flat_map(|p| match p.split_once('@') {
                Some((calls, place)) => vec![calls.to_string(), format!("race@{place}")],
                None => vec![p.clone()],
            })
            .collect()
    })
}

/// The summary of `rows` grouped by `keys` (a row counts once under each of its keys).
pub fn summarise_by(
    rows: &[Row],
    keys: impl Fn(&Row) -> Vec<String>,
) -> BTreeMap<String, ModelSummary> {
    let mut out: BTreeMap<String, ModelSummary> = BTreeMap::new();
    for r in rows {
        let mut keys = keys(r);
        keys.sort();
        keys.dedup();
        for key in keys {
            let s = out.entry(key).or_default();
            s.count(r);
        }
    }
    out
}

impl ModelSummary {
    fn count(&mut self, r: &Row) {
        let s = self;
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

/// The summary as a Markdown table (the table of docs/FIDELITY.md).
pub fn summary_table(summary: &BTreeMap<String, ModelSummary>) -> String {
    summary_table_by("model", summary)
}

/// `summary.md`: agreement per model, per step kind and per concurrency pattern.
pub fn summary_markdown(rows: &[Row]) -> String {
    format!(
        "{}\nPer step kind (a scenario counts under each kind it holds):\n\n{}\nPer concurrency pattern (`race:` calls sent at once, `@` how many replicas, `r` through the router; `held:` what raced a held turn):\n\n{}",
        summary_table(&summarise(rows)),
        summary_table_by("step kind", &summarise_kinds(rows)),
        summary_table_by("pattern", &summarise_patterns(rows)),
    )
}

/// A summary as a Markdown table whose first column is `what`.
pub fn summary_table_by(what: &str, summary: &BTreeMap<String, ModelSummary>) -> String {
    let mut out = format!(
        "| {what} | scenarios | agree | unstable | documented | disagree | agreement (stable) | live s/scenario |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
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
        // Rows before generation 2 have the first nine fields only.
        if record.len() != 9 && record.len() != 13 {
            return Err(bad(format!("{} fields, expected 9 or 13", record.len())));
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
        let generator = match record.get(9) {
            None => Generation::Classic,
            Some(g) => g
                .parse()
                .ok()
                .and_then(Generation::from_number)
                .ok_or_else(|| bad(format!("`{g}` is no generator")))?,
        };
        let words = |k: usize| -> Vec<String> {
            record
                .get(k)
                .map(|v| v.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default()
        };
        let (mut kinds, mut patterns) = (words(10), words(11));
        if record.len() == 9 && crate::model::Profile::load(&record[0]).is_ok() {
            // An older row: its scenario is a function of (generation, model, seed).
            let script = super::generated_by(&record[0], number(1)?, generator);
            (kinds, patterns) = names(&script);
        }
        let orders = words(12)
            .iter()
            .map(|o| o.parse().map_err(|_| bad(format!("`{o}` is no order"))))
            .collect::<Result<Vec<usize>, InputError>>()?;
        rows.push(Row {
            generator,
            kinds,
            patterns,
            orders,
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

/// The rows of several batches' `runs.csv` as one: a (generator, model, seed) in a later
/// batch replaces the earlier row (a re-run), and rows are sorted by generator, model,
/// then seed.
pub fn merge_rows(batches: Vec<Vec<Row>>) -> Vec<Row> {
    let mut by_key: BTreeMap<(Generation, String, u64), Row> = BTreeMap::new();
    for row in batches.into_iter().flatten() {
        by_key.insert((row.generator, row.model.clone(), row.seed), row);
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
    write(&dir.join("summary.md"), summary_markdown(rows).as_bytes()).map_err(io)?;
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
        .filter(|(_, v)| **v == Verdict::Fail)
        .map(|(k, _)| k.to_string())
        .collect();
    // A difference in what the worlds observe can come from a run that exercised no
    // invariant; `check` would call that vacuous, so the file says it is meant.
    let exercised_any = [&outcome.simulated, &outcome.real]
        .iter()
        .any(|o| o.verdicts.values().any(|v| *v != Verdict::Unknown));
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
            .filter(|(_, v)| **v == Verdict::Fail)
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
