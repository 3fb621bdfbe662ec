//! One run, summarised: what sweeps, reports and `check` keep of it.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;

use crate::check::{Finding, Invariant, Verdict};
use crate::client::history::{OpKind, Outcome};
use crate::error::InputError;
use crate::world::{self, RunRecord, RunSpec};

/// What one invariant found in one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvariantResult {
    pub name: Invariant,
    pub verdict: Verdict,
    pub violations: u64,
    pub exercised: u64,
    /// The first violation, in words.
    pub first: Option<String>,
    /// Why the verdict is weaker than the checker's own (a live peer that does not report
    /// what the invariant reads: [`crate::live::reports`]); `None` in simulated runs.
    pub note: Option<String>,
}

/// One run, summarised.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub model: String,
    pub routing: String,
    pub seed: u64,
    /// Client operations.
    pub requests: u64,
    pub ok: u64,
    pub fail: u64,
    pub info: u64,
    /// Effects applied at the ledger.
    pub effects: u64,
    /// Latency of every acknowledged send, simulated ms.
    pub latencies_ms: Vec<u64>,
    pub invariants: Vec<InvariantResult>,
    pub trace_hash: String,
    pub fault_rates: String,
    pub sim_ms: u64,
    pub wall_ms: u64,
    /// A panic or a run that did not finish.
    pub error: Option<String>,
    /// How often each BUGGIFY and kill point fired (`buggify:conflict-on-save`,
    /// `kill-at:effect`, ...); not kept in `runs.csv`, whose columns are fixed.
    pub points_fired: BTreeMap<String, u64>,
    /// Turns the client could not get done (refused continuations, failed turns); not kept
    /// in `runs.csv` either.
    pub availability: super::Availability,
}

impl RunSummary {
    /// Invariants with at least one violation.
    pub fn violated(&self) -> Vec<Invariant> {
        self.invariants
            .iter()
            .filter(|i| i.verdict == Verdict::Fail)
            .map(|i| i.name)
            .collect()
    }
}

impl RunSummary {
    /// The summary of a run the front door refused (an unknown routing, a bad profile).
    pub fn refused(model: &str, routing: &str, seed: u64, why: &InputError) -> RunSummary {
        RunSummary {
            model: model.to_string(),
            routing: routing.to_string(),
            seed,
            requests: 0,
            ok: 0,
            fail: 0,
            info: 0,
            effects: 0,
            latencies_ms: Vec::new(),
            invariants: Vec::new(),
            trace_hash: String::new(),
            fault_rates: String::new(),
            sim_ms: 0,
            wall_ms: 0,
            error: Some(format!("refused: {why}")),
            points_fired: BTreeMap::new(),
            availability: Default::default(),
        }
    }

    /// The summary of a run that panicked: its first panic message as its error.
    pub fn panicked(spec: &RunSpec, why: &str, wall: std::time::Duration) -> RunSummary {
        RunSummary {
            model: spec.profile.name.clone(),
            routing: spec.routing.clone(),
            seed: spec.seed,
            requests: 0,
            ok: 0,
            fail: 0,
            info: 0,
            effects: 0,
            latencies_ms: Vec::new(),
            invariants: Vec::new(),
            trace_hash: String::new(),
            fault_rates: String::new(),
            sim_ms: 0,
            wall_ms: wall.as_millis() as u64,
            error: Some(format!("panicked: {why}")),
            points_fired: BTreeMap::new(),
            availability: Default::default(),
        }
    }
}

/// Summarises a finished run.
pub fn summarise(record: &RunRecord, findings: &[Finding], wall_ms: u64) -> RunSummary {
    let mut ok = 0;
    let mut fail = 0;
    let mut info = 0;
    let mut latencies_ms = Vec::new();
    for op in &record.history {
        match op.outcome {
            Outcome::Ok => ok += 1,
            Outcome::Fail { .. } => fail += 1,
            Outcome::Info { .. } => info += 1,
        }
        if matches!(op.kind, OpKind::Send { .. }) && op.outcome == Outcome::Ok {
            latencies_ms.push(op.complete_ms.saturating_sub(op.invoke_ms));
        }
    }
    let invariants = findings
        .iter()
        .map(|f| InvariantResult {
            name: f.invariant,
            verdict: f.verdict(),
            violations: f.violations.len() as u64,
            exercised: f.exercised,
            first: f.violations.first().map(|v| v.detail.clone()),
            note: None,
        })
        .collect();
    RunSummary {
        model: record.model.clone(),
        routing: record.routing.clone(),
        seed: record.seed,
        requests: record.history.len() as u64,
        ok,
        fail,
        info,
        effects: record.effects.iter().filter(|e| e.applied).count() as u64,
        latencies_ms,
        invariants,
        trace_hash: record.trace_hash.clone(),
        fault_rates: world::describe_resolved(record),
        sim_ms: record.sim_ms,
        wall_ms,
        error: record.error.clone(),
        points_fired: record.points_fired.clone(),
        availability: super::Availability::of(record),
    }
}

thread_local! {
    /// While a run is contained on this thread: the first panic's message and location.
    static FIRST_PANIC: std::cell::RefCell<Option<Option<String>>> = const { std::cell::RefCell::new(None) };
}

/// A contained panic: the first panic's message and where it was raised (`message at
/// file:line`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Panicked(pub String);

impl Panicked {
    /// The message and its location.
    pub fn message(&self) -> &str {
        &self.0
    }
}

/// Runs `f`, containing a panic: `Err` carries the first panic's message and location
/// (a panic inside a simulated host is followed by tokio's own "a spawned task panicked";
/// the first one says where and why). Panics outside a contained run print as usual.
pub fn contain<T>(f: impl FnOnce() -> T) -> Result<T, Panicked> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let contained = FIRST_PANIC.with(|p| {
                let mut p = p.borrow_mut();
                match p.as_mut() {
                    Some(first) => {
                        if first.is_none() {
                            let message = info
                                .payload()
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| {
                                    info.payload().downcast_ref::<&str>().map(|s| s.to_string())
                                })
                                .unwrap_or_else(|| "unknown panic".into());
                            let at = info
                                .location()
                                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                                .unwrap_or_default();
                            *first = Some(format!("{message}{at}"));
                        }
                        true
                    }
                    None => false,
                }
            });
            if !contained {
                previous(info);
            }
        }));
    });
    FIRST_PANIC.with(|p| *p.borrow_mut() = Some(None));
    let result = std::panic::catch_unwind(AssertUnwindSafe(f));
    let first = FIRST_PANIC.with(|p| p.borrow_mut().take()).flatten();
    result.map_err(|panic| {
        Panicked(first.unwrap_or_else(|| {
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into())
        }))
    })
}
