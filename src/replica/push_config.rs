//! The push-config methods: Create (with the config's `id`), Get, List and Delete.
//!
//! As a2a-sdk 1.3.0 does (`request_handlers/default_request_handler_v2.py`,
//! `tasks/inmemory_push_notification_config_store.py`; measured in docs/CONFORMANCE.md): a
//! config created without an `id` gets the task's id; a second create with the same id
//! replaces the first; Get of an unknown config is `-32001`; List answers `{"configs":
//! [...]}`; Delete answers `null`. Every method is `-32003` when the model has no push, and
//! `-32001` for a task the caller may not touch. The whole configs live in the replica
//! that took them; delivery reads the URLs that [`Replica::register_push`] registered (per
//! pod, or in the shared store), and Delete unregisters a URL no other config still names.
//!
//! A config may also come inline, in SendMessage's configuration: held by message id until
//! the turn knows its task, then registered like a created one.
//!
//! Knobs read: `push.supported`, `push.shared_configs`, and through `register_push` the
//! rest of its registration knobs.

use a2a::TaskPushNotificationConfig;

use super::{rpc, Caller, Refusal, Replica};

impl Replica {
    /// CreateTaskPushNotificationConfig: the config registered, answered with its `id`.
    pub(super) async fn create_push_config(
        &self,
        mut cfg: TaskPushNotificationConfig,
        caller: &Caller,
    ) -> Result<TaskPushNotificationConfig, Refusal> {
        if cfg.id.as_deref().is_none_or(str::is_empty) {
            cfg.id = Some(cfg.task_id.clone());
        }
        self.register_push(&cfg, caller).await?;
        self.keep_push_config(cfg).await
    }

    /// A config sent inline, in SendMessage's `configuration.taskPushNotificationConfig`:
    /// checked as a registration would be (`-32602` for a refused URL) and held until the
    /// turn knows its task, when [`Replica::take_inline_push`] registers it. Ignored when the
    /// model has no push (a2a-sdk 1.3.0 `DefaultRequestHandlerV2`: only with a config
    /// store).
    pub(super) fn hold_inline_push(
        &self,
        message_id: &str,
        cfg: TaskPushNotificationConfig,
    ) -> Result<(), Refusal> {
        if !self.profile.push.supported {
            return Ok(());
        }
        self.check_at_registration(cfg.task_id.as_str(), &cfg.url)?;
        self.pushes
            .inline
            .borrow_mut()
            .insert(message_id.to_string(), cfg);
        Ok(())
    }

    /// Registers the inline config a turn's message carried, for the turn's task (its id
    /// the task's when it has none), before the turn's first save: a2a-sdk 1.3.0 sets it
    /// in the config store before the task runs.
    pub(super) async fn take_inline_push(&self, message_id: &str, task_id: &str, caller: &Caller) {
        let Some(mut cfg) = self.pushes.inline.borrow_mut().remove(message_id) else {
            return;
        };
        cfg.task_id = task_id.to_string();
        if cfg.id.as_deref().is_none_or(str::is_empty) {
            cfg.id = Some(task_id.to_string());
        }
        let kept = match self.add_push_url(&cfg, caller).await {
            Ok(()) => self.keep_push_config(cfg).await,
            Err(r) => Err(r),
        };
        if let Err(r) = kept {
            self.record_as(
                crate::trace::Tone::Bad,
                format!("inline push config for {task_id} not kept: {r:?}"),
            );
        }
    }

    /// Keeps a registered config whole (what Get, List and Delete answer, and the headers
    /// its pushes carry); one with the same id is replaced, its URL unregistered when no
    /// other config names it.
    async fn keep_push_config(
        &self,
        cfg: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, Refusal> {
        let replaced = {
            let mut details = self.pushes.details.borrow_mut();
            let list = details.entry(cfg.task_id.clone()).or_default();
            let old = list
                .iter()
                .position(|c| c.id == cfg.id)
                .map(|i| list.remove(i));
            list.push(cfg.clone());
            old
        };
        if let Some(old) = replaced.filter(|old| old.url != cfg.url) {
            self.forget_url(&cfg.task_id, &old.url).await?;
        }
        Ok(cfg)
    }

    /// GetTaskPushNotificationConfig.
    pub(super) async fn get_push_config(
        &self,
        task_id: &str,
        id: &str,
        caller: &Caller,
    ) -> Result<TaskPushNotificationConfig, Refusal> {
        self.push_task(task_id, caller).await?;
        self.pushes
            .details
            .borrow()
            .get(task_id)
            .and_then(|l| l.iter().find(|c| c.id.as_deref() == Some(id)).cloned())
            .ok_or_else(|| {
                rpc(
                    -32001,
                    format!("push config {id} of task {task_id} not found"),
                )
            })
    }

    /// ListTaskPushNotificationConfigs: every config of the task, in the order created.
    pub(super) async fn list_push_configs(
        &self,
        task_id: &str,
        caller: &Caller,
    ) -> Result<Vec<TaskPushNotificationConfig>, Refusal> {
        self.push_task(task_id, caller).await?;
        Ok(self
            .pushes
            .details
            .borrow()
            .get(task_id)
            .cloned()
            .unwrap_or_default())
    }

    /// DeleteTaskPushNotificationConfig: the config is gone, and its URL unregistered when
    /// no other config of the task names it. Deleting an unknown config succeeds (a2a-sdk's
    /// in-memory config store).
    pub(super) async fn delete_push_config(
        &self,
        task_id: &str,
        id: &str,
        caller: &Caller,
    ) -> Result<(), Refusal> {
        self.push_task(task_id, caller).await?;
        let removed = {
            let mut details = self.pushes.details.borrow_mut();
            let list = details.entry(task_id.to_string()).or_default();
            let removed = list
                .iter()
                .position(|c| c.id.as_deref() == Some(id))
                .map(|i| list.remove(i));
            if list.is_empty() {
                details.remove(task_id);
            }
            removed
        };
        if let Some(old) = removed {
            self.forget_url(task_id, &old.url).await?;
            self.record(format!("push config {id} of {task_id} deleted"));
        }
        Ok(())
    }

    /// The checks every push-config method makes: push at all (`-32003`), then the task.
    async fn push_task(&self, task_id: &str, caller: &Caller) -> Result<(), Refusal> {
        if !self.profile.push.supported {
            return Err(rpc(-32003, "push notifications are not supported"));
        }
        match self.load_for(caller, task_id).await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(rpc(-32001, format!("task {task_id} not found"))),
            Err(e) => Err(rpc(-32603, e)),
        }
    }

    /// Unregisters `url` for `task_id` unless a config this replica keeps still names it.
    async fn forget_url(&self, task_id: &str, url: &str) -> Result<(), Refusal> {
        let still = self
            .pushes
            .details
            .borrow()
            .get(task_id)
            .is_some_and(|l| l.iter().any(|c| c.url == url));
        if still {
            return Ok(());
        }
        if self.profile.push.shared_configs {
            self.links
                .store
                .remove_push(task_id, url)
                .await
                .map_err(|e| rpc(-32603, e))?;
        } else if let Some(urls) = self.pushes.configs.borrow_mut().get_mut(task_id) {
            urls.retain(|p| p.url != url);
        }
        Ok(())
    }
}
