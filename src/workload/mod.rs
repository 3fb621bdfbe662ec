//! Generated workloads: conversations of several turns, with retries, duplicates and the
//! behaviours an experiment's `[workload]` table turns on.
//!
//! Each conversation is a user talking to the agent: turn 1 creates a task, every later turn
//! continues it (taskId and contextId), with the task input-required in between, until the
//! last turn completes it. Every conversation belongs to [`crate::auth::DEFAULT_PRINCIPAL`].
//! Sending a turn ([`Turn`], `turn.rs`) retries an unknown outcome (`info`) and a 409 with
//! the same messageId, and with `duplicate-rate` fires a send twice at once.
//!
//! With `swarm` (the default), each seed draws its own workload shape from the written one
//! ([`WorkloadSpec::resolve`]): fewer conversations or turns, and each rate kept or dropped
//! and scaled, as the fault mix is. The drawn shape is printed with the seed.
//!
//! # Behaviours
//!
//! Everything a conversation does beyond sending its turns is a [`Behaviour`], one file in
//! this folder each, registered in [`BEHAVIOURS`]:
//!
//! | file | knob | what the conversation does |
//! |---|---|---|
//! | `cancel.rs` | `cancel-rate` | sends one turn non-blocking (with `cancel-resend-rate`, twice at once), cancels it (sometimes twice), ends |
//! | `subscribe.rs` | `subscribe-rate` | follows one non-blocking turn with SubscribeToTask; `resubscribe-rate` after a cut stream |
//! | `push.rs` | `push-rate` | registers a push config after its first turn ([`PUSH_URLS`]) |
//! | `poll.rs` | `poll-rate` | sends every turn with `returnImmediately` and polls GetTask |
//! | `follow_up.rs` | `follow-up-rate` | sends turns n and n+1 at once |
//! | `foreign_reader.rs` | `foreign-reader-rate` | a second principal ([`FOREIGN_PRINCIPAL`]) tries its task id |
//! | `context_mismatch.rs` | `context-mismatch-rate` | sends one turn first with another conversation's contextId |
//! | `auth_required.rs` | `auth-required-rate` | asks for an authorised action, answers "yes", authorises out of band |
//!
//! A conversation first sleeps a start offset in `0..=start-spread-ms`, drawn from its own
//! generator (derived from the seed and its index; it also draws the gaps between turns and
//! the duplicates of each send). Then every behaviour [draws](Behaviour::draw), from a
//! stream of its own (`workload/<name>` and the conversation's index), whether the
//! conversation does it, and where: an optional [`Plan`] (which may keep drawing from that
//! stream in its hooks). Then the turn loop calls the plans' hooks at fixed phases, each
//! phase in registry order:
//!
//! 1. [`Plan::shape`]: the turn's [`Shape`] (ends after it, watched, polled; from them,
//!    whether it is sent blocking);
//! 2. [`Plan::pair`]: a plan may take over the turn and the next, sent at once;
//! 3. [`Plan::before_send`]: calls before the turn's send;
//! 4. [`Plan::send`]: a plan may take over the turn's send; otherwise [`Turn::send`];
//! 5. [`Plan::after_first_turn`]: after turn 1 was acknowledged;
//! 6. [`Plan::after_send`]: after the turn, each hook may end the conversation
//!    ([`Flow::Stop`]);
//!
//! and then the pause before the next turn (`gap-ms`). Hooks share the [`Conversation`]: the
//! spec, seed, index, name, contextId, client, current task id and the generator.
//!
//! **Adding a behaviour** is one file in this folder and one line in [`BEHAVIOURS`]: a unit
//! type that implements [`Behaviour`] (its name, and a `draw` that reads its knob from the
//! [`WorkloadSpec`]) and a plan type that implements the hooks it needs (every hook does
//! nothing by default). Since every behaviour and every swarm knob draws from its own
//! stream, a new one leaves the draws of the others, and so every existing seed, alone as
//! long as it does nothing when its knob is 0. Its knob is a field of [`WorkloadSpec`]
//! (with its `validate` range and, for a rate, its `resolve` line).
//!
//! Every id is derived from the seed and the conversation: nothing random is unseeded.

mod auth_required;
mod cancel;
mod context_mismatch;
mod follow_up;
mod foreign_reader;
mod poll;
mod push;
mod subscribe;
mod turn;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::client::Client;
use crate::error::InputError;

pub use self::foreign_reader::FOREIGN_PRINCIPAL;
pub use self::push::{pick_push_url, PUSH_URLS};
pub use self::turn::Turn;

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
    /// Probability that the turn a conversation cancels was sent twice at once (same
    /// messageId): the user who cancels is the impatient one, who clicked twice or whose
    /// proxy retried. 0 by default (files without it draw as before).
    pub cancel_resend_rate: f64,
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
            cancel_resend_rate: 0.0,
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
            ("cancel-resend-rate", self.cancel_resend_rate),
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
        // Each knob draws from a stream of its own (`workload-shape/<knob>`), so a new knob
        // leaves the others' draws alone.
        let knob = |name: &str| {
            ChaCha8Rng::seed_from_u64(crate::trace::derive_seed(
                seed,
                &format!("workload-shape/{name}"),
                0,
            ))
        };
        let mut out = self.clone();
        out.conversations =
            knob("conversations").random_range(self.conversations.div_ceil(2)..=self.conversations);
        out.turns = knob("turns").random_range(self.turns.div_ceil(2)..=self.turns);
        for (name, rate) in [
            ("duplicate", &mut out.duplicate_rate),
            ("cancel", &mut out.cancel_rate),
            ("subscribe", &mut out.subscribe_rate),
            ("push", &mut out.push_rate),
            ("resubscribe", &mut out.resubscribe_rate),
            ("poll", &mut out.poll_rate),
            ("follow-up", &mut out.follow_up_rate),
            ("foreign-reader", &mut out.foreign_reader_rate),
            ("context-mismatch", &mut out.context_mismatch_rate),
            ("auth-required", &mut out.auth_required_rate),
        ] {
            let mut rng = knob(name);
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

/// Every workload behaviour, in the order their hooks run within each phase (see the module
/// documentation).
#[rustfmt::skip]
pub const BEHAVIOURS: &[&dyn Behaviour] = &[
    &cancel::Cancel,
    &subscribe::Subscribe,
    &push::Push,
    &poll::Poll,
    &follow_up::FollowUp,
    &foreign_reader::ForeignReader,
    &context_mismatch::ContextMismatch,
    &auth_required::AuthRequired,
];

/// Something a conversation may do beyond sending its turns, turned on by a `[workload]`
/// knob. See the module documentation.
pub trait Behaviour: Sync {
    /// The behaviour's name, as the drawn shape prints it (`cancel`, `follow-up`).
    fn name(&self) -> &'static str;
    /// Whether (and where) one conversation does it, drawn from the conversation's
    /// generator: `None` when it does not. Draw nothing when the knob is off.
    fn draw(&self, spec: &WorkloadSpec, rng: &mut ChaCha8Rng) -> Option<Box<dyn Plan>>;
}

/// A future a hook returns, borrowing the plan and the conversation.
pub type Hook<'a, T = ()> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// What sending a turn gave: `None` when the user gives up on the conversation (the send
/// failed, or no attempt was acknowledged); `Some(task id)` when it was acknowledged, with
/// the task's id when the answer had one.
pub type Answered = Option<Option<String>>;

/// Whether the conversation goes on after a hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// On to the next turn.
    Next,
    /// The conversation ends here.
    Stop,
}

/// How one turn is sent, as the plans shape it ([`Plan::shape`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shape {
    /// The conversation ends after this turn (it is canceled).
    pub ends: bool,
    /// The turn is followed with SubscribeToTask.
    pub watched: bool,
    /// The turn is polled with GetTask.
    pub polled: bool,
}

impl Shape {
    /// Whether the turn is sent blocking: only when nothing watches, polls or cancels it.
    pub fn blocking(&self) -> bool {
        !(self.ends || self.watched || self.polled)
    }
}

/// What one conversation decided to do, drawn by a [`Behaviour`]: hooks the turn loop calls
/// at fixed phases, in registry order within each phase. Every hook does nothing by
/// default; an async hook returns `None` when it has nothing to do at that turn.
pub trait Plan {
    /// Shapes turn `turn` (before anything is sent).
    fn shape(&self, _turn: u32, _shape: &mut Shape) {}

    /// Takes over turns `turn` and `turn + 1`, sent at once. [`Flow::Next`] goes on after
    /// both; the first plan that takes over wins.
    fn pair<'a>(
        &'a self,
        _conv: &'a mut Conversation,
        _turn: u32,
        _shape: Shape,
    ) -> Option<Hook<'a, Flow>> {
        None
    }

    /// Runs before turn `turn` is sent.
    fn before_send<'a>(&'a self, _conv: &'a mut Conversation, _turn: u32) -> Option<Hook<'a>> {
        None
    }

    /// Takes over the send of `req` (turn `turn`); the first plan that takes over wins.
    fn send<'a>(
        &'a self,
        _conv: &'a mut Conversation,
        _turn: u32,
        _shape: Shape,
        _req: &'a mut Turn,
    ) -> Option<Hook<'a, Answered>> {
        None
    }

    /// Runs after turn 1 was acknowledged.
    fn after_first_turn<'a>(&'a self, _conv: &'a mut Conversation) -> Option<Hook<'a>> {
        None
    }

    /// Runs after turn `turn` was acknowledged; [`Flow::Stop`] ends the conversation (the
    /// later hooks of the phase do not run).
    fn after_send<'a>(
        &'a self,
        _conv: &'a mut Conversation,
        _turn: u32,
        _shape: Shape,
    ) -> Option<Hook<'a, Flow>> {
        None
    }
}

/// One conversation, as its hooks see it.
pub struct Conversation {
    /// The run's workload shape.
    pub spec: WorkloadSpec,
    /// The run's seed.
    pub seed: u64,
    /// Its index among the run's conversations.
    pub index: u32,
    /// Its name, `c{index}`.
    pub name: String,
    /// Its contextId ([`context_id`]).
    pub ctx: String,
    /// The client it calls through.
    pub client: Rc<Client>,
    /// Its task's id, once a turn was acknowledged with one.
    pub task_id: Option<String>,
    /// Its generator: every draw of the conversation, in order.
    pub rng: ChaCha8Rng,
}

impl Conversation {
    /// Turn `turn` on the conversation's task, ready to send.
    pub fn turn(&self, turn: u32, blocking: bool) -> Turn {
        Turn::new(
            &self.spec,
            self.seed,
            &self.name,
            &self.ctx,
            turn,
            self.task_id.as_deref(),
            blocking,
        )
    }

    /// The pause before the next turn (the user typing), drawn from `gap-ms`.
    async fn gap(&mut self) {
        let gap = self
            .rng
            .random_range(self.spec.gap_ms[0]..=self.spec.gap_ms[1]);
        tokio::time::sleep(Duration::from_millis(gap)).await;
    }
}

/// Runs every conversation to its end; returns each conversation's task id, where it got one.
pub async fn run(spec: WorkloadSpec, seed: u64, client: Rc<Client>) -> BTreeMap<String, String> {
    let mut handles = Vec::new();
    for c in 0..spec.conversations {
        let client = client.clone();
        let spec = spec.clone();
        handles.push(crate::activity::spawn(async move {
            conversation(spec, seed, c, client).await
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

/// One conversation: its start offset, its behaviours' draws, then its turns.
async fn conversation(
    spec: WorkloadSpec,
    seed: u64,
    index: u32,
    client: Rc<Client>,
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
    // Each behaviour draws from a stream of its own, so adding one leaves the others' draws
    // (and every seed's conversations) alone.
    let plans: Vec<Box<dyn Plan>> = BEHAVIOURS
        .iter()
        .filter_map(|b| {
            let mut own = ChaCha8Rng::seed_from_u64(crate::trace::derive_seed(
                seed,
                &format!("workload/{}", b.name()),
                u64::from(index),
            ));
            b.draw(&spec, &mut own)
        })
        .collect();
    let mut conv = Conversation {
        spec,
        seed,
        index,
        name,
        ctx,
        client,
        task_id: None,
        rng,
    };
    let mut turn = 1;
    'turns: while turn <= conv.spec.turns {
        let mut shape = Shape::default();
        for plan in &plans {
            plan.shape(turn, &mut shape);
        }
        let mut paired = None;
        for plan in &plans {
            if let Some(hook) = plan.pair(&mut conv, turn, shape) {
                paired = Some(hook.await);
                break;
            }
        }
        match paired {
            Some(Flow::Next) => {
                turn += 2;
                conv.gap().await;
                continue;
            }
            Some(Flow::Stop) => break,
            None => {}
        }
        for plan in &plans {
            if let Some(hook) = plan.before_send(&mut conv, turn) {
                hook.await;
            }
        }
        let mut req = conv.turn(turn, shape.blocking());
        let mut answered = None;
        for plan in &plans {
            if let Some(hook) = plan.send(&mut conv, turn, shape, &mut req) {
                answered = Some(hook.await);
                break;
            }
        }
        let answered = match answered {
            Some(answered) => answered,
            None => req.send(&conv.spec, &conv.client, &mut conv.rng).await,
        };
        match answered {
            Some(answered) => conv.task_id = answered.or(conv.task_id.take()),
            // The user gives up on this conversation.
            None => break,
        }
        if turn == 1 {
            for plan in &plans {
                if let Some(hook) = plan.after_first_turn(&mut conv) {
                    hook.await;
                }
            }
        }
        for plan in &plans {
            if let Some(hook) = plan.after_send(&mut conv, turn, shape) {
                if hook.await == Flow::Stop {
                    break 'turns;
                }
            }
        }
        conv.gap().await;
        turn += 1;
    }
    conv.task_id.map(|id| (conv.name, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaviours_are_registered_once_in_hook_order() {
        let names: Vec<_> = BEHAVIOURS.iter().map(|b| b.name()).collect();
        assert_eq!(
            names,
            [
                "cancel",
                "subscribe",
                "push",
                "poll",
                "follow-up",
                "foreign-reader",
                "context-mismatch",
                "auth-required"
            ]
        );
    }

    #[test]
    fn a_turn_is_blocking_only_when_nothing_watches_polls_or_ends_it() {
        assert!(Shape::default().blocking());
        for shape in [
            Shape {
                ends: true,
                ..Shape::default()
            },
            Shape {
                watched: true,
                ..Shape::default()
            },
            Shape {
                polled: true,
                ..Shape::default()
            },
        ] {
            assert!(!shape.blocking());
        }
    }
}
