//! Recovery of abandoned work: the takeover sweeper (a working task whose runner lease ran
//! out has its last message run again here), the retirement of orphans such a takeover
//! finds, and the expiry of an input wait.
//!
//! Knobs read: `recovery.sweep_ms` (the sweeper's period; the runner lease itself is set by
//! the turn) and `handler.input_timeout_ms`.

use std::rc::Rc;
use std::time::Duration;

use a2a::{Message, Part, Role, TaskState, TaskStatus};

use super::{set_marker, Caller, Replica, TurnInfo};
use crate::store::SaveMode;

impl Replica {
    /// Takes over abandoned tasks: a working task whose runner lease ran out has its last
    /// user message run again here (the message is in the task's history; the ledger key
    /// and the expired dedup lease make a second run safe). A task with no message to run is
    /// moved to input-required, asking the client to send it again.
    pub(super) async fn sweep(self: Rc<Self>) {
        let every = Duration::from_millis(self.profile.recovery.sweep_ms);
        loop {
            tokio::time::sleep(every).await;
            let Ok(tasks) = self.links.store.abandoned().await else {
                continue;
            };
            for (mut task, version) in tasks {
                let last_user = task
                    .history
                    .iter()
                    .flatten()
                    .rev()
                    .find(|m| m.role == Role::User && TurnInfo::from_message(m).is_some())
                    .cloned();
                if let Some(mut message) = last_user {
                    self.record(format!(
                        "taking over abandoned {} v{version}: running {} again",
                        task.id, message.message_id
                    ));
                    message.task_id = Some(task.id.clone());
                    let me = self.clone();
                    let abandoned = task.id.clone();
                    crate::activity::spawn(async move {
                        if let Ok(done) = me.clone().send(message, true, Caller::Internal).await {
                            if done.id != abandoned {
                                // The message already completed as another task (a retry
                                // of a first turn created it): this one is an orphan.
                                me.retire(&abandoned, &done.id).await;
                            }
                        }
                    });
                    continue;
                }
                set_marker(&mut task, "runnerUntilMs", None);
                set_marker(&mut task, "effectPending", None);
                task.status = TaskStatus {
                    state: TaskState::InputRequired,
                    message: Some(Message {
                        message_id: format!("{}-interrupted-v{version}", task.id),
                        context_id: Some(task.context_id.clone()),
                        task_id: Some(task.id.clone()),
                        role: Role::Agent,
                        parts: vec![Part::text(
                            "interrupted: please send your last message again",
                        )],
                        metadata: None,
                        extensions: None,
                        reference_task_ids: None,
                    }),
                    timestamp: None,
                };
                if let Ok(v) = self
                    .links
                    .store
                    .save(
                        &task,
                        SaveMode::Cas(Some(version)),
                        Some(version),
                        &self.host,
                    )
                    .await
                {
                    self.record(format!(
                        "took over abandoned {} v{v}: input-required",
                        task.id
                    ));
                }
            }
        }
    }

    /// Settles an orphan: a task whose only message completed as task `instead` (the
    /// first attempt's answer was lost and its retry created that one). It is marked failed,
    /// naming the task that holds the conversation, so nothing waits on it forever.
    async fn retire(&self, orphan: &str, instead: &str) {
        let Ok(Some((mut task, version))) = self.load(orphan).await else {
            return;
        };
        if task.status.state.is_terminal() {
            return;
        }
        set_marker(&mut task, "runnerUntilMs", None);
        set_marker(&mut task, "effectPending", None);
        task.status = TaskStatus {
            state: TaskState::Failed,
            message: Some(Message {
                message_id: format!("{orphan}-superseded-v{version}"),
                context_id: Some(task.context_id.clone()),
                task_id: Some(task.id.clone()),
                role: Role::Agent,
                parts: vec![Part::text(format!(
                    "superseded: this message completed as task {instead}"
                ))],
                metadata: None,
                extensions: None,
                reference_task_ids: None,
            }),
            timestamp: None,
        };
        if let Ok(v) = self
            .persist(&mut task, SaveMode::Cas(Some(version)), Some(version))
            .await
        {
            self.record(format!(
                "retired orphan {orphan} v{v}: superseded by {instead}"
            ));
        }
    }

    /// Fails a task still waiting for input `handler.input_timeout_ms` after its turn saved
    /// it, if no message came since (Cognigy: an input wait fails after 5 minutes).
    pub(super) async fn expire_input(self: &Rc<Self>, task_id: &str, messages: usize) {
        tokio::time::sleep(Duration::from_millis(self.profile.handler.input_timeout_ms)).await;
        let Ok(Some((mut task, version))) = self.load(task_id).await else {
            return;
        };
        if task.status.state != TaskState::InputRequired
            || task.history.as_ref().map_or(0, Vec::len) != messages
        {
            return;
        }
        task.status = TaskStatus {
            state: TaskState::Failed,
            message: Some(Message {
                message_id: format!("{task_id}-input-timeout-v{version}"),
                context_id: Some(task.context_id.clone()),
                task_id: Some(task_id.to_string()),
                role: Role::Agent,
                parts: vec![Part::text("no input came in time")],
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
            self.record(format!("{task_id} waited too long for input: failed v{v}"));
            self.push(&task).await;
        }
    }
}
