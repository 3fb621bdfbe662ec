//! Scripted scenarios: a deterministic script of A2A calls and faults, in TOML.
//!
//! The format is the one in `docs/CONTRACT.md`: a model, a replica count, a routing
//! strategy for steps that name no replica, a seed (latency and jitter only), a list of
//! `[[step]]` tables with one key each, and `[expect]`. A scenario may also carry a
//! `postmortem` line: what broke and why, for pinned regressions.
//!
//! Steps run one after another on the client host; `concurrent` starts its steps at the same
//! simulated instant, and `sequence` runs its steps in order (so a `concurrent` element can be
//! a whole timeline). Fault steps (`kill`, `restart`, `partition`, `partition-oneway`,
//! `repair`, `latency`, `heal`, `drop-reply`) are handed to the driver, which applies them
//! before the next tick. `wait-ms` pauses; `until-ms` pauses until a simulated time since the
//! start of the run (nothing when that time has passed), which is how `a2a-chaos shrink`
//! replays a swarm run's timing.
//!
//! Beyond the contract's step kinds, this module adds the ones a converted swarm run needs:
//! - `sequence = [ {send = ...}, {wait-ms = 5}, ... ]`: run in order;
//! - `until-ms = 1200`: wait until 1200 simulated ms since the start of the run;
//! - `partition-oneway = ["replica-0", "store"]`: drop traffic from the first to the second;
//! - `repair = ["replica-0", "store"]`: restore one link, both ways;
//! - `latency = { between = ["replica-0", "store"], max-ms = 200 }`: raise a link's maximum
//!   latency; without `max-ms` the link returns to the normal latency.
//!
//! Issue 10's card steps (see [`crate::card`]): `card = { move-to = "agent-v2.example" }`,
//! `card = { streaming = false }`, `card = { revoke-key = true }`, `card = { tamper = true }`
//! change the agent card, and a top-level `[card]` table (`max-age-s = 2`) sets the
//! publisher's `Cache-Control`. Either turns the card simulation on: the client bootstraps
//! from the card and sends its bearer token to the execution URL the card names.
//!
//! [`Script::to_toml`] writes a scenario back as a readable file.

pub mod calls;
mod run;
pub mod step;
mod write;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::InputError;
use crate::faults::Action;
use crate::host::Host;

pub use calls::{CallExpect, CallMethod, CallOutcome, TaskExpect};
pub use run::{run_script, ApplyNow, DriverLink, AWAIT_EFFECT_MAX};
pub use step::{EffectGate, Parts, PushStep, SendStep, Step, StepError, TaskStep, TurnStep};

/// What a scenario expects.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "kebab-case")]
pub struct Expect {
    /// Exactly these invariants must be violated; `[]` means every invariant must pass.
    #[serde(default)]
    pub violations: Vec<String>,
    /// These invariants must be exercised at least once (in a sweep: in every model ×
    /// routing combination), whatever their verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exercised: Vec<String>,
    /// A run that exercises no invariant at all proves nothing, so it fails its check
    /// unless this is set (a scenario kept for what it observes, not for a verdict).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_unexercised: bool,
    /// At most this many continuations refused `-32001` on a task that exists, in each run
    /// ([`crate::sim::Availability`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_refused_continuations: Option<u64>,
    /// At most this many failed turns in each run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_failed_turns: Option<u64>,
    /// What single calls must have answered (`[[expect.call]]`, [`calls`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub call: Vec<CallExpect>,
    /// The states conversations' tasks must end in (`[[expect.task]]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub task: Vec<TaskExpect>,
}

impl Expect {
    /// Every invariant name the table gives (`violations` and `exercised`).
    pub fn names(&self) -> Vec<String> {
        self.violations
            .iter()
            .chain(&self.exercised)
            .cloned()
            .collect()
    }
}

/// A scenario file as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ScenarioFile {
    /// What the scenario is called.
    pub name: String,
    /// A built-in model, or a path to a profile ending in `.toml`.
    pub model: String,
    /// Replicas, `replica-0..N-1` (default 2).
    #[serde(default = "two")]
    pub replicas: usize,
    /// Routing for requests that are not pinned with `to` (default `round-robin`).
    #[serde(default = "round_robin")]
    pub routing: String,
    /// The run's seed: latency, jitter and ids (default 0).
    #[serde(default)]
    pub seed: u64,
    /// What it shows, in a sentence.
    #[serde(default)]
    pub description: Option<String>,
    /// What broke and why (pinned regressions).
    #[serde(default)]
    pub postmortem: Option<String>,
    /// Client timeout per request, simulated ms.
    #[serde(default = "default_timeout")]
    pub request_timeout_ms: u64,
    /// The longest an `await-effect` step waits for its effect before the script goes on
    /// without it, simulated ms (default 10000; at most [`AWAIT_EFFECT_MAX`]).
    #[serde(default = "default_await_effect")]
    pub await_effect_ms: u64,
    /// Simulated time one step of the world advances, ms (default 1; see
    /// [`check_tick_ms`]).
    #[serde(default = "default_tick_ms")]
    pub tick_ms: u64,
    /// How long the agent thinks (its model call) before each turn's effect, drawn from this
    /// range, simulated ms (default 20-60): a slow remote agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_ms: Option<[u64; 2]>,
    /// `[card]`: simulate the agent card (also on when a step changes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<crate::card::CardSetup>,
    /// The wire the script's client speaks: `"1.0"` (the default) or `"0.3"` (slash
    /// methods, no version header; a model that does not serve 0.3 refuses every call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_wire: Option<crate::client::Dialect>,
    /// The `[[step]]` tables, in order.
    #[serde(default)]
    pub step: Vec<Step>,
    /// `[expect]`.
    #[serde(default)]
    pub expect: Expect,
    /// Which draw of its faults' timing the run takes (a slowed link's latencies, when a
    /// kill point's crash lands): 0, the seed's own. Not a key of the file: the fidelity
    /// comparison simulates a scenario with a `latency` or `kill-at` step under several
    /// draws ([`crate::fidelity::patterns::order_variants`]), since each world draws them
    /// on its own.
    #[serde(skip)]
    pub fault_draw: u64,
    /// Which draw of its timing the run takes (the engine's scheduling and network
    /// latencies, the replicas' drawn durations): 0, the seed's own. Not a key of the
    /// file: the fidelity comparison simulates a race under several draws
    /// ([`crate::fidelity::patterns::order_variants`]).
    #[serde(skip)]
    pub timing_draw: u64,
}

fn two() -> usize {
    2
}
fn round_robin() -> String {
    "round-robin".into()
}
/// The default tick: 1 ms, the resolution every committed result was found at.
pub(crate) fn default_tick_ms() -> u64 {
    1
}

/// The coarsest tick a run may ask for, ms.
pub const TICK_MS_MAX: u64 = 50;

/// `tick-ms` of an experiment or a scenario: 1..=[`TICK_MS_MAX`]. A coarser tick steps every
/// host's runtime fewer times per simulated second (the cost of a run), and lands timers and
/// messages on coarser boundaries, so it is a different, not a wrong, schedule: see
/// `docs/PERFORMANCE.md` for what it changes.
pub fn check_tick_ms(tick_ms: u64) -> Result<(), TickOutOfRange> {
    if tick_ms == 0 || tick_ms > TICK_MS_MAX {
        return Err(TickOutOfRange(tick_ms));
    }
    Ok(())
}

/// A `tick-ms` outside 1..=[`TICK_MS_MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("tick-ms = {0} must be 1..={TICK_MS_MAX}")]
pub struct TickOutOfRange(pub u64);

pub(crate) fn default_timeout() -> u64 {
    1500
}
pub(crate) fn default_await_effect() -> u64 {
    AWAIT_EFFECT_MAX.as_millis() as u64
}

/// Most steps a scenario may have (nested steps included).
pub const STEPS_MAX: usize = 10_000;
/// Most replicas a run may have.
pub const REPLICAS_MAX: usize = 16;
/// Longest text of a `reply`.
pub const REPLY_CHARS_MAX: usize = 200;
// Waits are not bounded: a run's simulated-time budget cuts a scenario that waits too long.

/// A scenario ready to run.
#[derive(Debug, Clone)]
pub struct Script {
    /// The file as written.
    pub file: ScenarioFile,
    /// Its steps, resolved.
    pub steps: Vec<Step>,
    /// Turns per conversation (the highest turn the script sends).
    pub turns: BTreeMap<String, u32>,
    /// Client timeout per request.
    pub request_timeout: Duration,
    /// The longest an `await-effect` step waits.
    pub await_effect: Duration,
}

impl Script {
    /// Parses and validates a scenario; `origin` names the file in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Script, InputError> {
        let file: ScenarioFile =
            toml::from_str(text).map_err(|e| InputError::toml(origin, text, &e))?;
        Script::from_file(file, origin)
    }

    /// Reads a scenario file.
    pub fn load(path: &Path) -> Result<Script, InputError> {
        let origin = path.display().to_string();
        let text = crate::input::read_text(path, crate::input::FileKind::Scenario)?;
        Script::parse(&text, &origin)
    }

    /// A scenario from resolved steps: `base` gives everything but the steps.
    pub fn from_steps(base: &ScenarioFile, steps: &[Step]) -> Result<Script, InputError> {
        let mut file = base.clone();
        file.step = steps.to_vec();
        let origin = format!("scenario `{}`", file.name);
        Script::from_file(file, &origin)
    }

    /// Steps that do something, nested ones included (see [`Step::count`]).
    pub fn step_count(&self) -> usize {
        Step::count(&self.steps)
    }

    /// The scenario as a readable TOML file, one `[[step]]` per line of the script; it
    /// parses back to the same scenario.
    pub fn to_toml(&self) -> String {
        write::to_toml(&self.file)
    }

    /// The simulated time the script waits on purpose, at most: its `wait-ms` steps, and
    /// its largest `until-ms` (waits in a `concurrent` group count as if in sequence). A
    /// long-horizon scenario gets this much on top of the scripted run's budget.
    pub fn waits_ms(&self) -> u64 {
        fn walk(steps: &[Step], until: &mut u64) -> u64 {
            steps
                .iter()
                .map(|step| match step {
                    Step::WaitMs(ms) => *ms,
                    Step::UntilMs(ms) => {
                        *until = (*until).max(*ms);
                        0
                    }
                    Step::Concurrent(inner) | Step::Sequence(inner) => walk(inner, until),
                    _ => 0,
                })
                .sum()
        }
        let mut until = 0;
        let waits = walk(&self.steps, &mut until);
        waits.saturating_add(until)
    }

    /// The card simulation's setup, when the scenario has a `[card]` table or a `card` step.
    pub fn card_setup(&self) -> Option<crate::card::CardSetup> {
        self.file
            .card
            .or_else(|| card_changes(&self.steps, &mut BTreeSet::new()).then(Default::default))
    }

    /// The extra hosts the script's card changes name (`agent-v2.example`, ...).
    pub fn card_hosts(&self) -> BTreeSet<Host> {
        let mut hosts = BTreeSet::new();
        card_changes(&self.steps, &mut hosts);
        hosts
    }

    /// Every fault action of its steps (nested ones included), in step order.
    pub fn faults(&self) -> Vec<&Action> {
        fn walk<'a>(steps: &'a [Step], out: &mut Vec<&'a Action>) {
            for s in steps {
                match s {
                    Step::Fault(action) => out.push(action),
                    Step::Concurrent(inner) | Step::Sequence(inner) => walk(inner, out),
                    _ => {}
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.steps, &mut out);
        out
    }

    /// Whether any step kills the store (`kill = "store"`): a live run then needs a
    /// database server of its own.
    pub fn kills_store(&self) -> bool {
        self.faults()
            .iter()
            .any(|a| matches!(a, Action::Kill(k) if k.0 == Host::Store))
    }

    /// Whether any step (nested ones included) drains a replica.
    pub fn drains(&self) -> bool {
        fn any(steps: &[Step]) -> bool {
            steps.iter().any(|s| match s {
                Step::Fault(Action::Drain(_)) => true,
                Step::Concurrent(inner) | Step::Sequence(inner) => any(inner),
                _ => false,
            })
        }
        any(&self.steps)
    }

    /// Validates a parsed file.
    pub fn from_file(file: ScenarioFile, origin: &str) -> Result<Script, InputError> {
        crate::names::check("name", &file.name)
            .map_err(|m| InputError::new(origin, m.to_string()))?;
        // The model is checked when the file is read, not when it runs.
        let profile = crate::model::Profile::load(&file.model)
            .map_err(|e| InputError::new(origin, e.to_string()))?;
        if file.replicas == 0 || file.replicas > REPLICAS_MAX {
            return Err(InputError::new(
                origin,
                format!("replicas = {} must be 1..={REPLICAS_MAX}", file.replicas),
            ));
        }
        check_tick_ms(file.tick_ms).map_err(|m| InputError::new(origin, m.to_string()))?;
        if crate::router::strategy(&file.routing).is_none() {
            return Err(InputError::new(
                origin,
                format!(
                    "unknown routing `{}`; known: {}",
                    file.routing,
                    crate::router::names().join(", ")
                ),
            ));
        }
        let mut count = 0;
        for (i, step) in file.step.iter().enumerate() {
            check_step(
                step,
                &format!("{origin}: step {}", i + 1),
                file.replicas,
                &mut count,
            )?;
        }
        check_calls(&file.expect, origin)?;
        let steps = file.step.clone();
        let mut turns = BTreeMap::new();
        collect_turns(&steps, &mut turns);
        let request_timeout = Duration::from_millis(file.request_timeout_ms.max(1));
        if file.await_effect_ms > default_await_effect() {
            return Err(InputError::new(
                origin,
                format!(
                    "await-effect-ms = {} must be at most {}",
                    file.await_effect_ms,
                    default_await_effect()
                ),
            ));
        }
        let await_effect = Duration::from_millis(file.await_effect_ms);
        let script = Script {
            file,
            steps,
            turns,
            request_timeout,
            await_effect,
        };
        if script.drains() {
            profile.check_drain(origin)?;
        }
        if let Some(setup) = script.card_setup() {
            crate::card::check_profile(&profile, origin)?;
            if setup.max_age_s > crate::card::MAX_AGE_S_MAX {
                return Err(InputError::new(
                    origin,
                    format!(
                        "[card] max-age-s = {} must be at most {}",
                        setup.max_age_s,
                        crate::card::MAX_AGE_S_MAX
                    ),
                ));
            }
        }
        Ok(script)
    }
}

/// Whether any step (nested ones included) changes the card; collects the hosts the
/// changes name.
fn card_changes(steps: &[Step], hosts: &mut BTreeSet<Host>) -> bool {
    let mut any = false;
    for s in steps {
        match s {
            Step::Fault(Action::Card(c)) => {
                any = true;
                if let Some(h) = c.0.names_host() {
                    hosts.insert(h);
                }
            }
            Step::Concurrent(v) | Step::Sequence(v) => any |= card_changes(v, hosts),
            _ => {}
        }
    }
    any
}

fn collect_turns(steps: &[Step], turns: &mut BTreeMap<String, u32>) {
    for s in steps {
        match s {
            Step::Send(send) => {
                let t = turns.entry(send.conversation.clone()).or_insert(0);
                *t = (*t).max(send.turn);
            }
            Step::Concurrent(inner) | Step::Sequence(inner) => collect_turns(inner, turns),
            _ => {}
        }
    }
}

fn check_host(host: &Host, replicas: usize, origin: &str) -> Result<(), InputError> {
    let ok = match host {
        Host::Replica(i) => *i < replicas,
        Host::Router | Host::Store | Host::Ledger | Host::Webhook | Host::Client => true,
        Host::Driver | Host::Other(_) => false,
    };
    if ok {
        Ok(())
    } else {
        Err(InputError::new(
            origin,
            format!("unknown host `{host}`; hosts: router, replica-0..replica-{}, store, ledger, webhook, client", replicas - 1),
        ))
    }
}

fn check_to(to: &Option<Host>, replicas: usize, origin: &str) -> Result<(), InputError> {
    match to {
        Some(t) if !t.is_replica() => Err(InputError::new(
            origin,
            format!("`to = \"{t}\"` must name a replica"),
        )),
        Some(t) => check_host(t, replicas, origin),
        None => Ok(()),
    }
}

/// Longest principal name.
const PRINCIPAL_CHARS_MAX: usize = 32;

fn check_principal(principal: &Option<String>, origin: &str) -> Result<(), InputError> {
    match principal {
        Some(p)
            if p.is_empty()
                || p.len() > PRINCIPAL_CHARS_MAX
                || !p
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') =>
        {
            Err(InputError::new(
                origin,
                format!(
                    "principal `{p}` must be 1..={PRINCIPAL_CHARS_MAX} characters of a-z, 0-9 and `-` (`anonymous` sends no token)"
                ),
            ))
        }
        _ => Ok(()),
    }
}

/// Checks one step (and the steps inside it) against the scenario: the hosts it names exist,
/// its values are in bounds; `count` counts steps against [`STEPS_MAX`].
fn check_step(
    step: &Step,
    origin: &str,
    replicas: usize,
    count: &mut usize,
) -> Result<(), InputError> {
    *count += 1;
    if *count > STEPS_MAX {
        return Err(InputError::new(
            origin,
            format!("more than {STEPS_MAX} steps"),
        ));
    }
    match step {
        Step::Send(s) => {
            check_to(&s.to, replicas, origin)?;
            check_principal(&s.principal, origin)?;
            if s.context_id
                .as_deref()
                .is_some_and(|c| c.is_empty() || c.len() > 128)
            {
                return Err(InputError::new(
                    origin,
                    "send: context_id must be 1..=128 characters",
                ));
            }
            if s.turn == 0 {
                return Err(InputError::new(origin, "send: turn starts at 1"));
            }
            if s.omit_context_id == Some(true) {
                if s.context_id.is_some() {
                    return Err(InputError::new(
                        origin,
                        "send: omit_context_id sends no contextId; it cannot name one (context_id)",
                    ));
                }
                if s.turn == 1 && s.reply.is_none() && s.task_id.is_none() {
                    return Err(InputError::new(
                        origin,
                        "send: omit_context_id is for a follow-up that names its task (turn 2 on, a reply, or task_id)",
                    ));
                }
            }
            if let Some(text) = &s.reply {
                if text.is_empty()
                    || text.len() > REPLY_CHARS_MAX
                    || text.chars().any(char::is_control)
                {
                    return Err(InputError::new(
                        origin,
                        format!("send: reply must be 1..={REPLY_CHARS_MAX} characters, no control characters"),
                    ));
                }
                if s.needs_auth == Some(true) {
                    return Err(InputError::new(
                        origin,
                        "send: a reply answers a request; it cannot be one (needs_auth)",
                    ));
                }
            }
            if s.needs_auth == Some(true) && matches!(s.parts, Some(Parts::Text | Parts::File)) {
                return Err(InputError::new(
                    origin,
                    "send: needs_auth asks in the scripted data part, which parts = \"text\" or \"file\" leaves out",
                ));
            }
            let shaped = s.effect == Some(false) || s.progress.is_some_and(|n| n > 0);
            if shaped && matches!(s.parts, Some(Parts::Text | Parts::File)) {
                return Err(InputError::new(
                    origin,
                    "send: effect and progress ask in the scripted data part, which parts = \"text\" or \"file\" leaves out",
                ));
            }
            if s.progress.is_some_and(|n| n > crate::replica::MAX_PROGRESS) {
                return Err(InputError::new(
                    origin,
                    format!(
                        "send: progress must be 0..={} updates",
                        crate::replica::MAX_PROGRESS
                    ),
                ));
            }
        }
        Step::Cancel(s) | Step::Get(s) | Step::Subscribe(s) => {
            check_to(&s.to, replicas, origin)?;
            check_principal(&s.principal, origin)?;
        }
        Step::Authorize(s) => {
            if s.to.is_some() {
                return Err(InputError::new(
                    origin,
                    "authorize happens at the identity provider, out of band: it takes no `to`",
                ));
            }
            check_principal(&s.principal, origin)?;
        }
        Step::SetPush(s) => {
            check_to(&s.to, replicas, origin)?;
            check_principal(&s.principal, origin)?;
        }
        Step::Concurrent(inner) | Step::Sequence(inner) => {
            for s in inner {
                check_step(s, origin, replicas, count)?;
            }
        }
        Step::Fault(action) => {
            for host in action.hosts() {
                check_host(host, replicas, origin)?;
            }
            action
                .validate()
                .map_err(|why| InputError::new(origin, why.to_string()))?;
        }
        Step::Effect(gate, t) => {
            if t.turn == 0 {
                return Err(InputError::new(
                    origin,
                    format!("{}: turn starts at 1", gate.key()),
                ));
            }
        }
        Step::WaitMs(_) | Step::UntilMs(_) => {}
    }
    Ok(())
}

/// Refuses `[[expect.call]]` and `[[expect.task]]` entries that cannot match: an unknown
/// state, attempt 0, a turn on a call that is not a send, a code on a call expected `ok`.
fn check_calls(expect: &Expect, origin: &str) -> Result<(), InputError> {
    let bad = |what: String| Err(InputError::new(format!("{origin}: [expect]"), what));
    let known = |w: &str| calls::STATE_WORDS.contains(&w);
    for c in &expect.call {
        let label = c.label();
        if c.attempt == Some(0) {
            return bad(format!("{label}: attempt counts from 1"));
        }
        if c.turn.is_some() && c.method != CallMethod::Send {
            return bad(format!("{label}: only a send has a turn"));
        }
        if c.code.is_some() && matches!(c.outcome, Some(CallOutcome::Ok | CallOutcome::Info)) {
            return bad(format!("{label}: an error code needs outcome = \"fail\""));
        }
        for w in c.state.iter().chain(c.stream_states.iter().flatten()) {
            if !known(w) {
                return bad(format!(
                    "{label}: unknown state `{w}`; known: {}",
                    calls::STATE_WORDS.join(", ")
                ));
            }
        }
    }
    for t in &expect.task {
        if !known(&t.state) && t.state != "lost" {
            return bad(format!(
                "task of {}: unknown state `{}`; known: {}, lost",
                t.conversation,
                t.state,
                calls::STATE_WORDS.join(", ")
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
