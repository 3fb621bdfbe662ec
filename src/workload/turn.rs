//! [`Turn`]: one turn of a conversation, built and sent.
//!
//! Turn n of conversation `cN` is a user message with the messageId
//! [`super::message_id`] and the conversation's contextId, on its task from turn 2 on; a
//! non-blocking turn asks for `returnImmediately`. Sending it retries an unknown outcome
//! (`info`) and a 409 (duplicate in flight) with the same messageId, up to `retries` times,
//! `retry-backoff-ms` apart, as Mastra's client `retries` do (A2A-BEHAVIOURS.md §3). With
//! `duplicate-rate`, each attempt is also fired a second time at once, as a double-clicking
//! user or a retrying proxy would.
//!
//! Draws, from the generator it is given: with `duplicate-rate` > 0, one `random_bool` per
//! attempt, before the attempt.

use std::rc::Rc;
use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::{message_id, Answered, WorkloadSpec};
use crate::client::history::{OpKind, Outcome};
use crate::client::{Client, Parts};
use crate::replica::TurnInfo;

/// One turn's request, ready to send (and resend).
pub struct Turn {
    kind: OpKind,
    params: serde_json::Value,
    ctx: String,
}

impl Turn {
    /// Turn `turn` of conversation `name` (contextId `ctx`), on `task_id` when it has one.
    pub fn new(
        spec: &WorkloadSpec,
        seed: u64,
        name: &str,
        ctx: &str,
        turn: u32,
        task_id: Option<&str>,
        blocking: bool,
    ) -> Turn {
        let info = TurnInfo {
            conversation: name.to_string(),
            turn,
            turns: spec.turns,
        };
        let mid = message_id(seed, name, turn);
        let message = Client::turn_message(&info, &mid, ctx, task_id);
        let mut params = json!({ "message": message });
        if !blocking {
            params["configuration"] = json!({ "returnImmediately": true });
        }
        Turn {
            kind: OpKind::Send {
                conversation: name.to_string(),
                turn,
                message_id: mid,
                blocking,
                foreign_context: false,
                omitted_context: false,
                named_task: false,
                needs_auth: false,
                reply: None,
                parts: Parts::Data,
                shape: crate::replica::AgentShape::default(),
            },
            params,
            ctx: ctx.to_string(),
        }
    }

    /// Marks the turn as asking for an action that needs the user's authorisation.
    pub fn needs_auth(&mut self) {
        if let Ok(mut message) =
            serde_json::from_value::<a2a::Message>(self.params["message"].clone())
        {
            crate::replica::ask_for_authorised_action(&mut message);
            self.params["message"] = json!(message);
            if let OpKind::Send { needs_auth, .. } = &mut self.kind {
                *needs_auth = true;
            }
        }
    }

    /// A reply with `text` on the turn's task (taskId `task_id`): the `n`th answer to it,
    /// with its own messageId, as a scenario's `reply` sends it.
    pub fn reply(&self, task_id: &str, text: &str, n: u32) -> Turn {
        let mut params = self.params.clone();
        let mut kind = self.kind.clone();
        if let OpKind::Send {
            message_id,
            needs_auth,
            reply,
            ..
        } = &mut kind
        {
            *message_id = format!("{message_id}-reply{n}");
            params["message"]["messageId"] = json!(message_id);
            *needs_auth = false;
            *reply = Some(text.to_string());
        }
        params["message"]["taskId"] = json!(task_id);
        params["message"]["parts"][0] = json!(a2a::Part::text(text));
        if let Some(data) = params["message"]["parts"][1]["data"].as_object_mut() {
            data.remove(crate::replica::NEEDS_AUTH_KEY);
        }
        Turn {
            kind,
            params,
            ctx: self.ctx.clone(),
        }
    }

    /// Fires the turn once more, same messageId, without waiting for its answer: the second
    /// click of a double-clicking user, or a proxy's retry, racing the send that follows.
    pub fn fire_duplicate(&self, client: &Rc<Client>) {
        let (c, k, p, x) = (
            client.clone(),
            self.kind.clone(),
            self.params.clone(),
            self.ctx.clone(),
        );
        crate::activity::spawn(async move {
            c.unary(k, "SendMessage", p, Some(&x), None).await;
        });
    }

    /// Sends the turn, retrying an unknown outcome (and a 409) with the same messageId, and
    /// sometimes firing a duplicate alongside. `Some(task id)` when it was acknowledged.
    pub async fn send(
        &self,
        spec: &WorkloadSpec,
        client: &Rc<Client>,
        rng: &mut ChaCha8Rng,
    ) -> Answered {
        self.send_for_task(spec, client, rng)
            .await
            .map(|t| t.map(|t| t.id))
    }

    /// [`Turn::send`], answering with the task itself.
    pub async fn send_for_task(
        &self,
        spec: &WorkloadSpec,
        client: &Rc<Client>,
        rng: &mut ChaCha8Rng,
    ) -> Option<Option<a2a::Task>> {
        for attempt in 0..=spec.retries {
            if spec.duplicate_rate > 0.0 && rng.random_bool(spec.duplicate_rate) {
                self.fire_duplicate(client);
            }
            let answer = client
                .unary(
                    self.kind.clone(),
                    "SendMessage",
                    self.params.clone(),
                    Some(&self.ctx),
                    None,
                )
                .await;
            match answer.outcome {
                Outcome::Ok => return Some(answer.task),
                Outcome::Fail { code, .. } if code != 409 => return None,
                _ if attempt < spec.retries => {
                    tokio::time::sleep(Duration::from_millis(spec.retry_backoff_ms)).await;
                }
                _ => {}
            }
        }
        None
    }
}
