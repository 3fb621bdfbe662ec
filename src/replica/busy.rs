//! The busy rule of a model with takeover (`recovery.sweep_ms` > 0): a client's turn to a
//! working task is refused 409, retry later. Another turn of the task is in flight, or waits
//! for the takeover because its runner died or lost its effect's answer: running this one
//! over it would let it complete the task while the earlier, accepted turn is never
//! processed. The takeover itself is the replica's own caller and goes through.
//!
//! The rule holds for the task as a turn first reads it and for the fresh copy a version
//! conflict of its working save re-reads (a turn that began in between is not run over),
//! unless that copy holds the turn's own message: then the write was this save's own, which
//! landed with its answer lost (the dedup claim the turn holds keeps any other attempt of
//! the message out).
//!
//! The rule itself is decided in [`super::decide::send`]; this file answers a refused turn.
//!
//! Knobs read: `recovery.sweep_ms`.

use super::{Refusal, Replica, TurnInfo};

impl Replica {
    /// The answer to a turn the busy rule refuses ([`super::decide::send::busy`],
    /// [`super::decide::send::busy_on_reread`]): 409, retry later.
    pub(super) fn refuse_busy(&self, info: &TurnInfo, task_id: &str) -> Refusal {
        self.record(format!(
            "{}#{}: {task_id} has a turn in flight; busy, 409",
            info.conversation, info.turn
        ));
        Refusal::Http(409, format!("task {task_id} has a turn in flight; retry"))
    }
}
