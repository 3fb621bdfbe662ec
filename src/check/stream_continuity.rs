//! `stream-continuity`: a resubscribe delivers a snapshot, then every later change once, in
//! order.
//!
//! For every SubscribeToTask: a task that exists must not be answered TaskNotFound (the
//! replica that was asked simply does not have it: per-process stores, A2A-BEHAVIOURS.md
//! §6.8); the stream must start with a Task snapshot (Mastra answers an unknown task with
//! an empty stream); it must advance when the task changes (a subscriber on a replica with
//! no event stream sees the snapshot and nothing more), within 700 ms of the change or of the
//! last fault that disturbed the subscription (a delay is not a loss; a stream still silent
//! once the path is quiet is), and before its connection was cut (a partition of its path or
//! a kill of the router or its replica: the simulated network has no retransmit, so a cut
//! connection is dead and what changed later is owed to the next subscription; nor after its
//! reader stopped reading, a `stall-readers`); and no state
//! may arrive twice in a row. Only the owner's subscriptions count (another principal's belong to
//! `owner-isolation`). Exercised: subscriptions to tasks that exist.

use crate::check::{owners, Checker, Finding, Violation};
use crate::client::history::{OpKind, Outcome};
use crate::faults::kill::Kill;
use crate::faults::partition::{Partition, PartitionOneway};
use crate::faults::stall::StallReaders;
use crate::faults::Action;
use crate::world::RunRecord;

/// When, between `from` and `to`, the connection of a stream served by `by` was cut: a
/// partition of one of its links (client–router, router–`by`) both ways or in the direction
/// its events travel, or a kill of the router or of `by` (or its reader stopped reading: a
/// `stall-readers` of `by`). The simulated network drops what a
/// cut link carried and never retransmits, so such a connection is dead (real TCP would
/// resend): what changed after the cut is owed to the client's next subscription, not to
/// this one.
fn cut_at(run: &RunRecord, from: u64, to: u64, by: &str) -> Option<u64> {
    let carries = |a: &str, b: &str| (a, b) == (by, "router") || (a, b) == ("router", "client");
    run.faults
        .iter()
        .filter(|(at, _)| (from..=to).contains(at))
        .find(|(_, action)| match action {
            Action::Partition(Partition(a, b)) => carries(a, b) || carries(b, a),
            Action::PartitionOneway(PartitionOneway(a, b)) => carries(a, b),
            Action::Kill(Kill(host)) => host == "router" || host == by,
            // Its reader stopped reading: nothing later reaches it, whatever the server does.
            Action::StallReaders(StallReaders(host)) => host == by,
            _ => false,
        })
        .map(|(at, _)| *at)
}

/// The stream-continuity checker.
pub struct StreamContinuity;

/// A change must reach a subscriber within this long (polling, at 0.5 s, included).
const SLACK_MS: u64 = 700;

impl Checker for StreamContinuity {
    fn name(&self) -> &'static str {
        "stream-continuity"
    }

    fn describe(&self) -> &'static str {
        "a resubscribe delivers a snapshot, then every later change once and in order"
    }

    fn check(&self, run: &RunRecord) -> Finding {
        let mut violations = Vec::new();
        let mut exercised = 0;
        let owners = owners(&run.history);
        for op in &run.history {
            let OpKind::Subscribe { conversation } = &op.kind else {
                continue;
            };
            // Another principal's subscription is owner-isolation's business: its refusal
            // is the right answer, not a broken stream.
            if owners.get(conversation.as_str()) != Some(&op.principal.as_str()) {
                continue;
            }
            let Some(task_id) = run.conversations.get(conversation) else {
                continue;
            };
            let saves: Vec<_> = run.saves.iter().filter(|s| &s.task_id == task_id).collect();
            let Some(first_save) = saves.first() else {
                continue;
            };
            if first_save.at_ms > op.invoke_ms {
                continue;
            }
            // No replica answered (the reply was lost, the connection cut): the client never
            // saw a stream, so this attempt says nothing about the server's.
            if op.replica.is_none() {
                continue;
            }
            exercised += 1;
            let by = op.replica.as_deref().unwrap_or("?");
            let last_before = saves.iter().rev().find(|s| s.at_ms <= op.invoke_ms);
            match &op.outcome {
                Outcome::Fail { code: -32001, .. } => {
                    let holder = last_before
                        .map(|s| format!(" (last saved by {} at {} ms)", s.replica, s.at_ms))
                        .unwrap_or_default();
                    let mut v = Violation::new(
                        "not-found",
                        format!("SubscribeToTask for {task_id} on {by} answered TaskNotFound, but the task exists{holder}"),
                    )
                    .task(task_id)
                    .host(by);
                    if let Some(s) = last_before {
                        v = v.host(&s.replica).at(s.at_ms);
                    }
                    violations.push(v);
                    continue;
                }
                Outcome::Fail { .. } => continue,
                _ => {}
            }
            if op.stream_states.is_empty() || !op.stream_snapshot_first {
                violations.push(
                    Violation::new(
                        "no-snapshot",
                        format!(
                            "SubscribeToTask for {task_id} on {by} at {} ms {}",
                            op.invoke_ms,
                            if op.stream_states.is_empty() {
                                "got an empty stream: no snapshot, no events"
                            } else {
                                "did not start with a Task snapshot"
                            }
                        ),
                    )
                    .task(task_id)
                    .host(by)
                    .at(op.invoke_ms),
                );
                continue;
            }
            // Progress is owed once the path is quiet: a fault during the subscription (a
            // cut, a kill, a held link) or a slowed event poll may delay a change, not lose
            // it, so the clock starts at the later of the change and the last disturbance.
            // Once the stream's own connection is cut, nothing later is owed to it.
            let end = cut_at(run, op.invoke_ms, op.complete_ms, by).unwrap_or(op.complete_ms);
            let mut quiet_from = run
                .faults
                .iter()
                .map(|(at, _)| *at)
                .filter(|at| (op.invoke_ms..=end).contains(at))
                .max()
                .unwrap_or(0);
            // A slowed event poll (a BUGGIFY point) delays every stream until it ends.
            quiet_from = quiet_from.max(run.poll_slowed_until_ms);
            let changed = saves.iter().find(|s| {
                s.at_ms > op.invoke_ms
                    && s.at_ms.max(quiet_from) + SLACK_MS < end
                    && last_before.is_none_or(|b| b.state != s.state)
            });
            if op.stream_states.len() == 1 {
                if let Some(s) = changed {
                    violations.push(
                        Violation::new(
                            "never-advanced",
                            format!(
                                "the stream for {task_id} on {by} never advanced: the task became {:?} (v{} by {} at {} ms) but the subscriber saw only the snapshot until {} ms",
                                s.state, s.version, s.replica, s.at_ms, op.complete_ms
                            ),
                        )
                        .task(task_id)
                        .host(by)
                        .host(&s.replica)
                        .at(s.at_ms),
                    );
                }
            }
            for pair in op.stream_states.windows(2).skip(1) {
                if pair[0] == pair[1] {
                    violations.push(
                        Violation::new(
                            "repeated-state",
                            format!(
                                "the stream for {task_id} on {by} delivered {:?} twice in a row",
                                pair[0]
                            ),
                        )
                        .task(task_id)
                        .host(by),
                    );
                    break;
                }
            }
        }
        Finding {
            invariant: "stream-continuity",
            violations,
            exercised,
        }
    }
}
