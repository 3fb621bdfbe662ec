//! What the proxy does when it stops: it reads every task it saw back from every upstream
//! (GetTask, or tasks/get when the clients spoke 0.3) and records the copies as
//! `final-task` lines. Each read sends credentials: `--token` as a Bearer token, or else the
//! `Authorization` header of the first request whose answer named the task (a server that
//! scopes tasks to their owner answers only them).

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;

use super::Proxy;
use crate::live::recording::Line;
use crate::net;
use crate::trace::now_ms;

/// Most task ids read back when the proxy stops.
const FINAL_TASKS_MAX: usize = 1000;

impl Proxy {
    /// Every task seen, read from every upstream, as `final-task` lines.
    pub(super) async fn read_final_tasks(&self) {
        let ids: BTreeSet<String> = self.contexts.borrow().keys().cloned().collect();
        let method = if self.v03.get() {
            "tasks/get"
        } else {
            "GetTask"
        };
        for id in ids.iter().take(FINAL_TASKS_MAX) {
            for (i, up) in self.upstreams.iter().enumerate() {
                let body = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": method, "params": {"id": id}});
                let mut headers = if self.v03.get() {
                    Vec::new()
                } else {
                    vec![("a2a-version", "1.0".to_string())]
                };
                let token = self.options.token.as_ref().map(|t| format!("Bearer {t}"));
                if let Some(a) = token.or_else(|| self.credentials.borrow().get(id).cloned()) {
                    headers.push(("authorization", a));
                }
                let mut call = self.call(
                    i,
                    "/",
                    Bytes::from(serde_json::to_vec(&body).expect("requests serialise")),
                    &headers,
                );
                call.timeout = Duration::from_secs(3);
                let Ok(reply) = net::send(&call).await else {
                    continue;
                };
                let Ok(value) = serde_json::from_slice::<Value>(&reply.body) else {
                    continue;
                };
                let Some(result) = value.get("result") else {
                    continue;
                };
                let task = result.get("task").unwrap_or(result).clone();
                if task.get("id").and_then(Value::as_str) == Some(id.as_str()) {
                    self.recorder.write(&Line::FinalTask {
                        at_ms: now_ms(),
                        replica: up.name.clone(),
                        task,
                    });
                }
            }
        }
    }
}
