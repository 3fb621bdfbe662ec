//! The scripted turn, decided: what it does at each step given the profile's knobs
//! ([`TurnPlan`]): after its think (stop for a cancel, ask for authorisation, fence the
//! effect, or go to the effect), after a failed effect, after its compose, after each of its
//! saves, and at its end (the cached copy, the stream events, the input-wait timer); and
//! what the stream of a turn stopped early hears last.
//!
//! Knobs read: `cancel.fence_effects`, `ledger.idempotency_key`,
//! `handler.executor_outlives_consumer`,
//! `handler.after_effect_failure`, `handler.saves`, `handler.cache_snapshot`,
//! `handler.stream_ends_with_terminal`, `handler.input_timeout_ms`, `push.on`.

use std::time::Duration;

use a2a::{Artifact, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState};
use serde_json::{json, Value};

use super::subscribe::status_update;
use super::{after_effect, Saved};
use crate::model::{AfterEffect, Profile, PushOn, Saves};
use crate::replica::{rpc, Refusal, TurnInfo};

/// How long an effect intent holds off a fenced cancel (the pod may have died mid-effect).
pub(in crate::replica) const EFFECT_LEASE_MS: u64 = 2500;

/// What a turn does at its steps, from the profile's knobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::replica) struct TurnPlan {
    /// An effect intent is saved with compare-and-swap before the effect, so a cancel that
    /// landed first stops it and one that lands later waits for it; such a turn is not
    /// stopped by a cancel after its effect (`cancel.fence_effects`).
    pub fenced: bool,
    /// A failed effect writes the task FAILED (best effort) before the turn is refused
    /// (`handler.after_effect_failure = "rpc-error"`).
    pub fails_task: bool,
    /// The artifact is its own save, before the reply and the final status
    /// (`handler.saves = "per-event"`).
    pub artifact_first: bool,
    /// Every save is pushed as it lands (`push.on = "every-save"`); the final state is
    /// pushed either way.
    pub push_every_save: bool,
    /// The ActiveTask keeps each copy it saves (`handler.cache_snapshot`).
    pub caches: bool,
    /// A turn that ends waiting for input arms a timer that fails it after this long
    /// (`handler.input_timeout_ms`).
    pub input_timeout_ms: Option<u64>,
    /// The executor thinks beside the consumer that saves its events: its think began
    /// when the request reached it, while the user message and the working status were
    /// being saved (`handler.executor_outlives_consumer`).
    pub thinks_while_saving: bool,
}

/// The [`TurnPlan`] of `profile`.
pub(in crate::replica) fn turn_plan(profile: &Profile) -> TurnPlan {
    let handler = &profile.handler;
    TurnPlan {
        fenced: profile.cancel.fence_effects,
        fails_task: handler.after_effect_failure == AfterEffect::RpcError,
        artifact_first: handler.saves == Saves::PerEvent,
        push_every_save: profile.push.on == PushOn::EverySave,
        caches: handler.cache_snapshot,
        input_timeout_ms: (handler.input_timeout_ms > 0).then_some(handler.input_timeout_ms),
        thinks_while_saving: handler.executor_outlives_consumer,
    }
}

/// How much of a turn's `think` is left once its working status is saved, `saving_ms`
/// after the request reached the executor: all of it where the turn's saves come first;
/// the rest where the executor thought beside them ([`TurnPlan::thinks_while_saving`]:
/// a2a-sdk's executor emits its working event and goes on to its model call without
/// waiting for the consumer to save it). While the saves take less than the think, a turn
/// that saved the user message on its own reaches its effect when one that did not would;
/// the effect still follows the working save, so saves slower than the think (a slow or
/// held store) delay it where the real executor would not wait.
pub(in crate::replica) fn think_left(plan: &TurnPlan, think: Duration, saving_ms: u64) -> Duration {
    if plan.thinks_while_saving {
        think.saturating_sub(Duration::from_millis(saving_ms))
    } else {
        think
    }
}

/// Whether an executor whose consumer cancels it `elapsed_ms` after the request reached
/// it (a save's re-read found the task terminal) has thought its think out, drawn from
/// `think_ms` (`draw`, asked only where the answer depends on it): then its effect was
/// made before the cancel reached it (a2a-sdk's producer thinks beside the consumer's
/// saves and does not wait for them).
pub(in crate::replica) fn thought_before_cancel(
    (lo, hi): (u64, u64),
    elapsed_ms: u64,
    draw: impl FnOnce() -> u64,
) -> bool {
    if elapsed_ms >= hi {
        true
    } else if elapsed_ms < lo {
        false
    } else {
        draw() <= elapsed_ms
    }
}

/// What a turn does once it has thought (its model call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::replica) enum AfterThink {
    /// A cancel reached it: it stops, answering the task as the store holds it.
    Stop,
    /// Its action needs an authorisation it does not have: the task asks for it, nothing
    /// runs.
    AskForAuth,
    /// It saves its effect intent first.
    Fence,
    /// It performs its effect.
    Effect,
}

/// [`AfterThink`]: `canceled`, a cancel reached the turn; `asks_auth`, its message asks for
/// an action that needs authorisation or answers such a request; `authorised`, asked only
/// then, whether the action may run (`auth.auth_required_resume`).
pub(in crate::replica) fn after_think(
    plan: &TurnPlan,
    canceled: bool,
    asks_auth: bool,
    authorised: impl FnOnce() -> bool,
) -> AfterThink {
    if canceled {
        AfterThink::Stop
    } else if asks_auth && !authorised() {
        AfterThink::AskForAuth
    } else if plan.fenced {
        AfterThink::Fence
    } else {
        AfterThink::Effect
    }
}

/// The effect intent a fenced turn saves before turn `info`'s effect (keyed by
/// `message_id`), holding off a cancel until `now_ms` plus [`EFFECT_LEASE_MS`].
pub(in crate::replica) fn effect_intent(info: &TurnInfo, message_id: &str, now_ms: u64) -> Value {
    json!({
        "turn": info.turn,
        "messageId": message_id,
        "untilMs": now_ms + EFFECT_LEASE_MS,
    })
}

/// The idempotency key of an effect at the ledger (`ledger.idempotency_key`): the task's
/// contextId and the user message's id.
pub(in crate::replica) fn effect_key(
    profile: &Profile,
    context_id: &str,
    message_id: &str,
) -> Option<String> {
    profile
        .ledger
        .idempotency_key
        .then(|| format!("{context_id}/{message_id}"))
}

/// The refusal of a turn whose effect got no answer (`error`): its outcome is unknown.
pub(in crate::replica) fn effect_failed(profile: &Profile, error: &str) -> Refusal {
    after_effect(
        profile,
        rpc(-32603, format!("business effect failed: {error}")),
    )
}

/// Whether a turn stops once it has composed its reply: a cancel reached it after its
/// effect ran, and the effect was not fenced (the result is never saved).
pub(in crate::replica) fn stops_after_compose(plan: &TurnPlan, canceled: bool) -> bool {
    canceled && !plan.fenced
}

/// How one of a turn's saves after its working save ended.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::replica) enum TurnSaved {
    /// It landed: the turn goes on from this version.
    Landed(u64),
    /// Its conflict's re-read found the task terminal: nothing was written; the turn stops
    /// with that task (after the artifact save of a per-event model, its queued final
    /// status is still saved on that copy first).
    Terminal(Box<Task>, u64),
    /// It failed: the turn is refused as a failure after the effect (the working save
    /// landed, so a takeover may still run the turn).
    Fail(Refusal),
}

/// [`TurnSaved`] for a save that ended `saved`.
pub(in crate::replica) fn turn_saved(
    profile: &Profile,
    saved: Result<Saved, Refusal>,
) -> TurnSaved {
    match saved {
        Ok(Saved::Version(v)) => TurnSaved::Landed(v),
        Ok(Saved::Terminal(t, v)) => TurnSaved::Terminal(t, v),
        Err(r) => TurnSaved::Fail(after_effect(profile, r)),
    }
}

/// The state turn `info` leaves its task in: input-required, or completed on the
/// conversation's last turn.
pub(in crate::replica) fn next_state(info: &TurnInfo) -> TaskState {
    if info.turn >= info.turns {
        TaskState::Completed
    } else {
        TaskState::InputRequired
    }
}

/// What a turn does once its result is saved (before its push, always made).
#[derive(Debug, Clone, PartialEq)]
pub(in crate::replica) struct TurnEnd {
    /// The ActiveTask keeps the saved copy.
    pub cache: bool,
    /// The events its stream gets, in order (none for a send without a stream).
    pub events: Vec<StreamResponse>,
    /// The input-wait timer it arms, in ms from now.
    pub input_timer_ms: Option<u64>,
}

/// [`TurnEnd`] for a turn that saved `task` in `state` with `artifact`; `streaming`: it
/// runs on a stream.
pub(in crate::replica) fn turn_end(
    plan: &TurnPlan,
    task: &Task,
    artifact: Option<&Artifact>,
    state: &TaskState,
    streaming: bool,
) -> TurnEnd {
    let mut events = Vec::new();
    if streaming {
        if let Some(artifact) = artifact {
            events.push(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                artifact: artifact.clone(),
                append: Some(false),
                last_chunk: Some(true),
                metadata: None,
            }));
        }
        events.push(status_update(task));
    }
    TurnEnd {
        cache: plan.caches,
        events,
        input_timer_ms: plan
            .input_timeout_ms
            .filter(|_| *state == TaskState::InputRequired),
    }
}

/// The last event the stream of a turn stopped early (by a cancel, or a re-read that found
/// the task terminal) hears: the task it ends with, where the model sends it
/// (`handler.stream_ends_with_terminal`); `None`: the stream just ends.
pub(in crate::replica) fn stopped_event(
    profile: &Profile,
    ended: &Result<Task, Refusal>,
) -> Option<StreamResponse> {
    match ended {
        Ok(task) if profile.handler.stream_ends_with_terminal => {
            Some(StreamResponse::Task(task.clone()))
        }
        _ => None,
    }
}
