//! Stop when settled: the rule that ends a generated run's liveness phase early.
//!
//! A generated run heals everything at the end of its fault window and then gives the
//! system the liveness bound (`liveness-ms`) before the client reads every task once more.
//! Most of that bound is idle: once nothing can change any more, stepping it out changes no
//! verdict and costs one tick per millisecond on every host. So from the heal on, the
//! client checks every [`CHECK_MS`] whether the world has **settled**, and reads the tasks
//! as soon as it has stayed settled for [`HOLD_MS`]:
//!
//! - no piece of work is in flight ([`crate::activity`]): no request is being served or
//!   answered anywhere, no background turn, push, stream or retry back-off is still alive;
//! - no model timer that may still change a task (an input wait's expiry, Rasa's per-task
//!   timeout, an idle release) fires before the final reads are over: one due at or before
//!   the end of the liveness bound plus one more bound ([`Settle::timers_horizon`]; the
//!   final reads take time after the bound) keeps the run going, one due later does not,
//!   since a run that stepped its bound out would not have seen it fire either. So a
//!   Rasa task's 600 s timeout pending at the heal of a seconds-long run changes nothing,
//!   while in a long-horizon run whose bound reaches it the run steps on until it has
//!   fired (and its failure has been saved and pushed);
//! - in a model whose replicas take over abandoned tasks (`recovery.sweep_ms` > 0), every
//!   task, in the shared store and in every live pod's memory, is terminal or waiting for
//!   input (`input-required`, `auth-required`): a task still `working` or `submitted` may
//!   yet be taken over. In a model without a sweeper such a task has nothing left that could
//!   move it (its runner is gone, or it would be in flight): it stays as it is, and the
//!   liveness checker reports it;
//! - the shared store's push outbox is empty (its deliverer is a loop that would retry);
//! - the driver has no fault action left to apply.
//!
//! Runs that simulate the agent card never end early: whether a call used a stale card
//! depends on how long after the change it was made, so the final reads must be made when
//! they would have been (measured: ending card runs early once the cache would not expire
//! turned 40 of 300 `card-freshness` failures of `experiments/card-trust.toml` into
//! `unknown`).
//!
//! What settled means for a model follows from these: its timers are tasks, counted while
//! they wait; its loops (the takeover sweeper, the outbox deliverer) have nothing to do once
//! no task is working and the outbox is empty. Scripted scenarios keep their own tail and
//! never use this rule.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::activity::Activity;
use crate::store::SharedState;

/// How often the client checks, simulated ms.
pub const CHECK_MS: u64 = 50;

/// How long the world must stay settled before the run ends, simulated ms.
pub const HOLD_MS: u64 = 100;

/// What the client reads to decide the world has settled.
pub(super) struct Settle {
    /// `false`: the run steps out the whole liveness bound (`Builder::settle(false)`, runs
    /// that simulate the card).
    pub(super) enabled: bool,
    /// When everything is healed and the liveness phase begins, simulated ms.
    pub(super) healed_at_ms: u64,
    /// Whether the model's sweeper may still take over a working task.
    pub(super) takeover: bool,
    pub(super) activity: Activity,
    pub(super) store: SharedState,
    pub(super) memory: Vec<Rc<RefCell<Option<SharedState>>>>,
    /// Fault actions the driver still has to apply (it sets this before every tick).
    pub(super) faults_pending: Rc<Cell<usize>>,
    /// When the world was found settled and the liveness phase ended early, simulated ms.
    pub(super) settled_at: Rc<Cell<Option<u64>>>,
}

impl Settle {
    /// The latest simulated ms a pending model timer may fire at and still keep a run whose
    /// bound ends at `until` going: the bound's end plus one more bound (the final reads
    /// are made after it).
    pub(super) fn timers_horizon(&self, until: u64) -> u64 {
        until + until.saturating_sub(self.healed_at_ms)
    }

    /// Whether nothing in the world can change any task before the run's final reads (its
    /// bound ends at `until`).
    pub(super) fn settled(&self, until: u64) -> bool {
        if !self.enabled
            || self.activity.busy() > 0
            || self.activity.timers_due_by(self.timers_horizon(until)) > 0
            || self.faults_pending.get() > 0
        {
            return false;
        }
        let at_rest = |s: &SharedState| !self.takeover || s.borrow().all_at_rest();
        self.store.borrow().outbox_empty()
            && at_rest(&self.store)
            && self
                .memory
                .iter()
                .all(|slot| slot.borrow().as_ref().is_none_or(at_rest))
    }

    /// Sleeps until `until` (simulated ms), or until the world, from the heal on, has stayed
    /// settled for [`HOLD_MS`], whichever comes first.
    pub(super) async fn wait(&self, until: u64) {
        let mut since: Option<u64> = None;
        loop {
            let now = crate::trace::now_ms();
            if now >= until {
                return;
            }
            if now >= self.healed_at_ms && self.settled(until) {
                let from = *since.get_or_insert(now);
                if now - from >= HOLD_MS {
                    self.settled_at.set(Some(now));
                    return;
                }
            } else {
                since = None;
            }
            let step = CHECK_MS.min(until - now);
            tokio::time::sleep(std::time::Duration::from_millis(step)).await;
        }
    }
}
