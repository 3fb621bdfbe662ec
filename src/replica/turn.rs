//! Sending a message: SendMessage and SendStreamingMessage. A turn is claimed for
//! deduplication, finds (or creates) its task, saves it as working, then runs the scripted
//! agent: think, the effect fence, the business effect on the ledger, compose, and the save
//! of its result, with the stream events and pushes each step produces.
//!
//! Knobs read: `[dedup]` (`scope`, `lease_ms`, `ttl_ms`); `[handler]` (`cache_snapshot`,
//! `unknown_task`, `context_mismatch`, `message_to_terminal_code`, `nonblocking_to_working`,
//! `saves`, `after_effect_failure`, `input_timeout_ms`, (through `admit`, `timeout.rs`)
//! `task_timeout_ms` and `max_contexts`, `turn_in` through the turn's reading, `artifacts`,
//! `resumed_follow_up` and `blocking_stops_consumer` through their modules);
//! `recovery.sweep_ms` and
//! `recovery.runner_lease_ms` (the runner lease); `cancel.fence_effects`;
//! `ledger.idempotency_key`; `push.on`; `auth.owner` (a new task's owner).

use std::rc::Rc;
use std::time::Duration;

use a2a::{Message, Part, Role, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState};
use http::Response;
use rand::Rng;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::auth::auth_pending;
use super::consumer::{Before, Orphan};
use super::follow_up;
use super::queue::{context_refusal, foreign_context};
use super::save::Saved;
use super::subscribe::status_update;
use super::{
    needs_auth, push_user_again, reply_with, rpc, set_marker, status, ActiveTask, Caller, Refusal,
    Replica, TurnInfo,
};
use crate::faults::{KillPoint, Point};
use crate::ground::ledger::{self, EffectRequest};
use crate::model::{
    AfterEffect, DedupScope, MismatchRule, NonBlockingAnswer, NonBlockingToWorking, PushOn,
    QueuedTerminal, ReplyIn, Saves, StreamStart, SubscribeUnknown, UnknownTask,
};
use crate::net::BoxBody;
use crate::store::{Claim, TaskStore};
use crate::trace::event::failure_tone;
use crate::trace::{now_ms, Tone};

/// How long an effect intent holds off a fenced cancel (the pod may have died mid-effect).
const EFFECT_LEASE_MS: u64 = 2500;

impl Replica {
    /// SendMessage: runs a whole turn (blocking) or returns after the working save.
    pub async fn send(
        self: Rc<Self>,
        message: Message,
        blocking: bool,
        caller: Caller,
    ) -> Result<Task, Refusal> {
        let new_task = message.task_id.is_none();
        let turn = self
            .clone()
            .begin(message, blocking, None, &caller, false)
            .await?;
        match turn {
            Begun::Replay(task) => Ok(*task),
            Begun::Turn(turn) => {
                if blocking && !self.closes_consumer(blocking, &turn.task.id) {
                    self.finish(turn, None).await
                } else {
                    let snapshot = match self.profile.handler.nonblocking_answer {
                        Some(NonBlockingAnswer::FirstEvent) if new_task => turn.first_saved.clone(),
                        _ => turn.task.clone(),
                    };
                    crate::activity::spawn(async move {
                        let _ = self.finish(turn, None).await;
                    });
                    Ok(snapshot)
                }
            }
        }
    }

    pub(super) async fn send_streaming(
        self: Rc<Self>,
        id: Value,
        message: Message,
        caller: Caller,
    ) -> Response<BoxBody> {
        let (tx, rx) = mpsc::channel::<StreamResponse>(16);
        let begun = {
            let (me, tx) = (self.clone(), tx.clone());
            crate::activity::spawn(async move {
                me.begin(message, true, Some(&tx), &caller, false).await
            })
        };
        let turn = match begun.await {
            Ok(Ok(t)) => t,
            // The task is unknown here: every streaming call answers as a subscription
            // does (Mastra: HTTP 200 and an empty event stream).
            Ok(Err(Refusal::Rpc(-32001, why)))
                if self.profile.subscribe.unknown_task == SubscribeUnknown::EmptyStream =>
            {
                self.record(format!("streaming send: {why}: empty stream"));
                let (_tx, rx) = mpsc::channel::<StreamResponse>(1);
                return self.sse_response(id, rx);
            }
            Ok(Err(r)) => return self.rpc_error(id, r),
            Err(e) => return self.rpc_error(id, rpc(-32603, format!("turn aborted: {e}"))),
        };
        match turn {
            Begun::Replay(task) => {
                let _ = tx.send(StreamResponse::Task(*task)).await;
            }
            Begun::Turn(turn) => {
                self.faults
                    .chaos
                    .borrow_mut()
                    .reached(&self.name, KillPoint::Stream);
                let me = self.clone();
                let tx2 = tx.clone();
                crate::activity::spawn(async move {
                    let _ = me.finish(turn, Some(&tx2)).await;
                });
            }
        }
        drop(tx);
        self.sse_response(id, rx)
    }

    /// Begins a turn: resolves its task and saves it as working. `queued`: the turn waited
    /// behind another whose answer its sender already got.
    pub(super) async fn begin(
        self: Rc<Self>,
        message: Message,
        blocking: bool,
        sink: Option<&mpsc::Sender<StreamResponse>>,
        caller: &Caller,
        queued: bool,
    ) -> Result<Begun, Refusal> {
        // A message without the scripted data part is a plain turn: its number is known
        // once its task is, so it is provisional (turn 1) until the task is resolved.
        let scripted = TurnInfo::from_message(&message);
        let plain = scripted.is_none();
        let mut info = scripted.unwrap_or_else(|| {
            TurnInfo::for_plain(&message, None, message.task_id.as_deref().unwrap_or(""))
        });
        if !queued {
            if let Some(joined) = self
                .clone()
                .join_running_turn(&message, &info, caller)
                .await
            {
                return joined;
            }
        }
        // Deduplication by (contextId, messageId), where the model has it.
        let dedup_key = format!(
            "{}/{}",
            message.context_id.as_deref().unwrap_or(""),
            message.message_id
        );
        let dedup_store = match self.profile.dedup.scope {
            DedupScope::None => None,
            DedupScope::PerPod => Some(TaskStore::Local(self.tasks.dedup.clone())),
            DedupScope::Shared => Some(self.links.store.clone()),
        };
        if let Some(dedup) = &dedup_store {
            let lease = match self.profile.dedup.scope {
                DedupScope::Shared => self.profile.dedup.lease_ms,
                _ => u64::MAX / 4,
            };
            match dedup.claim(&dedup_key, lease).await {
                Ok(Claim::New) => {}
                Ok(Claim::InFlight) => {
                    self.record_as(
                        Tone::Warn,
                        format!(
                            "{}#{}: duplicate in flight, 409",
                            info.conversation, info.turn
                        ),
                    );
                    return Err(Refusal::Http(
                        409,
                        format!("message {} is in flight", message.message_id),
                    ));
                }
                Ok(Claim::Done { task_id }) => {
                    self.record_as(
                        Tone::Warn,
                        format!(
                            "{}#{}: duplicate of a done message, replay {task_id}",
                            info.conversation, info.turn
                        ),
                    );
                    return match self.load_for(caller, &task_id).await {
                        Ok(Some((task, _))) => Ok(Begun::Replay(Box::new(task))),
                        Ok(None) => Err(rpc(-32001, format!("task {task_id} not found"))),
                        Err(e) => Err(rpc(-32603, e)),
                    };
                }
                Err(e) => return Err(rpc(-32603, e)),
            }
        }
        let release = || release_claim(dedup_store.as_ref(), &dedup_key);

        // Resolve the task.
        let (task, version, active, guard, mismatch) = match &message.task_id {
            None => {
                let task = self.fresh_task(&message, caller);
                if plain {
                    info = TurnInfo::for_plain(&message, None, &task.context_id);
                }
                let active = self.active(&task.id);
                let guard = self.lock(&active).await;
                (task, None, active, guard, false)
            }
            Some(task_id) => {
                let active = self.active(task_id);
                let guard = self.lock(&active).await;
                let cached = if self.profile.handler.cache_snapshot {
                    active.cached.borrow().clone()
                } else {
                    None
                };
                let loaded = match cached {
                    Some(c) => Some(c),
                    None => match self.load(task_id).await {
                        Ok(found) => found,
                        Err(e) => {
                            release().await;
                            return Err(rpc(-32603, e));
                        }
                    },
                };
                // Another owner's task is not found (the cached snapshot included).
                let loaded = loaded.filter(|(task, _)| self.may_touch(caller, task));
                let Some((task, version)) = loaded else {
                    if self.profile.handler.unknown_task == UnknownTask::NewTask {
                        // The conversation goes on in a new task on this pod.
                        drop(guard);
                        let task = self.fresh_task(&message, caller);
                        if plain {
                            info = TurnInfo::for_plain(&message, None, &task.context_id);
                        }
                        self.record(format!(
                            "{}#{}: task {task_id} unknown here; new task {}",
                            info.conversation, info.turn, task.id
                        ));
                        let active = self.active(&task.id);
                        let guard = self.lock(&active).await;
                        return self
                            .clone()
                            .start(
                                message,
                                info,
                                caller,
                                task,
                                None,
                                active,
                                guard,
                                false,
                                sink,
                                dedup_store,
                                dedup_key,
                            )
                            .await;
                    }
                    release().await;
                    self.record(format!(
                        "{}#{}: task {task_id} not found",
                        info.conversation, info.turn
                    ));
                    return Err(rpc(-32001, format!("task {task_id} not found")));
                };
                if plain {
                    info = TurnInfo::for_plain(&message, Some(&task), &task.context_id);
                }
                let mismatch = foreign_context(&message, &task.context_id);
                if mismatch
                    && self.profile.handler.context_mismatch == MismatchRule::RejectBeforeExecutor
                {
                    release().await;
                    return Err(context_refusal());
                }
                // A turn queued behind another, or sent to a task parked here (or whose
                // ActiveTask a subscription here registered), reaches the replica's live
                // ActiveTask, which (without an event stream) runs it whatever
                // the stored state (a2a-sdk 1.3.0 ActiveTask._run_producer).
                let parked = {
                    let active = self.active(task_id);
                    // The request takes the ActiveTask: its idle timer stops (replica::parked).
                    active.release_timer.set(active.release_timer.get() + 1);
                    active.parked.get() || active.registered.get()
                };
                let runs_anyway = (queued || parked)
                    && self.profile.handler.queued_terminal == Some(QueuedTerminal::Run);
                if task.status.state.is_terminal() && !runs_anyway {
                    release().await;
                    return Err(rpc(
                        self.profile.handler.message_to_terminal_code,
                        format!("task {task_id} is terminal"),
                    ));
                }
                if self.busy(&task, caller) {
                    release().await;
                    return Err(self.refuse_busy(&info, task_id));
                }
                if !blocking
                    && task.status.state == TaskState::Working
                    && self.profile.handler.nonblocking_to_working
                        == NonBlockingToWorking::ReturnCurrent
                {
                    release().await;
                    self.record(format!(
                        "{}#{}: {task_id} is working; non-blocking follow-up not processed",
                        info.conversation, info.turn
                    ));
                    return Ok(Begun::Replay(Box::new(task)));
                }
                if self.awaits_resumed_run(&task, blocking, sink.is_some()) {
                    drop(guard);
                    release().await;
                    let task = self.await_resumed_run(&info, task).await;
                    return Ok(Begun::Replay(Box::new(task)));
                }
                (task, Some(version), active, guard, mismatch)
            }
        };

        self.start(
            message,
            info,
            caller,
            task,
            version,
            active,
            guard,
            mismatch,
            sink,
            dedup_store,
            dedup_key,
        )
        .await
    }

    /// Appends the user message and saves the task as working: the turn has begun.
    #[allow(clippy::too_many_arguments)]
    async fn start(
        self: Rc<Self>,
        message: Message,
        info: TurnInfo,
        caller: &Caller,
        mut task: Task,
        version: Option<u64>,
        active: Rc<ActiveTask>,
        guard: super::TaskLock,
        mismatch: bool,
        sink: Option<&mpsc::Sender<StreamResponse>>,
        dedup_store: Option<TaskStore>,
        dedup_key: String,
    ) -> Result<Begun, Refusal> {
        // A message to a task that waits for authorisation answers that request (the
        // request is a marker in the task, so a takeover of the answer knows it too).
        let began_ms = now_ms();
        let answering_auth = auth_pending(&task);
        self.take_inline_push(&message.message_id, &task.id, caller)
            .await;
        let new_task = version.is_none();
        self.admit(&task, new_task, dedup_store.as_ref(), &dedup_key)
            .await?;
        let mut version = version;
        let message = self.with_task_ids(message, &task);
        let user_message = message.clone();
        let reply_in = self.profile.handler.reply_in.unwrap_or(ReplyIn::History);
        let mut first_saved = None;
        let already_held = task
            .history
            .iter()
            .flatten()
            .any(|m| m.message_id == message.message_id);
        let appends = self.profile.handler.appends_duplicates == Some(true);
        if self.profile.handler.saves == Saves::PerEvent && (appends || !already_held) {
            // The user message is its own save, the state unchanged (on turn 1, the
            // submitted task holding it), before the working event.
            push_user_again(&mut task, &message, reply_in, appends);
            let saved = self
                .save_reapplying(&mut task, version, |fresh| {
                    push_user_again(fresh, &user_message, reply_in, appends)
                })
                .await;
            // The executor runs only once the request has read the task (a2a-sdk's
            // ActiveTask.start reads the store first: a store that never answered fails
            // the request before the executor starts).
            let read = version.is_some();
            let orphan = || read.then(|| Orphan::of(&info, &message, &task, began_ms));
            match self
                .saved_before_effect(saved, dedup_store.as_ref(), &dedup_key, orphan)
                .await?
            {
                Before::Version(v) => version = Some(v),
                Before::Answered(t) => return Ok(Begun::Replay(t)),
            }
            first_saved = Some(task.clone());
        }
        // Append the user message and save the task as working.
        let runner = (self.profile.recovery.sweep_ms > 0)
            .then(|| json!(now_ms() + self.profile.recovery.runner_lease_ms));
        // Appended once: by the per-event save just made, else here.
        let again = appends && first_saved.is_none();
        push_user_again(&mut task, &message, reply_in, again);
        task.status = status(TaskState::Working);
        if runner.is_some() {
            set_marker(&mut task, "runnerUntilMs", runner.clone());
        }
        // The busy rule holds for the copy a conflict re-reads too (replica::busy).
        let busy = |fresh: &Task| {
            self.busy_on_reread(fresh, caller, &user_message.message_id)
                .then(|| self.refuse_busy(&info, &fresh.id))
        };
        let saved = self
            .save_reapplying_unless(&mut task, version, busy, |fresh| {
                push_user_again(fresh, &user_message, reply_in, again);
                fresh.status = status(TaskState::Working);
                if runner.is_some() {
                    set_marker(fresh, "runnerUntilMs", runner.clone());
                }
            })
            .await;
        let read = version.is_some();
        let orphan = || read.then(|| Orphan::of(&info, &message, &task, began_ms));
        let version = match self
            .saved_before_effect(saved, dedup_store.as_ref(), &dedup_key, orphan)
            .await?
        {
            Before::Version(v) => v,
            Before::Answered(t) => return Ok(Begun::Replay(t)),
        };
        self.record(format!(
            "{}#{}: working on {} v{version}",
            info.conversation, info.turn, task.id
        ));
        if self.profile.push.on == PushOn::EverySave {
            self.push(&task).await;
        }
        if let Some(tx) = sink {
            let first = match self.profile.handler.stream_start {
                Some(StreamStart::SnapshotOnNewTask) if !new_task => status_update(&task),
                _ => StreamResponse::Task(task.clone()),
            };
            let _ = tx.send(first).await;
        }
        active.canceled.set(false);
        active.context.replace(Some(task.context_id.clone()));
        active.running.set(true);
        active.streaming.set(sink.is_some());
        Ok(Begun::Turn(Box::new(Turn {
            info,
            message,
            version,
            active,
            _guard: guard,
            mismatch,
            dedup: dedup_store.map(|d| (d, dedup_key)),
            answering_auth,
            first_saved: first_saved.unwrap_or_else(|| task.clone()),
            task,
        })))
    }

    pub(super) async fn finish_turn(
        self: Rc<Self>,
        turn: Box<Turn>,
        sink: Option<&mpsc::Sender<StreamResponse>>,
    ) -> Result<Task, Refusal> {
        let Turn {
            info,
            message,
            mut task,
            version,
            active,
            _guard,
            mismatch,
            dedup,
            answering_auth,
            first_saved: _,
        } = *turn;
        let result = self
            .run_turn(
                &info,
                &message,
                &mut task,
                (version, answering_auth),
                &active,
                sink,
            )
            .await;
        active.running.set(false);
        if let Some((store, key)) = dedup {
            let done = result.as_ref().ok().map(|t| t.id.clone());
            let _ = store.finish(&key, done, self.profile.dedup.ttl_ms).await;
        }
        let task = result?;
        if mismatch && self.profile.handler.context_mismatch == MismatchRule::RejectAfterExecutor {
            return Err(context_refusal());
        }
        Ok(task)
    }

    async fn run_turn(
        self: &Rc<Self>,
        info: &TurnInfo,
        message: &Message,
        task: &mut Task,
        (version, answering_auth): (u64, bool),
        active: &ActiveTask,
        sink: Option<&mpsc::Sender<StreamResponse>>,
    ) -> Result<Task, Refusal> {
        let mut version = version;
        let fenced = self.profile.cancel.fence_effects;
        let run = follow_up::run_of(self, task, info);

        // Think (the model call).
        tokio::time::sleep(self.draw(self.timing.think_ms)).await;
        if active.canceled.get() {
            return self.stopped(self.canceled_result(task).await, sink).await;
        }

        // The action needs the user's authorisation (the turn asked for one, or the task
        // waits for one): without it, the task asks for it and nothing runs.
        if (needs_auth(message) || answering_auth) && !self.authorised(task, answering_auth) {
            return self
                .ask_for_auth(info, message, task, (version, active), sink)
                .await;
        }

        // Fence: record the effect intent with CAS, so a cancel that landed first stops the
        // effect, and a cancel that lands later waits for it.
        if fenced {
            let marker = json!({
                "turn": info.turn,
                "messageId": message.message_id,
                "untilMs": now_ms() + EFFECT_LEASE_MS,
            });
            set_marker(task, "effectPending", Some(marker.clone()));
            match self
                .save_reapplying(task, Some(version), |t| {
                    set_marker(t, "effectPending", Some(marker.clone()))
                })
                .await
            {
                Ok(Saved::Version(v)) => version = v,
                Ok(Saved::Terminal(t, _)) => {
                    self.record(format!(
                        "{}#{}: {} became {:?} before the effect; no effect",
                        info.conversation, info.turn, t.id, t.status.state
                    ));
                    return self.stopped(Ok(*t), sink).await;
                }
                // The working save landed: a takeover may still run this turn.
                Err(r) => return Err(self.after_effect(r)),
            }
        }

        // The business effect (the tool call).
        let effect = EffectRequest {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            conversation: info.conversation.clone(),
            turn: info.turn,
            message_id: message.message_id.clone(),
            replica: self.name.clone(),
            key: self
                .profile
                .ledger
                .idempotency_key
                .then(|| format!("{}/{}", task.context_id, message.message_id)),
            sent_ms: now_ms(),
        };
        self.faults
            .chaos
            .borrow_mut()
            .reached(&self.name, KillPoint::Effect);
        if let Err(e) = ledger::perform(&effect, self.timing.ledger_timeout).await {
            self.record_as(
                failure_tone(&e),
                format!(
                    "{}#{}: effect outcome unknown: {e}",
                    info.conversation, info.turn
                ),
            );
            if self.profile.handler.after_effect_failure == AfterEffect::RpcError {
                // The executor raised: the task is failed (best effort).
                task.status = status(TaskState::Failed);
                let saved = self
                    .persist(task, self.save_mode(Some(version)), Some(version))
                    .await;
                if let (Ok(v), true) = (saved, self.profile.handler.cache_snapshot) {
                    // The ActiveTask's copy follows every save it makes, this one too
                    // (a queued message then finds the task failed, as a2a-sdk 1.1.5 does).
                    *active.cached.borrow_mut() = Some((task.clone(), v));
                }
            }
            return Err(self.after_effect(rpc(-32603, format!("business effect failed: {e}"))));
        }

        self.faults
            .chaos
            .borrow_mut()
            .reached(&self.name, KillPoint::AfterEffect);

        // Compose the reply: a step between the effect and the save.
        tokio::time::sleep(self.draw(self.timing.compose_ms)).await;
        if self
            .faults
            .chaos
            .borrow_mut()
            .buggify(Point::DelayBeforeSave)
        {
            let ms = self.faults.chaos.borrow_mut().draw_ms(200, 1500);
            self.record(format!(
                "buggify: {}#{} waits {ms} ms more before its save",
                info.conversation, info.turn
            ));
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        if active.canceled.get() && !fenced {
            // Stopped at its next await: the effect ran, its result is never saved.
            return self.stopped(self.canceled_result(task).await, sink).await;
        }

        // Write the artifact and the reply; input-required until the last turn.
        let next_state = if info.turn >= info.turns {
            TaskState::Completed
        } else {
            TaskState::InputRequired
        };
        let artifact = self.result_artifact(
            task,
            info,
            run,
            sink.is_some(),
            next_state == TaskState::InputRequired,
        );
        let reply = Message {
            message_id: self.reply_id(&message.message_id),
            context_id: Some(task.context_id.clone()),
            task_id: Some(task.id.clone()),
            role: Role::Agent,
            parts: vec![Part::text(format!("done turn {}", info.turn))],
            metadata: None,
            extensions: None,
            reference_task_ids: None,
        };
        let reply_in = self.profile.handler.reply_in.unwrap_or(ReplyIn::History);
        // Idempotent: re-applied on a fresh copy after a conflict, it adds nothing twice.
        let apply = |t: &mut Task| {
            if let Some(a) = &artifact {
                self.put_artifact(t, a);
            }
            set_marker(t, "effectPending", None);
            set_marker(t, "runnerUntilMs", None);
            set_marker(t, "authPending", None);
            follow_up::mark_run(self, t, &next_state, run);
            reply_with(t, &reply, next_state.clone(), reply_in);
        };
        if self.profile.handler.saves == Saves::PerEvent {
            // The artifact is its own save, before the reply and the final status.
            let add_artifact = |t: &mut Task| {
                if let Some(a) = &artifact {
                    self.put_artifact(t, a);
                }
            };
            add_artifact(task);
            match self.save_result(task, version, add_artifact).await {
                Ok(Saved::Version(v)) => {
                    version = v;
                    self.record(format!(
                        "{}#{}: saved artifact turn-{} on {} v{version}",
                        info.conversation, info.turn, info.turn, task.id
                    ));
                    if self.profile.push.on == PushOn::EverySave {
                        self.push(task).await;
                    }
                }
                Ok(Saved::Terminal(t, v)) => {
                    // The consumer drops the artifact event and answers with the terminal
                    // task, but the executor has already queued its final status: that event
                    // is still applied to the terminal copy just re-read and saved on its
                    // version, so the CAS passes and the task is reopened (seen run on
                    // a2a-sdk 1.3.0: EventConsumer._process_event returns, and run() goes on
                    // to the next queued event).
                    self.record(format!(
                        "{}#{}: {} became {:?}; artifact not saved, the queued status is",
                        info.conversation, info.turn, t.id, t.status.state
                    ));
                    let mut fresh = (*t).clone();
                    reply_with(&mut fresh, &reply, next_state.clone(), reply_in);
                    let saved = self
                        .persist(&mut fresh, self.save_mode(Some(v)), Some(v))
                        .await;
                    if saved.is_ok() && self.profile.push.on == PushOn::EverySave {
                        self.push(&fresh).await;
                    }
                    return self.stopped(Ok(*t), sink).await;
                }
                Err(r) => return Err(self.after_effect(r)),
            }
        }
        apply(task);
        let saved = self.save_result(task, version, apply).await;
        let version = match saved {
            Ok(Saved::Version(v)) => v,
            Ok(Saved::Terminal(t, _)) => {
                self.record(format!(
                    "{}#{}: {} became {:?}; result not saved",
                    info.conversation, info.turn, t.id, t.status.state
                ));
                return self.stopped(Ok(*t), sink).await;
            }
            Err(r) => return Err(self.after_effect(r)),
        };
        self.record(format!(
            "{}#{}: saved {} v{version} as {:?}",
            info.conversation, info.turn, task.id, task.status.state
        ));
        if self.profile.handler.cache_snapshot {
            *active.cached.borrow_mut() = Some((task.clone(), version));
        }
        if let Some(tx) = sink {
            if let Some(artifact) = &artifact {
                let _ = tx
                    .send(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                        task_id: task.id.clone(),
                        context_id: task.context_id.clone(),
                        artifact: artifact.clone(),
                        append: Some(false),
                        last_chunk: Some(true),
                        metadata: None,
                    }))
                    .await;
            }
            let _ = tx.send(status_update(task)).await;
        }
        self.push(task).await;
        if next_state == TaskState::InputRequired && self.profile.handler.input_timeout_ms > 0 {
            let (me, id) = (self.clone(), task.id.clone());
            let messages = task.history.as_ref().map_or(0, Vec::len);
            let at = now_ms() + self.profile.handler.input_timeout_ms;
            crate::activity::spawn_timer(at, async move { me.expire_input(&id, messages).await });
        }
        Ok(task.clone())
    }

    /// The messageId of the reply a run of the turn carried by `message_id` ends with. Where
    /// the reply is the status's message ([`ReplyIn::Status`], a2a-sdk's `TaskUpdater`), each
    /// run has its own: the SDK draws a new id for every reply, so two runs of one message
    /// (a duplicate on two replicas, a queued duplicate) leave two replies, and the second
    /// archives the first; elsewhere the turn's reply is one message per turn.
    fn reply_id(&self, message_id: &str) -> String {
        if self.profile.handler.reply_in != Some(ReplyIn::Status) {
            return format!("{message_id}-reply");
        }
        let n = self.ids.replies.get() + 1;
        self.ids.replies.set(n);
        format!("{message_id}-reply-{}-{n}", self.ids.prefix)
    }

    /// A duration drawn uniformly from `[lo, hi]` ms with this replica's generator.
    pub(super) fn draw(&self, (lo, hi): (u64, u64)) -> Duration {
        Duration::from_millis(self.ids.rng.borrow_mut().random_range(lo..=hi))
    }
}

pub(super) enum Begun {
    /// No turn runs: the task the send is answered with (a deduplicated message's, or the
    /// terminal task a save's re-read found).
    Replay(Box<Task>),
    /// A turn that has saved its working state and still has to run.
    Turn(Box<Turn>),
}

pub(super) struct Turn {
    info: TurnInfo,
    message: Message,
    task: Task,
    version: u64,
    pub(super) active: Rc<ActiveTask>,
    _guard: super::TaskLock,
    mismatch: bool,
    dedup: Option<(TaskStore, String)>,
    /// The task waited for authorisation when the message came: it answers that request.
    answering_auth: bool,
    /// The task as the turn first saved it (what a non-blocking send may answer).
    first_saved: Task,
}

/// Gives up a dedup claim (the request did not run), so a retry may take it.
pub(super) async fn release_claim(dedup: Option<&TaskStore>, key: &str) {
    if let Some(d) = dedup {
        let _ = d.finish(key, None, 0).await;
    }
}
