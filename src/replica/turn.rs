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

use a2a::{Message, Part, Role, StreamResponse, Task, TaskState};
use http::Response;
use rand::Rng;
use serde_json::Value;
use tokio::sync::mpsc;

use super::auth::auth_pending;
use super::consumer::{Before, Orphan};
use super::decide::send::{DedupAt, OnClaim, OnTask, SendAnswer, TaskRead, UserSave};
use super::decide::turn::{AfterThink, TurnSaved};
use super::follow_up;
use super::{
    decide, needs_auth, push_user_again, reply_with, rpc, set_marker, status, ActiveTask,
    AgentShape, Caller, Refusal, Replica, TurnInfo,
};
use crate::faults::{KillPoint, Point};
use crate::model::ReplyIn;
use crate::net::BoxBody;
use crate::store::TaskStore;
use crate::trace::{now_ms, Tone};

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
            Begun::Streamed => unreachable!("a send without a stream joins no turn on a stream"),
            Begun::Turn(turn) => match decide::send::send_answer(&self.profile, blocking, new_task)
            {
                SendAnswer::AfterTurn => self.finish(turn, None).await,
                SendAnswer::Now {
                    first_saved,
                    closes_consumer,
                } => {
                    if closes_consumer {
                        self.close_consumer(&turn.task.id);
                    }
                    turn.active.unwatched.set(true);
                    let snapshot = if first_saved {
                        turn.first_saved.clone()
                    } else {
                        turn.task.clone()
                    };
                    crate::activity::spawn(async move {
                        let _ = self.finish(turn, None).await;
                    });
                    Ok(snapshot)
                }
            },
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
                if decide::subscribe::unknown_gets_empty_stream(&self.profile) =>
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
            Begun::Streamed => {}
            Begun::Turn(turn) => {
                self.faults
                    .chaos
                    .borrow_mut()
                    .reached(&self.host, KillPoint::Stream);
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
                .join_running_turn(&message, &info, caller, sink)
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
        let claim = decide::send::dedup_claim(&self.profile);
        let dedup_store = claim.map(|(at, _)| match at {
            DedupAt::PerPod => TaskStore::Local(self.tasks.dedup.clone()),
            DedupAt::Shared => self.links.store.clone(),
        });
        if let (Some(dedup), Some((_, lease))) = (&dedup_store, claim) {
            let claimed = dedup.claim(&dedup_key, lease).await;
            match decide::send::on_claim(claimed, &message.message_id) {
                OnClaim::Run => {}
                OnClaim::InFlight(refusal) => {
                    self.record_as(
                        Tone::Warn,
                        format!(
                            "{}#{}: duplicate in flight, 409",
                            info.conversation, info.turn
                        ),
                    );
                    return Err(refusal);
                }
                OnClaim::Replay { task_id } => {
                    self.record_as(
                        Tone::Warn,
                        format!(
                            "{}#{}: duplicate of a done message, replay {task_id}",
                            info.conversation, info.turn
                        ),
                    );
                    return match self.load_for(caller, &task_id).await {
                        Ok(Some((task, _))) => Ok(Begun::Replay(Box::new(task))),
                        Ok(None) => Err(decide::not_found(&task_id)),
                        Err(e) => Err(rpc(-32603, e)),
                    };
                }
                OnClaim::Fail(refusal) => return Err(refusal),
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
                if let (true, Some((task, _))) = (plain, &loaded) {
                    info = TurnInfo::for_plain(&message, Some(task), &task.context_id);
                }
                // A turn queued behind another, or sent to a task parked here (or whose
                // ActiveTask a subscription here registered), reaches the replica's live
                // ActiveTask, which (without an event stream) runs it whatever the stored
                // state, where the model says so (a2a-sdk 1.3.0 ActiveTask._run_producer).
                let held = self
                    .tasks
                    .active
                    .borrow()
                    .get(task_id)
                    .is_some_and(|a| a.parked.get() || a.registered.get());
                let read = TaskRead {
                    task: loaded.as_ref().map(|(task, _)| task),
                    message: &message,
                    queued,
                    held,
                    internal: *caller == Caller::Internal,
                    blocking,
                    streaming: sink.is_some(),
                };
                let decision = decide::send::on_task(&self.profile, task_id, read);
                if decision.takes_active_task() {
                    // The request takes the ActiveTask: its idle timer stops (replica::parked).
                    let active = self.active(task_id);
                    active.release_timer.set(active.release_timer.get() + 1);
                }
                let mismatch = match decision {
                    OnTask::Start { mismatch } => mismatch,
                    OnTask::NewTask => {
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
                    OnTask::NotFound(refusal) => {
                        release().await;
                        self.record(format!(
                            "{}#{}: task {task_id} not found",
                            info.conversation, info.turn
                        ));
                        return Err(refusal);
                    }
                    OnTask::ForeignContext(refusal) | OnTask::Terminal(refusal) => {
                        release().await;
                        return Err(refusal);
                    }
                    OnTask::Busy => {
                        release().await;
                        return Err(self.refuse_busy(&info, task_id));
                    }
                    OnTask::Current => {
                        release().await;
                        self.record(format!(
                            "{}#{}: {task_id} is working; non-blocking follow-up not processed",
                            info.conversation, info.turn
                        ));
                        let (task, _) = loaded.expect("a task answered as it stands was read");
                        return Ok(Begun::Replay(Box::new(task)));
                    }
                    OnTask::AwaitResumedRun => {
                        drop(guard);
                        release().await;
                        let (task, _) = loaded.expect("a task whose run is awaited was read");
                        let task = self.await_resumed_run(&info, task).await;
                        return Ok(Begun::Replay(Box::new(task)));
                    }
                };
                let (task, version) = loaded.expect("a task a turn starts on was read");
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
        let (began_ms, _starting) = (now_ms(), super::state::Starting::new(&active));
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
        // A message the task as read already holds (sent again) is not saved again: no
        // context check, no save of its own.
        let already_held = task
            .history
            .iter()
            .flatten()
            .any(|m| m.message_id == message.message_id);
        if let Some(manager) = self.failing_manager_context(&message, &task, already_held) {
            return Err(self
                .context_lost(
                    &info,
                    (task, &manager),
                    &message,
                    version,
                    began_ms,
                    (dedup_store.as_ref(), &dedup_key),
                )
                .await);
        }
        let mut first_saved = None;
        let UserSave { own_save, appends } = decide::send::user_save(&self.profile, already_held);
        if own_save {
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
        let runner = decide::send::runner_until(&self.profile, now_ms());
        // Appended once: by the per-event save just made, else here.
        let again = appends && first_saved.is_none();
        push_user_again(&mut task, &message, reply_in, again);
        task.status = status(TaskState::Working);
        if runner.is_some() {
            set_marker(&mut task, "runnerUntilMs", runner.clone());
        }
        // The busy rule holds for the copy a conflict re-reads too (replica::busy).
        let internal = *caller == Caller::Internal;
        let busy = |fresh: &Task| {
            decide::send::busy_on_reread(&self.profile, fresh, internal, &user_message.message_id)
        };
        let refuse_busy = |fresh: &Task| self.refuse_busy(&info, &fresh.id);
        let saved = self
            .save_reapplying_unless(&mut task, version, busy, refuse_busy, |fresh| {
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
        if decide::turn::turn_plan(&self.profile).push_every_save {
            self.push(&task).await;
        }
        if let Some(tx) = sink {
            let first = decide::send::first_stream_event(&self.profile, &task, new_task);
            let _ = tx.send(first).await;
        }
        active.context.replace(Some(task.context_id.clone()));
        active.running.set(true);
        active.streaming.set(sink.is_some());
        active.unwatched.set(false);
        Ok(Begun::Turn(Box::new(Turn {
            began_ms,
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
            began_ms,
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
                (version, answering_auth, began_ms),
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
        match decide::send::refused_after_run(&self.profile, mismatch) {
            Some(refusal) => Err(refusal),
            None => Ok(task),
        }
    }

    async fn run_turn(
        self: &Rc<Self>,
        info: &TurnInfo,
        message: &Message,
        task: &mut Task,
        (version, answering_auth, began_ms): (u64, bool, u64),
        active: &ActiveTask,
        sink: Option<&mpsc::Sender<StreamResponse>>,
    ) -> Result<Task, Refusal> {
        let mut version = version;
        let plan = decide::turn::turn_plan(&self.profile);
        let run = follow_up::run_of(self, task, info);

        let shape = AgentShape::of(message);

        // Think (the model call), or what is left of it after the saves it ran beside,
        // saving the progress updates the turn asks for on the way.
        let think = self.draw(self.timing.think_ms);
        let turn = (info, message);
        if let Some(stopped) = self
            .think_with_progress(
                turn,
                task,
                (&mut version, began_ms),
                (think, &plan),
                active,
                sink,
            )
            .await
        {
            return stopped;
        }
        // The action may need the user's authorisation (the turn asked for one, or the task
        // waits for one): without it, the task asks for it and nothing runs.
        let asks_auth = needs_auth(message) || answering_auth;
        let authorised = || self.authorised(task, answering_auth);
        match decide::turn::after_think(&plan, active.canceled.get(), asks_auth, authorised) {
            AfterThink::Stop => {
                return self.stopped(self.canceled_result(task).await, sink).await;
            }
            AfterThink::AskForAuth => {
                return self
                    .ask_for_auth(info, message, task, (version, active), sink)
                    .await;
            }
            // A turn that performs no effect goes straight to its reply.
            AfterThink::Fence | AfterThink::Effect if !shape.effect => {}
            AfterThink::Fence => {
                // Record the effect intent with CAS, so a cancel that landed first stops
                // the effect, and a cancel that lands later waits for it.
                let marker = decide::turn::effect_intent(info, &message.message_id, now_ms());
                set_marker(task, "effectPending", Some(marker.clone()));
                let saved = self
                    .save_reapplying(task, Some(version), |t| {
                        set_marker(t, "effectPending", Some(marker.clone()))
                    })
                    .await;
                match decide::turn::turn_saved(&self.profile, saved) {
                    TurnSaved::Landed(v) => version = v,
                    TurnSaved::Terminal(t, _) => {
                        self.record(format!(
                            "{}#{}: {} became {:?} before the effect; no effect",
                            info.conversation, info.turn, t.id, t.status.state
                        ));
                        return self.stopped(Ok(*t), sink).await;
                    }
                    // The working save landed: a takeover may still run this turn.
                    TurnSaved::Fail(r) => return Err(r),
                }
            }
            AfterThink::Effect => {}
        }
        if shape.effect {
            self.effect(turn, task, version, &plan, active).await?;
        }

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
        if decide::turn::stops_after_compose(&plan, active.canceled.get()) {
            // Stopped at its next await: the effect ran, its result is never saved.
            return self.stopped(self.canceled_result(task).await, sink).await;
        }

        // Write the artifact and the reply; input-required until the last turn.
        let next_state = decide::turn::next_state(info);
        let artifact = self.result_artifact(
            task,
            info,
            run,
            sink.is_some(),
            next_state == TaskState::InputRequired,
        );
        let reply = Message {
            message_id: self.reply_id(&message.message_id),
            context_id: Some(self.reply_context(message, task)),
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
        if plan.artifact_first {
            // The artifact is its own save, before the reply and the final status.
            let add_artifact = |t: &mut Task| {
                if let Some(a) = &artifact {
                    self.put_artifact(t, a);
                }
            };
            add_artifact(task);
            let saved = self.save_result(task, version, add_artifact).await;
            match decide::turn::turn_saved(&self.profile, saved) {
                TurnSaved::Landed(v) => {
                    version = v;
                    self.record(format!(
                        "{}#{}: saved artifact turn-{} on {} v{version}",
                        info.conversation, info.turn, info.turn, task.id
                    ));
                    if plan.push_every_save {
                        self.push(task).await;
                    }
                }
                TurnSaved::Terminal(t, v) => {
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
                    if saved.is_ok() && plan.push_every_save {
                        self.push(&fresh).await;
                    }
                    return self.stopped(Ok(*t), sink).await;
                }
                TurnSaved::Fail(r) => return Err(r),
            }
        }
        apply(task);
        let saved = self.save_result(task, version, apply).await;
        let version = match decide::turn::turn_saved(&self.profile, saved) {
            TurnSaved::Landed(v) => v,
            TurnSaved::Terminal(t, _) => {
                self.record(format!(
                    "{}#{}: {} became {:?}; result not saved",
                    info.conversation, info.turn, t.id, t.status.state
                ));
                return self.stopped(Ok(*t), sink).await;
            }
            TurnSaved::Fail(r) => return Err(r),
        };
        self.record(format!(
            "{}#{}: saved {} v{version} as {:?}",
            info.conversation, info.turn, task.id, task.status.state
        ));
        let end =
            decide::turn::turn_end(&plan, task, artifact.as_ref(), &next_state, sink.is_some());
        if end.cache {
            *active.cached.borrow_mut() = Some((task.clone(), version));
        }
        if let Some(tx) = sink {
            for event in end.events {
                let _ = tx.send(event).await;
            }
        }
        self.push(task).await;
        if let Some(ms) = end.input_timer_ms {
            let (me, id) = (self.clone(), task.id.clone());
            let messages = task.history.as_ref().map_or(0, Vec::len);
            let at = now_ms() + ms;
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
    /// A streaming send that joined a turn running here: its stream is fed from elsewhere,
    /// with the running turn's end and then its own queued turn's events
    /// ([`Replica::join_running_turn`]).
    Streamed,
}

pub(super) struct Turn {
    /// When the request reached the executor (simulated ms).
    began_ms: u64,
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
