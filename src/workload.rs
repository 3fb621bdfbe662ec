//! Generated workloads: conversations of several turns, with retries and duplicates.
//!
//! Each conversation is a user talking to the agent: turn 1 creates a task, every later turn
//! continues it (taskId and contextId), with the task input-required in between, until the
//! last turn completes it. A turn whose outcome is unknown (`info`) is retried with the same
//! messageId, as Mastra's client `retries` do (A2A-BEHAVIOURS.md §3); a 409 (duplicate in
//! flight) is retried too. With `duplicate-rate`, a send is also fired a second time at once,
//! as a double-clicking user or a retrying proxy would. With `cancel-rate`, a conversation
//! sends one turn non-blocking and cancels it while it runs (sometimes twice, as a client
//! that retries its cancel does).
//!
//! Every id is derived from the seed and the conversation: nothing random is unseeded.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::client::Client;
use crate::error::InputError;
use crate::history::{OpKind, Outcome};
use crate::replica::TurnInfo;

/// The `[workload]` table of an experiment.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct WorkloadSpec {
    /// Concurrent conversations.
    pub conversations: u32,
    /// Turns per conversation.
    pub turns: u32,
    /// Client timeout per request, simulated ms.
    pub request_timeout_ms: u64,
    /// Retries of a turn whose outcome was unknown, with the same messageId.
    pub retries: u32,
    /// Wait before a retry, simulated ms.
    pub retry_backoff_ms: u64,
    /// Pause between turns (the user typing), drawn from [min, max] ms.
    pub gap_ms: [u64; 2],
    /// Conversations start spread over this many ms.
    pub start_spread_ms: u64,
    /// Probability that a send is fired twice at once (same messageId).
    pub duplicate_rate: f64,
    /// Probability that a conversation is canceled: at a random turn the client sends the
    /// turn non-blocking, then cancels it while it runs.
    pub cancel_rate: f64,
    /// The cancel follows the non-blocking send after a delay drawn from [min, max] ms.
    pub cancel_delay_ms: [u64; 2],
    /// Probability that a canceled conversation's cancel is sent a second time.
    pub double_cancel_rate: f64,
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        WorkloadSpec {
            conversations: 8,
            turns: 4,
            request_timeout_ms: 1500,
            retries: 2,
            retry_backoff_ms: 200,
            gap_ms: [50, 250],
            start_spread_ms: 500,
            duplicate_rate: 0.0,
            cancel_rate: 0.0,
            cancel_delay_ms: [0, 80],
            double_cancel_rate: 0.5,
        }
    }
}

/// Upper bounds that keep one run small (a sweep is many runs).
pub const CONVERSATIONS_MAX: u32 = 200;
/// See [`CONVERSATIONS_MAX`].
pub const TURNS_MAX: u32 = 50;

impl WorkloadSpec {
    /// Refuses sizes and rates the simulator cannot honour.
    pub fn validate(&self, origin: &str) -> Result<(), InputError> {
        let bad = |m: String| Err(InputError::new(origin, format!("[workload] {m}")));
        if self.conversations == 0 || self.conversations > CONVERSATIONS_MAX {
            return bad(format!(
                "conversations = {} must be 1..={CONVERSATIONS_MAX}",
                self.conversations
            ));
        }
        if self.turns == 0 || self.turns > TURNS_MAX {
            return bad(format!("turns = {} must be 1..={TURNS_MAX}", self.turns));
        }
        if self.gap_ms[0] > self.gap_ms[1] {
            return bad(format!("gap-ms = {:?} must be [min, max]", self.gap_ms));
        }
        for (name, rate) in [
            ("duplicate-rate", self.duplicate_rate),
            ("cancel-rate", self.cancel_rate),
            ("double-cancel-rate", self.double_cancel_rate),
        ] {
            if !(0.0..=1.0).contains(&rate) {
                return bad(format!("{name} = {rate} must be in [0, 1]"));
            }
        }
        if self.cancel_delay_ms[0] > self.cancel_delay_ms[1] {
            return bad(format!(
                "cancel-delay-ms = {:?} must be [min, max]",
                self.cancel_delay_ms
            ));
        }
        if self.request_timeout_ms == 0 {
            return bad("request-timeout-ms must be > 0".into());
        }
        Ok(())
    }
}

/// The contextId a conversation uses in the run with `seed`.
pub fn context_id(seed: u64, conversation: &str) -> String {
    format!("ctx-{conversation}-{:04x}", seed & 0xffff)
}

/// The messageId of a turn in the run with `seed`.
pub fn message_id(seed: u64, conversation: &str, turn: u32) -> String {
    format!("msg-{conversation}-t{turn}-{:04x}", seed & 0xffff)
}

/// Runs every conversation to its end; returns each conversation's task id, where it got one.
pub async fn run(spec: WorkloadSpec, seed: u64, client: Rc<Client>) -> BTreeMap<String, String> {
    let mut handles = Vec::new();
    for c in 0..spec.conversations {
        let client = client.clone();
        let spec = spec.clone();
        handles.push(tokio::task::spawn_local(async move {
            conversation(&spec, seed, c, &client).await
        }));
    }
    let mut tasks = BTreeMap::new();
    for h in handles {
        if let Ok(Some((name, id))) = h.await {
            tasks.insert(name, id);
        }
    }
    tasks
}

async fn conversation(
    spec: &WorkloadSpec,
    seed: u64,
    index: u32,
    client: &Rc<Client>,
) -> Option<(String, String)> {
    let name = format!("c{index}");
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (0xc0_u64 << 56) ^ u64::from(index));
    let ctx = context_id(seed, &name);
    tokio::time::sleep(Duration::from_millis(
        rng.random_range(0..=spec.start_spread_ms),
    ))
    .await;
    let mut task_id: Option<String> = None;
    let cancel_at = (spec.cancel_rate > 0.0 && rng.random_bool(spec.cancel_rate))
        .then(|| rng.random_range(1..=spec.turns));
    for turn in 1..=spec.turns {
        let info = TurnInfo {
            conversation: name.clone(),
            turn,
            turns: spec.turns,
        };
        let mid = message_id(seed, &name, turn);
        let message = Client::turn_message(&info, &mid, &ctx, task_id.as_deref());
        let cancel_now = cancel_at == Some(turn);
        let mut params = json!({ "message": message });
        if cancel_now {
            params["configuration"] = json!({ "returnImmediately": true });
        }
        let kind = OpKind::Send {
            conversation: name.clone(),
            turn,
            message_id: mid.clone(),
            blocking: !cancel_now,
        };
        let mut done = false;
        for attempt in 0..=spec.retries {
            if spec.duplicate_rate > 0.0 && rng.random_bool(spec.duplicate_rate) {
                let (c, k, p, x) = (client.clone(), kind.clone(), params.clone(), ctx.clone());
                tokio::task::spawn_local(async move {
                    c.unary(k, "SendMessage", p, Some(&x), None).await;
                });
            }
            let answer = client
                .unary(
                    kind.clone(),
                    "SendMessage",
                    params.clone(),
                    Some(&ctx),
                    None,
                )
                .await;
            match answer.outcome {
                Outcome::Ok => {
                    if let Some(t) = answer.task {
                        task_id = Some(t.id);
                    }
                    done = true;
                    break;
                }
                Outcome::Fail { code, .. } if code != 409 => break,
                _ if attempt < spec.retries => {
                    tokio::time::sleep(Duration::from_millis(spec.retry_backoff_ms)).await;
                }
                _ => {}
            }
        }
        if !done {
            // The user gives up on this conversation.
            break;
        }
        if cancel_now {
            if let Some(id) = &task_id {
                let delay = rng.random_range(spec.cancel_delay_ms[0]..=spec.cancel_delay_ms[1]);
                tokio::time::sleep(Duration::from_millis(delay)).await;
                let times = if rng.random_bool(spec.double_cancel_rate) {
                    2
                } else {
                    1
                };
                for _ in 0..times {
                    cancel(spec, client, &name, &ctx, id).await;
                }
            }
            break;
        }
        let gap = rng.random_range(spec.gap_ms[0]..=spec.gap_ms[1]);
        tokio::time::sleep(Duration::from_millis(gap)).await;
    }
    task_id.map(|id| (name, id))
}

/// Cancels a task, retrying while the outcome is unknown.
async fn cancel(spec: &WorkloadSpec, client: &Rc<Client>, name: &str, ctx: &str, task_id: &str) {
    for attempt in 0..=spec.retries {
        let answer = client
            .unary(
                OpKind::Cancel {
                    conversation: name.to_string(),
                },
                "CancelTask",
                json!({ "id": task_id }),
                Some(ctx),
                None,
            )
            .await;
        match answer.outcome {
            Outcome::Info { .. } if attempt < spec.retries => {
                tokio::time::sleep(Duration::from_millis(spec.retry_backoff_ms)).await;
            }
            _ => return,
        }
    }
}
