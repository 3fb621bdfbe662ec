//! The scripted agent's own steps between its working save and its reply: the think, with
//! the progress updates a turn may ask for ([`crate::replica::AgentShape`]), and the
//! business effect at the ledger.
//!
//! Knobs read: `handler.saves` (only a server that saves every event saves a progress
//! update), `handler.executor_outlives_consumer` (the think began as the request reached
//! the executor), `handler.cache_snapshot`, `push.on`, `handler.after_effect_failure`.

use std::rc::Rc;
use std::time::Duration;

use a2a::{Message, StreamResponse, Task, TaskState};
use tokio::sync::mpsc;

use super::consumer::{Before, Orphan};
use super::decide;
use super::decide::subscribe::status_update;
use super::decide::turn::TurnPlan;
use super::{status, ActiveTask, AgentShape, Refusal, Replica, TurnInfo};
use crate::faults::KillPoint;
use crate::ground::ledger::{self, EffectError, EffectRequest};
use crate::trace::event::failure_tone;
use crate::trace::now_ms;

/// The turn a step belongs to: what it says, and the message that said it.
pub(super) type TurnOf<'a> = (&'a TurnInfo, &'a Message);

impl Replica {
    /// Thinks what is left of `think` once the saves before it are done
    /// ([`decide::turn::think_left`]). A turn
    /// whose message asks for progress updates ([`AgentShape::progress`]), on a server that
    /// saves every event ([`TurnPlan::artifact_first`]), sets its task working again that
    /// many times, evenly spread over the whole think (begun at `began_ms` where the
    /// executor thinks beside the saves before it, [`TurnPlan::thinks_while_saving`], else
    /// now), each saved as the working event before it was: re-applied on a conflict,
    /// answered with a task found terminal, and on a failure leaving an executor that
    /// outlives its consumer to run on to its effect (the same rules,
    /// [`Replica::saved_before_effect`]). The real executor does not wait for those saves
    /// (a2a-sdk's `TaskUpdater.update_status` only queues the event): the updates here keep
    /// their times in the think however long a save took.
    ///
    /// `Some` answer when an update ended the turn (a cancel had reached it, or its save
    /// found the task terminal or failed); `None` once the think is over.
    pub(super) async fn think_with_progress(
        self: &Rc<Self>,
        (info, message): TurnOf<'_>,
        task: &mut Task,
        (version, began_ms): (&mut u64, u64),
        (think, plan): (Duration, &TurnPlan),
        active: &ActiveTask,
        sink: Option<&mpsc::Sender<StreamResponse>>,
    ) -> Option<Result<Task, Refusal>> {
        let left = decide::turn::think_left(plan, think, now_ms().saturating_sub(began_ms));
        let updates = u64::from(AgentShape::of(message).progress);
        if updates == 0 || !plan.artifact_first {
            tokio::time::sleep(left).await;
            return None;
        }
        let from = if plan.thinks_while_saving {
            began_ms
        } else {
            now_ms()
        };
        let think_ms = think.as_millis() as u64;
        for k in 1..=updates {
            sleep_until(from + think_ms * k / (updates + 1)).await;
            if active.canceled.get() {
                return Some(self.stopped(self.canceled_result(task).await, sink).await);
            }
            task.status = status(TaskState::Working);
            let saved = self
                .save_reapplying(task, Some(*version), |t| {
                    t.status = status(TaskState::Working)
                })
                .await;
            let orphan = || Some(Orphan::of(info, message, task, began_ms));
            match self.saved_before_effect(saved, None, "", orphan).await {
                Ok(Before::Version(v)) => *version = v,
                Ok(Before::Answered(t)) => return Some(self.stopped(Ok(*t), sink).await),
                Err(refusal) => return Some(Err(refusal)),
            }
            self.record(format!(
                "{}#{}: progress {k} of {updates} saved on {} v{version}",
                info.conversation, info.turn, task.id
            ));
            if plan.caches {
                *active.cached.borrow_mut() = Some((task.clone(), *version));
            }
            if plan.push_every_save {
                self.push(task).await;
            }
            if let Some(tx) = sink {
                let _ = tx.send(status_update(task)).await;
            }
        }
        sleep_until(from + think_ms).await;
        None
    }

    /// The business effect of a turn (its tool call) at the ledger. An effect whose outcome
    /// is unknown (the ledger did not answer in time) fails the turn: the executor raised,
    /// and a profile that fails the task writes it FAILED first (best effort).
    pub(super) async fn effect(
        self: &Rc<Self>,
        (info, message): TurnOf<'_>,
        task: &mut Task,
        version: u64,
        plan: &TurnPlan,
        active: &ActiveTask,
    ) -> Result<(), Refusal> {
        let (task_id, context_id) = (task.id.clone(), task.context_id.clone());
        if let Err(e) = self
            .perform_effect((info, message), task_id, context_id)
            .await
        {
            if plan.fails_task {
                // The executor raised: the task is failed (best effort).
                task.status = status(TaskState::Failed);
                let saved = self
                    .persist(task, self.save_mode(Some(version)), Some(version))
                    .await;
                if let (Ok(v), true) = (saved, plan.caches) {
                    // The ActiveTask's copy follows every save it makes, this one too
                    // (a queued message then finds the task failed, as a2a-sdk 1.1.5 does).
                    *active.cached.borrow_mut() = Some((task.clone(), v));
                }
            }
            return Err(decide::turn::effect_failed(&self.profile, &e.to_string()));
        }
        Ok(())
    }

    /// Sends turn `(info, message)`'s effect on its task (`task_id`, `context_id`) to the
    /// ledger, between the `effect` and `after-effect` kill points, and records an outcome
    /// it cannot know (the ledger did not answer in time) as the error it returns. The one
    /// effect step of a turn and of an executor that outlived its consumer.
    pub(super) async fn perform_effect(
        &self,
        (info, message): TurnOf<'_>,
        task_id: String,
        context_id: String,
    ) -> Result<(), EffectError> {
        let key = decide::turn::effect_key(&self.profile, &context_id, &message.message_id);
        let effect = EffectRequest {
            task_id,
            context_id,
            conversation: info.conversation.clone(),
            turn: info.turn,
            message_id: message.message_id.clone(),
            replica: self.host.clone(),
            key,
            sent_ms: now_ms(),
        };
        self.faults
            .chaos
            .borrow_mut()
            .reached(&self.host, KillPoint::Effect);
        if let Err(e) = ledger::perform(&effect, self.timing.ledger_timeout).await {
            self.record_as(
                failure_tone(&e.to_string()),
                format!(
                    "{}#{}: effect outcome unknown: {e}",
                    info.conversation, info.turn
                ),
            );
            return Err(e);
        }
        self.faults
            .chaos
            .borrow_mut()
            .reached(&self.host, KillPoint::AfterEffect);
        Ok(())
    }
}

/// Sleeps until simulated time `at_ms` (not at all when it has passed).
pub(super) async fn sleep_until(at_ms: u64) {
    let now = now_ms();
    if at_ms > now {
        tokio::time::sleep(Duration::from_millis(at_ms - now)).await;
    }
}
