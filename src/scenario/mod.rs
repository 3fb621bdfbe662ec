//! Scripted scenarios: a deterministic script of A2A calls and faults, in TOML.
//!
//! The format is the one in `../shared/CONTRACT.md`: a model, a replica count, a routing
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

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::auth::DEFAULT_PRINCIPAL;
use crate::client::history::{OpKind, Outcome};
use crate::client::Client;
use crate::error::InputError;
use crate::faults::Action;
use crate::replica::TurnInfo;
use crate::workload;
use crate::world::DriverLink;

/// A `send` step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendStep {
    /// The conversation (`c1`); its contextId and messageIds derive from it and the seed.
    pub conversation: String,
    /// The turn, from 1; turn 1 creates the task.
    pub turn: u32,
    /// Pin the request to this replica; default: the scenario's routing picks one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Reuse this messageId (a retry or a duplicate); defaults to the turn's own id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// `false` sends with `returnImmediately`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocking: Option<bool>,
    /// Sends with the streaming method (SSE) instead of SendMessage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// The caller's identity, where the contract checks owners (default `alice`;
    /// `anonymous` sends no token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// Send with this contextId instead of the conversation's own: a continuation whose
    /// contextId does not match its task's (A2A-BEHAVIOURS.md §6.10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The turn asks for an action that needs the user's authorisation: the agent answers
    /// with `auth-required` until it is authorised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_auth: Option<bool>,
    /// Instead of the turn's own message, a reply with this text (`"yes"`) on the
    /// conversation's task, as a client answers an `auth-required` (or any interrupted)
    /// task; its messageId is the turn's with `-reply1`, `-reply2`, ... appended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
}

/// A step aimed at a conversation's task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskStep {
    /// The conversation whose task it aims at (skipped when it has no task yet).
    pub conversation: String,
    /// Pin the request to this replica; default: the scenario's routing picks one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The caller's identity, where the contract checks owners.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
}

/// A turn, named by its conversation and number: what `hold-effect`, `await-effect` and
/// `release-effect` aim at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnStep {
    /// The conversation.
    pub conversation: String,
    /// The turn.
    pub turn: u32,
}

/// What an effect step does at the ledger (see [`crate::ground::ledger`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EffectGate {
    /// From now on the turn's effects are applied on arrival and answered only once
    /// released: the executor stays inside its effect step.
    Hold,
    /// Wait until an effect of the turn has arrived (at most [`AWAIT_EFFECT_MAX`]).
    Await,
    /// Answer the turn's held effects, and stop holding it.
    Release,
}

impl EffectGate {
    /// The step's key in a scenario file.
    pub fn key(self) -> &'static str {
        match self {
            EffectGate::Hold => "hold-effect",
            EffectGate::Await => "await-effect",
            EffectGate::Release => "release-effect",
        }
    }
}

/// The longest an `await-effect` step waits before the script goes on without it.
pub const AWAIT_EFFECT_MAX: Duration = Duration::from_secs(10);

/// How often an `await-effect` step looks at the ledger.
const AWAIT_EFFECT_POLL: Duration = Duration::from_millis(1);

/// A `set-push` step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushStep {
    /// The conversation whose task gets the push configuration.
    pub conversation: String,
    /// Pin the request to this replica; default: the scenario's routing picks one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Where pushes go.
    pub url: String,
    /// The caller's identity (default `alice`; `anonymous` sends no token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
}

/// A `latency` step: the maximum latency of the link between two hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LatencyStep {
    /// The two ends of the link.
    pub between: [String; 2],
    /// The new maximum, simulated ms; absent restores the normal latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ms: Option<u64>,
}

/// A `buggify` or `kill-at` step: a fault point and how often it fires (0 turns it off).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointStep {
    /// The point's name (see [`crate::buggify`]).
    pub point: String,
    /// The probability that it fires each time it is reached.
    pub probability: f64,
}

/// One `[[step]]` table as written: exactly one key may be set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct StepTable {
    /// `send = { conversation, turn, to?, message_id?, blocking?, streaming?, principal?,
    /// context_id? }`
    pub send: Option<SendStep>,
    /// `cancel = { conversation, to?, principal? }`
    pub cancel: Option<TaskStep>,
    /// `get = { conversation, to?, principal? }`
    pub get: Option<TaskStep>,
    /// `subscribe = { conversation, to?, principal? }`
    pub subscribe: Option<TaskStep>,
    /// `set-push = { conversation, to?, url, principal? }`
    pub set_push: Option<PushStep>,
    /// `authorize = { conversation, principal? }`: the user authorises the task's paused
    /// action at the identity provider, out of band.
    pub authorize: Option<TaskStep>,
    /// `concurrent = [ {send = ...}, ... ]`: start all at the same simulated instant.
    pub concurrent: Option<Vec<StepTable>>,
    /// `sequence = [ {send = ...}, ... ]`: run in order.
    pub sequence: Option<Vec<StepTable>>,
    /// `kill = "replica-1"`
    pub kill: Option<String>,
    /// `restart = "replica-1"`
    pub restart: Option<String>,
    /// `partition = ["replica-0", "store"]`: both ways.
    pub partition: Option<[String; 2]>,
    /// `partition-oneway = ["replica-0", "store"]`: from the first to the second only.
    pub partition_oneway: Option<[String; 2]>,
    /// `repair = ["replica-0", "store"]`: one link back, both ways.
    pub repair: Option<[String; 2]>,
    /// `latency = { between = ["replica-0", "store"], max-ms? }`
    pub latency: Option<LatencyStep>,
    /// `heal = "all"`: every link back, every crashed host restarted.
    pub heal: Option<String>,
    /// `wait-ms = 500`
    pub wait_ms: Option<u64>,
    /// `until-ms = 1200`: wait until this simulated time since the start of the run.
    pub until_ms: Option<u64>,
    /// `drop-reply = true`: the router loses the next reply.
    pub drop_reply: Option<bool>,
    /// `hold = ["replica-0", "store"]`: hold the messages between two hosts.
    pub hold: Option<[String; 2]>,
    /// `release = ["replica-0", "store"]`: deliver what was held, stop holding.
    pub release: Option<[String; 2]>,
    /// `buggify = { point = "conflict-on-save", probability = 1.0 }`
    pub buggify: Option<PointStep>,
    /// `kill-at = { point = "after-effect", probability = 1.0 }`
    pub kill_at: Option<PointStep>,
    /// `card = { move-to | streaming | revoke-key | tamper }`: the agent card changes.
    pub card: Option<crate::card::CardStep>,
    /// `hold-effect = { conversation, turn }`: the ledger answers that turn's effects only
    /// once released, so its executor stays inside its effect step.
    pub hold_effect: Option<TurnStep>,
    /// `await-effect = { conversation, turn }`: wait until that turn's effect reached the
    /// ledger.
    pub await_effect: Option<TurnStep>,
    /// `release-effect = { conversation, turn }`: answer that turn's held effects.
    pub release_effect: Option<TurnStep>,
}

/// One step, resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// A turn of a conversation.
    Send(SendStep),
    /// CancelTask.
    Cancel(TaskStep),
    /// GetTask.
    Get(TaskStep),
    /// SubscribeToTask.
    Subscribe(TaskStep),
    /// CreateTaskPushNotificationConfig.
    SetPush(PushStep),
    /// An out-of-band authorisation of the conversation's task (not an A2A call).
    Authorize(TaskStep),
    /// Start every step at the same simulated instant; done when all are.
    Concurrent(Vec<Step>),
    /// Run the steps in order.
    Sequence(Vec<Step>),
    /// A fault, applied by the driver before the next tick.
    Fault(Action),
    /// Pause this many simulated ms.
    WaitMs(u64),
    /// Pause until this many simulated ms since the start of the run.
    UntilMs(u64),
    /// Hold, await or release a turn's effect at the ledger.
    Effect(EffectGate, TurnStep),
}

impl Step {
    /// The table that writes this step (the inverse of parsing, for every step a file can
    /// hold). Fault actions with no step kind (`LostReplyRate`) become a `wait-ms = 0`.
    pub fn to_table(&self) -> StepTable {
        let mut t = StepTable::default();
        match self {
            Step::Send(s) => t.send = Some(s.clone()),
            Step::Cancel(s) => t.cancel = Some(s.clone()),
            Step::Get(s) => t.get = Some(s.clone()),
            Step::Subscribe(s) => t.subscribe = Some(s.clone()),
            Step::SetPush(s) => t.set_push = Some(s.clone()),
            Step::Authorize(s) => t.authorize = Some(s.clone()),
            Step::Concurrent(v) => t.concurrent = Some(v.iter().map(Step::to_table).collect()),
            Step::Sequence(v) => t.sequence = Some(v.iter().map(Step::to_table).collect()),
            Step::WaitMs(ms) => t.wait_ms = Some(*ms),
            Step::UntilMs(ms) => t.until_ms = Some(*ms),
            Step::Effect(gate, turn) => {
                let slot = match gate {
                    EffectGate::Hold => &mut t.hold_effect,
                    EffectGate::Await => &mut t.await_effect,
                    EffectGate::Release => &mut t.release_effect,
                };
                *slot = Some(turn.clone());
            }
            Step::Fault(a) => match a {
                Action::Kill(h) => t.kill = Some(h.clone()),
                Action::Restart(h) => t.restart = Some(h.clone()),
                Action::Partition(a, b) => t.partition = Some([a.clone(), b.clone()]),
                Action::PartitionOneway(a, b) => t.partition_oneway = Some([a.clone(), b.clone()]),
                Action::Repair(a, b) => t.repair = Some([a.clone(), b.clone()]),
                Action::HealAll => t.heal = Some("all".into()),
                Action::DropNextReply => t.drop_reply = Some(true),
                Action::LinkLatency(a, b, ms) => {
                    t.latency = Some(LatencyStep {
                        between: [a.clone(), b.clone()],
                        max_ms: *ms,
                    })
                }
                Action::LostReplyRate(_) => t.wait_ms = Some(0),
                Action::Hold(a, b) => t.hold = Some([a.clone(), b.clone()]),
                Action::Release(a, b) => t.release = Some([a.clone(), b.clone()]),
                Action::Buggify(p, rate) => {
                    t.buggify = Some(PointStep {
                        point: p.name().into(),
                        probability: *rate,
                    })
                }
                Action::KillAt(p, rate) => {
                    t.kill_at = Some(PointStep {
                        point: p.name().into(),
                        probability: *rate,
                    })
                }
                Action::Card(c) => t.card = Some(crate::card::CardStep::of(c)),
            },
        }
        t
    }

    /// Steps that do something (sends, reads, faults, waits), nested ones included;
    /// `concurrent` and `sequence` themselves are not counted.
    pub fn count(steps: &[Step]) -> usize {
        steps
            .iter()
            .map(|s| match s {
                Step::Concurrent(v) | Step::Sequence(v) => Step::count(v),
                _ => 1,
            })
            .sum()
    }
}

/// What a scenario expects.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Exactly these invariants must be violated; `[]` means every invariant must pass.
    #[serde(default)]
    pub violations: Vec<String>,
}

/// One run held against a file's `[expect]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectOutcome {
    /// The invariants `[expect]` names, sorted.
    pub expected: Vec<String>,
    /// The invariants the run violated, sorted.
    pub got: Vec<String>,
    /// Exactly the expected violations, and the run finished without an error.
    pub met: bool,
}

impl Expect {
    /// Holds one run's summary against these expectations.
    pub fn judge(&self, summary: &crate::sweep::runner::RunSummary) -> ExpectOutcome {
        let mut expected = self.violations.clone();
        expected.sort();
        let mut got: Vec<String> = summary.violated().iter().map(|s| s.to_string()).collect();
        got.sort();
        let met = got == expected && summary.error.is_none();
        ExpectOutcome { expected, got, met }
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
    /// `[card]`: simulate the agent card (also on when a step changes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<crate::card::CardSetup>,
    /// The `[[step]]` tables, in order.
    #[serde(default)]
    pub step: Vec<StepTable>,
    /// `[expect]`.
    #[serde(default)]
    pub expect: Expect,
}

fn two() -> usize {
    2
}
fn round_robin() -> String {
    "round-robin".into()
}
fn default_timeout() -> u64 {
    1500
}

/// Most steps a scenario may have (nested steps included).
pub const STEPS_MAX: usize = 10_000;
/// Most replicas a run may have.
pub const REPLICAS_MAX: usize = 16;
/// Longest text of a `reply`.
pub const REPLY_CHARS_MAX: usize = 200;
/// Highest link latency a `latency` step may ask for, simulated ms (an hour). Waits are not
/// bounded: a run's simulated-time budget cuts a scenario that waits too long.
pub const STEP_MS_MAX: u64 = 3_600_000;

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
        let text = std::fs::read_to_string(path)
            .map_err(|e| InputError::new(&origin, format!("cannot read: {e}")))?;
        Script::parse(&text, &origin)
    }

    /// A scenario from resolved steps: `base` gives everything but the steps.
    pub fn from_steps(base: &ScenarioFile, steps: &[Step]) -> Result<Script, InputError> {
        let mut file = base.clone();
        file.step = steps.iter().map(Step::to_table).collect();
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
        write_toml(&self.file)
    }

    /// The card simulation's setup, when the scenario has a `[card]` table or a `card` step.
    pub fn card_setup(&self) -> Option<crate::card::CardSetup> {
        self.file
            .card
            .or_else(|| crate::card::has_card_steps(&self.steps).then(Default::default))
    }

    /// Validates a parsed file.
    pub fn from_file(file: ScenarioFile, origin: &str) -> Result<Script, InputError> {
        // The model is checked when the file is read, not when it runs.
        let profile = crate::model::Profile::load(&file.model)
            .map_err(|e| InputError::new(origin, e.to_string()))?;
        if file.replicas == 0 || file.replicas > REPLICAS_MAX {
            return Err(InputError::new(
                origin,
                format!("replicas = {} must be 1..={REPLICAS_MAX}", file.replicas),
            ));
        }
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
        crate::check::validate_names(&file.expect.violations, origin)?;
        let mut count = 0;
        let mut steps = Vec::new();
        for (i, table) in file.step.iter().enumerate() {
            steps.push(resolve(
                table,
                &format!("{origin}: step {}", i + 1),
                file.replicas,
                &mut count,
            )?);
        }
        let mut turns = BTreeMap::new();
        collect_turns(&steps, &mut turns);
        let request_timeout = Duration::from_millis(file.request_timeout_ms.max(1));
        let script = Script {
            file,
            steps,
            turns,
            request_timeout,
        };
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

fn check_host(host: &str, replicas: usize, origin: &str) -> Result<(), InputError> {
    let ok = match host.strip_prefix("replica-") {
        Some(i) => i.parse::<usize>().is_ok_and(|i| i < replicas),
        None => matches!(host, "router" | "store" | "ledger" | "webhook" | "client"),
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

fn check_to(to: &Option<String>, replicas: usize, origin: &str) -> Result<(), InputError> {
    match to {
        Some(t) if !t.starts_with("replica-") => Err(InputError::new(
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

fn check_probability(what: &str, p: f64, origin: &str) -> Result<(), InputError> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(InputError::new(
            origin,
            format!("{what} probability = {p} must be in [0, 1]"),
        ))
    }
}

fn check_ms(what: &str, ms: u64, origin: &str) -> Result<(), InputError> {
    if ms > STEP_MS_MAX {
        return Err(InputError::new(
            origin,
            format!("{what} = {ms} is more than {STEP_MS_MAX} ms"),
        ));
    }
    Ok(())
}

fn resolve(
    table: &StepTable,
    origin: &str,
    replicas: usize,
    count: &mut usize,
) -> Result<Step, InputError> {
    *count += 1;
    if *count > STEPS_MAX {
        return Err(InputError::new(
            origin,
            format!("more than {STEPS_MAX} steps"),
        ));
    }
    let mut found: Vec<Step> = Vec::new();
    if let Some(s) = &table.send {
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
        if let Some(text) = &s.reply {
            if text.is_empty() || text.len() > REPLY_CHARS_MAX || text.chars().any(char::is_control)
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
        found.push(Step::Send(s.clone()));
    }
    for (step, make) in [
        (&table.cancel, Step::Cancel as fn(TaskStep) -> Step),
        (&table.get, Step::Get),
        (&table.subscribe, Step::Subscribe),
    ] {
        if let Some(s) = step {
            check_to(&s.to, replicas, origin)?;
            check_principal(&s.principal, origin)?;
            found.push(make(s.clone()));
        }
    }
    if let Some(s) = &table.authorize {
        if s.to.is_some() {
            return Err(InputError::new(
                origin,
                "authorize happens at the identity provider, out of band: it takes no `to`",
            ));
        }
        check_principal(&s.principal, origin)?;
        found.push(Step::Authorize(s.clone()));
    }
    if let Some(s) = &table.set_push {
        check_to(&s.to, replicas, origin)?;
        check_principal(&s.principal, origin)?;
        found.push(Step::SetPush(s.clone()));
    }
    if let Some(inner) = &table.concurrent {
        let mut steps = Vec::new();
        for t in inner {
            steps.push(resolve(t, origin, replicas, count)?);
        }
        found.push(Step::Concurrent(steps));
    }
    if let Some(inner) = &table.sequence {
        let mut steps = Vec::new();
        for t in inner {
            steps.push(resolve(t, origin, replicas, count)?);
        }
        found.push(Step::Sequence(steps));
    }
    if let Some(h) = &table.kill {
        check_host(h, replicas, origin)?;
        if h == "client" {
            return Err(InputError::new(
                origin,
                "the client cannot be killed: it runs the script",
            ));
        }
        found.push(Step::Fault(Action::Kill(h.clone())));
    }
    if let Some(h) = &table.restart {
        check_host(h, replicas, origin)?;
        found.push(Step::Fault(Action::Restart(h.clone())));
    }
    if let Some([a, b]) = &table.partition {
        check_host(a, replicas, origin)?;
        check_host(b, replicas, origin)?;
        found.push(Step::Fault(Action::Partition(a.clone(), b.clone())));
    }
    if let Some([a, b]) = &table.partition_oneway {
        check_host(a, replicas, origin)?;
        check_host(b, replicas, origin)?;
        found.push(Step::Fault(Action::PartitionOneway(a.clone(), b.clone())));
    }
    if let Some([a, b]) = &table.repair {
        check_host(a, replicas, origin)?;
        check_host(b, replicas, origin)?;
        found.push(Step::Fault(Action::Repair(a.clone(), b.clone())));
    }
    if let Some(l) = &table.latency {
        let [a, b] = &l.between;
        check_host(a, replicas, origin)?;
        check_host(b, replicas, origin)?;
        check_ms("latency max-ms", l.max_ms.unwrap_or(0), origin)?;
        found.push(Step::Fault(Action::LinkLatency(
            a.clone(),
            b.clone(),
            l.max_ms,
        )));
    }
    if let Some([a, b]) = &table.hold {
        check_host(a, replicas, origin)?;
        check_host(b, replicas, origin)?;
        found.push(Step::Fault(Action::Hold(a.clone(), b.clone())));
    }
    if let Some([a, b]) = &table.release {
        check_host(a, replicas, origin)?;
        check_host(b, replicas, origin)?;
        found.push(Step::Fault(Action::Release(a.clone(), b.clone())));
    }
    if let Some(p) = &table.buggify {
        let point = crate::buggify::Point::parse(&p.point).ok_or_else(|| {
            InputError::new(
                origin,
                format!(
                    "buggify point `{}` is unknown; points: {}",
                    p.point,
                    crate::buggify::POINTS
                        .iter()
                        .map(|p| p.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
        check_probability("buggify", p.probability, origin)?;
        found.push(Step::Fault(Action::Buggify(point, p.probability)));
    }
    if let Some(p) = &table.kill_at {
        let point = crate::buggify::KillPoint::parse(&p.point).ok_or_else(|| {
            InputError::new(
                origin,
                format!(
                    "kill-at point `{}` is unknown; points: {}",
                    p.point,
                    crate::buggify::KILL_POINTS
                        .iter()
                        .map(|p| p.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
        check_probability("kill-at", p.probability, origin)?;
        found.push(Step::Fault(Action::KillAt(point, p.probability)));
    }
    if let Some(h) = &table.heal {
        if h != "all" {
            return Err(InputError::new(
                origin,
                format!("heal = \"{h}\": only \"all\" is supported"),
            ));
        }
        found.push(Step::Fault(Action::HealAll));
    }
    if let Some(ms) = table.wait_ms {
        found.push(Step::WaitMs(ms));
    }
    if let Some(ms) = table.until_ms {
        found.push(Step::UntilMs(ms));
    }
    if let Some(c) = &table.card {
        let change = c.change().map_err(|why| InputError::new(origin, why))?;
        found.push(Step::Fault(Action::Card(change)));
    }
    for (gate, step) in [
        (EffectGate::Hold, &table.hold_effect),
        (EffectGate::Await, &table.await_effect),
        (EffectGate::Release, &table.release_effect),
    ] {
        if let Some(t) = step {
            if t.turn == 0 {
                return Err(InputError::new(
                    origin,
                    format!("{}: turn starts at 1", gate.key()),
                ));
            }
            found.push(Step::Effect(gate, t.clone()));
        }
    }
    if let Some(drop) = table.drop_reply {
        if drop {
            found.push(Step::Fault(Action::DropNextReply));
        } else {
            found.push(Step::WaitMs(0));
        }
    }
    match found.len() {
        1 => Ok(found.pop().expect("one")),
        0 => Err(InputError::new(origin, "a step needs one key: send, cancel, get, subscribe, set-push, authorize, concurrent, sequence, kill, restart, partition, partition-oneway, repair, latency, hold, release, buggify, kill-at, heal, wait-ms, until-ms, drop-reply, card, hold-effect, await-effect or release-effect")),
        _ => Err(InputError::new(origin, "a step has more than one key; split it into several [[step]] tables")),
    }
}

/// A TOML basic string.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn pair(hosts: &[String; 2]) -> String {
    format!("[{}, {}]", quote(&hosts[0]), quote(&hosts[1]))
}

/// `{ a = 1, b = "x" }` from the fields that are set, in the given order.
fn inline_table(fields: &[(&str, Option<String>)]) -> String {
    let inner: Vec<String> = fields
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k} = {v}")))
        .collect();
    format!("{{ {} }}", inner.join(", "))
}

/// The `key = value` pairs of one step table, each value on one line.
fn step_pairs(t: &StepTable) -> Vec<(&'static str, String)> {
    let q = |s: &Option<String>| s.as_deref().map(quote);
    let task = |s: &TaskStep| {
        inline_table(&[
            ("conversation", Some(quote(&s.conversation))),
            ("to", q(&s.to)),
            ("principal", q(&s.principal)),
        ])
    };
    let list = |v: &[StepTable]| {
        let items: Vec<String> = v.iter().map(inline_step).collect();
        format!("[{}]", items.join(", "))
    };
    let mut out = Vec::new();
    if let Some(s) = &t.send {
        out.push((
            "send",
            inline_table(&[
                ("conversation", Some(quote(&s.conversation))),
                ("turn", Some(s.turn.to_string())),
                ("to", q(&s.to)),
                ("message_id", q(&s.message_id)),
                ("blocking", s.blocking.map(|b| b.to_string())),
                ("streaming", s.streaming.map(|b| b.to_string())),
                ("principal", q(&s.principal)),
                ("context_id", q(&s.context_id)),
                ("needs_auth", s.needs_auth.map(|b| b.to_string())),
                ("reply", q(&s.reply)),
            ]),
        ));
    }
    if let Some(s) = &t.cancel {
        out.push(("cancel", task(s)));
    }
    if let Some(s) = &t.get {
        out.push(("get", task(s)));
    }
    if let Some(s) = &t.subscribe {
        out.push(("subscribe", task(s)));
    }
    if let Some(s) = &t.authorize {
        out.push(("authorize", task(s)));
    }
    if let Some(s) = &t.set_push {
        out.push((
            "set-push",
            inline_table(&[
                ("conversation", Some(quote(&s.conversation))),
                ("to", q(&s.to)),
                ("url", Some(quote(&s.url))),
                ("principal", q(&s.principal)),
            ]),
        ));
    }
    if let Some(v) = &t.concurrent {
        out.push(("concurrent", list(v)));
    }
    if let Some(v) = &t.sequence {
        out.push(("sequence", list(v)));
    }
    if let Some(h) = &t.kill {
        out.push(("kill", quote(h)));
    }
    if let Some(h) = &t.restart {
        out.push(("restart", quote(h)));
    }
    if let Some(p) = &t.partition {
        out.push(("partition", pair(p)));
    }
    if let Some(p) = &t.partition_oneway {
        out.push(("partition-oneway", pair(p)));
    }
    if let Some(p) = &t.repair {
        out.push(("repair", pair(p)));
    }
    if let Some(l) = &t.latency {
        out.push((
            "latency",
            inline_table(&[
                ("between", Some(pair(&l.between))),
                ("max-ms", l.max_ms.map(|m| m.to_string())),
            ]),
        ));
    }
    if let Some(p) = &t.hold {
        out.push(("hold", pair(p)));
    }
    if let Some(p) = &t.release {
        out.push(("release", pair(p)));
    }
    for (key, step) in [("buggify", &t.buggify), ("kill-at", &t.kill_at)] {
        if let Some(p) = step {
            out.push((
                key,
                inline_table(&[
                    ("point", Some(quote(&p.point))),
                    ("probability", Some(format!("{:?}", p.probability))),
                ]),
            ));
        }
    }
    if let Some(h) = &t.heal {
        out.push(("heal", quote(h)));
    }
    if let Some(ms) = t.wait_ms {
        out.push(("wait-ms", ms.to_string()));
    }
    if let Some(ms) = t.until_ms {
        out.push(("until-ms", ms.to_string()));
    }
    if let Some(d) = t.drop_reply {
        out.push(("drop-reply", d.to_string()));
    }
    if let Some(c) = &t.card {
        out.push(("card", c.to_inline()));
    }
    for (key, step) in [
        ("hold-effect", &t.hold_effect),
        ("await-effect", &t.await_effect),
        ("release-effect", &t.release_effect),
    ] {
        if let Some(s) = step {
            out.push((
                key,
                inline_table(&[
                    ("conversation", Some(quote(&s.conversation))),
                    ("turn", Some(s.turn.to_string())),
                ]),
            ));
        }
    }
    out
}

/// One step as an inline table, for lists.
fn inline_step(t: &StepTable) -> String {
    let pairs: Vec<(&str, Option<String>)> = step_pairs(t)
        .into_iter()
        .map(|(k, v)| (k, Some(v)))
        .collect();
    inline_table(&pairs)
}

fn write_toml(file: &ScenarioFile) -> String {
    let mut out = String::new();
    let mut line = |k: &str, v: String| out.push_str(&format!("{k} = {v}\n"));
    line("name", quote(&file.name));
    if let Some(d) = &file.description {
        line("description", quote(d));
    }
    if let Some(p) = &file.postmortem {
        line("postmortem", quote(p));
    }
    line("model", quote(&file.model));
    line("replicas", file.replicas.to_string());
    line("routing", quote(&file.routing));
    line("seed", file.seed.to_string());
    if file.request_timeout_ms != default_timeout() {
        line("request-timeout-ms", file.request_timeout_ms.to_string());
    }
    if let Some(c) = &file.card {
        out.push_str(&format!("\n[card]\nmax-age-s = {}\n", c.max_age_s));
    }
    for t in &file.step {
        out.push_str("\n[[step]]\n");
        for (k, v) in step_pairs(t) {
            // A list of steps gets one line per element; inline tables stay on one line.
            let list = match k {
                "concurrent" => t.concurrent.as_ref(),
                "sequence" => t.sequence.as_ref(),
                _ => None,
            };
            match list {
                Some(items) if !items.is_empty() => {
                    out.push_str(&format!("{k} = [\n"));
                    for item in items {
                        out.push_str(&format!("  {},\n", inline_step(item)));
                    }
                    out.push_str("]\n");
                }
                _ => out.push_str(&format!("{k} = {v}\n")),
            }
        }
    }
    let names: Vec<String> = file.expect.violations.iter().map(|v| quote(v)).collect();
    out.push_str(&format!(
        "\n[expect]\nviolations = [{}]\n",
        names.join(", ")
    ));
    out
}

/// Runs the script on the client host; returns `tail` after every step is done, so that
/// background work (non-blocking turns, pushes, takeovers) can finish before the world stops.
pub async fn run_script(
    script: &Script,
    seed: u64,
    client: Rc<Client>,
    link: DriverLink,
    tail: Duration,
) {
    let run = Run {
        script,
        seed,
        client: &client,
        link: &link,
        replies: RefCell::default(),
    };
    for step in &script.steps {
        run_step(step, &run).await;
    }
    tokio::time::sleep(tail).await;
}

/// What every step of one script run shares.
struct Run<'a> {
    script: &'a Script,
    seed: u64,
    client: &'a Rc<Client>,
    link: &'a DriverLink,
    /// Replies sent so far per (conversation, turn): each reply's messageId is its own.
    replies: RefCell<BTreeMap<(String, u32), u32>>,
}

fn run_step<'a>(
    step: &'a Step,
    run: &'a Run<'a>,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + 'a>> {
    let (script, seed, client, link) = (run.script, run.seed, run.client, run.link);
    Box::pin(async move {
        let task_of = |c: &str| link.tasks.borrow().get(c).cloned();
        match step {
            Step::Send(s) => {
                let info = TurnInfo {
                    conversation: s.conversation.clone(),
                    turn: s.turn,
                    turns: script.turns.get(&s.conversation).copied().unwrap_or(s.turn),
                };
                let own_ctx = workload::context_id(seed, &s.conversation);
                let ctx = s.context_id.clone().unwrap_or_else(|| own_ctx.clone());
                let principal = s.principal.as_deref().unwrap_or(DEFAULT_PRINCIPAL);
                let own_mid = workload::message_id(seed, &s.conversation, s.turn);
                let mid = match (&s.message_id, &s.reply) {
                    (Some(m), _) => m.clone(),
                    (None, Some(_)) => {
                        let mut replies = run.replies.borrow_mut();
                        let n = replies.entry((s.conversation.clone(), s.turn)).or_insert(0);
                        *n += 1;
                        format!("{own_mid}-reply{n}")
                    }
                    (None, None) => own_mid,
                };
                let task_id = if s.turn > 1 || s.reply.is_some() {
                    task_of(&s.conversation)
                } else {
                    None
                };
                let mut message = Client::turn_message(&info, &mid, &ctx, task_id.as_deref());
                if let Some(text) = &s.reply {
                    message.parts[0] = a2a::Part::text(text.clone());
                }
                if s.needs_auth == Some(true) {
                    crate::replica::ask_for_authorised_action(&mut message);
                }
                let blocking = s.blocking.unwrap_or(true);
                let mut params = json!({ "message": message });
                if !blocking {
                    params["configuration"] = json!({ "returnImmediately": true });
                }
                let kind = OpKind::Send {
                    conversation: s.conversation.clone(),
                    turn: s.turn,
                    message_id: mid,
                    blocking,
                    foreign_context: ctx != own_ctx,
                    needs_auth: s.needs_auth == Some(true),
                    reply: s.reply.clone(),
                };
                let answer = if s.streaming.unwrap_or(false) {
                    client
                        .stream_as(
                            principal,
                            kind,
                            "SendStreamingMessage",
                            params,
                            Some(&ctx),
                            s.to.as_deref(),
                            Duration::from_secs(10),
                        )
                        .await
                } else {
                    client
                        .unary_as(
                            principal,
                            kind,
                            "SendMessage",
                            params,
                            Some(&ctx),
                            s.to.as_deref(),
                        )
                        .await
                };
                if let (Outcome::Ok, Some(task), false) =
                    (&answer.outcome, &answer.task, s.context_id.is_some())
                {
                    link.tasks
                        .borrow_mut()
                        .entry(s.conversation.clone())
                        .or_insert_with(|| task.id.clone());
                }
            }
            Step::Cancel(s) | Step::Get(s) | Step::Subscribe(s) => {
                let Some(id) = task_of(&s.conversation) else {
                    client.trace.record(
                        "client",
                        format!("skip step on {}: no task yet", s.conversation),
                    );
                    return;
                };
                let ctx = workload::context_id(seed, &s.conversation);
                let params = json!({ "id": id });
                let conversation = s.conversation.clone();
                let principal = s.principal.as_deref().unwrap_or(DEFAULT_PRINCIPAL);
                match step {
                    Step::Cancel(_) => {
                        client
                            .unary_as(
                                principal,
                                OpKind::Cancel { conversation },
                                "CancelTask",
                                params,
                                Some(&ctx),
                                s.to.as_deref(),
                            )
                            .await;
                    }
                    Step::Get(_) => {
                        client
                            .unary_as(
                                principal,
                                OpKind::Get { conversation },
                                "GetTask",
                                params,
                                Some(&ctx),
                                s.to.as_deref(),
                            )
                            .await;
                    }
                    _ => {
                        client
                            .stream_as(
                                principal,
                                OpKind::Subscribe { conversation },
                                "SubscribeToTask",
                                params,
                                Some(&ctx),
                                s.to.as_deref(),
                                Duration::from_secs(5),
                            )
                            .await;
                    }
                }
            }
            Step::Authorize(s) => {
                let Some(id) = task_of(&s.conversation) else {
                    client.trace.record(
                        "client",
                        format!("skip authorize on {}: no task yet", s.conversation),
                    );
                    return;
                };
                let principal = s.principal.as_deref().unwrap_or(DEFAULT_PRINCIPAL);
                client.authorize(principal, &s.conversation, &id);
            }
            Step::SetPush(s) => {
                let Some(id) = task_of(&s.conversation) else {
                    client.trace.record(
                        "client",
                        format!("skip set-push on {}: no task yet", s.conversation),
                    );
                    return;
                };
                let ctx = workload::context_id(seed, &s.conversation);
                client
                    .unary_as(
                        s.principal.as_deref().unwrap_or(DEFAULT_PRINCIPAL),
                        OpKind::SetPush {
                            conversation: s.conversation.clone(),
                        },
                        "CreateTaskPushNotificationConfig",
                        json!({ "taskId": id, "url": s.url }),
                        Some(&ctx),
                        s.to.as_deref(),
                    )
                    .await;
            }
            Step::Concurrent(steps) => {
                let futures: Vec<_> = steps.iter().map(|s| run_step(s, run)).collect();
                join_all(futures).await;
            }
            Step::Sequence(steps) => {
                for s in steps {
                    run_step(s, run).await;
                }
            }
            Step::Fault(action) => {
                if let Some(apply) = &link.apply_now {
                    apply(action.clone()).await;
                    return;
                }
                link.commands.borrow_mut().push_back(action.clone());
                // The driver applies it before the next tick.
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            Step::WaitMs(ms) => tokio::time::sleep(Duration::from_millis(*ms)).await,
            Step::Effect(gate, t) => {
                let Some(ledger) = &link.ledger else {
                    client
                        .trace
                        .record("client", format!("skip {}: no ledger", gate.key()));
                    return;
                };
                let what = format!("{} {}#{}", gate.key(), t.conversation, t.turn);
                match gate {
                    EffectGate::Hold => ledger.borrow_mut().hold(&t.conversation, t.turn),
                    EffectGate::Release => ledger.borrow_mut().release(&t.conversation, t.turn),
                    EffectGate::Await => {
                        let mut waited = Duration::ZERO;
                        while !ledger.borrow().arrived(&t.conversation, t.turn) {
                            if waited >= AWAIT_EFFECT_MAX {
                                client.trace.record(
                                    "client",
                                    format!("{what}: gave up after {} ms", waited.as_millis()),
                                );
                                return;
                            }
                            tokio::time::sleep(AWAIT_EFFECT_POLL).await;
                            waited += AWAIT_EFFECT_POLL;
                        }
                    }
                }
                client.trace.record("client", what);
            }
            Step::UntilMs(ms) => {
                let now = crate::trace::now_ms();
                if *ms > now {
                    tokio::time::sleep(Duration::from_millis(ms - now)).await;
                }
            }
        }
    })
}

/// Polls every future to completion, all started at once.
async fn join_all(futures: Vec<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + '_>>>) {
    let mut futures: Vec<Option<_>> = futures.into_iter().map(Some).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for slot in futures.iter_mut() {
            if let Some(f) = slot {
                if f.as_mut().poll(cx).is_ready() {
                    *slot = None;
                } else {
                    pending = true;
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    const ABA: &str = r#"
name = "aba"
model = "a2a-python-1.1"
replicas = 2
[[step]]
send = { conversation = "c1", turn = 1, to = "replica-0" }
[[step]]
send = { conversation = "c1", turn = 2, to = "replica-1" }
[expect]
violations = ["no-lost-writes"]
"#;

    #[test]
    fn the_contract_example_parses() {
        let s = Script::parse(ABA, "aba.toml").unwrap();
        assert_eq!(s.steps.len(), 2);
        assert_eq!(s.turns["c1"], 2);
    }

    #[test]
    fn an_unknown_key_names_the_line() {
        let bad = ABA.replace("replicas = 2", "replicas = 2\nreplics = 3");
        let err = Script::parse(&bad, "aba.toml").unwrap_err().to_string();
        assert!(err.starts_with("aba.toml:5:"), "{err}");
        assert!(err.contains("replics"), "{err}");
    }

    #[test]
    fn a_step_with_two_keys_is_refused() {
        let bad = format!("{ABA}\n[[step]]\nkill = \"replica-0\"\nwait-ms = 5\n");
        assert!(Script::parse(&bad, "x")
            .unwrap_err()
            .message
            .contains("more than one key"));
    }

    #[test]
    fn effect_steps_name_a_turn_from_1() {
        let ok = format!("{ABA}\n[[step]]\nhold-effect = {{ conversation = \"c1\", turn = 2 }}\n");
        let s = Script::parse(
            &ok.replace("[expect]\nviolations = [\"no-lost-writes\"]\n", ""),
            "x",
        )
        .unwrap();
        assert!(matches!(&s.steps[2], Step::Effect(EffectGate::Hold, t) if t.turn == 2));
        let bad = ok.replace("turn = 2 }\n", "turn = 0 }\n");
        let err = Script::parse(&bad, "x").unwrap_err().message;
        assert!(err.contains("hold-effect: turn starts at 1"), "{err}");
    }

    #[test]
    fn an_unknown_replica_is_refused() {
        let bad = ABA.replace("to = \"replica-1\"", "to = \"replica-7\"");
        assert!(Script::parse(&bad, "x")
            .unwrap_err()
            .message
            .contains("replica-7"));
    }
    #[test]
    fn a_scenario_written_back_parses_to_the_same_steps() {
        let text = format!(
            "{}\n{}",
            ABA.replace("[expect]\nviolations = [\"no-lost-writes\"]\n", ""),
            r#"
[[step]]
concurrent = [
  { send = { conversation = "c1", turn = 3, to = "replica-0", message_id = "m \"x\"" } },
  { sequence = [{ until-ms = 40 }, { kill = "replica-1" }] },
]
[[step]]
partition-oneway = ["replica-0", "store"]
[[step]]
repair = ["replica-0", "store"]
[[step]]
latency = { between = ["replica-1", "store"], max-ms = 200 }
[[step]]
latency = { between = ["replica-1", "store"] }
[[step]]
drop-reply = true
[[step]]
hold-effect = { conversation = "c1", turn = 2 }
[[step]]
concurrent = [{ await-effect = { conversation = "c1", turn = 2 } }, { release-effect = { conversation = "c1", turn = 2 } }]
[[step]]
get = { conversation = "c1" }
[expect]
violations = ["no-lost-writes"]
"#
        );
        let s = Script::parse(&text, "x.toml").unwrap();
        assert_eq!(s.step_count(), 14);
        let back = Script::parse(&s.to_toml(), "back.toml").unwrap_or_else(|e| {
            panic!("{e}\n{}", s.to_toml());
        });
        assert_eq!(back.steps, s.steps);
        assert_eq!(back.file, s.file);
        let again = Script::from_steps(&s.file, &s.steps).unwrap();
        assert_eq!(again.file, s.file);
    }

    #[test]
    fn a_latency_longer_than_an_hour_is_refused() {
        let bad = format!(
            "{ABA}\n[[step]]\nlatency = {{ between = [\"replica-0\", \"store\"], max-ms = 99999999 }}\n"
        );
        assert!(Script::parse(&bad, "x")
            .unwrap_err()
            .message
            .contains("max-ms"));
    }
}
