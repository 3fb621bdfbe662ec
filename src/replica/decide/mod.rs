//! What a replica's handlers decide, as data: pure functions from the profile's knobs and
//! what a handler has read to an enum saying what it does next (send, save, effect,
//! timer, reply), as stateright's actors emit commands that their driver carries out.
//!
//! The handlers (`turn.rs`, `save.rs`, `cancel.rs`, `subscribe.rs`, ...) are that driver:
//! they make every read and every write, in the order the simulation's traces depend on
//! (each store, ledger and stream call is an await the seed schedules), gather a
//! decision's inputs, call it, and carry out what it returns. Nothing here awaits, reads
//! a store, draws from the seed or records a trace note, so each decision is unit-tested
//! with the shipped profiles and no network (`tests`).
//!
//! - [`send`]: SendMessage and SendStreamingMessage: the dedup claim, a turn of the task
//!   running here (join it or not, and what the joined request is answered), what a send
//!   does with the task it read (refuse with which code, replay, wait, start a turn), what
//!   it answers and when, and what a turn's end leaves on the replica;
//! - [`save`]: saves: plain or compare-and-swap, what a version conflict and its re-read
//!   lead to (re-apply, refuse busy, terminal, give up), and how a save before the effect
//!   ends a send;
//! - [`turn`]: the scripted turn's steps given the knobs: think, authorisation, fence,
//!   effect (and its failure), compose, the result's saves, stream events, pushes and
//!   timers, and what a stopped turn's stream hears;
//! - [`cancel`]: CancelTask: which copy it reads, what it answers without writing, how it
//!   writes, and the answer for each store outcome;
//! - [`subscribe`]: SubscribeToTask: the snapshot, refusal or end, the event source, and
//!   which updates each later version brings.

pub(super) mod cancel;
pub(super) mod save;
pub(super) mod send;
pub(super) mod subscribe;
pub(super) mod turn;

#[cfg(test)]
mod tests;

use super::{rpc, Refusal};
use crate::model::{AfterEffect, Profile};

pub(super) use save::Saved;

/// The refusal a client gets when a turn fails after its effect may have run
/// (`handler.after_effect_failure`): with `unavailable`, an RPC error becomes HTTP 503,
/// outcome unknown, retry with the same messageId.
pub(super) fn after_effect(profile: &Profile, refusal: Refusal) -> Refusal {
    match (profile.handler.after_effect_failure, refusal) {
        (AfterEffect::Unavailable, Refusal::Rpc(code, message)) => Refusal::Http(
            503,
            format!("outcome unknown, retry with the same messageId ({code}: {message})"),
        ),
        (_, r) => r,
    }
}

/// What a task that is not found is answered: `-32001`.
pub(super) fn not_found(task_id: &str) -> Refusal {
    rpc(-32001, format!("task {task_id} not found"))
}
