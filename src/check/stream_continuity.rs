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
//! reader stopped reading, a `stall-readers`); a stream its server ends cleanly before a final
//! state must not end while the task is already at rest (`closed-early`: the snapshot-then-
//! follow race, where the task finishes between the snapshot and the tap and the stream ends
//! 80 ms later, well inside the 700 ms the rule above allows; see [`closed_early`]); and no
//! event carrying a state may arrive twice in a row (`redelivered`: the same event again, byte
//! for byte, the snapshot and the first event too; a new event in the same state, such as a
//! progress update still `working` or the Task event a2a-sdk's cluster mode logs when a turn
//! adds its message, is a change of its own). Only
//! the owner's subscriptions count (another principal's belong to `owner-isolation`). Exercised: subscriptions to tasks that exist (all rules; the
//! `closed-early` rule bites on those among them that ended cleanly before a final state).

use crate::check::{
    owners, Checker, Finding, Invariant, LiveNeeds, Report, Violation, ViolationKind, Without,
};
use crate::client::history::{OpKind, Outcome};
use crate::faults::kill::Kill;
use crate::faults::partition::{Partition, PartitionOneway};
use crate::faults::stall::StallReaders;
use crate::faults::Action;
use crate::host::Host;
use crate::world::RunRecord;

/// When, between `from` and `to`, the connection of a stream served by `by` was cut: a
/// partition of one of its links (client–router, router–`by`) both ways or in the direction
/// its events travel, or a kill of the router or of `by` (or its reader stopped reading: a
/// `stall-readers` of `by`). The simulated network drops what a
/// cut link carried and never retransmits, so such a connection is dead (real TCP would
/// resend): what changed after the cut is owed to the client's next subscription, not to
/// this one.
fn cut_at(run: &RunRecord, from: u64, to: u64, by: &str) -> Option<u64> {
    let carries = |a: &Host, b: &Host| {
        (*a == *by && *b == Host::Router) || (*a == Host::Router && *b == Host::Client)
    };
    run.faults
        .iter()
        .filter(|(at, _)| (from..=to).contains(at))
        .find(|(_, action)| match action {
            Action::Partition(Partition(a, b)) => carries(a, b) || carries(b, a),
            Action::PartitionOneway(PartitionOneway(a, b)) => carries(a, b),
            Action::Kill(Kill(host)) => *host == Host::Router || *host == *by,
            // Its reader stopped reading: nothing later reaches it, whatever the server does.
            Action::StallReaders(StallReaders(host)) => *host == *by,
            _ => false,
        })
        .map(|(at, _)| *at)
}

/// Whether `action` can delay what a stream served by `by` carries: a fault of no particular
/// host (a rate, a BUGGIFY point, the heal), or one that touches the stream's path: the
/// client, the router, the serving replica or the store its event poll reads. A fault of
/// another replica or of the ledger cannot: a change is owed from its save on, and from
/// there it travels store → `by` → router → client.
fn disturbs_path(action: &Action, by: &str) -> bool {
    let hosts = action.hosts();
    hosts.is_empty()
        || hosts
            .iter()
            .any(|h| matches!(h, Host::Client | Host::Router | Host::Store) || **h == *by)
}

/// `closed-early`: a stream its server ended cleanly (the body ended with no error, before
/// the client gave up) on a state that is not at rest, over a connection nothing cut (`cut`,
/// the caller's [`cut_at`]), while the task was already at rest: the last save of the task at or before
/// the close is terminal or interrupted, and no fault touched the stream's path (the
/// router, the client or the serving replica) between that save and the close (a delay
/// there could bring the close after a save the server had not seen). Such a stream left
/// the client with a state the task no longer had and no reason to ask again: the final
/// event was lost (the snapshot-then-follow race: a tap opened after the task finished).
/// A stream that closed before the task came to rest owes nothing (a drain that cuts a
/// running task's stream is `liveness`'s business when the task never ends).
fn closed_early(
    run: &RunRecord,
    op: &crate::client::history::Op,
    saves: &[&crate::store::SaveRecord],
    by: &str,
    task_id: &str,
    cut: Option<u64>,
) -> Option<Violation> {
    if !op.outcome.ended_before_final() || cut.is_some() {
        return None;
    }
    let at_close = saves.iter().rev().find(|s| s.at_ms <= op.complete_ms)?;
    if !crate::protocol::at_rest(&at_close.state) {
        return None;
    }
    let disturbed = run.faults.iter().any(|(at, action)| {
        (at_close.at_ms..=op.complete_ms).contains(at)
            && action
                .hosts()
                .iter()
                .any(|h| matches!(h, Host::Router | Host::Client) || **h == *by)
    });
    if disturbed {
        return None;
    }
    let shown = op
        .stream_states
        .last()
        .map_or_else(|| "nothing".to_string(), |s| format!("{s:?}"));
    Some(
        Violation::new(
            ViolationKind::CLOSED_EARLY,
            format!(
                "the stream for {task_id} on {by} ended at {} ms on {shown}, but the task was already {:?} (v{} by {} at {} ms): the stream ended without it",
                op.complete_ms, at_close.state, at_close.version, at_close.replica, at_close.at_ms
            ),
        )
        .task(task_id)
        .host(by)
        .host(&at_close.replica)
        .at(at_close.at_ms),
    )
}

impl Invariant {
    /// `stream-continuity`.
    pub const STREAM_CONTINUITY: Invariant = Invariant::new("stream-continuity");
}

/// How `stream-continuity` breaks.
impl ViolationKind {
    /// `closed-early`.
    pub const CLOSED_EARLY: ViolationKind = ViolationKind::new("closed-early");
    /// `not-found`.
    pub const NOT_FOUND: ViolationKind = ViolationKind::new("not-found");
    /// `no-snapshot`.
    pub const NO_SNAPSHOT: ViolationKind = ViolationKind::new("no-snapshot");
    /// `never-advanced`.
    pub const NEVER_ADVANCED: ViolationKind = ViolationKind::new("never-advanced");
    /// `redelivered`.
    pub const REDELIVERED: ViolationKind = ViolationKind::new("redelivered");
}

/// The stream-continuity checker.
pub struct StreamContinuity;

/// A change must reach a subscriber within this long (polling, at 0.5 s, included).
const SLACK_MS: u64 = 700;

impl Checker for StreamContinuity {
    fn name(&self) -> Invariant {
        Invariant::STREAM_CONTINUITY
    }

    fn live(&self) -> LiveNeeds {
        LiveNeeds::Reports(Report::Saves, Without::FailOnly)
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
            let by = op.replica_or("?");
            let last_before = saves.iter().rev().find(|s| s.at_ms <= op.invoke_ms);
            match &op.outcome {
                Outcome::Fail { code: -32001, .. } => {
                    let holder = last_before
                        .map(|s| format!(" (last saved by {} at {} ms)", s.replica, s.at_ms))
                        .unwrap_or_default();
                    let mut v = Violation::new(
                        ViolationKind::NOT_FOUND,
                        format!("SubscribeToTask for {task_id} on {by} answered TaskNotFound, but the task exists{holder}"),
                    )
                    .task(task_id)
                    .host(&by);
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
                        ViolationKind::NO_SNAPSHOT,
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
                    .host(&by)
                    .at(op.invoke_ms),
                );
                continue;
            }
            // Progress is owed once the path is quiet: a fault on the stream's path during
            // the subscription (a cut, a kill, a held link; see [`disturbs_path`]) or a
            // slowed event poll may delay a change, not lose it, so the clock starts at the
            // later of the change and the last disturbance. A fault elsewhere (another
            // replica, the ledger) delays nothing this stream carries. Once the stream's own
            // connection is cut, nothing later is owed to it.
            let cut = cut_at(run, op.invoke_ms, op.complete_ms, &by);
            let end = cut.unwrap_or(op.complete_ms);
            let mut quiet_from = run
                .faults
                .iter()
                .filter(|(at, action)| {
                    (op.invoke_ms..=end).contains(at) && disturbs_path(action, &by)
                })
                .map(|(at, _)| *at)
                .max()
                .unwrap_or(0);
            // A slowed event poll (a BUGGIFY point) delays every stream until it ends.
            quiet_from = quiet_from.max(run.poll_slowed_until_ms);
            let changed = saves.iter().find(|s| {
                s.at_ms > op.invoke_ms
                    && s.at_ms.max(quiet_from) + SLACK_MS < end
                    && last_before.is_none_or(|b| b.state != s.state)
            });
            match changed.filter(|_| op.stream_states.len() == 1) {
                Some(s) => {
                    violations.push(
                        Violation::new(
                            ViolationKind::NEVER_ADVANCED,
                            format!(
                                "the stream for {task_id} on {by} never advanced: the task became {:?} (v{} by {} at {} ms) but the subscriber saw only the snapshot until {} ms",
                                s.state, s.version, s.replica, s.at_ms, op.complete_ms
                            ),
                        )
                        .task(task_id)
                        .host(&by)
                        .host(&s.replica)
                        .at(s.at_ms),
                    );
                }
                None => violations.extend(closed_early(run, op, &saves, &by, task_id, cut)),
            }
            if let Some(state) = &op.stream_redelivered {
                violations.push(
                    Violation::new(
                        ViolationKind::REDELIVERED,
                        format!(
                            "the stream for {task_id} on {by} delivered the same {state:?} event twice in a row"
                        ),
                    )
                    .task(task_id)
                    .host(&by),
                );
            }
        }
        Finding {
            invariant: Invariant::STREAM_CONTINUITY,
            violations,
            exercised,
        }
    }
}
