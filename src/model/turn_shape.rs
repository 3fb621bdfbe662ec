//! The shape of a turn on the wire, as `[handler]` knobs say: how the client puts the
//! scripted turn in its message (`turn_in`), what artifact a turn leaves (`artifacts`), where
//! its reply goes (`reply_in`), what a blocking follow-up to a resumed run gets
//! (`resumed_follow_up`), and what context a follow-up that names only its task joins
//! (`task_only_context`).

use serde::{Deserialize, Serialize};

/// Where a turn's reply (the agent's message) goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplyIn {
    /// Appended to the task's history with the final status (the default).
    History,
    /// The final status's message; it moves into the history when the next user message
    /// is appended (a2a-sdk 1.x: `TaskManager.update_with_message`).
    Status,
    /// The input-required status's message only: a completed task's status has none, and no
    /// reply ever joins the history (Mastra: the suspend payload is the status message).
    Suspend,
}

/// How a client's user message carries the scripted turn (`{conversation, turn, turns}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TurnIn {
    /// A text part (`turn N of C`) and a data part with the turn (the default).
    #[default]
    DataPart,
    /// One text part holding the turn as JSON, no data part: for a server that refuses data
    /// parts (Mastra answers `-32603 "Data parts are not supported in core messages"`).
    TextJson,
}

/// What artifact a turn's result leaves on its task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Artifacts {
    /// One artifact per turn, `turn-N`, added beside the earlier ones (the default).
    #[default]
    PerTurn,
    /// One artifact, `response.txt`, replaced at each run end with the run's text, a line
    /// `turn-N` per turn the run performed: on the send path without the line of the turn
    /// that suspended the run (so none after a first turn), on a stream that stream's own
    /// line (Mastra, tests/peers/mastra/README.md).
    RunText,
}

/// What a blocking SendMessage gets when its task is working on a run that an earlier turn
/// suspended (input-required) and a later message resumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResumedFollowUp {
    /// It runs, as a follow-up to any working task does under the other knobs (the
    /// default).
    #[default]
    Run,
    /// It waits until the task leaves working and is answered with that task, its message
    /// not processed (Mastra's `waitForClaimedResume`); a streaming send runs.
    AwaitRun,
}

/// What contextId a message gets that names its task and no contextId (the official
/// clients' follow-ups).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskOnlyContext {
    /// The task's: A2A 1.0 §3.4.3, "Agents MUST infer `contextId` from the task if only
    /// `taskId` is provided" (the default).
    #[default]
    Inherit,
    /// A new one, generated for the request: the message and the agent's reply enter the
    /// task's history under a context that is not the task's (a2a-sdk 1.3.0,
    /// a2aproject/a2a-python#1206). The simulator derives it from the messageId.
    Generate,
}
