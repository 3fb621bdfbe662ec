//! A blocking answer that closes the consumer (a2aproject/a2a-java#351).
//!
//! In a2a-java's `ResultAggregator.consumeAndBreakOnInterrupt`, as changed by #333
//! (e25328b0, 2025-10-14), a blocking call was answered with the first task event and set
//! `continueInBackground = false`, which closed the consumer. The AgentExecutor ran on and
//! enqueued its events, but nothing processed them, so the TaskStore never got the task's
//! later states. #351 (c9fe654c, 2025-10-20) keeps consuming in the background. Both landed
//! before 0.3.0.Final; 0.3.0.Beta2 consumed a blocking call to its end.
//!
//! Knobs read: `handler.blocking_stops_consumer`.

use super::Replica;

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
}
