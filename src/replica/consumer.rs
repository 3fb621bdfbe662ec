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
//! dropped."). Only a conflict whose re-read finds the task terminal cancels the producer.
//!
//! Knobs read: `handler.blocking_stops_consumer`, `handler.executor_outlives_consumer`.

use std::rc::Rc;

use a2a::Message;

use super::{Replica, TurnInfo};
use crate::faults::KillPoint;
use crate::ground::ledger::{self, EffectRequest};
use crate::trace::event::failure_tone;
use crate::trace::now_ms;

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
        }
    }
}

impl Replica {
    /// Whether this blocking send is answered at its first event, its consumer closed: with
    /// `handler.blocking_stops_consumer`, for a blocking send only.
    pub(super) fn closes_consumer(&self, blocking: bool, task_id: &str) -> bool {
        if !(blocking && self.profile.handler.blocking_stops_consumer) {
            return false;
        }
        self.active(task_id).consumer_closed.set(true);
        self.record(format!(
            "{task_id}: blocking send answered at its first event; the consumer is closed"
        ));
        true
    }

    /// Before a save of `task_id` here: once its consumer is closed, the run's later
    /// events are queued and never processed, so the save never happens.
    pub(super) async fn consumer_gate(&self, task_id: &str) {
        if !self.profile.handler.blocking_stops_consumer {
            return;
        }
        let closed = self
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

    /// The consumer of a turn failed before the effect: with
    /// `handler.executor_outlives_consumer`, the executor runs on in the background, thinks
    /// out the rest of its think time (begun when the request reached it), performs its
    /// effect and stops; nothing it emits is saved. The client has its error already.
    pub(super) fn executor_runs_on(self: &Rc<Self>, orphan: Orphan) {
        if !self.profile.handler.executor_outlives_consumer {
            return;
        }
        let me = self.clone();
        crate::activity::spawn(async move { me.run_orphan(orphan).await });
    }

    async fn run_orphan(&self, orphan: Orphan) {
        let Orphan {
            info,
            message,
            task_id,
            context_id,
            began_ms,
        } = orphan;
        let think = self.draw(self.timing.think_ms);
        let until = began_ms + think.as_millis() as u64;
        let now = now_ms();
        if until > now {
            tokio::time::sleep(std::time::Duration::from_millis(until - now)).await;
        }
        if super::needs_auth(&message) {
            // The executor asks for authorisation instead; nothing runs.
            return;
        }
        self.record(format!(
            "{}#{}: the executor runs on after its consumer failed",
            info.conversation, info.turn
        ));
        let effect = EffectRequest {
            task_id,
            context_id: context_id.clone(),
            conversation: info.conversation.clone(),
            turn: info.turn,
            message_id: message.message_id.clone(),
            replica: self.name.clone(),
            key: self
                .profile
                .ledger
                .idempotency_key
                .then(|| format!("{context_id}/{}", message.message_id)),
            sent_ms: now_ms(),
        };
        self.chaos
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
            return;
        }
        self.chaos
            .borrow_mut()
            .reached(&self.name, KillPoint::AfterEffect);
    }
}
