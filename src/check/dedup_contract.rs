//! `dedup-contract`: for models that deduplicate messages, a retry of a completed message
//! returns the same task and runs nothing, and a concurrent duplicate runs nothing.
//!
//! Read from the ledger, which records every executor run's effect request (applied or
//! deduplicated by key) with the replica's send time. For one messageId: a run that starts
//! after an earlier attempt was acknowledged, or a second run while attempts of the same
//! message overlapped, breaks the contract; so does a retry answered with another task.
//! A run after a claim whose pod died (the lease ran out) is allowed: nothing completed; so
//! is a run more than `dedup.ttl_ms` after the message completed, when the model's cache
//! has a TTL (Rasa's, A2A-BEHAVIOURS.md §4): the promise has a lifetime, and a retry past it
//! is a first delivery again (what `exactly-once-effects` then sees is the hazard).
//! Exercised: messages sent more than once, on models whose profile deduplicates. Models
//! that promise no dedup are never exercised: `unknown`.

use std::collections::BTreeMap;

use crate::check::{
    turn_label, Checker, Finding, Invariant, LiveNeeds, Report, Violation, ViolationKind, Without,
};
use crate::client::history::{Op, OpKind, Outcome};
use crate::host::Host;
use crate::model::DedupScope;
use crate::world::RunRecord;

impl Invariant {
    /// `dedup-contract`.
    pub const DEDUP_CONTRACT: Invariant = Invariant::new("dedup-contract");
}

/// How `dedup-contract` breaks.
impl ViolationKind {
    /// `ran-again`.
    pub const RAN_AGAIN: ViolationKind = ViolationKind::new("ran-again");
    /// `another-task`.
    pub const ANOTHER_TASK: ViolationKind = ViolationKind::new("another-task");
    /// `concurrent-duplicates-ran`.
    pub const CONCURRENT_DUPLICATES_RAN: ViolationKind =
        ViolationKind::new("concurrent-duplicates-ran");
}

/// The dedup-contract checker.
pub struct DedupContract;

impl Checker for DedupContract {
    fn name(&self) -> Invariant {
        Invariant::DEDUP_CONTRACT
    }

    fn live(&self) -> LiveNeeds {
        LiveNeeds::Reports(Report::Effects, Without::FailOnly)
    }

    fn describe(&self) -> &'static str {
        "with dedup: a retry of a completed message returns the same task and runs nothing; a concurrent duplicate runs nothing"
    }

    fn check(&self, run: &RunRecord) -> Finding {
        let mut violations = Vec::new();
        let mut exercised = 0;
        if run.profile.dedup.scope == DedupScope::None {
            return Finding {
                invariant: Invariant::DEDUP_CONTRACT,
                violations,
                exercised,
            };
        }
        let mut attempts: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
        for op in &run.history {
            if let OpKind::Send { message_id, .. } = &op.kind {
                attempts.entry(message_id).or_default().push(op);
            }
        }
        for (mid, ops) in attempts.into_iter().filter(|(_, ops)| ops.len() > 1) {
            exercised += 1;
            let OpKind::Send {
                conversation, turn, ..
            } = &ops[0].kind
            else {
                continue;
            };
            let what = format!("{} (message {mid})", turn_label(conversation, *turn));
            let mut runs: Vec<(u64, &Host)> = run
                .effects
                .iter()
                .filter(|e| e.request.message_id == mid)
                .map(|e| (e.request.sent_ms, &e.request.replica))
                .collect();
            runs.sort();
            let artifact = format!("turn-{turn}");
            let acked = ops
                .iter()
                .filter(|o| {
                    o.outcome == Outcome::Ok
                        && o.task
                            .as_ref()
                            .is_some_and(|t| t.artifacts.contains(&artifact))
                })
                .min_by_key(|o| o.complete_ms);
            // Completed: acknowledged to the client, or its result saved (what a lost reply
            // hides from the client, the save log still shows).
            let context = run
                .effects
                .iter()
                .find(|e| e.request.message_id == mid)
                .map(|e| e.request.context_id.clone());
            let saved = run
                .saves
                .iter()
                .filter(|s| {
                    Some(&s.context_id) == context.as_ref() && s.artifacts.contains(&artifact)
                })
                .map(|s| (s.at_ms, format!("saved by {} at {} ms", s.replica, s.at_ms)))
                .min();
            let acked_at = acked.map(|o| {
                let by = o.replica_or("?");
                (
                    o.complete_ms,
                    format!("acknowledged by {by} at {} ms", o.complete_ms),
                )
            });
            let completed = match (acked_at, saved) {
                (Some(a), Some(s)) => Some(if s.0 <= a.0 { s } else { a }),
                (a, s) => a.or(s),
            };
            let ttl = run.profile.dedup.ttl_ms;
            let promised = |at: u64, done_at: u64| ttl == 0 || at <= done_at.saturating_add(ttl);
            if let Some((done_at, how)) = &completed {
                for (at, replica) in runs
                    .iter()
                    .filter(|(at, _)| at > done_at && promised(*at, *done_at))
                {
                    violations.push(
                        Violation::new(
                            ViolationKind::RAN_AGAIN,
                            format!(
                                "{what} ran again on {replica} at {at} ms although it had completed ({how})"
                            ),
                        )
                        .about(conversation, *turn)
                        .host(replica)
                        .at(*at)
                        .at(*done_at),
                    );
                }
            }
            if let Some(first) = acked {
                let task = first
                    .task
                    .as_ref()
                    .map(|t| t.id.clone())
                    .unwrap_or_default();
                for other in ops.iter().filter(|o| {
                    o.invoke_ms > first.complete_ms
                        && o.outcome == Outcome::Ok
                        && promised(o.invoke_ms, first.complete_ms)
                }) {
                    if let Some(t) = &other.task {
                        if t.id != task {
                            violations.push(
                                Violation::new(
                                    ViolationKind::ANOTHER_TASK,
                                    format!(
                                        "a retry of {what} was answered by {} with task {} instead of {task}",
                                        other.replica_or("?"),
                                        t.id
                                    ),
                                )
                                .names_turn(conversation)
                                .task(&t.id),
                            );
                        }
                    }
                }
            }
            // Overlapping attempts: at most one run may start while they overlap.
            for (i, a) in ops.iter().enumerate() {
                for b in &ops[i + 1..] {
                    let (start, end) = (
                        a.invoke_ms.max(b.invoke_ms),
                        a.complete_ms.min(b.complete_ms),
                    );
                    if start > end {
                        continue;
                    }
                    let (lo, hi) = (
                        a.invoke_ms.min(b.invoke_ms),
                        a.complete_ms.max(b.complete_ms),
                    );
                    let during: Vec<_> = runs
                        .iter()
                        .filter(|(at, _)| *at >= lo && *at <= hi)
                        .collect();
                    if during.len() > 1 {
                        let mut v = Violation::new(
                            ViolationKind::CONCURRENT_DUPLICATES_RAN,
                            format!(
                                "concurrent duplicates of {what} ran {} times ({})",
                                during.len(),
                                during
                                    .iter()
                                    .map(|(at, r)| format!("{r} at {at} ms"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        )
                        .names_turn(conversation);
                        for (at, r) in &during {
                            v = v.host(r).at(*at);
                        }
                        violations.push(v);
                    }
                }
            }
        }
        violations.dedup();
        Finding {
            invariant: Invariant::DEDUP_CONTRACT,
            violations,
            exercised,
        }
    }
}
