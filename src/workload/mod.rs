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
//! this folder each, registered in the `behaviours!` invocation below (which declares its
//! module and its place in [`BEHAVIOURS`]): `cancel.rs`, `subscribe.rs`, `push.rs`,
//! `poll.rs`, `follow_up.rs`, `foreign_reader.rs`, `context_mismatch.rs`,
//! `auth_required.rs`. Each file says what the conversation does, the knobs that turn it
//! on and what it draws. The `[workload]` table ([`WorkloadSpec`], `spec.rs`) holds the
//! conversations' own settings and every behaviour's [`Knob`]s.
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
//! **Adding a behaviour** is one file in this folder and one line in the `behaviours!`
//! registry (`module::Type,`): a unit type that implements [`Behaviour`] (its name, its
//! [`Knob`]s, and a `draw` that reads them from the [`WorkloadSpec`] with
//! [`WorkloadSpec::rate`] and its kin) and a plan type that implements the hooks it needs
//! (every hook does nothing by default). Its knobs need nothing else: the table reads them
//! (refusing a value of the wrong type), gives them their defaults, checks their ranges,
//! draws each [`Swarm::Drawn`] rate per seed and prints it with the drawn shape. Since every
//! behaviour and every swarm knob draws from its own stream, a new one leaves the draws of
//! the others, and so every existing seed, alone as long as it does nothing when its knob
//! is 0 (declare its rate `Swarm::Drawn { always: false, .. }`, so that the drawn shapes of
//! files without it print as before).
//!
//! Every id is derived from the seed and the conversation: nothing random is unseeded.

mod spec;
mod turn;

/// Declares the behaviours, one line each (`module::Type,`): the module (its file in this
/// folder) and the unit type registered in [`BEHAVIOURS`], in the order their hooks run
/// within each phase.
macro_rules! behaviours {
    ($( $module:ident :: $ty:ident, )*) => {
        $( mod $module; )*

        /// Every workload behaviour, in the order their hooks run within each phase (see
        /// the module documentation).
        pub const BEHAVIOURS: &[&dyn Behaviour] = &[$( &$module::$ty, )*];
    };
}

behaviours! {
    cancel::Cancel,
    subscribe::Subscribe,
    push::Push,
    poll::Poll,
    follow_up::FollowUp,
    foreign_reader::ForeignReader,
    context_mismatch::ContextMismatch,
    auth_required::AuthRequired,
}

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::client::Client;

pub use self::foreign_reader::FOREIGN_PRINCIPAL;
pub use self::push::{pick_push_url, PUSH_URLS};
pub use self::spec::{
    keys, knob, Knob, Setting, Swarm, WorkloadSpec, CONVERSATIONS_MAX, KEY_ORDER, RETRIES_MAX,
    TIME_MS_MAX, TURNS_MAX,
};
pub use self::turn::Turn;

/// The contextId a conversation uses in the run with `seed`.
pub fn context_id(seed: u64, conversation: &str) -> String {
    format!("ctx-{conversation}-{:04x}", seed & 0xffff)
}

/// The messageId of a turn in the run with `seed`.
pub fn message_id(seed: u64, conversation: &str, turn: u32) -> String {
    format!("msg-{conversation}-t{turn}-{:04x}", seed & 0xffff)
}

/// Something a conversation may do beyond sending its turns, turned on by a `[workload]`
/// knob. See the module documentation.
pub trait Behaviour: Sync {
    /// The behaviour's name, as the drawn shape prints it (`cancel`, `follow-up`).
    fn name(&self) -> &'static str;
    /// The keys of the `[workload]` table it reads (its own: no two behaviours share a
    /// key), with their defaults, ranges and what the swarm does with them.
    fn knobs(&self) -> &'static [Knob];
    /// The longest a turn may take beyond its sends because of it, simulated ms, in a run
    /// of `spec` (a polled turn: its poll timeout and one interval); a run's time budget
    /// adds it to every turn ([`WorkloadSpec::turn_extra_ms`]).
    fn turn_extra_ms(&self, _spec: &WorkloadSpec) -> u64 {
        0
    }
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

    /// Each name once, and the behaviours older than issue 40 in the order their hooks have
    /// always run (every seed's conversations depend on it); a behaviour added since may
    /// sit anywhere, since it has no plan while its knob is 0.
    #[test]
    fn behaviours_are_registered_once_in_hook_order() {
        let names: Vec<_> = BEHAVIOURS.iter().map(|b| b.name()).collect();
        let unique: std::collections::BTreeSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        let old = [
            "cancel",
            "subscribe",
            "push",
            "poll",
            "follow-up",
            "foreign-reader",
            "context-mismatch",
            "auth-required",
        ];
        let kept: Vec<_> = names.iter().filter(|n| old.contains(n)).collect();
        assert_eq!(kept, old.iter().collect::<Vec<_>>());
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
