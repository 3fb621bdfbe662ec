//! A blocking answer that closes the consumer (a2aproject/a2a-java#351).
//!
//! In a2a-java's `ResultAggregator.consumeAndBreakOnInterrupt`, as changed by #333
//! (e25328b0, 2025-10-14), a blocking call was answered with the first task event and set
//! `continueInBackground = false`, which closed the consumer. The AgentExecutor ran on and
//! enqueued its events, but nothing processed them, so the TaskStore never got the task's
//! later states. #351 (c9fe654c, 2025-10-20) keeps consuming in the background. Both landed
//! before 0.3.0.Final; 0.3.0.Beta2 consumed a blocking call to its end.
//!
//! An executor that outlives its consumer (a2a-sdk 1.x). The ActiveTask runs the
//! AgentExecutor as one asyncio task (the producer) and saves its events in another (the
//! consumer). When the consumer fails, on a save that conflicts past the re-apply or a
//! store that does not answer, it answers the request with the error and closes the event
//! queue, but it does not cancel the producer: it awaits it (`ActiveTask._run_consumer`).
//! The executor goes on to its business effect, and every event it enqueues after is
//! dropped (`EventQueueSource.enqueue_event`: "Queue was closed during enqueuing. Event
//! dropped."). Only a conflict whose re-read finds the task terminal cancels the producer;
//! one whose think is over by then has made its effect (`Replica::executor_canceled`).
//!
//! The same happens to a turn whose ActiveTask's TaskManager holds another context than
//! the task's (`handler.task_only_context = "generate"`: a follow-up that names only its
//! task on a replica that never ran it, or any turn after such a run here): the consumer
//! fails on its first save, the user message's; a message the task already holds is not
//! saved again, so that turn runs.
//!
//! Knobs read: `handler.blocking_stops_consumer`, `handler.executor_outlives_consumer`,
//! `handler.task_only_context`.

use std::rc::Rc;

use a2a::{Message, Task, TaskState};

use super::agent::sleep_until;
use super::decide::save::BeforeEffect;
use super::decide::{self, Saved};
use super::turn::release_claim;
use super::{needs_auth, push_user_again, rpc, status, AgentShape, Refusal, Replica, TurnInfo};
use crate::model::ReplyIn;
use crate::store::TaskStore;
use crate::trace::{now_ms, Tone};

/// What an executor needs to run on once its consumer has failed.
pub(super) struct Orphan {
    /// The turn the executor runs.
    pub info: TurnInfo,
    /// The user message (its messageId keys the effect).
    pub message: Message,
    /// The task's id and contextId.
    pub task_id: String,
    pub context_id: String,
    /// When the request reached the executor (simulated ms): its think began then.
    pub began_ms: u64,
    /// The copy the finished ActiveTask holds while the executor runs on, and its version
    /// (`handler.failed_consumer_keeps_task`); `None`: the ActiveTask is gone at once.
    pub kept: Option<(Task, u64)>,
}

impl Orphan {
    /// The turn `info` of `message` on `task`, begun at `began_ms`.
    pub fn of(info: &TurnInfo, message: &Message, task: &a2a::Task, began_ms: u64) -> Orphan {
        Orphan {
            info: info.clone(),
            message: message.clone(),
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            began_ms,
            kept: None,
        }
    }
}

impl Replica {
    /// A blocking send answered at its first event closes the consumer of `task_id`'s
    /// events here ([`decide::send::SendAnswer::Now`], `handler.blocking_stops_consumer`).
    pub(super) fn close_consumer(&self, task_id: &str) {
        self.active(task_id).consumer_closed.set(true);
        self.record(format!(
            "{task_id}: blocking send answered at its first event; the consumer is closed"
        ));
    }

    /// Before a save of `task_id` here: once its consumer is closed, the run's later
    /// events are queued and never processed, so the save never happens.
    pub(super) async fn consumer_gate(&self, task_id: &str) {
        if !self.profile.handler.blocking_stops_consumer {
            return;
        }
        let closed = self
            .tasks
            .active
            .borrow()
            .get(task_id)
            .is_some_and(|a| a.consumer_closed.get());
        if closed {
            self.record(format!(
                "{task_id}: an event after the blocking answer: its consumer is closed, it is never saved"
            ));
            std::future::pending::<()>().await;
        }
    }

    /// The consumer of a turn failed before the effect, and the executor outlives it
    /// (`handler.executor_outlives_consumer`): it runs on in the background, thinks out the
    /// rest of its think time (begun when the request reached it), performs its effect and
    /// stops; nothing it emits is saved. The client has its error already.
    /// An ActiveTask that keeps a copy ([`Orphan::kept`]) stays registered, finished, until
    /// the executor ends ([`Replica::kept_after_cancel`] answers a cancel with it).
    fn executor_runs_on(self: &Rc<Self>, mut orphan: Orphan) {
        let kept = orphan.kept.take().map(|copy| {
            let active = self.active(&orphan.task_id);
            *active.cached.borrow_mut() = Some(copy);
            active.finished_kept.set(true);
            active
        });
        let me = self.clone();
        crate::activity::spawn(async move {
            me.run_orphan(orphan).await;
            if let Some(active) = kept {
                // The producer is done: `_run_consumer` stops awaiting it, and with no
                // subscriber left `_maybe_cleanup` removes the ActiveTask, and its copy.
                active.finished_kept.set(false);
                *active.cached.borrow_mut() = None;
            }
        });
    }

    async fn run_orphan(&self, orphan: Orphan) {
        let think = self.draw(self.timing.think_ms);
        sleep_until(orphan.began_ms + think.as_millis() as u64).await;
        self.orphan_effect(orphan, "the executor runs on after its consumer failed")
            .await;
    }

    /// A conflict's re-read found the task terminal, and the consumer cancels the executor
    /// now (`handler.executor_outlives_consumer`; a2a-sdk 1.x `EventConsumer`): one that has
    /// thought its think out, begun when the request reached it, made its effect already
    /// ([`decide::turn::thought_before_cancel`]). The model makes it here, before the send
    /// is answered: the ledger sees it at the cancel, no earlier, though the real executor
    /// sent it as its think ended.
    async fn executor_canceled(&self, orphan: Orphan) {
        let elapsed = now_ms().saturating_sub(orphan.began_ms);
        let range = self.timing.think_ms;
        let draw = || self.draw(range).as_millis() as u64;
        if decide::turn::thought_before_cancel(range, elapsed, draw) {
            let why = format!(
                "the executor is canceled {elapsed} ms in, past its think: its effect was made"
            );
            self.orphan_effect(orphan, &why).await;
        }
    }

    /// The consumer of a turn on `task_id` here ended before the turn's effect (its save
    /// failed, or its re-read found the task terminal): the ActiveTask is finished, and a
    /// task parked here, or registered by a subscription, is no longer held. a2a-sdk 1.3.0
    /// sets `_is_finished` as its consumer ends, whatever ended it (`_run_consumer`), and
    /// `ActiveTaskRegistry.get_or_create` replaces a finished ActiveTask, whose `start`
    /// reads the stored task: a send to this replica next is refused on the task's FAILED
    /// or CANCELED state, where the model ran it on the held ActiveTask (seen live,
    /// generation 4 seeds 94, 176 and 220 of a2a-python-1.3-memory and -plain: `-32004`,
    /// no effect, where the simulation ran the turn and failed it `-32602`).
    fn consumer_ended(&self, task_id: &str) {
        if let Some(active) = self.tasks.active.borrow().get(task_id) {
            active.parked.set(false);
            active.registered.set(false);
        }
    }

    /// The effect of an executor whose consumer is gone, recorded with `why`: nothing it
    /// emits is saved. One whose message asks for authorisation asks instead, and nothing
    /// runs; one whose message asks for no effect ([`AgentShape`]) makes none.
    async fn orphan_effect(&self, orphan: Orphan, why: &str) {
        let Orphan {
            info,
            message,
            task_id,
            context_id,
            began_ms: _,
            kept: _,
        } = orphan;
        if needs_auth(&message) || !AgentShape::of(&message).effect {
            return;
        }
        self.record(format!("{}#{}: {why}", info.conversation, info.turn));
        // Its outcome, unknown or not, is nobody's answer: the client has its error.
        let _ = self
            .perform_effect((&info, &message), task_id, context_id)
            .await;
    }

    /// The context of the task's TaskManager here when the consumer of `message`'s turn on
    /// `task` fails on it ([`decide::send::manager_context_fails`]), else `None`. The
    /// ActiveTask keeps the context it holds (or started with) when it fails, and otherwise
    /// takes the request's, which the run's events carry. A TaskManager lives as long as
    /// its ActiveTask: one that left the registry (a cancel or a terminal turn here, an
    /// idle release; nothing parked, running or registered) took its context with it, and
    /// the next request starts a new one with its own (a2a-sdk 1.3.0 `active_task.py`:
    /// the consumer's end sets `_is_finished`, and `_maybe_cleanup` removes the ActiveTask;
    /// seen live, generation 4's seed 161: a task-only follow-up to the replica that had
    /// canceled the task failed `-32602`). A message `task` already holds (`already_saved`;
    /// `task` is the copy read at the request's start, or on a model with
    /// `handler.cache_snapshot` the ActiveTask's cached copy, as a2a-sdk 1.1 keeps one) is
    /// not saved again, and nothing compares.
    pub(super) fn failing_manager_context(
        &self,
        message: &Message,
        task: &Task,
        already_saved: bool,
    ) -> Option<String> {
        let request = self.reply_context(message, task);
        let active = self.active(&task.id);
        let manager = active
            .manager_context
            .replace(None)
            .filter(|_| active.in_registry())
            .unwrap_or_else(|| request.clone());
        let fails = decide::send::manager_context_fails(
            &self.profile,
            Some(&manager),
            &request,
            &task.context_id,
            already_saved,
        );
        active
            .manager_context
            .replace(Some(if fails { manager.clone() } else { request }));
        fails.then_some(manager)
    }

    /// A turn whose TaskManager holds another context (`manager`) than its task's
    /// ([`Replica::failing_manager_context`]): the consumer fails on its first save, the
    /// ActiveTask saves the task FAILED with the user message, the client and every send
    /// that joined the turn are answered `-32602`, and the executor runs on to its effect
    /// (`handler.executor_outlives_consumer`). The refusal the send ends with.
    pub(super) async fn context_lost(
        self: &Rc<Self>,
        info: &TurnInfo,
        (task, manager): (Task, &str),
        message: &Message,
        version: Option<u64>,
        began_ms: u64,
        (dedup_store, dedup_key): (Option<&TaskStore>, &str),
    ) -> Refusal {
        self.record_as(
            Tone::Bad,
            format!(
                "{}#{}: the TaskManager's context {manager} is not {}'s {}: the consumer fails, the task is saved FAILED",
                info.conversation, info.turn, task.id, task.context_id
            ),
        );
        let mut failed = task.clone();
        let reply_in = self.profile.handler.reply_in.unwrap_or(ReplyIn::History);
        push_user_again(&mut failed, message, reply_in, true);
        failed.status = status(TaskState::Failed);
        let saved = self
            .persist(&mut failed, self.save_mode(version), version)
            .await;
        let refusal = rpc(
            -32602,
            format!(
                "Context in event doesn't match TaskManager {manager} : {}",
                task.context_id
            ),
        );
        // The FAILED copy is the ActiveTask's cached task, saved or not (the TaskManager
        // updates it in place before it writes).
        let kept = self.profile.handler.failed_consumer_keeps_task.then(|| {
            let version = saved.ok().or(version).unwrap_or_default();
            (failed, version)
        });
        let orphan = || {
            version.is_some().then(|| Orphan {
                kept,
                ..Orphan::of(info, message, &task, began_ms)
            })
        };
        let refusal = self
            .saved_before_effect(Err(refusal.clone()), dedup_store, dedup_key, orphan)
            .await
            .err()
            .unwrap_or(refusal);
        // The consumer's end finishes the ActiveTask (a2a-sdk 1.1.5 `_run_consumer`'s
        // `finally`), which leaves the registry with the copy it cached once nothing holds
        // it (seen live, 1.1 seed 176: the next send to that replica read the FAILED task
        // and was refused); with `handler.failed_consumer_keeps_task` the executor that runs
        // on holds it until it ends (generation 5's seed 128: a cancel there answered the
        // FAILED copy). Every request that joined it meanwhile hears the consumer's error
        // (seen live: the same turn sent twice at once to that replica, both -32602).
        self.end_turn(&self.active(&task.id), &Err(refusal.clone()));
        refusal
    }

    /// The outcome of a save made before the turn's effect ([`decide::save::before_effect`]):
    /// its version, or, once the dedup claim is released, the terminal task or the refusal.
    /// A task found terminal is refused with the model's code (a2a-sdk cancels the executor
    /// then); a failed save may have landed (its answer lost), and a takeover could still run
    /// the turn, so it is answered as a failure after the effect, and an executor that
    /// outlives its consumer runs on ([`Replica::executor_runs_on`]) when `orphan` gives it
    /// a turn: once the request has read the task from the store.
    pub(super) async fn saved_before_effect(
        self: &Rc<Self>,
        saved: Result<Saved, Refusal>,
        dedup_store: Option<&TaskStore>,
        dedup_key: &str,
        orphan: impl FnOnce() -> Option<Orphan>,
    ) -> Result<Before, Refusal> {
        // A save that did not land ended the consumer of a turn whose executor had started
        // (`orphan` gives it once the request read the task; a new task is held nowhere).
        let read = match (orphan(), &saved) {
            (Some(orphan), Err(_) | Ok(Saved::Terminal(..)))
                if self.profile.handler.executor_outlives_consumer =>
            {
                self.consumer_ended(&orphan.task_id);
                if matches!(saved, Ok(Saved::Terminal(..))) {
                    self.executor_canceled(orphan).await;
                    None
                } else {
                    Some(orphan)
                }
            }
            (read, _) => read,
        };
        match decide::save::before_effect(&self.profile, saved, read.is_some()) {
            BeforeEffect::Landed(v) => Ok(Before::Version(v)),
            BeforeEffect::AnswerTerminal(t) => {
                release_claim(dedup_store, dedup_key).await;
                self.record(format!(
                    "{} is {:?} on the re-read: the send is answered with it",
                    t.id, t.status.state
                ));
                Ok(Before::Answered(t))
            }
            BeforeEffect::Refuse {
                refusal,
                orphan_runs,
            } => {
                if let (true, Some(orphan)) = (orphan_runs, read) {
                    self.executor_runs_on(orphan);
                }
                release_claim(dedup_store, dedup_key).await;
                Err(refusal)
            }
        }
    }

    /// A turn stopped before its end (a cancel reached it, or a save's re-read found the
    /// task terminal) answers `ended`; with `handler.stream_ends_with_terminal` a streaming
    /// turn's stream hears that task as its last event, as a2a-sdk's subscribers hear the
    /// executor's canceled status or the terminal task the consumer re-read.
    pub(super) async fn stopped(
        &self,
        ended: Result<Task, Refusal>,
        sink: Option<&tokio::sync::mpsc::Sender<a2a::StreamResponse>>,
    ) -> Result<Task, Refusal> {
        if let (Some(tx), Some(last)) = (sink, decide::turn::stopped_event(&self.profile, &ended)) {
            let _ = tx.send(last).await;
        }
        ended
    }
}

/// How a save before the effect ended, when the turn is not refused.
pub(super) enum Before {
    /// It landed: the version.
    Version(u64),
    /// Its re-read found the task terminal, and the send is answered with it
    /// (`handler.terminal_reread_answers_task`).
    Answered(Box<Task>),
}
