//! One step of a scenario: what it says, and how a `[[step]]` table reads and writes it.
//!
//! A step is one key in a `[[step]]` table (or one element of a `concurrent` or `sequence`
//! list): the client's A2A calls (`send`, `cancel`, `get`, `subscribe`, `set-push`), an
//! out-of-band `authorize`, structure (`concurrent`, `sequence`), time (`wait-ms`,
//! `until-ms`), the ledger's effect holds (`hold-effect`, `await-effect`,
//! `release-effect`), or a fault [`Action`] — whose keys come from the fault registry
//! ([`crate::faults`]), so a new fault kind brings its own step. [`Step`] reads and writes
//! itself with serde as a one-key table; values are checked against the scenario (its
//! replicas, bounds) by [`crate::scenario::Script::from_file`].

use std::fmt;

use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use crate::client::Parts;
use crate::faults::{Action, ActionError};
use crate::host::Host;

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
    pub to: Option<Host>,
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
    /// Send with this taskId instead of the conversation's task (turn 1 too): a follow-up
    /// naming a task that does not exist, or another conversation's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// `true`: send the follow-up with its taskId and no contextId, as the official
    /// clients do; the server must infer the context from the task (A2A 1.0 §3.4.3,
    /// a2aproject/A2A#1249). Not with `context_id`, nor on turn 1 without `task_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omit_context_id: Option<bool>,
    /// What the message carries besides its text: the scripted data part (the default), or
    /// nothing (`text`) or a file (`file`), as clients that know nothing of a2a-chaos send;
    /// the agent then counts its turn from the task's history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<Parts>,
    /// `false`: the agent performs no business effect on this turn (a question answered,
    /// nothing booked): exactly-once-effects then expects none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<bool>,
    /// The agent saves this many progress updates (its task set working again) while it
    /// thinks, at most [`crate::replica::MAX_PROGRESS`]: more saves, each one more moment
    /// a save can meet a conflict, a cancel or a terminal task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<u32>,
}

impl SendStep {
    /// Turn `turn` of `conversation`, every option unset.
    pub fn new(conversation: impl Into<String>, turn: u32) -> SendStep {
        SendStep {
            conversation: conversation.into(),
            turn,
            to: None,
            message_id: None,
            blocking: None,
            streaming: None,
            principal: None,
            context_id: None,
            needs_auth: None,
            reply: None,
            task_id: None,
            omit_context_id: None,
            parts: None,
            effect: None,
            progress: None,
        }
    }
}

/// A step aimed at a conversation's task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskStep {
    /// The conversation whose task it aims at (skipped when it has no task yet).
    pub conversation: String,
    /// Pin the request to this replica; default: the scenario's routing picks one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Host>,
    /// The caller's identity, where the contract checks owners.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// Aim at this task id instead of the conversation's task (one that does not exist, to
    /// see how it is refused); the call still counts as the conversation's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
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
    /// Wait until an effect of the turn has arrived (at most [`crate::scenario::AWAIT_EFFECT_MAX`]).
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

/// A `set-push` step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushStep {
    /// The conversation whose task gets the push configuration.
    pub conversation: String,
    /// Pin the request to this replica; default: the scenario's routing picks one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Host>,
    /// Where pushes go.
    pub url: String,
    /// The caller's identity (default `alice`; `anonymous` sends no token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
}

/// One step of a script.
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

/// The step keys that are not fault actions, in the order `a2a-chaos` documents them.
pub const CLIENT_KEYS: &[&str] = &[
    "send",
    "cancel",
    "get",
    "subscribe",
    "set-push",
    "authorize",
    "concurrent",
    "sequence",
    "wait-ms",
    "until-ms",
    "hold-effect",
    "await-effect",
    "release-effect",
];

/// Every step key: the client's, then the fault actions'.
pub fn keys() -> Vec<&'static str> {
    let mut keys = CLIENT_KEYS.to_vec();
    keys.extend(Action::step_keys());
    keys
}

impl Step {
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

    /// The step `key = value`, or why it is not one.
    pub fn from_pair(key: &str, value: &toml::Value) -> Result<Step, StepError> {
        fn typed<T: serde::de::DeserializeOwned>(
            key: &str,
            value: &toml::Value,
        ) -> Result<T, StepError> {
            crate::faults::step::table(value).map_err(|error| StepError::Value {
                key: key.to_string(),
                error,
            })
        }
        fn list(key: &str, value: &toml::Value) -> Result<Vec<Step>, StepError> {
            let items = value.as_array().ok_or_else(|| StepError::NotAList {
                key: key.to_string(),
                found: value.to_string(),
            })?;
            items.iter().map(Step::from_value).collect()
        }
        let step = match key {
            "send" => Step::Send(typed(key, value)?),
            "cancel" => Step::Cancel(typed(key, value)?),
            "get" => Step::Get(typed(key, value)?),
            "subscribe" => Step::Subscribe(typed(key, value)?),
            "set-push" => Step::SetPush(typed(key, value)?),
            "authorize" => Step::Authorize(typed(key, value)?),
            "concurrent" => Step::Concurrent(list(key, value)?),
            "sequence" => Step::Sequence(list(key, value)?),
            "wait-ms" => Step::WaitMs(typed(key, value)?),
            "until-ms" => Step::UntilMs(typed(key, value)?),
            "hold-effect" => Step::Effect(EffectGate::Hold, typed(key, value)?),
            "await-effect" => Step::Effect(EffectGate::Await, typed(key, value)?),
            "release-effect" => Step::Effect(EffectGate::Release, typed(key, value)?),
            // `drop-reply = false` drops nothing: it reads as a pause of no time.
            "drop-reply" if value.as_bool() == Some(false) => Step::WaitMs(0),
            _ => match Action::from_step(key, value) {
                Some(action) => Step::Fault(action.map_err(|error| StepError::Value {
                    key: key.to_string(),
                    error,
                })?),
                None => {
                    return Err(StepError::Unknown {
                        key: key.to_string(),
                    })
                }
            },
        };
        Ok(step)
    }

    /// The step a one-key table holds.
    pub fn from_value(value: &toml::Value) -> Result<Step, StepError> {
        let table = value.as_table().ok_or_else(|| StepError::NotATable {
            found: value.to_string(),
        })?;
        let mut pairs = table.iter();
        match (pairs.next(), pairs.next()) {
            (Some((key, value)), None) => Step::from_pair(key, value),
            (None, _) => Err(StepError::NoKey),
            (Some(_), Some(_)) => Err(StepError::ManyKeys),
        }
    }

    /// The step as `key = value`. A fault action no step writes (the lost-reply rate) is a
    /// pause of no time.
    pub fn to_pair(&self) -> (&'static str, toml::Value) {
        fn value<T: Serialize>(t: &T) -> toml::Value {
            crate::faults::step::value_of(t)
        }
        fn list(steps: &[Step]) -> toml::Value {
            toml::Value::Array(steps.iter().map(Step::to_value).collect())
        }
        match self {
            Step::Send(s) => ("send", value(s)),
            Step::Cancel(s) => ("cancel", value(s)),
            Step::Get(s) => ("get", value(s)),
            Step::Subscribe(s) => ("subscribe", value(s)),
            Step::SetPush(s) => ("set-push", value(s)),
            Step::Authorize(s) => ("authorize", value(s)),
            Step::Concurrent(v) => ("concurrent", list(v)),
            Step::Sequence(v) => ("sequence", list(v)),
            Step::WaitMs(ms) => ("wait-ms", value(ms)),
            Step::UntilMs(ms) => ("until-ms", value(ms)),
            Step::Effect(gate, t) => (gate.key(), value(t)),
            Step::Fault(a) => a.to_step().unwrap_or(("wait-ms", value(&0u64))),
        }
    }

    /// The step as a one-key table.
    pub fn to_value(&self) -> toml::Value {
        let (key, value) = self.to_pair();
        let mut table = toml::Table::new();
        table.insert(key.to_string(), value);
        toml::Value::Table(table)
    }
}

/// Why a TOML value is not a scenario step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    /// A known key whose value does not fit it.
    #[error("{key}: {error}")]
    Value { key: String, error: ActionError },
    /// `concurrent` or `sequence` with something other than a list.
    #[error("{key} takes a list of steps, found `{found}`")]
    NotAList { key: String, found: String },
    /// No step has this key.
    #[error("unknown step `{key}`; steps: {}", keys().join(", "))]
    Unknown { key: String },
    /// A step that is not a table.
    #[error("a step is a table with one key, found `{found}`")]
    NotATable { found: String },
    /// An empty table.
    #[error("a step needs one key: {}", keys().join(", "))]
    NoKey,
    /// A table with several keys.
    #[error("a step has more than one key; split it into several [[step]] tables")]
    ManyKeys,
}

impl<'de> Deserialize<'de> for Step {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Step, D::Error> {
        let value = toml::Value::deserialize(deserializer)?;
        Step::from_value(&value).map_err(D::Error::custom)
    }
}

impl Serialize for Step {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (key, value) = self.to_pair();
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(key, &value)?;
        map.end()
    }
}

impl fmt::Display for Step {
    /// The step as its inline TOML table (`{ kill = "replica-1" }`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (key, value) = self.to_pair();
        write!(f, "{{ {key} = {value} }}")
    }
}
