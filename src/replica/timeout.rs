//! A new task's admission: `handler.max_contexts` (how many contexts a replica holds at
//! once) and `handler.task_timeout_ms` (a timeout set per task when it starts).
//!
//! Rasa Pro 3.17 (seed rasa-a2a-state-affinity-and-push-delivery-boundaries.md, "默认task
//! 超时600秒；计时器按task建立，不被同context后续message延长"; A2A-BEHAVIOURS.md §4): the
//! task timeout is armed when the task is created and no later message of the conversation
//! extends it, so a conversation whose user keeps answering within minutes still fails 600 s
//! after its first message. The capacity cap (`max_contexts`, 1000) lives in each worker's
//! memory and "input_required保留context，意味着等待用户的任务仍占资源，不能只按当前running计
//! 容量": a context whose task waits for input keeps its slot, so parked conversations can
//! fill the cap and new conversations are refused while nothing runs.
//!
//! The timer lives in the replica that created the task (a pod that dies loses it, as it
//! loses the task). It is a model timer ([`crate::activity::spawn_timer`]): the settle rule
//! waits for it only when it would fire before the run's final reads. A turn running at the
//! deadline finishes first (the timer takes the task's lock); what Rasa does to a turn in
//! progress at its timeout is not documented.

use std::rc::Rc;
use std::time::Duration;

use a2a::{Message, Part, Role, Task, TaskStatus};

use super::turn::release_claim;
use super::{rpc, Refusal, Replica};
use crate::store::TaskStore;

impl Replica {
    /// Admits a task this message is about to create (`new_task`; any other message passes):
    /// refuses it when the replica already holds `handler.max_contexts` other contexts
    /// (giving up the message's dedup claim), and arms its `handler.task_timeout_ms`.
    pub(super) async fn admit(
        self: &Rc<Self>,
        task: &Task,
        new_task: bool,
        dedup: Option<&TaskStore>,
        dedup_key: &str,
    ) -> Result<(), Refusal> {
        if !new_task {
            return Ok(());
        }
        if let Some(cap) = self.profile.handler.max_contexts {
            let held = self.contexts_held(&task.context_id).await;
            if held >= cap {
                release_claim(dedup, dedup_key).await;
                self.record_as(
                    crate::trace::Tone::Warn,
                    format!(
                        "{} refused: {held} contexts held here (max_contexts {cap})",
                        task.id
                    ),
                );
                return Err(rpc(
                    -32603,
                    format!("max_contexts reached: {held} contexts held"),
                ));
            }
        }
        if let Some(ms) = self.profile.handler.task_timeout_ms {
            let (me, id) = (self.clone(), task.id.clone());
            let at = crate::trace::now_ms() + ms;
            crate::activity::spawn_timer(at, async move { me.time_out(&id, ms).await });
        }
        Ok(())
    }

    /// Contexts other than `except` with a task in this replica's store that is not
    /// terminal (working, or waiting for input or authorisation).
    async fn contexts_held(&self, except: &str) -> usize {
        let tasks = self.links.store.list().await.unwrap_or_default();
        let held: std::collections::BTreeSet<&str> = tasks
            .iter()
            .filter(|t| !t.status.state.is_terminal() && t.context_id != except)
            .map(|t| t.context_id.as_str())
            .collect();
        held.len()
    }

    /// Fails the task `task_id` `ms` after it was created unless it is terminal by then,
    /// whatever messages came since.
    async fn time_out(self: &Rc<Self>, task_id: &str, ms: u64) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        let active = self.active(task_id);
        let _guard = self.lock(&active).await;
        let Ok(Some((mut task, version))) = self.load(task_id).await else {
            return;
        };
        if task.status.state.is_terminal() {
            return;
        }
        let was = task.status.state;
        task.status = TaskStatus {
            state: a2a::TaskState::Failed,
            message: Some(Message {
                message_id: format!("{task_id}-task-timeout-v{version}"),
                context_id: Some(task.context_id.clone()),
                task_id: Some(task_id.to_string()),
                role: Role::Agent,
                parts: vec![Part::text(format!("task timed out after {ms} ms"))],
                metadata: None,
                extensions: None,
                reference_task_ids: None,
            }),
            timestamp: None,
        };
        if let Ok(v) = self
            .persist(&mut task, self.save_mode(Some(version)), Some(version))
            .await
        {
            self.record_as(
                crate::trace::Tone::Warn,
                format!("{task_id} ({was:?}) timed out {ms} ms after it was created: failed v{v}"),
            );
            self.push(&task).await;
        }
    }
}
