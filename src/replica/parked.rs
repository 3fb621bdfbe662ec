//! `handler.parked_release_ms`: a task parked on a replica is released from its memory when
//! it has been idle that long.
//!
//! a2a-sdk 1.3.0 keeps the `ActiveTask` of a task whose last turn on a replica ended
//! input-required (or auth-required) alive there, and a later request there reaches it
//! instead of the store: a message runs whatever the store holds, a cancel reads its cached
//! copy. With the opt-in `interrupted_task_timeout`, `ActiveTask.schedule_idle_release` ends
//! it once no request and no subscriber has used it for that long
//! (`_release_when_idle`), and the next request there starts a fresh one from the store,
//! which refuses a task another replica finished (`ActiveTask.start`). A message stops the
//! timer when it takes the ActiveTask (`get_or_create`) and the end of its turn starts it
//! again, and so does the last subscriber leaving. Not modelled: a message refused after it
//! took the ActiveTask leaves the task parked with no timer (a2a-sdk starts one again).

use std::rc::Rc;
use std::time::Duration;

use super::{ActiveTask, Replica};

impl Replica {
    /// Starts (again) the idle timer of the task `task_id` parked here, when the model has
    /// one; a timer started earlier for it no longer releases anything.
    pub(super) fn schedule_release(self: &Rc<Self>, task_id: &str, active: &Rc<ActiveTask>) {
        let Some(ms) = self.profile.handler.parked_release_ms else {
            return;
        };
        let generation = active.release_timer.get() + 1;
        active.release_timer.set(generation);
        let (me, id, active) = (self.clone(), task_id.to_string(), active.clone());
        let at = crate::trace::now_ms() + ms;
        crate::activity::spawn_timer(at, async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            let idle = active.release_timer.get() == generation
                && active.parked.get()
                && !active.running.get()
                && active.subscribers.get() == 0;
            if idle {
                active.parked.set(false);
                active.registered.set(false);
                *active.cached.borrow_mut() = None;
                me.record(format!(
                    "{id}: parked {ms} ms with no request: released (interrupted_task_timeout)"
                ));
            }
        });
    }

    /// Counts a subscriber attached to this replica's ActiveTask for `task_id` until the
    /// guard is dropped; the last one to leave restarts the idle timer.
    pub(super) fn attach(self: &Rc<Self>, task_id: &str) -> Attached {
        let active = self.active(task_id);
        active.subscribers.set(active.subscribers.get() + 1);
        Attached {
            replica: self.clone(),
            task_id: task_id.to_string(),
            active,
        }
    }
}

/// A subscriber attached to a replica's ActiveTask.
pub(super) struct Attached {
    replica: Rc<Replica>,
    task_id: String,
    active: Rc<ActiveTask>,
}

impl Drop for Attached {
    fn drop(&mut self) {
        let left = self.active.subscribers.get().saturating_sub(1);
        self.active.subscribers.set(left);
        if left == 0 && self.active.parked.get() {
            self.replica.schedule_release(&self.task_id, &self.active);
        }
    }
}
