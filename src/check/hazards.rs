//! The documented hazards (`docs/A2A-BEHAVIOURS.md` §6), recognised in a finished run.
//!
//! Invariants say what broke; a hazard says which documented way of breaking it was. Each
//! entry reads a run's findings, its model's knobs and the hosts' ground truth, and says
//! whether the run showed that hazard: a lost write on a model that caches its snapshot is
//! the A→B→A continuation (§6.1), one on a plain shared store the ignored CAS (§6.2), a
//! push-accounted failure on a model with per-pod push configs the config registered on the
//! wrong pod (§6.9), and so on. Hazard discovery ([`crate::bench`]) uses this to report how
//! many seeds and wall-seconds random exploration needs before each hazard first appears.
//!
//! Hazards the simulator cannot show are listed in [`NOT_REACHABLE`], with the reason (none
//! now: the stale card, §6.7, needs the card faults, which hazard discovery adds).

use crate::check::{Finding, Invariant, Verdict, Violation, ViolationKind};
use crate::model::{DedupScope, NonBlockingToWorking, Placement};
use crate::world::RunRecord;

/// A documented hazard and how to recognise it.
pub struct Hazard {
    /// Its number in §6.
    pub number: u8,
    /// A short title.
    pub title: &'static str,
    /// Whether a run showed it.
    pub shows: fn(&RunRecord, &[Finding]) -> bool,
}

/// The failed finding of `invariant`, if it failed.
pub(crate) fn failed(findings: &[Finding], invariant: Invariant) -> Option<&Finding> {
    findings
        .iter()
        .find(|f| f.invariant == invariant && f.verdict() == Verdict::Fail)
}

/// The violations of `invariant` (none unless it failed).
pub(crate) fn violations(
    findings: &[Finding],
    invariant: Invariant,
) -> impl Iterator<Item = &Violation> {
    failed(findings, invariant)
        .into_iter()
        .flat_map(|f| &f.violations)
}

/// Whether `invariant` failed with a violation of one of `kinds`.
fn any_kind(findings: &[Finding], invariant: Invariant, kinds: &[ViolationKind]) -> bool {
    violations(findings, invariant).any(|v| kinds.contains(&v.kind))
}

/// Whether `invariant` failed with a violation whose URL contains `needle`.
fn any_url(findings: &[Finding], invariant: Invariant, needle: &str) -> bool {
    violations(findings, invariant)
        .any(|v| v.anchors.url.as_deref().is_some_and(|u| u.contains(needle)))
}

/// The hazards, by §6 number.
pub const HAZARDS: &[Hazard] = &[
    Hazard {
        number: 1,
        title: "continuation A->B->A loses B's writes (cached snapshot)",
        shows: |run, f| {
            run.profile.handler.cache_snapshot && failed(f, Invariant::NO_LOST_WRITES).is_some()
        },
    },
    Hazard {
        number: 2,
        title: "the legacy adapter ignores CAS: concurrent continuations lose a write",
        shows: |run, f| {
            run.profile.store.placement == Placement::Shared
                && !run.profile.store.versioned
                && !run.profile.handler.cache_snapshot
                && failed(f, Invariant::NO_LOST_WRITES).is_some()
        },
    },
    Hazard {
        number: 3,
        title: "a retry with the same messageId runs the effect again",
        shows: |run, f| {
            failed(f, Invariant::DEDUP_CONTRACT).is_some()
                || (run.profile.dedup.scope != DedupScope::Shared
                    && any_kind(
                        f,
                        Invariant::EXACTLY_ONCE_EFFECTS,
                        &[
                            ViolationKind::DOUBLE_EFFECT,
                            ViolationKind::EFFECT_AFTER_REFUSAL,
                            ViolationKind::EFFECT_NEVER_SENT,
                        ],
                    ))
        },
    },
    Hazard {
        number: 4,
        title: "cancel acknowledged while the effect continues",
        shows: |_, f| failed(f, Invariant::NO_EFFECT_AFTER_CANCEL).is_some(),
    },
    Hazard {
        number: 5,
        title:
            "a push answered with a 3xx is never delivered (or is followed to a private address)",
        shows: |run, f| {
            let redirected = run
                .deliveries
                .iter()
                .any(|d| (300..400).contains(&d.status));
            (redirected && failed(f, Invariant::PUSH_ACCOUNTED).is_some())
                || any_url(
                    f,
                    Invariant::PUSH_EGRESS_SAFE,
                    crate::ground::webhook::REDIRECT_TARGET,
                )
        },
    },
    Hazard {
        number: 6,
        title: "DNS rebinding: public at the check, private at the send",
        shows: |_, f| any_url(f, Invariant::PUSH_EGRESS_SAFE, "rebind.example"),
    },
    Hazard {
        number: 7,
        title: "stale card cache: a call uses the card after it changed or its key was revoked",
        shows: |_, f| failed(f, Invariant::CARD_FRESHNESS).is_some(),
    },
    Hazard {
        number: 8,
        title: "per-process stores: a kill loses tasks, a resubscribe elsewhere finds nothing",
        shows: |run, f| {
            failed(f, Invariant::STREAM_CONTINUITY).is_some()
                || (run.profile.store.placement == Placement::Memory
                    && failed(f, Invariant::NO_LOST_WRITES).is_some())
        },
    },
    Hazard {
        number: 9,
        title: "a push config registered on one pod while another runs the task",
        shows: |run, f| {
            !run.profile.push.shared_configs && failed(f, Invariant::PUSH_ACCOUNTED).is_some()
        },
    },
    Hazard {
        number: 10,
        title: "a contextId/taskId mismatch runs the executor or is accepted",
        shows: |_, f| failed(f, Invariant::CONTEXT_MATCH).is_some(),
    },
    Hazard {
        number: 11,
        title: "a second cancel answers -32002",
        shows: |_, f| failed(f, Invariant::CANCEL_IDEMPOTENT).is_some(),
    },
    Hazard {
        number: 12,
        title: "Mastra: a non-blocking follow-up is dropped; concurrent follow-ups both run",
        shows: |run, f| {
            (run.profile.handler.nonblocking_to_working == NonBlockingToWorking::ReturnCurrent
                && any_kind(f, Invariant::LIVENESS, &[ViolationKind::NEVER_PROCESSED]))
                || (!run.profile.handler.per_task_lock
                    && failed(f, Invariant::NO_LOST_WRITES).is_some())
        },
    },
    Hazard {
        number: 13,
        title: "a slow webhook awaited inline holds the turn back; the retry runs it again",
        shows: |run, f| {
            run.profile.push.inline
                && run.push_egress.iter().any(|e| e.url.contains("/slow/"))
                && failed(f, Invariant::EXACTLY_ONCE_EFFECTS).is_some()
        },
    },
    Hazard {
        number: 14,
        title: "cross-tenant read: a store without owners serves any caller's task id",
        shows: |_, f| failed(f, Invariant::OWNER_ISOLATION).is_some(),
    },
];

/// Hazards of §6 the simulator cannot show yet, and why.
pub const NOT_REACHABLE: &[(u8, &str)] = &[];

/// The §6 numbers a run showed, in order.
pub fn shown(run: &RunRecord, findings: &[Finding]) -> Vec<u8> {
    HAZARDS
        .iter()
        .filter(|h| (h.shows)(run, findings))
        .map(|h| h.number)
        .collect()
}

/// The hazard with §6 number `n`.
pub fn by_number(n: u8) -> Option<&'static Hazard> {
    HAZARDS.iter().find(|h| h.number == n)
}
