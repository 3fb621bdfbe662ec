//! `versions-monotonic`: versions per task strictly increase and every accepted save was
//! based on the current version.
//!
//! Read from the store's save log, which records for each accepted save the version stored
//! before it and the version its writer had read. A save built on an older version than the
//! stored one overwrote somebody else's write: the mechanism behind lost writes on plain
//! stores (A2A-BEHAVIOURS.md §6.1, §6.2). Cancel saves are exempt: the database store skips
//! the version check for CANCELED by design (§2.1). Exercised: saves whose previous save on
//! the same task came from another replica.

use std::collections::BTreeMap;

use crate::check::{
    Checker, Finding, Invariant, LiveNeeds, Report, Violation, ViolationKind, Without,
};
use crate::store::SaveRecord;
use crate::world::RunRecord;

impl Invariant {
    /// `versions-monotonic`.
    pub const VERSIONS_MONOTONIC: Invariant = Invariant::new("versions-monotonic");
}

/// How `versions-monotonic` breaks.
impl ViolationKind {
    /// `went-back`.
    pub const WENT_BACK: ViolationKind = ViolationKind::new("went-back");
    /// `stale-base`.
    pub const STALE_BASE: ViolationKind = ViolationKind::new("stale-base");
}

/// The versions-monotonic checker.
pub struct VersionsMonotonic;

impl Checker for VersionsMonotonic {
    fn name(&self) -> Invariant {
        Invariant::VERSIONS_MONOTONIC
    }

    fn live(&self) -> LiveNeeds {
        LiveNeeds::Reports(Report::Saves, Without::FailOnly)
    }

    fn describe(&self) -> &'static str {
        "per task, versions strictly increase and every accepted save was based on the current version"
    }

    fn check(&self, run: &RunRecord) -> Finding {
        let mut violations = Vec::new();
        for (i, breach) in breaches(&run.saves) {
            let s = &run.saves[i];
            let violation = match breach {
                Breach::WentBack(v) => Violation::new(
                    ViolationKind::WENT_BACK,
                    format!("task {} went from v{v} back to v{}", s.task_id, s.version),
                ),
                Breach::StaleBase => Violation::new(
                    ViolationKind::STALE_BASE,
                    format!(
                        "{} saved task {} as v{} built on {} while the store held {}: {} overwritten",
                        s.replica,
                        s.task_id,
                        s.version,
                        s.based_on.map_or("nothing".into(), |v| format!("v{v}")),
                        s.before.map_or("nothing".into(), |v| format!("v{v}")),
                        match (s.based_on, s.before) {
                            (Some(a), Some(b)) if b > a => format!("v{}..v{b} were", a + 1),
                            _ => "a write was".into(),
                        }
                    ),
                ),
            };
            violations.push(violation.task(&s.task_id).host(&s.replica));
        }
        // Exercised: saves whose previous save on the same task came from another replica.
        let mut writer: BTreeMap<&str, &crate::host::Host> = BTreeMap::new();
        let mut exercised = 0;
        for s in &run.saves {
            if writer
                .insert(&s.task_id, &s.replica)
                .is_some_and(|w| *w != s.replica)
            {
                exercised += 1;
            }
        }
        Finding {
            invariant: Invariant::VERSIONS_MONOTONIC,
            violations,
            exercised,
        }
    }
}

/// What `versions-monotonic` finds wrong with one save.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Breach {
    /// Its version is not above the task's previous save's, which this names.
    WentBack(u64),
    /// It was built on another version than the one stored (a cancel is exempt).
    StaleBase,
}

/// Every breach in a save log, in order, with the index of its save (a save can have both):
/// what the checker reports, and what [`crate::fidelity::Observables`] asks the live
/// observer could have seen.
pub fn breaches(saves: &[SaveRecord]) -> Vec<(usize, Breach)> {
    let mut last: BTreeMap<&str, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for (i, s) in saves.iter().enumerate() {
        if let Some(v) = last.insert(&s.task_id, s.version) {
            if s.version <= v {
                out.push((i, Breach::WentBack(v)));
            }
        }
        // A cancel skips the version check by design (A2A-BEHAVIOURS.md §2.1); what a
        // whole-task cancel undoes is no-lost-writes' to find.
        if !s.mode.is_cancel() && s.based_on != s.before {
            out.push((i, Breach::StaleBase));
        }
    }
    out
}
