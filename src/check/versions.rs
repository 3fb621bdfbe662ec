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

use crate::check::{Checker, Finding, Violation};
use crate::world::RunRecord;

/// The versions-monotonic checker.
pub struct VersionsMonotonic;

impl Checker for VersionsMonotonic {
    fn name(&self) -> &'static str {
        "versions-monotonic"
    }

    fn describe(&self) -> &'static str {
        "per task, versions strictly increase and every accepted save was based on the current version"
    }

    fn check(&self, run: &RunRecord) -> Finding {
        let mut last: BTreeMap<&str, (u64, &str)> = BTreeMap::new();
        let mut violations = Vec::new();
        let mut exercised = 0;
        for s in &run.saves {
            if let Some((v, writer)) = last.get(s.task_id.as_str()) {
                if s.version <= *v {
                    violations.push(
                        Violation::new(
                            "went-back",
                            format!("task {} went from v{v} back to v{}", s.task_id, s.version),
                        )
                        .task(&s.task_id)
                        .host(&s.replica),
                    );
                }
                if *writer != s.replica {
                    exercised += 1;
                }
            }
            // A cancel skips the version check by design (A2A-BEHAVIOURS.md §2.1); what a
            // whole-task cancel undoes is no-lost-writes' to find.
            if !s.mode.is_cancel() && s.based_on != s.before {
                violations.push(
                    Violation::new(
                    "stale-base",
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
                )
                .task(&s.task_id)
                .host(&s.replica));
            }
            last.insert(&s.task_id, (s.version, &s.replica));
        }
        Finding {
            invariant: "versions-monotonic",
            violations,
            exercised,
        }
    }
}
