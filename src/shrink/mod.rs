//! Shrinking: from a failing run to the smallest scripted scenario that fails the same way.
//!
//! The input is one seed of an experiment (a generated workload under swarm faults) or of a
//! scenario, and the invariant it violates. The pipeline:
//!
//! 1. **Run** the seed with its trace kept and pick the target invariant (the first one
//!    violated, or the one asked for).
//! 2. **Convert** the run into [`Event`]s: every client operation becomes a step routed
//!    with `to` to the replica that served it (from the answer's replica header, or the
//!    router's trace line when the answer was lost), a reply the router dropped becomes a
//!    `drop-reply` just before its send, and every fault the driver applied
//!    (`RunRecord::faults`) becomes a `kill`, `restart`, `partition`, `repair`, `latency` or
//!    `heal` step. Each event keeps its simulated time and its lane: the fault lane, or a
//!    lane of its conversation (a conversation's requests that overlapped in time, such as
//!    a send and its duplicate, get one lane each). A scenario's own top-level steps are its
//!    events.
//! 3. **Verify** that the converted scenario violates the same invariant, trying the
//!    [`Layout`]s from the most faithful (`lanes`: one timed sequence per lane, all
//!    concurrent) to the most readable (`sequential`: one step after
//!    another in time order).
//! 4. **Minimise** with delta debugging: first a slice (only the conversations the
//!    violation names, plus the faults), then ddmin over events, then the most readable
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

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};

use crate::auth::DEFAULT_PRINCIPAL;
use crate::check::{self, Verdict, Violation};
use crate::client::history::{OpKind, Outcome};
use crate::error::InputError;
use crate::experiment::Experiment;
use crate::faults::{lost_reply, Action};
use crate::model::Profile;
use crate::scenario::{Expect, ScenarioFile, Script, SendStep, Step, TaskStep};
use crate::sim::{RunSummary, Sim};
use crate::trace;
use crate::workload;
use crate::world::{self, RunRecord};

/// Most scenario runs one shrink may spend.
pub const RUNS_MAX: usize = 3000;

/// One thing the original run did, as a scenario step, with its time and lane.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Simulated ms since the start of the original run.
    pub at_ms: u64,
    /// The conversation it belongs to; `None` for the fault lane.
    pub conversation: Option<String>,
    /// Which lane of its conversation: requests that overlapped in time get different
    /// lanes; 0 for most.
    pub lane: u32,
    /// What it did.
    pub step: Step,
}

/// How events become steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Layout {
    /// One step after another in time order, no waits: the most readable. Requests of one
    /// conversation that started together (a send and its duplicate) are `concurrent`.
    Sequential,
    /// One step after another, each at its original time (`until-ms`).
    Timed,
    /// One timed sequence per lane (per conversation, and one for faults), all concurrent:
    /// closest to the original run.
    Lanes,
}

impl Layout {
    /// The name used in messages.
    pub fn word(self) -> &'static str {
        match self {
            Layout::Sequential => "sequential",
            Layout::Timed => "timed",
            Layout::Lanes => "lanes",
        }
    }
}

/// Turns events into steps.
pub fn render(events: &[Event], layout: Layout) -> Vec<Step> {
    let timed = |events: &[&Event]| {
        let mut out = Vec::new();
        let mut last = None;
        for e in events {
            if e.at_ms > 0 && last != Some(e.at_ms) {
                out.push(Step::UntilMs(e.at_ms));
            }
            last = Some(e.at_ms);
            out.push(e.step.clone());
        }
        out
    };
    match layout {
        Layout::Sequential => {
            // Events of one conversation at the same instant on different lanes start
            // together.
            let mut out = Vec::new();
            let mut i = 0;
            while i < events.len() {
                let e = &events[i];
                let mut j = i + 1;
                while e.conversation.is_some()
                    && events
                        .get(j)
                        .is_some_and(|n| n.at_ms == e.at_ms && n.conversation == e.conversation)
                {
                    j += 1;
                }
                let mut lanes: BTreeMap<u32, Vec<Step>> = BTreeMap::new();
                for n in &events[i..j] {
                    lanes.entry(n.lane).or_default().push(n.step.clone());
                }
                if lanes.len() == 1 {
                    out.extend(lanes.into_values().flatten());
                } else {
                    out.push(Step::Concurrent(
                        lanes.into_values().map(Step::Sequence).collect(),
                    ));
                }
                i = j;
            }
            tree::normalise(out)
        }
        Layout::Timed => timed(&events.iter().collect::<Vec<_>>()),
        Layout::Lanes => {
            let mut lanes: BTreeMap<(&Option<String>, u32), Vec<&Event>> = BTreeMap::new();
            for e in events {
                lanes.entry((&e.conversation, e.lane)).or_default().push(e);
            }
            if lanes.len() <= 1 {
                return timed(&events.iter().collect::<Vec<_>>());
            }
            vec![Step::Concurrent(
                lanes
                    .values()
                    .map(|lane| Step::Sequence(timed(lane)))
                    .collect(),
            )]
        }
    }
}

/// What a conversion found, and what it could not carry over.
#[derive(Debug, Clone, Default)]
pub struct Conversion {
    /// Everything carried over, in time order (faults first at the same instant).
    pub events: Vec<Event>,
    /// What was left out or replayed differently, in sentences.
    pub notes: Vec<String>,
}

/// A routed request in the router's trace.
struct Forward {
    at_ms: u64,
    method: String,
    context: String,
    target: String,
}

fn method_matches(kind: &OpKind, method: &str) -> bool {
    match kind {
        OpKind::Send { .. } => method == "SendMessage" || method == "SendStreamingMessage",
        OpKind::Get { .. } => method == "GetTask",
        OpKind::Cancel { .. } => method == "CancelTask",
        OpKind::Subscribe { .. } => method == "SubscribeToTask",
        OpKind::SetPush { .. } => method == "CreateTaskPushNotificationConfig",
    }
}

/// Converts a finished run (with its trace kept) into events.
pub fn convert(record: &RunRecord) -> Conversion {
    let seed = record.seed;
    let mut notes = Vec::new();
    let mut forwards: Vec<(Forward, bool)> = Vec::new();
    let mut drops: Vec<(u64, String, String, bool)> = Vec::new();
    for e in record.trace.iter().filter(|e| e.host == "router") {
        match &e.event {
            trace::Event::DropReply { method, target } => {
                drops.push((e.at_ms, method.clone(), target.clone(), false));
            }
            trace::Event::Forward {
                method,
                context,
                target,
                ..
            } => {
                let forward = Forward {
                    at_ms: e.at_ms,
                    method: method.clone(),
                    context: context.clone().unwrap_or_else(|| "-".into()),
                    target: target.clone(),
                };
                forwards.push((forward, false));
            }
            _ => {}
        }
    }
    if record.trace.is_empty() {
        notes.push(
            "the run kept no trace: lost answers are not pinned to a replica and lost replies are not replayed"
                .into(),
        );
    }
    let mut events = Vec::new();
    let mut skipped_push = false;
    // Per conversation, when each of its lanes is free again.
    let mut lanes: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for op in &record.history {
        let conversation = op.kind.conversation().to_string();
        let ends = lanes.entry(conversation.clone()).or_default();
        let lane = match ends.iter().position(|end| *end <= op.invoke_ms) {
            Some(i) => i,
            None => {
                ends.push(0);
                ends.len() - 1
            }
        };
        ends[lane] = op.complete_ms;
        let lane = lane as u32;
        let context = workload::context_id(seed, &conversation);
        let forward = forwards.iter_mut().find(|(f, used)| {
            !*used
                && method_matches(&op.kind, &f.method)
                && f.context == context
                && (op.invoke_ms..=op.complete_ms).contains(&f.at_ms)
                && op.replica.as_ref().is_none_or(|r| *r == f.target)
        });
        let (routed_at, routed_to) = match forward {
            Some((f, used)) => {
                *used = true;
                (Some(f.at_ms), Some(f.target.clone()))
            }
            None => (None, None),
        };
        let to = op.replica.clone().or(routed_to);
        let dropped = match (&op.outcome, routed_at, &to) {
            (Outcome::Info { .. }, Some(from), Some(target)) => drops
                .iter_mut()
                .find(|(at, method, t, used)| {
                    !*used
                        && method_matches(&op.kind, method)
                        && t == target
                        && (from..=op.complete_ms).contains(at)
                })
                .map(|d| d.3 = true)
                .is_some(),
            _ => false,
        };
        let principal = (op.principal != DEFAULT_PRINCIPAL).then(|| op.principal.clone());
        let task = |conversation: String| TaskStep {
            conversation,
            to: to.clone(),
            principal: principal.clone(),
        };
        let step = match &op.kind {
            OpKind::Send {
                turn,
                message_id,
                blocking,
                foreign_context,
                needs_auth,
                reply,
                ..
            } => {
                // A reply's messageId is the turn's with `-replyN`, which the script derives
                // again; any other messageId that is not the turn's own is written out.
                let own = workload::message_id(seed, &conversation, *turn);
                let derived = match reply {
                    Some(_) => message_id
                        .strip_prefix(&own)
                        .and_then(|rest| rest.strip_prefix("-reply"))
                        .is_some_and(|n| n.parse::<u32>().is_ok()),
                    None => *message_id == own,
                };
                Step::Send(SendStep {
                    conversation: conversation.clone(),
                    turn: *turn,
                    to: to.clone(),
                    message_id: (!derived).then(|| message_id.clone()),
                    blocking: (!blocking).then_some(false),
                    streaming: None,
                    principal: principal.clone(),
                    context_id: foreign_context.then(|| "ctx-foreign".to_string()),
                    needs_auth: needs_auth.then_some(true),
                    reply: reply.clone(),
                })
            }
            OpKind::Get { .. } => Step::Get(task(conversation.clone())),
            OpKind::Cancel { .. } => Step::Cancel(task(conversation.clone())),
            OpKind::Subscribe { .. } => Step::Subscribe(task(conversation.clone())),
            OpKind::SetPush { .. } => {
                skipped_push = true;
                continue;
            }
        };
        if dropped {
            events.push(Event {
                at_ms: op.invoke_ms,
                conversation: Some(conversation.clone()),
                lane,
                step: Step::Fault(lost_reply::DropNextReply.into()),
            });
        }
        events.push(Event {
            at_ms: op.invoke_ms,
            conversation: Some(conversation),
            lane,
            step,
        });
    }
    if skipped_push {
        notes.push("set-push operations are left out (their URL is not recorded)".into());
    }
    // Out-of-band grants (the user authorising a paused task at the identity provider).
    for grant in &record.grants {
        let Some(conversation) = record
            .conversations
            .iter()
            .find(|(_, id)| **id == grant.task_id)
            .map(|(c, _)| c.clone())
        else {
            notes.push(format!(
                "a grant of task {} is left out: no conversation owns it",
                grant.task_id
            ));
            continue;
        };
        events.push(Event {
            at_ms: grant.at_ms,
            conversation: Some(conversation.clone()),
            lane: 0,
            step: Step::Authorize(TaskStep {
                conversation,
                to: None,
                principal: (grant.subject != DEFAULT_PRINCIPAL).then(|| grant.subject.clone()),
            }),
        });
    }
    let mut rate_seen = false;
    let mut unreadable = BTreeSet::new();
    for (at_ms, action) in &record.faults {
        match action {
            Action::LostReplyRate(_) => rate_seen = true,
            action if action.to_step().is_none() => {
                unreadable.insert(action.to_string());
            }
            action => events.push(Event {
                at_ms: *at_ms,
                conversation: None,
                lane: 0,
                step: Step::Fault(action.clone()),
            }),
        }
    }
    if rate_seen {
        notes.push(
            "the lost-reply rate is replayed as one drop-reply before each send whose reply the router dropped"
                .into(),
        );
    }
    for text in unreadable {
        notes.push(format!("fault `{text}` has no step kind and is left out"));
    }
    // Faults first at the same instant: the driver applies them before the tick.
    events.sort_by_key(|e| (e.at_ms, e.conversation.is_some()));
    Conversion { events, notes }
}

/// Steps as a tree: leaf paths, removal, normalisation.
mod tree {
    use crate::scenario::Step;

    /// Removes empty containers, unwraps one-element ones and flattens nested sequences.
    pub fn normalise(steps: Vec<Step>) -> Vec<Step> {
        let mut out = Vec::new();
        for s in steps {
            match s {
                Step::Sequence(inner) => out.extend(normalise(inner)),
                Step::Concurrent(inner) => {
                    let mut inner: Vec<Step> = inner
                        .into_iter()
                        .filter_map(|s| match s {
                            Step::Sequence(v) => {
                                let mut v = normalise(v);
                                match v.len() {
                                    0 => None,
                                    1 => v.pop(),
                                    _ => Some(Step::Sequence(v)),
                                }
                            }
                            Step::Concurrent(v) => {
                                let v = normalise(vec![Step::Concurrent(v)]);
                                (!v.is_empty()).then_some(Step::Sequence(v))
                            }
                            other => Some(other),
                        })
                        .collect();
                    match inner.len() {
                        0 => {}
                        1 => {
                            let only = inner.pop().expect("one");
                            out.extend(normalise(vec![only]));
                        }
                        _ => out.push(Step::Concurrent(inner)),
                    }
                }
                other => out.push(other),
            }
        }
        out
    }

    /// Paths to every leaf, in order.
    pub fn leaves(steps: &[Step]) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        fn walk(steps: &[Step], prefix: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
            for (i, s) in steps.iter().enumerate() {
                prefix.push(i);
                match s {
                    Step::Concurrent(v) | Step::Sequence(v) => walk(v, prefix, out),
                    _ => out.push(prefix.clone()),
                }
                prefix.pop();
            }
        }
        walk(steps, &mut Vec::new(), &mut out);
        out
    }

    /// The leaf at `path`.
    pub fn get<'a>(steps: &'a [Step], path: &[usize]) -> &'a Step {
        let s = &steps[path[0]];
        match (s, path.len()) {
            (_, 1) => s,
            (Step::Concurrent(v) | Step::Sequence(v), _) => get(v, &path[1..]),
            _ => s,
        }
    }

    /// A copy with the leaf at `path` replaced (`None` removes it), normalised.
    pub fn replace(steps: &[Step], path: &[usize], with: Option<Step>) -> Vec<Step> {
        fn go(steps: &mut Vec<Step>, path: &[usize], with: Option<Step>) {
            if path.len() == 1 {
                match with {
                    Some(s) => steps[path[0]] = s,
                    None => {
                        steps.remove(path[0]);
                    }
                }
                return;
            }
            if let Step::Concurrent(v) | Step::Sequence(v) = &mut steps[path[0]] {
                go(v, &path[1..], with);
            }
        }
        let mut out = steps.to_vec();
        go(&mut out, path, with);
        normalise(out)
    }

    /// A copy with every leaf mapped.
    pub fn map(steps: &[Step], f: &mut dyn FnMut(&Step) -> Step) -> Vec<Step> {
        steps
            .iter()
            .map(|s| match s {
                Step::Concurrent(v) => Step::Concurrent(map(v, f)),
                Step::Sequence(v) => Step::Sequence(map(v, f)),
                other => f(other),
            })
            .collect()
    }
}

/// Delta debugging (Zeller's ddmin): a 1-minimal subsequence of `items` for which `fails`
/// holds, given that it holds for all of them.
pub fn ddmin<T: Clone>(items: Vec<T>, fails: &mut dyn FnMut(&[T]) -> bool) -> Vec<T> {
    let mut items = items;
    let mut n = 2usize;
    while items.len() >= 2 {
        let len = items.len();
        let n_now = n.min(len);
        let chunk = len.div_ceil(n_now);
        let ranges: Vec<(usize, usize)> = (0..len)
            .step_by(chunk)
            .map(|s| (s, (s + chunk).min(len)))
            .collect();
        let mut reduced = false;
        for &(a, b) in &ranges {
            let part = items[a..b].to_vec();
            if fails(&part) {
                items = part;
                n = 2;
                reduced = true;
                break;
            }
        }
        if !reduced && ranges.len() > 2 {
            for &(a, b) in &ranges {
                let mut rest = items[..a].to_vec();
                rest.extend_from_slice(&items[b..]);
                if fails(&rest) {
                    items = rest;
                    n = (ranges.len() - 1).max(2);
                    reduced = true;
                    break;
                }
            }
        }
        if !reduced {
            if n_now >= len {
                break;
            }
            n = (n_now * 2).min(len);
        }
    }
    if items.len() == 1 && fails(&[]) {
        items.clear();
    }
    items
}

/// Runs candidate scenarios: does this one still violate the target invariant?
pub struct Oracle {
    base: ScenarioFile,
    profile: Profile,
    invariant: &'static str,
    runs: Cell<usize>,
    cache: RefCell<BTreeMap<String, bool>>,
}

impl Oracle {
    /// An oracle for scenarios built on `base` (its steps are ignored) with `profile`.
    pub fn new(base: ScenarioFile, profile: Profile, invariant: &'static str) -> Oracle {
        Oracle {
            base,
            profile,
            invariant,
            runs: Cell::new(0),
            cache: RefCell::default(),
        }
    }

    /// Scenario runs so far.
    pub fn runs(&self) -> usize {
        self.runs.get()
    }

    /// The scenario of `steps` on `replicas` replicas, if it is valid.
    pub fn script(&self, replicas: usize, steps: &[Step]) -> Option<Script> {
        let mut base = self.base.clone();
        base.replicas = replicas;
        Script::from_steps(&base, steps).ok()
    }

    /// Runs a scenario once; `None` when the run panicked.
    pub fn run(&self, script: &Script) -> Option<RunSummary> {
        self.runs.set(self.runs.get() + 1);
        let checked = Sim::scenario_builder(script)
            .model(self.profile.clone())
            .build()
            .ok()?
            .check();
        checked.record.is_some().then_some(checked.summary)
    }

    /// Whether `steps` on `replicas` replicas still violate the target invariant.
    pub fn fails(&self, replicas: usize, steps: &[Step]) -> bool {
        let Some(script) = self.script(replicas, steps) else {
            return false;
        };
        let key = script.to_toml();
        if let Some(v) = self.cache.borrow().get(&key) {
            return *v;
        }
        if self.runs.get() >= RUNS_MAX {
            return false;
        }
        let v = self
            .run(&script)
            .is_some_and(|s| s.error.is_none() && s.violated().contains(&self.invariant));
        self.cache.borrow_mut().insert(key, v);
        v
    }
}

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
    pub invariant: Option<String>,
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
    pub invariant: &'static str,
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
    pub violated: Vec<&'static str>,
    /// Scenario runs spent.
    pub runs: usize,
    /// What happened on the way, in sentences.
    pub notes: Vec<String>,
}

/// The target invariant of a run and its violations.
fn target(
    record: &RunRecord,
    asked: Option<&str>,
) -> Result<(&'static str, Vec<Violation>), ShrinkError> {
    let findings = check::check_all(record);
    let failed: Vec<_> = findings
        .iter()
        .filter(|f| f.verdict() == Verdict::Fail)
        .collect();
    let names: Vec<&str> = failed.iter().map(|f| f.invariant).collect();
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

fn replica_of(host: &str) -> Option<usize> {
    host.strip_prefix("replica-").and_then(|i| i.parse().ok())
}

/// Replicas named by a step (`to`, fault hosts).
fn replicas_named(step: &Step, out: &mut BTreeSet<usize>) {
    let mut add = |h: &str| {
        if let Some(i) = replica_of(h) {
            out.insert(i);
        }
    };
    match step {
        Step::Send(s) => s.to.iter().for_each(|h| add(h)),
        Step::Cancel(s) | Step::Get(s) | Step::Subscribe(s) => s.to.iter().for_each(|h| add(h)),
        Step::SetPush(s) => s.to.iter().for_each(|h| add(h)),
        Step::Authorize(_) => {}
        Step::Fault(a) => a.hosts().into_iter().for_each(add),
        Step::Concurrent(v) | Step::Sequence(v) => v.iter().for_each(|s| replicas_named(s, out)),
        Step::WaitMs(_) | Step::UntilMs(_) | Step::Effect(..) => {}
    }
}

/// A copy of a step with every replica renamed by `map`.
fn rename_replicas(step: &Step, map: &BTreeMap<usize, usize>) -> Step {
    let host = |h: &String| match replica_of(h).and_then(|i| map.get(&i)) {
        Some(j) => format!("replica-{j}"),
        None => h.clone(),
    };
    let to = |t: &Option<String>| t.as_ref().map(host);
    match step {
        Step::Send(s) => Step::Send(SendStep {
            to: to(&s.to),
            ..s.clone()
        }),
        Step::Cancel(s) => Step::Cancel(TaskStep {
            to: to(&s.to),
            ..s.clone()
        }),
        Step::Get(s) => Step::Get(TaskStep {
            to: to(&s.to),
            ..s.clone()
        }),
        Step::Subscribe(s) => Step::Subscribe(TaskStep {
            to: to(&s.to),
            ..s.clone()
        }),
        Step::Fault(a) => Step::Fault(a.renamed(&|h: &str| host(&h.to_string()))),
        Step::Concurrent(v) => {
            Step::Concurrent(v.iter().map(|s| rename_replicas(s, map)).collect())
        }
        Step::Sequence(v) => Step::Sequence(v.iter().map(|s| rename_replicas(s, map)).collect()),
        other => other.clone(),
    }
}

/// Conversations renamed `c1, c2, ...` in order of appearance (`rename`), turns renumbered
/// `1, 2, ...` per conversation in their order (`renumber`).
fn renumbered(steps: &[Step], rename: bool, renumber: bool) -> Vec<Step> {
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    let mut turns: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    for p in tree::leaves(steps) {
        let (c, t) = match tree::get(steps, &p) {
            Step::Send(s) => (&s.conversation, Some(s.turn)),
            Step::Cancel(s) | Step::Get(s) | Step::Subscribe(s) | Step::Authorize(s) => {
                (&s.conversation, None)
            }
            Step::SetPush(s) => (&s.conversation, None),
            _ => continue,
        };
        let next = format!("c{}", names.len() + 1);
        names.entry(c.clone()).or_insert(next);
        turns.entry(c.clone()).or_default().extend(t);
    }
    let conv = |c: &String| {
        if rename {
            names.get(c).cloned().unwrap_or_else(|| c.clone())
        } else {
            c.clone()
        }
    };
    let turn = |c: &String, t: u32| {
        if renumber {
            turns
                .get(c)
                .and_then(|set| set.iter().position(|x| *x == t))
                .map_or(t, |i| i as u32 + 1)
        } else {
            t
        }
    };
    tree::map(steps, &mut |s| match s {
        Step::Send(x) => Step::Send(SendStep {
            conversation: conv(&x.conversation),
            turn: turn(&x.conversation, x.turn),
            ..x.clone()
        }),
        Step::Cancel(x) => Step::Cancel(TaskStep {
            conversation: conv(&x.conversation),
            ..x.clone()
        }),
        Step::Get(x) => Step::Get(TaskStep {
            conversation: conv(&x.conversation),
            ..x.clone()
        }),
        Step::Subscribe(x) => Step::Subscribe(TaskStep {
            conversation: conv(&x.conversation),
            ..x.clone()
        }),
        Step::Authorize(x) => Step::Authorize(TaskStep {
            conversation: conv(&x.conversation),
            ..x.clone()
        }),
        other => other.clone(),
    })
}

/// Simpler versions of one leaf: without `message_id`, blocking, a shorter wait.
fn simpler(step: &Step) -> Vec<Step> {
    let mut out = Vec::new();
    match step {
        Step::Send(s) => {
            if s.message_id.is_some() {
                out.push(Step::Send(SendStep {
                    message_id: None,
                    ..s.clone()
                }));
            }
            if s.blocking.is_some() || s.streaming.is_some() {
                out.push(Step::Send(SendStep {
                    blocking: None,
                    streaming: None,
                    ..s.clone()
                }));
            }
        }
        Step::WaitMs(ms) if *ms > 1 => out.push(Step::WaitMs(ms / 2)),
        _ => {}
    }
    out
}

/// Every request routed by the scenario's routing instead of pinned with `to`.
fn unpinned(steps: &[Step]) -> Vec<Step> {
    tree::map(steps, &mut |s| match s {
        Step::Send(x) => Step::Send(SendStep {
            to: None,
            ..x.clone()
        }),
        Step::Cancel(x) => Step::Cancel(TaskStep {
            to: None,
            ..x.clone()
        }),
        Step::Get(x) => Step::Get(TaskStep {
            to: None,
            ..x.clone()
        }),
        Step::Subscribe(x) => Step::Subscribe(TaskStep {
            to: None,
            ..x.clone()
        }),
        other => other.clone(),
    })
}

/// Every `until-ms` moved earlier by the smallest one (the scenario starts at its first
/// timed step); `until-ms = 0` steps are dropped.
fn shifted(steps: &[Step]) -> Vec<Step> {
    let first = tree::leaves(steps)
        .iter()
        .filter_map(|p| match tree::get(steps, p) {
            Step::UntilMs(ms) => Some(*ms),
            _ => None,
        })
        .min()
        .unwrap_or(0);
    if first == 0 {
        return steps.to_vec();
    }
    tree::normalise(tree::map(steps, &mut |s| match s {
        Step::UntilMs(ms) if *ms == first => Step::Sequence(Vec::new()),
        Step::UntilMs(ms) => Step::UntilMs(ms - first),
        other => other.clone(),
    }))
}

/// The minimisation after a reproducing conversion.
struct Minimiser<'a> {
    oracle: &'a Oracle,
    replicas: usize,
    notes: Vec<String>,
}

impl Minimiser<'_> {
    fn fails(&self, steps: &[Step]) -> bool {
        self.oracle.fails(self.replicas, steps)
    }

    /// Slice and ddmin over events; then the simplest layout that still fails.
    fn events(
        &mut self,
        events: Vec<Event>,
        layout: Layout,
        named: &BTreeSet<String>,
    ) -> (Vec<Event>, Layout) {
        let mut events = events;
        if !named.is_empty() {
            let slice: Vec<Event> = events
                .iter()
                .filter(|e| e.conversation.as_ref().is_none_or(|c| named.contains(c)))
                .cloned()
                .collect();
            if slice.len() < events.len() && self.fails(&render(&slice, layout)) {
                self.notes.push(format!(
                    "kept only {} (the conversations the violation names) and the faults: {} -> {} events",
                    named.iter().cloned().collect::<Vec<_>>().join(", "),
                    events.len(),
                    slice.len()
                ));
                events = slice;
            }
        }
        let oracle = self.oracle;
        let replicas = self.replicas;
        events = ddmin(events, &mut |sub| {
            oracle.fails(replicas, &render(sub, layout))
        });
        let mut layout = layout;
        for simpler in [Layout::Sequential, Layout::Timed] {
            if simpler < layout && self.fails(&render(&events, simpler)) {
                self.notes.push(format!(
                    "the {} layout still fails, so the file uses it",
                    simpler.word()
                ));
                layout = simpler;
                events = ddmin(events, &mut |sub| {
                    oracle.fails(replicas, &render(sub, layout))
                });
                break;
            }
        }
        (events, layout)
    }

    /// Fewer replicas: renumber the ones used from 0, then try merging them.
    fn replicas(&mut self, steps: Vec<Step>) -> Vec<Step> {
        let mut steps = steps;
        let before = self.replicas;
        let mut used = BTreeSet::new();
        for s in &steps {
            replicas_named(s, &mut used);
        }
        let dense: BTreeMap<usize, usize> = used.iter().enumerate().map(|(j, i)| (*i, j)).collect();
        let renamed: Vec<Step> = steps.iter().map(|s| rename_replicas(s, &dense)).collect();
        let needed = used.len().max(1);
        if needed < self.replicas || renamed != steps {
            let r0 = self.replicas;
            self.replicas = needed;
            if self.fails(&renamed) {
                steps = renamed;
            } else {
                self.replicas = r0;
            }
        }
        // Merge: replica-i becomes replica-(i % r) on fewer replicas.
        for r in 1..self.replicas {
            let map: BTreeMap<usize, usize> = (0..self.replicas).map(|i| (i, i % r)).collect();
            let merged: Vec<Step> = steps.iter().map(|s| rename_replicas(s, &map)).collect();
            let r0 = self.replicas;
            self.replicas = r;
            if self.fails(&merged) {
                steps = merged;
                break;
            }
            self.replicas = r0;
        }
        if self.replicas < before {
            self.notes
                .push(format!("replicas: {before} -> {}", self.replicas));
        }
        steps
    }

    /// Removes single leaves chosen by `pick`, until none can go.
    fn remove_leaves(&mut self, steps: Vec<Step>, pick: &dyn Fn(&Step) -> bool) -> Vec<Step> {
        let mut steps = steps;
        let mut i = 0;
        loop {
            let leaves = tree::leaves(&steps);
            let Some(path) = leaves.get(i) else {
                break;
            };
            if pick(tree::get(&steps, path)) {
                let candidate = tree::replace(&steps, path, None);
                if self.fails(&candidate) {
                    steps = candidate;
                    continue;
                }
            }
            i += 1;
        }
        steps
    }

    /// Renumbered conversations and turns, simpler leaves, and no `to` when no request
    /// needs one (pins are kept all together otherwise: they tell the story, and they do
    /// not depend on how the routing strategy draws).
    fn simplify(&mut self, steps: Vec<Step>) -> Vec<Step> {
        let mut steps = steps;
        let early = shifted(&steps);
        if early != steps && self.fails(&early) {
            self.notes
                .push("the timed steps still fail when started at 0 ms".into());
            steps = early;
        }
        let free = unpinned(&steps);
        if free != steps && self.fails(&free) {
            self.notes
                .push("no request needs `to`: the routing strategy places them".into());
            steps = free;
        }
        for (rename, renumber) in [(true, true), (false, true), (true, false)] {
            let candidate = renumbered(&steps, rename, renumber);
            if candidate != steps && self.fails(&candidate) {
                steps = candidate;
                break;
            }
        }
        let mut i = 0;
        loop {
            let leaves = tree::leaves(&steps);
            let Some(path) = leaves.get(i) else {
                break;
            };
            let mut changed = false;
            for s in simpler(tree::get(&steps, path)) {
                let candidate = tree::replace(&steps, path, Some(s));
                if self.fails(&candidate) {
                    steps = candidate;
                    changed = true;
                    break;
                }
            }
            if !changed {
                i += 1;
            }
        }
        steps
    }
}

/// The base of every candidate: model, routing, seed, timeout of the original run.
fn base_file(name: &str, model: &str, routing: &str, seed: u64, timeout_ms: u64) -> ScenarioFile {
    ScenarioFile {
        name: name.to_string(),
        model: model.to_string(),
        replicas: 1,
        routing: routing.to_string(),
        seed,
        description: None,
        postmortem: None,
        request_timeout_ms: timeout_ms,
        card: None,
        step: Vec::new(),
        expect: Expect::default(),
    }
}

/// Runs one seed of an experiment with its trace kept.
fn run_experiment(exp: &Experiment, profile: &Profile, routing: &str, seed: u64) -> RunRecord {
    Sim::experiment_builder(exp, profile, routing, seed)
        .keep_trace(true)
        .build()
        .expect("a run of a validated experiment builds")
        .run()
}

/// Shrinks the experiment's generated workload while the seed still violates `invariant`.
fn reduce_experiment(
    exp: &Experiment,
    profile: &Profile,
    routing: &str,
    seed: u64,
    invariant: &'static str,
    runs: &mut usize,
    notes: &mut Vec<String>,
) -> Experiment {
    let mut exp = exp.clone();
    let still = |e: &Experiment, runs: &mut usize| {
        *runs += 1;
        let Ok(sim) = Sim::from_experiment(e, profile, routing, seed) else {
            return false;
        };
        let r = sim.run();
        r.error.is_none()
            && check::check_all(&r)
                .iter()
                .any(|f| f.invariant == invariant && f.verdict() == Verdict::Fail)
    };
    let mut tried = |exp: &mut Experiment,
                     change: &dyn Fn(&mut Experiment) -> bool,
                     what: String,
                     runs: &mut usize| {
        let mut candidate = exp.clone();
        if change(&mut candidate) && still(&candidate, runs) {
            notes.push(what);
            *exp = candidate;
            true
        } else {
            false
        }
    };
    loop {
        let c = exp.file.workload.conversations;
        if c <= 1
            || !tried(
                &mut exp,
                &|e| {
                    e.file.workload.conversations = (c / 2).max(1);
                    true
                },
                format!("workload: {c} -> {} conversations", (c / 2).max(1)),
                runs,
            )
        {
            break;
        }
    }
    loop {
        let t = exp.file.workload.turns;
        if t <= 1
            || !tried(
                &mut exp,
                &|e| {
                    e.file.workload.turns = t - 1;
                    true
                },
                format!("workload: {t} -> {} turns", t - 1),
                runs,
            )
        {
            break;
        }
    }
    let kinds: Vec<String> = exp.file.faults.rates.keys().cloned().collect();
    for kind in kinds {
        tried(
            &mut exp,
            &|e| match e.file.faults.rates.get_mut(&kind) {
                Some(r) if *r > 0.0 => {
                    *r = 0.0;
                    true
                }
                _ => false,
            },
            format!("faults: no {kind}"),
            runs,
        );
    }
    loop {
        let r = exp.file.replicas;
        if r <= 1
            || !tried(
                &mut exp,
                &|e| {
                    e.file.replicas = r - 1;
                    true
                },
                format!("replicas: {r} -> {}", r - 1),
                runs,
            )
        {
            break;
        }
    }
    exp
}

/// Shrinks one failing seed to a scenario.
pub fn shrink(request: &Request) -> Result<Shrunk, ShrinkError> {
    let seed = request.seed;
    let mut notes = Vec::new();
    let (record, profile, model, routing, timeout_ms) = match &request.source {
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
            )
        }
    };
    if let Some(e) = &record.error {
        return Err(ShrinkError::NoViolation(format!(
            "seed {seed} did not finish ({e}); shrink needs a run that ends with a violation"
        )));
    }
    let (invariant, violations) = target(&record, request.invariant.as_deref())?;
    let original_detail = violations
        .first()
        .map(|v| v.detail.clone())
        .unwrap_or_default();
    let mut base = base_file(&request.name, &model, &routing, seed, timeout_ms);
    if record.cards.enabled {
        base.card = Some(crate::card::CardSetup {
            max_age_s: record.cards.max_age_ms / 1000,
        });
    }
    let oracle = Oracle::new(base, profile.clone(), invariant);

    // Convert and verify.
    let (events, replicas, layouts): (Vec<Event>, usize, Vec<Layout>) = match &request.source {
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
                .map(|s| Event {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::kill;

    #[test]
    fn ddmin_finds_the_two_items_that_matter() {
        let items: Vec<u32> = (0..40).collect();
        let mut tests = 0;
        let out = ddmin(items, &mut |s| {
            tests += 1;
            s.contains(&7) && s.contains(&31)
        });
        assert_eq!(out, vec![7, 31]);
        assert!(tests < 80, "{tests} tests");
    }

    #[test]
    fn lanes_keep_each_conversation_in_order_and_duplicates_apart() {
        let send = |c: &str, t: u32| {
            Step::Send(SendStep {
                conversation: c.into(),
                turn: t,
                to: None,
                message_id: None,
                blocking: None,
                streaming: None,
                principal: None,
                context_id: None,
                needs_auth: None,
                reply: None,
            })
        };
        let events = vec![
            Event {
                at_ms: 10,
                conversation: Some("c1".into()),
                lane: 0,
                step: send("c1", 1),
            },
            Event {
                at_ms: 20,
                conversation: None,
                lane: 0,
                step: Step::Fault(kill::Kill("replica-0".into()).into()),
            },
            Event {
                at_ms: 30,
                conversation: Some("c1".into()),
                lane: 0,
                step: send("c1", 2),
            },
            Event {
                at_ms: 30,
                conversation: Some("c1".into()),
                lane: 1,
                step: send("c1", 2),
            },
        ];
        let sequential = render(&events, Layout::Sequential);
        assert_eq!(sequential.len(), 3);
        assert_eq!(
            sequential[2],
            Step::Concurrent(vec![send("c1", 2), send("c1", 2)])
        );
        assert_eq!(Step::count(&render(&events, Layout::Timed)), 7);
        let lanes = render(&events, Layout::Lanes);
        assert_eq!(lanes.len(), 1);
        let Step::Concurrent(v) = &lanes[0] else {
            panic!("{lanes:?}")
        };
        assert_eq!(v.len(), 3);
        assert_eq!(
            v[0],
            Step::Sequence(vec![
                Step::UntilMs(20),
                Step::Fault(kill::Kill("replica-0".into()).into())
            ])
        );
    }

    #[test]
    fn removing_a_leaf_unwraps_what_is_left() {
        let k = |i: usize| Step::Fault(kill::Kill(format!("replica-{i}")).into());
        let steps = vec![Step::Concurrent(vec![
            Step::Sequence(vec![Step::UntilMs(5), k(0)]),
            Step::Sequence(vec![k(1)]),
        ])];
        let leaves = tree::leaves(&steps);
        assert_eq!(leaves.len(), 3);
        let out = tree::replace(&steps, &leaves[2], None);
        assert_eq!(out, vec![Step::UntilMs(5), k(0)]);
    }

    #[test]
    fn renumbering_starts_conversations_and_turns_at_one() {
        let send = |c: &str, t: u32| {
            Step::Send(SendStep {
                conversation: c.into(),
                turn: t,
                to: None,
                message_id: None,
                blocking: None,
                streaming: None,
                principal: None,
                context_id: None,
                needs_auth: None,
                reply: None,
            })
        };
        let out = renumbered(&[send("c7", 3), send("c2", 2), send("c7", 4)], true, true);
        assert_eq!(out, vec![send("c1", 1), send("c2", 1), send("c1", 2)]);
    }

    #[test]
    fn the_fallback_shrinks_the_generated_workload_while_the_seed_still_fails() {
        let exp = Experiment::parse(
            include_str!("../../tests/experiments/classic-swarm.toml"),
            "classic-swarm.toml",
            None,
        )
        .unwrap();
        let profile = Profile::load("a2a-python-1.3-memory").unwrap();
        let (mut runs, mut notes) = (0, Vec::new());
        let reduced = reduce_experiment(
            &exp,
            &profile,
            "round-robin",
            7,
            "no-lost-writes",
            &mut runs,
            &mut notes,
        );
        let w = &reduced.file.workload;
        assert!(
            w.conversations < exp.file.workload.conversations || w.turns < exp.file.workload.turns,
            "{notes:?}"
        );
        assert!(!notes.is_empty());
        let record = run_experiment(&reduced, &profile, "round-robin", 7);
        let (invariant, _) = target(&record, Some("no-lost-writes")).unwrap();
        assert_eq!(invariant, "no-lost-writes");
        // Its conversion is much smaller than the original run's.
        assert!(convert(&record).events.len() < 20, "{notes:?}");
    }
}
