//! Generated workloads: conversations of several turns, with retries and duplicates.
//!
//! Each conversation is a user talking to the agent: turn 1 creates a task, every later turn
//! continues it (taskId and contextId), with the task input-required in between, until the
//! last turn completes it. A turn whose outcome is unknown (`info`) is retried with the same
//! messageId, as Mastra's client `retries` do (A2A-BEHAVIOURS.md §3); a 409 (duplicate in
//! flight) is retried too. With `duplicate-rate`, a send is also fired a second time at once,
//! as a double-clicking user or a retrying proxy would. With `cancel-rate`, a conversation
//! sends one turn non-blocking and cancels it while it runs (sometimes twice, as a client
//! that retries its cancel does). With `subscribe-rate`, a conversation follows one
//! non-blocking turn with SubscribeToTask; with `push-rate`, it registers a push config after
//! its first turn (a healthy, redirecting, slow or rebinding receiver, see [`PUSH_URLS`]).
//! With `resubscribe-rate`, a subscriber whose stream was cut subscribes again. With
//! `poll-rate`, a conversation is a polling client (Cognigy's style, A2A-BEHAVIOURS.md §5):
//! every turn is sent with `returnImmediately`, then GetTask is polled until the task waits
//! for input or ends. With `follow-up-rate`, a conversation sends two follow-ups at once
//! (turns n and n+1), which the router may send to different replicas.
//!
//! With `swarm` (the default), each seed draws its own workload shape from the written one
//! ([`WorkloadSpec::resolve`]): fewer conversations or turns, and each rate kept or dropped
//! and scaled, as the fault mix is. The drawn shape is printed with the seed.
//!
//! Every conversation belongs to [`crate::auth::DEFAULT_PRINCIPAL`]. With
//! `foreign-reader-rate`, a second principal ([`FOREIGN_PRINCIPAL`], or an anonymous caller)
//! tries a conversation's task id once after its first turn; with `context-mismatch-rate`,
//! one turn is first sent on its own task with another conversation's contextId.
//!
//! With `auth-required-rate`, one blocking turn asks for an action that needs the user's
//! authorisation: the client answers the agent's `auth-required` with a message saying "yes",
//! and authorises the task out of band only if that did not resume it.
//!
//! Every id is derived from the seed and the conversation: nothing random is unseeded.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::client::history::{OpKind, Outcome};
use crate::client::Client;
use crate::error::InputError;
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
    /// Probability that a conversation sends one turn non-blocking and follows it with
    /// SubscribeToTask through the router (which may pick a replica that does not run it).
    pub subscribe_rate: f64,
    /// Probability that a conversation registers a push config after its first turn, on
    /// whichever replica the router picks. The URL is drawn from [`PUSH_URLS`].
    pub push_rate: f64,
    /// Probability that a subscriber whose stream was cut (an `info` outcome) subscribes
    /// again, up to `retries` times.
    pub resubscribe_rate: f64,
    /// Probability that a conversation is a polling client: each turn is sent with
    /// `returnImmediately`, then GetTask is polled until the task waits for input or ends.
    pub poll_rate: f64,
    /// Wait between two polls, simulated ms.
    pub poll_interval_ms: u64,
    /// A polling client gives up on a turn after this many simulated ms (Cognigy's task
    /// timeout, scaled down like every time here).
    pub poll_timeout_ms: u64,
    /// Probability that a conversation sends two follow-ups at once (turns n and n+1).
    pub follow_up_rate: f64,
    /// Each seed draws its own shape from this one (see [`WorkloadSpec::resolve`]).
    pub swarm: bool,
    /// Probability that a conversation's task id reaches a second principal, who tries it
    /// once after the first turn: a GetTask, SubscribeToTask, push config or CancelTask,
    /// drawn at random, as [`FOREIGN_PRINCIPAL`] (or with no token at all, one time in
    /// four).
    pub foreign_reader_rate: f64,
    /// Probability that a conversation, at one turn after the first, first sends that turn
    /// with another conversation's contextId on its own taskId (a confused or malicious
    /// client), once, then the turn itself (A2A-BEHAVIOURS.md §6.10).
    pub context_mismatch_rate: f64,
    /// Probability that a conversation, at one blocking turn, asks for an action that needs
    /// the user's authorisation. When the agent answers `auth-required`, the client calls
    /// again with a message saying "yes" (the seed on Cognigy: the parent may call the tool
    /// again); only if the task still waits does the user authorise it out of band
    /// ([`Client::authorize`]), and the client answers once more.
    pub auth_required_rate: f64,
}

/// The second principal of a workload: every conversation belongs to
/// [`crate::auth::DEFAULT_PRINCIPAL`], and this one tries task ids it should not have.
pub const FOREIGN_PRINCIPAL: &str = "bob";

/// Push receivers a conversation may register, with their weights: a healthy one, one that
/// redirects to a private address, a slow one, and a name that rebinds to a private address.
pub const PUSH_URLS: &[(u32, &str)] = &[
    (6, "http://hooks.example:7200/ok/"),
    (1, "http://hooks.example:7200/redirect/"),
    (1, "http://hooks.example:7200/slow/"),
    (2, "http://rebind.example:7200/ok/"),
];

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
            subscribe_rate: 0.0,
            push_rate: 0.0,
            resubscribe_rate: 0.0,
            poll_rate: 0.0,
            poll_interval_ms: 200,
            poll_timeout_ms: 6000,
            follow_up_rate: 0.0,
            swarm: true,
            foreign_reader_rate: 0.0,
            context_mismatch_rate: 0.0,
            auth_required_rate: 0.0,
        }
    }
}

/// Upper bounds that keep one run small (a sweep is many runs).
pub const CONVERSATIONS_MAX: u32 = 200;
/// See [`CONVERSATIONS_MAX`].
pub const TURNS_MAX: u32 = 50;
/// Longest time setting of a workload, in simulated ms (one hour).
pub const TIME_MS_MAX: u64 = 3_600_000;
/// Most retries of one turn.
pub const RETRIES_MAX: u32 = 20;

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
            ("subscribe-rate", self.subscribe_rate),
            ("push-rate", self.push_rate),
            ("resubscribe-rate", self.resubscribe_rate),
            ("poll-rate", self.poll_rate),
            ("follow-up-rate", self.follow_up_rate),
            ("foreign-reader-rate", self.foreign_reader_rate),
            ("context-mismatch-rate", self.context_mismatch_rate),
            ("auth-required-rate", self.auth_required_rate),
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
        for (name, ms) in [
            ("request-timeout-ms", self.request_timeout_ms),
            ("retry-backoff-ms", self.retry_backoff_ms),
            ("gap-ms", self.gap_ms[1]),
            ("start-spread-ms", self.start_spread_ms),
            ("cancel-delay-ms", self.cancel_delay_ms[1]),
            ("poll-interval-ms", self.poll_interval_ms),
            ("poll-timeout-ms", self.poll_timeout_ms),
        ] {
            if ms > TIME_MS_MAX {
                return bad(format!(
                    "{name} = {ms} must be at most {TIME_MS_MAX} (one simulated hour)"
                ));
            }
        }
        if self.retries > RETRIES_MAX {
            return bad(format!(
                "retries = {} must be at most {RETRIES_MAX}",
                self.retries
            ));
        }
        if self.request_timeout_ms == 0 {
            return bad("request-timeout-ms must be > 0".into());
        }
        if self.poll_interval_ms == 0 {
            return bad("poll-interval-ms must be > 0".into());
        }
        Ok(())
    }

    /// The shape the run with `seed` uses: as written, or with `swarm` a draw from it. A
    /// drawn shape has between half and all of the conversations and turns, and keeps each
    /// rate with probability 3/4, scaled by a factor in [0.25, 1.75] (at most 1).
    pub fn resolve(&self, seed: u64) -> WorkloadSpec {
        if !self.swarm {
            return self.clone();
        }
        let mut rng =
            ChaCha8Rng::seed_from_u64(crate::trace::derive_seed(seed, "workload-shape", 0));
        let mut out = self.clone();
        out.conversations = rng.random_range(self.conversations.div_ceil(2)..=self.conversations);
        out.turns = rng.random_range(self.turns.div_ceil(2)..=self.turns);
        for rate in [
            &mut out.duplicate_rate,
            &mut out.cancel_rate,
            &mut out.subscribe_rate,
            &mut out.push_rate,
            &mut out.resubscribe_rate,
            &mut out.poll_rate,
            &mut out.follow_up_rate,
            &mut out.foreign_reader_rate,
            &mut out.context_mismatch_rate,
            // Last, so that the rates before it draw what they always drew.
            &mut out.auth_required_rate,
        ] {
            let keep = rng.random_bool(0.75);
            let scale: f64 = rng.random_range(0.25..=1.75);
            *rate = if keep { (*rate * scale).min(1.0) } else { 0.0 };
        }
        out
    }

    /// The drawn shape as `name=value` pairs, for printing with the seed (`auth-required`
    /// only when drawn, so that shapes without it print as they always did).
    pub fn describe(&self) -> String {
        let auth = if self.auth_required_rate > 0.0 {
            format!(" auth-required={:.3}", self.auth_required_rate)
        } else {
            String::new()
        };
        format!(
            "workload: conversations={} turns={} duplicate={:.3} cancel={:.3} subscribe={:.3} push={:.3} resubscribe={:.3} poll={:.3} follow-up={:.3} foreign-reader={:.3} context-mismatch={:.3}",
            self.conversations,
            self.turns,
            self.duplicate_rate,
            self.cancel_rate,
            self.subscribe_rate,
            self.push_rate,
            self.resubscribe_rate,
            self.poll_rate,
            self.follow_up_rate,
            self.foreign_reader_rate,
            self.context_mismatch_rate
        ) + &auth
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
    let mut rng = ChaCha8Rng::seed_from_u64(crate::trace::derive_seed(
        seed,
        "workload",
        u64::from(index),
    ));
    let ctx = context_id(seed, &name);
    tokio::time::sleep(Duration::from_millis(
        rng.random_range(0..=spec.start_spread_ms),
    ))
    .await;
    let mut task_id: Option<String> = None;
    let cancel_at = (spec.cancel_rate > 0.0 && rng.random_bool(spec.cancel_rate))
        .then(|| rng.random_range(1..=spec.turns));
    let subscribe_at = (spec.subscribe_rate > 0.0 && rng.random_bool(spec.subscribe_rate))
        .then(|| rng.random_range(1..=spec.turns));
    let push_url = (spec.push_rate > 0.0 && rng.random_bool(spec.push_rate))
        .then(|| format!("{}{name}", pick_push_url(&mut rng)));
    // Drawn only when asked for, so workloads without them draw what they always drew.
    let polling = spec.poll_rate > 0.0 && rng.random_bool(spec.poll_rate);
    let follow_up_at =
        (spec.follow_up_rate > 0.0 && spec.turns >= 3 && rng.random_bool(spec.follow_up_rate))
            .then(|| rng.random_range(2..=spec.turns - 1));
    let foreign = (spec.foreign_reader_rate > 0.0 && rng.random_bool(spec.foreign_reader_rate))
        .then(|| (rng.random_range(0..4u32), rng.random_bool(0.25)));
    let mismatch_at = (spec.context_mismatch_rate > 0.0
        && spec.turns >= 2
        && rng.random_bool(spec.context_mismatch_rate))
    .then(|| rng.random_range(2..=spec.turns));
    let auth_at = (spec.auth_required_rate > 0.0 && rng.random_bool(spec.auth_required_rate))
        .then(|| rng.random_range(1..=spec.turns));
    let mut turn = 1;
    while turn <= spec.turns {
        let cancel_now = cancel_at == Some(turn);
        let subscribe_now = subscribe_at == Some(turn) && !cancel_now && turn > 1;
        let blocking = !(cancel_now || subscribe_now || polling);
        let together = follow_up_at == Some(turn) && blocking && task_id.is_some();
        if together {
            // Turns n and n+1 at once, as two concurrent callers (or a user who typed twice).
            let second = {
                let (client, spec, name, ctx) =
                    (client.clone(), spec.clone(), name.clone(), ctx.clone());
                let task_id = task_id.clone();
                let mut rng = ChaCha8Rng::seed_from_u64(crate::trace::derive_seed(
                    seed,
                    "follow-up",
                    u64::from(index),
                ));
                tokio::task::spawn_local(async move {
                    let req =
                        Turn::new(&spec, seed, &name, &ctx, turn + 1, task_id.as_deref(), true);
                    req.send(&spec, &client, &mut rng).await
                })
            };
            let req = Turn::new(spec, seed, &name, &ctx, turn, task_id.as_deref(), true);
            let first = req.send(spec, client, &mut rng).await;
            let second = second.await.ok().flatten();
            if let (Some(a), Some(b)) = (first, second) {
                task_id = b.or(a).or(task_id);
                turn += 2;
                let gap = rng.random_range(spec.gap_ms[0]..=spec.gap_ms[1]);
                tokio::time::sleep(Duration::from_millis(gap)).await;
                continue;
            }
            break;
        }
        if let (true, Some(id)) = (mismatch_at == Some(turn), &task_id) {
            mismatched_send(spec, seed, client, &name, turn, id).await;
        }
        let mut req = Turn::new(spec, seed, &name, &ctx, turn, task_id.as_deref(), blocking);
        let answered = if auth_at == Some(turn) && blocking && !polling {
            req.needs_auth();
            authorised_turn(spec, client, &req, &name, &mut rng).await
        } else {
            req.send(spec, client, &mut rng).await
        };
        match answered {
            Some(answered) => task_id = answered.or(task_id),
            // The user gives up on this conversation.
            None => break,
        }
        if turn == 1 {
            if let (Some(url), Some(id)) = (&push_url, &task_id) {
                client
                    .unary(
                        OpKind::SetPush {
                            conversation: name.clone(),
                        },
                        "CreateTaskPushNotificationConfig",
                        json!({ "taskId": id, "url": url }),
                        Some(&ctx),
                        None,
                    )
                    .await;
            }
        }
        if let (1, Some((what, anonymous)), Some(id)) = (turn, foreign, &task_id) {
            let who = if anonymous {
                crate::auth::ANONYMOUS
            } else {
                FOREIGN_PRINCIPAL
            };
            foreign_try(spec, client, who, what, &name, &ctx, id).await;
        }
        if subscribe_now {
            if let Some(id) = &task_id {
                subscribe(spec, client, &name, &ctx, id, &mut rng).await;
            }
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
        if polling && !subscribe_now {
            let settled = match &task_id {
                Some(id) => poll(spec, client, &name, &ctx, id).await,
                None => false,
            };
            if !settled {
                break;
            }
        }
        let gap = rng.random_range(spec.gap_ms[0]..=spec.gap_ms[1]);
        tokio::time::sleep(Duration::from_millis(gap)).await;
        turn += 1;
    }
    task_id.map(|id| (name, id))
}

/// One turn's request, ready to send (and resend).
struct Turn {
    kind: OpKind,
    params: serde_json::Value,
    ctx: String,
}

impl Turn {
    fn new(
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
                needs_auth: false,
                reply: None,
            },
            params,
            ctx: ctx.to_string(),
        }
    }

    /// Marks the turn as asking for an action that needs the user's authorisation.
    fn needs_auth(&mut self) {
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
    fn reply(&self, task_id: &str, text: &str, n: u32) -> Turn {
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

    /// Sends the turn, retrying an unknown outcome (and a 409) with the same messageId, and
    /// sometimes firing a duplicate alongside. `Some(task id)` when it was acknowledged.
    async fn send(
        &self,
        spec: &WorkloadSpec,
        client: &Rc<Client>,
        rng: &mut ChaCha8Rng,
    ) -> Option<Option<String>> {
        self.send_for_task(spec, client, rng)
            .await
            .map(|t| t.map(|t| t.id))
    }

    /// [`Turn::send`], answering with the task itself.
    async fn send_for_task(
        &self,
        spec: &WorkloadSpec,
        client: &Rc<Client>,
        rng: &mut ChaCha8Rng,
    ) -> Option<Option<a2a::Task>> {
        for attempt in 0..=spec.retries {
            if spec.duplicate_rate > 0.0 && rng.random_bool(spec.duplicate_rate) {
                let (c, k, p, x) = (
                    client.clone(),
                    self.kind.clone(),
                    self.params.clone(),
                    self.ctx.clone(),
                );
                tokio::task::spawn_local(async move {
                    c.unary(k, "SendMessage", p, Some(&x), None).await;
                });
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

/// A turn that asks for an authorised action: sent, then, while the task waits in
/// `auth-required`, answered "yes" (a message, not a credential); if it still waits, the user
/// authorises it out of band and the client answers again. `Some(task id)` as
/// [`Turn::send`] gives it; `None` when the user gives up.
async fn authorised_turn(
    spec: &WorkloadSpec,
    client: &Rc<Client>,
    req: &Turn,
    name: &str,
    rng: &mut ChaCha8Rng,
) -> Option<Option<String>> {
    let mut task = req.send_for_task(spec, client, rng).await?;
    let waits = |t: &Option<a2a::Task>| {
        t.as_ref()
            .is_some_and(|t| t.status.state == a2a::TaskState::AuthRequired)
    };
    for (n, text) in [(1, "yes"), (2, "authorised")] {
        if !waits(&task) {
            break;
        }
        let id = task.as_ref().map(|t| t.id.clone()).unwrap_or_default();
        if n == 2 {
            client.authorize(crate::auth::DEFAULT_PRINCIPAL, name, &id);
        }
        let answer = req.reply(&id, text, n);
        task = answer.send_for_task(spec, client, rng).await?.or(task);
    }
    Some(task.map(|t| t.id))
}

/// SubscribeToTask through the router; a cut stream is resubscribed (`resubscribe-rate`).
async fn subscribe(
    spec: &WorkloadSpec,
    client: &Rc<Client>,
    name: &str,
    ctx: &str,
    task_id: &str,
    rng: &mut ChaCha8Rng,
) {
    for attempt in 0..=spec.retries {
        let answer = client
            .stream(
                OpKind::Subscribe {
                    conversation: name.to_string(),
                },
                "SubscribeToTask",
                json!({ "id": task_id }),
                Some(ctx),
                None,
                Duration::from_millis(spec.request_timeout_ms * 2),
            )
            .await;
        let cut = matches!(answer.outcome, Outcome::Info { .. });
        if !cut
            || attempt >= spec.retries
            || spec.resubscribe_rate <= 0.0
            || !rng.random_bool(spec.resubscribe_rate)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(spec.retry_backoff_ms)).await;
    }
}

/// Polls GetTask until the task waits for input or ends; false when the client gave up
/// (the poll timeout passed) or the task ended in a state that stops the conversation.
async fn poll(spec: &WorkloadSpec, client: &Rc<Client>, name: &str, ctx: &str, id: &str) -> bool {
    let deadline = crate::trace::now_ms() + spec.poll_timeout_ms;
    loop {
        tokio::time::sleep(Duration::from_millis(spec.poll_interval_ms)).await;
        let answer = client
            .unary(
                OpKind::Get {
                    conversation: name.to_string(),
                },
                "GetTask",
                json!({ "id": id }),
                Some(ctx),
                None,
            )
            .await;
        if let (Outcome::Ok, Some(task)) = (&answer.outcome, &answer.task) {
            match task.status.state {
                a2a::TaskState::InputRequired | a2a::TaskState::Completed => return true,
                ref s if s.is_terminal() => return false,
                _ => {}
            }
        }
        if crate::trace::now_ms() >= deadline {
            // A client timeout is not a remote cancel (A2A-BEHAVIOURS.md §5): it just stops.
            return false;
        }
    }
}

/// A push receiver drawn from [`PUSH_URLS`] by weight.
pub fn pick_push_url(rng: &mut ChaCha8Rng) -> &'static str {
    let total: u32 = PUSH_URLS.iter().map(|(w, _)| w).sum();
    let mut pick = rng.random_range(0..total);
    for (weight, url) in PUSH_URLS {
        if pick < *weight {
            return url;
        }
        pick -= weight;
    }
    unreachable!("the weights cover 0..total")
}

/// Turn `turn` of `name`, sent once on its own task but with another conversation's
/// contextId (and a messageId of its own). A server must refuse it before anything runs.
async fn mismatched_send(
    spec: &WorkloadSpec,
    seed: u64,
    client: &Rc<Client>,
    name: &str,
    turn: u32,
    task_id: &str,
) {
    let info = TurnInfo {
        conversation: name.to_string(),
        turn,
        turns: spec.turns,
    };
    let ctx = context_id(seed, &format!("{name}-elsewhere"));
    let mid = format!("{}-mismatch", message_id(seed, name, turn));
    let message = Client::turn_message(&info, &mid, &ctx, Some(task_id));
    let kind = OpKind::Send {
        conversation: name.to_string(),
        turn,
        message_id: mid,
        blocking: true,
        foreign_context: true,
        needs_auth: false,
        reply: None,
    };
    client
        .unary(
            kind,
            "SendMessage",
            json!({ "message": message }),
            Some(&ctx),
            None,
        )
        .await;
}

/// A second principal tries a task id it learned: call `what` (0 get, 1 subscribe, 2 push
/// config, 3 cancel).
async fn foreign_try(
    spec: &WorkloadSpec,
    client: &Rc<Client>,
    who: &str,
    what: u32,
    name: &str,
    ctx: &str,
    task_id: &str,
) {
    let conversation = name.to_string();
    let id = json!({ "id": task_id });
    match what {
        0 => {
            client
                .unary_as(
                    who,
                    OpKind::Get { conversation },
                    "GetTask",
                    id,
                    Some(ctx),
                    None,
                )
                .await;
        }
        1 => {
            client
                .stream_as(
                    who,
                    OpKind::Subscribe { conversation },
                    "SubscribeToTask",
                    id,
                    Some(ctx),
                    None,
                    Duration::from_millis(spec.request_timeout_ms),
                )
                .await;
        }
        2 => {
            let url = format!("http://hooks.example:7200/ok/{who}");
            client
                .unary_as(
                    who,
                    OpKind::SetPush { conversation },
                    "CreateTaskPushNotificationConfig",
                    json!({ "taskId": task_id, "url": url }),
                    Some(ctx),
                    None,
                )
                .await;
        }
        _ => {
            client
                .unary_as(
                    who,
                    OpKind::Cancel { conversation },
                    "CancelTask",
                    id,
                    Some(ctx),
                    None,
                )
                .await;
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_urls_are_drawn_by_weight() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let total: u32 = PUSH_URLS.iter().map(|(w, _)| w).sum();
        let mut counts = vec![0u32; PUSH_URLS.len()];
        for _ in 0..10_000 {
            let url = pick_push_url(&mut rng);
            counts[PUSH_URLS.iter().position(|(_, u)| *u == url).unwrap()] += 1;
        }
        eprintln!("{counts:?}");
        for (i, (w, _)) in PUSH_URLS.iter().enumerate() {
            let expected = 10_000 * w / total;
            assert!(
                counts[i].abs_diff(expected) < expected / 5 + 50,
                "{counts:?}"
            );
        }
    }
}
