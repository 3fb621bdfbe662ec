//! Push notifications: registration of push configs, the check of a target's address,
//! delivery (inline, in the background, or through the store's outbox) with its retries and
//! redirects, and the push log the checkers read.
//!
//! Knobs read: `[push]`: `supported`, `validate`, `shared_configs`, `outbox`, `inline`,
//! `on`, `retries`, `log_failures`, `timeout_ms`, `pin_dns`, `follow_redirects`,
//! `dispatch_as_anonymous`.

use std::rc::Rc;
use std::time::Duration;

use a2a::Task;
use serde_json::json;

use super::{rpc, Caller, Refusal, Replica};
use crate::ground::push::{Egress, PushReport};
use crate::model::{PushOn, PushValidate};
use crate::net;
use crate::trace::event::failure_tone;
use crate::trace::{now_ms, Tone};

/// How often each replica looks for outbox entries to deliver.
const OUTBOX_POLL: Duration = Duration::from_millis(100);

/// How long a claimed outbox entry is held before another replica may try it.
const OUTBOX_LEASE_MS: u64 = 4000;

/// A push URL registered in the pod that took its config, with the owner that registered it
/// (the caller's token subject; empty for an anonymous caller).
#[derive(Debug, Clone)]
pub(super) struct PodPush {
    pub url: String,
    pub owner: String,
}

impl Replica {
    /// CreateTaskPushNotificationConfig: `-32003` when the model has no push; `-32001` for
    /// an unknown task; `-32602` when validation at registration refuses the URL.
    pub(super) async fn register_push(
        &self,
        cfg: &a2a::TaskPushNotificationConfig,
        caller: &Caller,
    ) -> Result<(), Refusal> {
        let knobs = &self.profile.push;
        if !knobs.supported {
            return Err(rpc(-32003, "push notifications are not supported"));
        }
        match self.load_for(caller, &cfg.task_id).await {
            Ok(Some(_)) => {}
            Ok(None) => return Err(rpc(-32001, format!("task {} not found", cfg.task_id))),
            Err(e) => return Err(rpc(-32603, e)),
        }
        self.check_at_registration(&cfg.task_id, &cfg.url)?;
        self.add_push_url(cfg, caller).await
    }

    /// The check of a push URL when a config is taken (`push.validate` at registration):
    /// `-32602` for a refused target.
    pub(super) fn check_at_registration(&self, task_id: &str, url: &str) -> Result<(), Refusal> {
        if matches!(
            self.profile.push.validate,
            PushValidate::Registration | PushValidate::RegistrationAndSend
        ) {
            if let Err(why) = self.check_target(url) {
                self.record_as(
                    Tone::Bad,
                    format!("push config for {task_id} refused: {why}"),
                );
                return Err(rpc(-32602, format!("push URL refused: {why}")));
            }
        }
        Ok(())
    }

    /// Registers a checked config's URL for delivery (per pod, or in the shared store).
    pub(super) async fn add_push_url(
        &self,
        cfg: &a2a::TaskPushNotificationConfig,
        caller: &Caller,
    ) -> Result<(), Refusal> {
        let knobs = &self.profile.push;
        if knobs.shared_configs {
            self.links
                .store
                .add_push(&cfg.task_id, &cfg.url)
                .await
                .map_err(|e| rpc(-32603, e))?;
        } else {
            let mut configs = self.pushes.configs.borrow_mut();
            let urls = configs.entry(cfg.task_id.clone()).or_default();
            if !urls.iter().any(|p| p.url == cfg.url) {
                urls.push(PodPush {
                    url: cfg.url.clone(),
                    owner: caller.owner().to_string(),
                });
            }
        }
        self.record(format!("push config for {} -> {}", cfg.task_id, cfg.url));
        Ok(())
    }

    /// Resolves a URL's host once and refuses private, loopback and link-local targets.
    fn check_target(&self, url: &str) -> Result<crate::ground::push::Address, String> {
        let (host, port, _) =
            crate::ground::push::parse_url(url).ok_or_else(|| format!("not an http URL: {url}"))?;
        let address = self
            .resolve(&host, port)
            .ok_or_else(|| format!("{host} does not resolve"))?;
        if address.private {
            return Err(format!("{host} resolves to private address {}", address.ip));
        }
        Ok(address)
    }

    /// A push target's address: the machine's answer under `serve` (real egress), the
    /// simulated resolver's otherwise.
    fn resolve(&self, host: &str, port: u16) -> Option<crate::ground::push::Address> {
        let mut world = self.pushes.world.borrow_mut();
        match world.real {
            Some(real) => real.resolve(host, port),
            None => world.resolver.resolve(host),
        }
    }

    /// The headers a2a-sdk 1.3.0's `BasePushNotificationSender` sends with a push to `url`
    /// for `task_id`, from the config that named it: `X-A2A-Notification-Token` (its
    /// `token`) and `Authorization` (its `authentication` scheme and credentials).
    fn push_headers(&self, task_id: &str, url: &str) -> Vec<(&'static str, String)> {
        let details = self.pushes.details.borrow();
        let Some(cfg) = details
            .get(task_id)
            .and_then(|l| l.iter().rev().find(|c| c.url == url))
        else {
            return Vec::new();
        };
        let mut headers = Vec::new();
        if let Some(token) = cfg.token.as_deref().filter(|t| !t.is_empty()) {
            headers.push(("x-a2a-notification-token", token.to_string()));
        }
        if let Some(auth) = cfg.authentication.as_ref().filter(|a| !a.scheme.is_empty()) {
            if let Some(credentials) = auth.credentials.as_deref().filter(|c| !c.is_empty()) {
                headers.push(("authorization", format!("{} {credentials}", auth.scheme)));
            }
        }
        headers
    }

    /// Pushes `task`'s state, inline (awaited by the turn) or in the background, as the
    /// model does.
    pub(super) async fn push(self: &Rc<Self>, task: &Task) {
        if self.profile.push.outbox {
            // Queued with the save that produced this state (see `persist`).
            return;
        }
        if self.profile.push.inline {
            self.push_now(task).await;
        } else {
            let (me, task) = (self.clone(), task.clone());
            crate::activity::spawn(async move { me.push_now(&task).await });
        }
    }

    /// Pushes `task`'s state to every URL registered for it, if the model pushes this state.
    pub(super) fn push_wanted(&self, task: &Task) -> bool {
        let state = &task.status.state;
        let wanted = match self.profile.push.on {
            PushOn::EverySave => true,
            PushOn::TerminalOrInterrupted => crate::protocol::at_rest(state),
        };
        wanted && self.profile.push.supported
    }

    /// Delivers what the outbox holds: claims unheld entries (a lease), delivers each once,
    /// and removes it when delivered or out of retries; a failed one is tried again, by any
    /// replica, when its lease runs out.
    pub(super) async fn deliver_outbox(self: Rc<Self>) {
        loop {
            tokio::time::sleep(OUTBOX_POLL).await;
            let Ok(entries) = self.links.store.claim_outbox(OUTBOX_LEASE_MS).await else {
                continue;
            };
            // Each claimed entry is delivered on its own, so a slow receiver holds up
            // nobody else; the lease outlasts one attempt (the push timeout).
            for (id, entry) in entries {
                let me = self.clone();
                crate::activity::spawn(async move { me.deliver_entry(id, entry).await });
            }
        }
    }

    async fn deliver_entry(&self, id: u64, entry: crate::store::OutboxEntry) {
        let (delivered, outcome) = self.deliver(&entry.task, &entry.url, 0).await;
        let last = delivered
            || outcome.starts_with("refused")
            || entry.attempts > self.profile.push.retries;
        self.record_as(
            failure_tone(&outcome),
            format!(
                "outbox push {:?} of {} to {} (try {}): {outcome}",
                entry.task.status.state, entry.task.id, entry.url, entry.attempts
            ),
        );
        if delivered || self.profile.push.log_failures {
            self.pushes.world.borrow_mut().reports.push(PushReport {
                at_ms: now_ms(),
                replica: self.host.clone(),
                task_id: entry.task.id.clone(),
                state: entry.task.status.state.clone(),
                url: entry.url.clone(),
                outcome,
                delivered,
            });
        }
        if last {
            let _ = self.links.store.ack_outbox(id).await;
        }
    }

    async fn push_now(&self, task: &Task) {
        let state = &task.status.state;
        if !self.push_wanted(task) {
            return;
        }
        let urls = if self.profile.push.shared_configs {
            self.links
                .store
                .push_urls(&task.id)
                .await
                .unwrap_or_default()
        } else {
            let anonymous_only = self.profile.push.dispatch_as_anonymous;
            self.pushes
                .configs
                .borrow()
                .get(&task.id)
                .into_iter()
                .flatten()
                .filter(|p| !anonymous_only || p.owner.is_empty())
                .map(|p| p.url.clone())
                .collect()
        };
        for url in urls {
            let mut tries = 0;
            loop {
                let (delivered, outcome) = self.deliver(task, &url, 0).await;
                if delivered || self.profile.push.log_failures {
                    self.pushes.world.borrow_mut().reports.push(PushReport {
                        at_ms: now_ms(),
                        replica: self.host.clone(),
                        task_id: task.id.clone(),
                        state: state.clone(),
                        url: url.clone(),
                        outcome: outcome.clone(),
                        delivered,
                    });
                }
                self.record_as(
                    failure_tone(&outcome),
                    format!("push {:?} of {} to {url}: {outcome}", state, task.id),
                );
                if delivered || outcome.starts_with("refused") || tries >= self.profile.push.retries
                {
                    break;
                }
                tries += 1;
            }
        }
    }

    /// One delivery attempt (following redirects if the model does): (delivered, outcome).
    fn deliver<'a>(
        &'a self,
        task: &'a Task,
        url: &'a str,
        depth: u32,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = (bool, String)> + 'a>> {
        Box::pin(async move {
            let knobs = &self.profile.push;
            let Some((host, port, path)) = crate::ground::push::parse_url(url) else {
                return (false, format!("failed: not an http URL: {url}"));
            };
            let checked = if matches!(
                knobs.validate,
                PushValidate::Send | PushValidate::RegistrationAndSend
            ) {
                match self.check_target(url) {
                    Ok(a) => Some(a),
                    Err(why) => return (false, format!("refused: {why}")),
                }
            } else {
                None
            };
            // The address the connection goes to: the checked one when pinned, else a fresh
            // answer (the rebinding window).
            let address = match (checked, knobs.pin_dns) {
                (Some(a), true) => Some(a),
                _ => self.resolve(&host, port),
            };
            let Some(address) = address else {
                return (false, format!("failed: {host} does not resolve"));
            };
            self.pushes.world.borrow_mut().egress.push(Egress {
                at_ms: now_ms(),
                replica: self.host.clone(),
                task_id: task.id.clone(),
                url: url.to_string(),
                address: address.clone(),
            });
            let real = self.pushes.world.borrow().real.is_some();
            if real && address.private {
                // Whatever the model checks, serve sends nothing to a private address.
                return (
                    false,
                    format!(
                        "refused: {host} is the private address {} (serve sends pushes to loopback only with --allow-loopback-push)",
                        address.ip
                    ),
                );
            }
            let target = match (address.host, real) {
                (Some(simulated), _) => simulated.to_string(),
                // The checked address itself: what was resolved is what is connected to.
                (None, true) => address.ip.clone(),
                (None, false) => {
                    return (false, format!("failed: nothing answers at {}", address.ip))
                }
            };
            let body = serde_json::to_vec(&json!({"statusUpdate": {
                "taskId": task.id, "contextId": task.context_id, "status": task.status
            }}))
            .expect("push bodies serialise");
            let timeout = Duration::from_millis(knobs.timeout_ms);
            let mut call = net::Call::post_json(target, port, &path, body, timeout);
            if real {
                call.headers = self.push_headers(&task.id, url);
            }
            match net::send(&call).await {
                Ok(r) if r.status.is_success() => {
                    (true, format!("delivered ({})", r.status.as_u16()))
                }
                Ok(r) if r.status.is_redirection() && knobs.follow_redirects && depth < 5 => {
                    match r.headers.get("location").and_then(|v| v.to_str().ok()) {
                        Some(next) => {
                            let next = next.to_string();
                            self.deliver(task, &next, depth + 1).await
                        }
                        None => (
                            false,
                            format!("failed: HTTP {} without a location", r.status.as_u16()),
                        ),
                    }
                }
                Ok(r) => (false, format!("failed: HTTP {}", r.status.as_u16())),
                Err(e) => (false, format!("failed: {e}")),
            }
        })
    }
}
