//! Subscription taps: a subscription's queue on its replica's ActiveTask, and what a full
//! one does once its reader has stopped reading (`stall-readers`,
//! [`crate::faults::stall`]).
//!
//! a2a-sdk's ActiveTask hands every event of the task to a dispatcher that puts it into
//! each subscriber's tap, a queue of 1,024 events (`events/event_queue_v2.py`). A reader
//! that stops reading leaves its tap to fill. Up to 1.1.3 the dispatcher then waits on the
//! full tap: its incoming queue (1,024 more) fills behind it, the consumer stops after
//! its next save, and the task stops for every caller until the reader reads again
//! (a2aproject/a2a-python#1136; measured with
//! `tests/peers/a2a-python/probes/slow_subscriber.py`: saves stop at 2,051). From 1.1.4 the
//! full tap is evicted instead (#1137): the task goes on and the stream ends with no final
//! state. The model counts one event per save of the task here.
//!
//! Knobs read: `subscribe.stalled_tap`, `subscribe.tap_queue`.

use std::cell::Cell;
use std::rc::Rc;

use super::{ActiveTask, Replica};
use crate::model::StalledTap;

/// a2a-sdk's `DEFAULT_MAX_QUEUE_SIZE`.
const TAP_QUEUE: u32 = 1024;

/// One subscription's tap.
pub(super) struct Tap {
    /// When the subscription opened: a `stall-readers` from then on stalls its reader.
    opened_ms: u64,
    /// Events queued behind its stalled reader.
    behind: Cell<u64>,
    /// Set when the full tap was closed and dropped: its stream ends.
    evicted: Cell<bool>,
    gone: tokio::sync::Notify,
}

/// A subscription's tap, detached from its ActiveTask when the subscription ends.
pub(super) struct TapGuard {
    active: Rc<ActiveTask>,
    tap: Rc<Tap>,
}

impl Drop for TapGuard {
    fn drop(&mut self) {
        self.active
            .taps
            .borrow_mut()
            .retain(|t| !Rc::ptr_eq(t, &self.tap));
    }
}

impl Replica {
    /// The tap of a subscription to `task_id` opened now, when the model says what a full
    /// one does; `None` otherwise.
    pub(super) fn open_tap(&self, task_id: &str, opened_ms: u64) -> Option<TapGuard> {
        self.profile.subscribe.stalled_tap?;
        let active = self.active(task_id);
        let tap = Rc::new(Tap {
            opened_ms,
            behind: Cell::new(0),
            evicted: Cell::new(false),
            gone: tokio::sync::Notify::new(),
        });
        active.taps.borrow_mut().push(tap.clone());
        Some(TapGuard { active, tap })
    }

    /// Whether the reader of a subscription opened at `opened_ms` has stopped reading.
    pub(super) fn reader_stalled(&self, opened_ms: u64) -> bool {
        self.faults.drain.reader_stalled(opened_ms)
    }

    /// What a stalled reader's stream does from now on: it ends when its tap is evicted;
    /// otherwise it forwards nothing more (the reader never reads again).
    pub(super) async fn stalled_stream(&self, tap: Option<&TapGuard>) {
        match tap {
            Some(guard) => {
                while !guard.tap.evicted.get() {
                    guard.tap.gone.notified().await;
                }
            }
            None => std::future::pending().await,
        }
    }

    fn queue(&self) -> u64 {
        u64::from(self.profile.subscribe.tap_queue.unwrap_or(TAP_QUEUE))
    }

    /// Before a save of `task_id` here: once a stalled reader's tap blocks the dispatcher
    /// and the incoming queue behind it is full too, the consumer never gets to save again.
    pub(super) async fn tap_gate(&self, task_id: &str) {
        if self.profile.subscribe.stalled_tap != Some(StalledTap::Blocks) {
            return;
        }
        let Some(active) = self.tasks.active.borrow().get(task_id).cloned() else {
            return;
        };
        let full = 2 * self.queue() + 1;
        let stuck = active
            .taps
            .borrow()
            .iter()
            .any(|t| self.reader_stalled(t.opened_ms) && t.behind.get() >= full);
        if stuck {
            self.record(format!(
                "{task_id}: a stalled subscriber's tap and the dispatcher's queue are full ({full} events behind): the task's saves wait for that reader"
            ));
            std::future::pending::<()>().await;
        }
    }

    /// After a save of `task_id` here: one more event behind each stalled reader; a tap
    /// found full is evicted, with `subscribe.stalled_tap = "evicted"`.
    pub(super) fn tap_dispatched(&self, task_id: &str) {
        let Some(mode) = self.profile.subscribe.stalled_tap else {
            return;
        };
        let Some(active) = self.tasks.active.borrow().get(task_id).cloned() else {
            return;
        };
        let queue = self.queue();
        let mut evicted = Vec::new();
        for tap in active.taps.borrow().iter() {
            if !self.reader_stalled(tap.opened_ms) {
                continue;
            }
            // The dispatcher finds the tap full when it brings one event more than it holds.
            if mode == StalledTap::Evicted && tap.behind.get() >= queue {
                evicted.push(tap.clone());
                continue;
            }
            tap.behind.set(tap.behind.get() + 1);
        }
        for tap in evicted {
            self.record(format!(
                "{task_id}: a stalled subscriber's tap is full ({queue} events behind): evicted, its stream ends"
            ));
            tap.evicted.set(true);
            tap.gone.notify_waiters();
            active.taps.borrow_mut().retain(|t| !Rc::ptr_eq(t, &tap));
        }
    }
}
