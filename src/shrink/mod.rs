//! Shrinking: from a failing run to the smallest scripted scenario that fails the same way.
//!
//! The input is one seed of an experiment (a generated workload under swarm faults) or of a
//! scenario, and the invariant it violates. The pipeline:
//!
//! 1. **Run** the seed with its trace kept and pick the target invariant (the first one
//!    violated, or the one asked for).
//! 2. **Convert** the run into [`Timed`] steps: every client operation becomes a step routed
//!    with `to` to the replica that served it (from the answer's replica header, or the
//!    router's trace line when the answer was lost), a reply the router dropped becomes a
//!    `drop-reply` just before its send, and every fault the driver applied
//!    (`RunRecord::faults`) becomes a `kill`, `restart`, `partition`, `repair`, `latency` or
//!    `heal` step. Each one keeps its simulated time and its lane: the fault lane, or a
//!    lane of its conversation (a conversation's requests that overlapped in time, such as
//!    a send and its duplicate, get one lane each). A scenario's own top-level steps are its
//!    timed steps, all at 0 ms.
//! 3. **Verify** that the converted scenario violates the same invariant, trying the
//!    [`Layout`]s from the most faithful (`lanes`: one timed sequence per lane, all
//!    concurrent) to the most readable (`sequential`: one step after
//!    another in time order).
//! 4. **Minimise** with delta debugging: first a slice (only the conversations the
//!    violation names, plus the faults), then ddmin over timed steps, then the most readable
//!    layout that still fails, then fewer replicas, then fewer faults, then simpler steps
//!    (no `to`, conversations and turns renumbered from 1), then one last pass removing any
//!    single step (waits included) until nothing more can go.
//!
//! Every candidate is run as a scenario and kept only when it still violates the target
//! invariant without a run error, so the result fails the same invariant by construction;
//! it is run once more to write its `[expect]`. A candidate is cached by its TOML text and
//! the total number of runs is bounded ([`RUNS_MAX`]).
//!
//! When no layout reproduces the converted run, an experiment falls back to shrinking its
//! generated workload (fewer conversations, fewer turns, fewer fault kinds, fewer replicas,
//! each kept only when the seed still violates the invariant) and converts again.
//!
//! Everything is a function of the seed: the same command writes the same file.
//!
//! # Where each part lives
//!
//! - this module: the request ([`Request`], [`Source`]), the result ([`Shrunk`], [`Size`],
//!   [`ShrinkError`]) and [`shrink`], which runs the pipeline above in order;
//! - `convert`: step 2, a finished run to [`Timed`] steps ([`convert`], [`Conversion`]):
//!   the lanes, and the matching of operations to the router's forwards and dropped
//!   replies;
//! - `render`: timed steps to a script's steps in one [`Layout`] ([`render`]);
//! - `ddmin`: delta debugging over any sequence ([`ddmin`]);
//! - `minimise`: step 4 after the conversion reproduces: the [`Oracle`] that runs and
//!   caches candidates, and the minimiser's passes (slice and ddmin over timed steps,
//!   replicas, leaf removal, simplify: shift, unpin, renumber, simpler leaves);
//! - `reduce`: the fallback, shrinking an experiment's generated workload;
//! - `tree`: steps as a tree (leaf paths, replace, map, normalise), used by the passes.

use std::collections::BTreeSet;

use crate::check::{self, Invariant, Verdict, Violation};
use crate::error::InputError;
use crate::experiment::Experiment;
use crate::model::Profile;
use crate::scenario::{Expect, ScenarioFile, Script, Step};
use crate::sim::Sim;
use crate::world::{self, RunRecord};

mod convert;
mod ddmin;
mod minimise;
mod reduce;
mod render;
mod tree;

pub use convert::{convert, Conversion, Timed};
pub use ddmin::ddmin;
pub use minimise::Oracle;
pub use render::{render, Layout};

use minimise::Minimiser;
use reduce::{reduce_experiment, run_experiment};

/// Most scenario runs one shrink may spend.
pub const RUNS_MAX: usize = 3000;

/// The size of a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    /// Steps that do something, nested ones and waits included.
    pub steps: usize,
    /// Replicas the scenario runs.
    pub replicas: usize,
    /// Fault steps (`kill`, `restart`, `partition`, `heal`, `drop-reply`, ...).
    pub faults: usize,
}

impl Size {
    /// The size of `steps` on `replicas` replicas.
    pub fn of(steps: &[Step], replicas: usize) -> Size {
        let faults = tree::leaves(steps)
            .iter()
            .filter(|p| matches!(tree::get(steps, p), Step::Fault(_)))
            .count();
        Size {
            steps: Step::count(steps),
            replicas,
            faults,
        }
    }
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |n: usize| if n == 1 { "" } else { "s" };
        write!(
            f,
            "{} step{}, {} replica{}, {} fault{}",
            self.steps,
            s(self.steps),
            self.replicas,
            s(self.replicas),
            self.faults,
            s(self.faults)
        )
    }
}

/// What to shrink.
pub enum Source {
    /// One combination of an experiment: its generated workload under its faults.
    Experiment {
        /// The experiment (its workload, faults and replicas).
        exp: Box<Experiment>,
        /// The model to run.
        profile: Profile,
        /// The routing strategy to run.
        routing: String,
    },
    /// A scenario, run with its model and routing (or the ones given).
    Scenario {
        /// The scenario; its own seed is replaced by the request's.
        script: Box<Script>,
        /// The model to run.
        profile: Profile,
        /// The routing strategy to run.
        routing: String,
    },
}

/// A shrink request.
pub struct Request {
    /// What to run.
    pub source: Source,
    /// The failing seed.
    pub seed: u64,
    /// The invariant to keep failing; default: the first one the seed violates.
    pub invariant: Option<Invariant>,
    /// The command that asked, for the file's description.
    pub command: String,
    /// A name for the scenario written.
    pub name: String,
}

/// Why nothing was shrunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShrinkError {
    /// Unusable input.
    Input(InputError),
    /// The seed violates no invariant (or not the one asked for).
    NoViolation(String),
    /// Neither the converted run nor a reduced workload reproduced the violation.
    NotReproduced(String),
}

impl std::fmt::Display for ShrinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShrinkError::Input(e) => write!(f, "{e}"),
            ShrinkError::NoViolation(m) | ShrinkError::NotReproduced(m) => f.write_str(m),
        }
    }
}

impl From<InputError> for ShrinkError {
    fn from(e: InputError) -> Self {
        ShrinkError::Input(e)
    }
}

/// A shrunk scenario and how it got there.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The invariant it still violates.
    pub invariant: Invariant,
    /// The original run's first violation of it.
    pub original_detail: String,
    /// The shrunk scenario's first violation of it.
    pub detail: String,
    /// The converted run (every event, sequential), before shrinking.
    pub before: Size,
    /// The shrunk scenario.
    pub after: Size,
    /// The layout the converted run reproduced in.
    pub converted_layout: Layout,
    /// The layout the result uses.
    pub layout: Layout,
    /// The scenario, with its postmortem placeholder and `[expect]`.
    pub script: Script,
    /// Every invariant the shrunk scenario violates.
    pub violated: Vec<Invariant>,
    /// Scenario runs spent.
    pub runs: usize,
    /// What happened on the way, in sentences.
    pub notes: Vec<String>,
}

/// The target invariant of a run and its violations.
fn target(
    record: &RunRecord,
    asked: Option<Invariant>,
) -> Result<(Invariant, Vec<Violation>), ShrinkError> {
    let findings = check::check_all(record);
    let failed: Vec<_> = findings
        .iter()
        .filter(|f| f.verdict() == Verdict::Fail)
        .collect();
    let names: Vec<&str> = failed.iter().map(|f| f.invariant.as_str()).collect();
    let pick = match asked {
        Some(a) => failed.iter().find(|f| f.invariant == a),
        None => failed.first(),
    };
    match pick {
        Some(f) => Ok((f.invariant, f.violations.clone())),
        None => Err(ShrinkError::NoViolation(format!(
            "seed {} ({} / {}) violates {}; nothing to shrink",
            record.seed,
            record.model,
            record.routing,
            match (names.is_empty(), asked) {
                (true, _) => "no invariant".to_string(),
                (false, Some(a)) => format!("[{}] but not {a}", names.join(", ")),
                (false, None) => format!("[{}]", names.join(", ")),
            }
        ))),
    }
}

/// The base of every candidate: model, routing, seed, timeout and tick of the original run
/// (the scenario replays at the tick the failure was found at).
fn base_file(
    name: &str,
    model: &str,
    routing: &str,
    seed: u64,
    (timeout_ms, tick_ms): (u64, u64),
) -> ScenarioFile {
    ScenarioFile {
        name: name.to_string(),
        model: model.to_string(),
        replicas: 1,
        routing: routing.to_string(),
        seed,
        description: None,
        postmortem: None,
        request_timeout_ms: timeout_ms,
        await_effect_ms: crate::scenario::default_await_effect(),
        tick_ms,
        think_ms: None,
        card: None,
        client_wire: None,
        step: Vec::new(),
        expect: Expect::default(),
        fault_draw: 0,
        timing_draw: 0,
    }
}

/// Shrinks one failing seed to a scenario.
pub fn shrink(request: &Request) -> Result<Shrunk, ShrinkError> {
    let seed = request.seed;
    let mut notes = Vec::new();
    let (record, profile, model, routing, timeout_ms, tick_ms) = match &request.source {
        Source::Experiment {
            exp,
            profile,
            routing,
        } => (
            run_experiment(exp, profile, routing, seed),
            profile.clone(),
            profile_model(exp, profile),
            routing.clone(),
            exp.file.workload.request_timeout_ms,
            exp.file.tick_ms,
        ),
        Source::Scenario {
            script,
            profile,
            routing,
        } => {
            let sim = Sim::scenario_builder(script)
                .model(profile.clone())
                .routing(routing)
                .seed(seed)
                .keep_trace(true)
                .build()?;
            (
                sim.run(),
                profile.clone(),
                script.file.model.clone(),
                routing.clone(),
                script.file.request_timeout_ms,
                script.file.tick_ms,
            )
        }
    };
    if let Some(e) = &record.error {
        return Err(ShrinkError::NoViolation(format!(
            "seed {seed} did not finish ({e}); shrink needs a run that ends with a violation"
        )));
    }
    let (invariant, violations) = target(&record, request.invariant)?;
    let original_detail = violations
        .first()
        .map(|v| v.detail.clone())
        .unwrap_or_default();
    let mut base = base_file(&request.name, &model, &routing, seed, (timeout_ms, tick_ms));
    if let Source::Scenario { script, .. } = &request.source {
        base.think_ms = script.file.think_ms;
    }
    if record.cards.enabled {
        base.card = Some(crate::card::CardSetup {
            max_age_s: record.cards.max_age_ms / 1000,
        });
    }
    let oracle = Oracle::new(base, profile.clone(), invariant);

    // Convert and verify.
    let (events, replicas, layouts): (Vec<Timed>, usize, Vec<Layout>) = match &request.source {
        Source::Experiment { .. } => {
            let c = convert(&record);
            notes.extend(c.notes);
            (
                c.events,
                record.replicas,
                vec![Layout::Lanes, Layout::Timed, Layout::Sequential],
            )
        }
        Source::Scenario { script, .. } => (
            script
                .steps
                .iter()
                .map(|s| Timed {
                    at_ms: 0,
                    conversation: None,
                    lane: 0,
                    step: s.clone(),
                })
                .collect(),
            script.file.replicas,
            vec![Layout::Sequential],
        ),
    };
    let mut found = layouts
        .iter()
        .copied()
        .find(|l| oracle.fails(replicas, &render(&events, *l)))
        .map(|l| (events.clone(), l, replicas));
    let before = Size::of(&render(&events, Layout::Sequential), replicas);
    let fell_back = found.is_none();
    if fell_back {
        let Source::Experiment {
            exp,
            profile,
            routing,
        } = &request.source
        else {
            return Err(ShrinkError::NotReproduced(format!(
                "scenario seed {seed} violates {invariant}, but its steps alone do not reproduce it"
            )));
        };
        notes.push(format!(
            "the converted run ({} events) does not reproduce {invariant} in any layout; shrinking the generated workload instead",
            events.len()
        ));
        let mut runs = 0;
        let reduced = reduce_experiment(
            exp, profile, routing, seed, invariant, &mut runs, &mut notes,
        );
        let record = run_experiment(&reduced, profile, routing, seed);
        let c = convert(&record);
        found = layouts
            .iter()
            .copied()
            .find(|l| oracle.fails(record.replicas, &render(&c.events, *l)))
            .map(|l| (c.events.clone(), l, record.replicas));
        if found.is_none() {
            return Err(ShrinkError::NotReproduced(format!(
                "seed {seed} violates {invariant} ({original_detail}), but neither the converted run nor the converted reduced workload ({} conversations x {} turns, {} replicas, faults {}) reproduces it as a scenario; replay it with `a2a-chaos replay`",
                reduced.file.workload.conversations,
                reduced.file.workload.turns,
                reduced.file.replicas,
                world::describe_rates(&reduced.file.faults.rates),
            )));
        }
    }
    let (events, converted_layout, replicas) = found.expect("checked");
    if fell_back {
        notes.push(format!(
            "the reduced workload converts to {} events that reproduce {invariant} in the {} layout",
            events.len(),
            converted_layout.word()
        ));
    }
    let first = match &request.source {
        Source::Experiment { .. } => format!(
            "converted {} events; they reproduce {invariant} in the {} layout",
            events.len(),
            converted_layout.word()
        ),
        Source::Scenario { .. } => format!(
            "the scenario's {} top-level steps reproduce {invariant}",
            events.len()
        ),
    };
    if !fell_back {
        notes.insert(0, first);
    }

    let mut m = Minimiser {
        oracle: &oracle,
        replicas,
        notes: Vec::new(),
    };
    // The conversations whose turns the first violation names.
    let named: BTreeSet<String> = violations
        .iter()
        .take(1)
        .flat_map(|v| v.anchors.conversations.iter().cloned())
        .collect();
    let (events, layout) = m.events(events, converted_layout, &named);
    let steps = render(&events, layout);
    let steps = m.replicas(steps);
    let steps = m.remove_leaves(steps, &|s| matches!(s, Step::Fault(_)));
    let steps = m.simplify(steps);
    let steps = m.remove_leaves(steps, &|_| true);
    let steps = m.replicas(steps);
    notes.append(&mut m.notes);
    let replicas = m.replicas;

    // The final scenario, run once more to write its expectations.
    let script = oracle
        .script(replicas, &steps)
        .expect("every candidate kept was valid");
    let summary = oracle
        .run(&script)
        .ok_or_else(|| ShrinkError::NotReproduced("the shrunk scenario panicked".into()))?;
    let violated = summary.violated();
    if !violated.contains(&invariant) || summary.error.is_some() {
        return Err(ShrinkError::NotReproduced(format!(
            "the shrunk scenario no longer violates {invariant} when run again"
        )));
    }
    let detail = summary
        .invariants
        .iter()
        .find(|i| i.name == invariant)
        .and_then(|i| i.first.clone())
        .unwrap_or_default();
    let after = Size::of(&steps, replicas);
    let mut file = script.file.clone();
    file.description = Some(format!(
        "Shrunk by `{}`: {} -> {}.",
        request.command, before, after
    ));
    file.postmortem = Some(format!(
        "TODO: say what broke and why. It violates {invariant}: {detail}"
    ));
    file.expect = Expect {
        violations: violated.iter().map(|s| s.to_string()).collect(),
        ..Expect::default()
    };
    let script = Script::from_steps(&file, &steps)?;
    Ok(Shrunk {
        invariant,
        original_detail,
        detail,
        before,
        after,
        converted_layout,
        layout,
        script,
        violated,
        runs: oracle.runs(),
        notes,
    })
}

/// The model as a scenario names it: the experiment's own word for it.
fn profile_model(exp: &Experiment, profile: &Profile) -> String {
    exp.file
        .models
        .iter()
        .zip(&exp.profiles)
        .find(|(_, p)| p.name == profile.name)
        .map_or_else(|| profile.name.clone(), |(m, _)| m.clone())
}
