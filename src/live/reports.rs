//! What a live peer reports to the run's ledger, and what the checkers may conclude without it.
//!
//! The checkers take two kinds of report as ground truth: business effects (`POST
//! {ledger}/effect`) and saves (`POST {ledger}/save`). A peer that sends no effect reports
//! looks, to them, like a server whose turns never took effect: `exactly-once-effects` would
//! fail every acknowledged turn, and `no-effect-after-cancel`, `dedup-contract` and
//! `context-match` would pass without having seen the effects they are about. So an
//! invariant whose reports the peer does not send is `unknown`, with the reason, never `pass`
//! ([`apply`]):
//!
//! | not reported | invariant | verdict |
//! |---|---|---|
//! | effects | `exactly-once-effects` | `unknown` (its violations are absences of effects) |
//! | effects | `no-effect-after-cancel`, `dedup-contract`, `context-match` | a `fail` on the answers stays; otherwise `unknown` |
//! | saves | `versions-monotonic`, `stream-continuity`, `wait-honoured` | a `fail` stays; otherwise `unknown` |
//! | saves | `terminal-is-final`, `liveness` | as checked, noted as judged on answers and final tasks alone |
//!
//! Each checker declares what it needs ([`crate::check::Checker::live`]), beside its check.
//!
//! Which reports a peer sends ([`Reports`], `live --reports`): the repository's presets
//! send both; `auto` (the default) takes a user's command to send a kind when the run
//! received at least one report of it; `effects`, `saves`, `effects,saves` or `none`
//! declares it, so that a declared kind that never arrives fails the invariants that need it
//! instead of leaving them `unknown`.

use std::collections::BTreeMap;
use std::str::FromStr;

use crate::check::{Finding, Invariant, LiveNeeds, Report, Without};
use crate::world::RunRecord;

/// Which reports a peer sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reports {
    /// The presets send both; a user's command, each kind that arrived at least once.
    #[default]
    Auto,
    /// As declared with `--reports`.
    Declared { effects: bool, saves: bool },
}

/// A `--reports` word that names no report kind ([`Reports`]'s `FromStr`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown report kind `{0}`; expected auto, none, or a list of effects and saves (effects,saves)")]
pub struct UnknownReportKind(pub String);

impl FromStr for Reports {
    type Err = UnknownReportKind;

    fn from_str(text: &str) -> Result<Reports, UnknownReportKind> {
        if text == "auto" {
            return Ok(Reports::Auto);
        }
        let (mut effects, mut saves) = (false, false);
        if text != "none" {
            for kind in text.split(',').map(str::trim) {
                match kind {
                    "effects" => effects = true,
                    "saves" => saves = true,
                    other => return Err(UnknownReportKind(other.to_string())),
                }
            }
        }
        Ok(Reports::Declared { effects, saves })
    }
}

impl Reports {
    /// The `--reports` value that declares these kinds; `None` for `auto`.
    pub fn declared(self) -> Option<String> {
        let Reports::Declared { effects, saves } = self else {
            return None;
        };
        Some(
            match (effects, saves) {
                (true, true) => "effects,saves",
                (true, false) => "effects",
                (false, true) => "saves",
                (false, false) => "none",
            }
            .to_string(),
        )
    }
}

/// The kinds a run's peer sent: `(effects, saves)`.
fn sent(reports: Reports, preset: bool, record: &RunRecord) -> (bool, bool) {
    match reports {
        Reports::Declared { effects, saves } => (effects, saves),
        Reports::Auto if preset => (true, true),
        Reports::Auto => (!record.effects.is_empty(), !record.saves.is_empty()),
    }
}

/// Weakens the findings of invariants whose reports `record`'s peer did not send (see the
/// module docs) and returns, per invariant whose verdict this changes or qualifies, the note
/// that says why.
pub fn apply(
    reports: Reports,
    preset: bool,
    record: &RunRecord,
    findings: &mut [Finding],
) -> BTreeMap<Invariant, String> {
    let (effects, saves) = sent(reports, preset, record);
    let how = match reports {
        Reports::Auto => "none arrived",
        Reports::Declared { .. } => "not declared in --reports",
    };
    let mut notes = BTreeMap::new();
    for finding in findings.iter_mut() {
        let needs = crate::check::checker_of(finding.invariant).map(|c| c.live());
        let Some(LiveNeeds::Reports(report, without)) = needs else {
            continue;
        };
        let kind = match (report, effects, saves) {
            (Report::Effects, false, _) => "effect",
            (Report::Saves, _, false) => "save",
            _ => continue,
        };
        // An invariant nothing reached is `unknown` already: nothing to say.
        if finding.exercised == 0 && finding.violations.is_empty() {
            continue;
        }
        let note = match without {
            Without::Unknown => {
                finding.violations.clear();
                finding.exercised = 0;
                format!("unknown: it needs {kind} reports from the peer ({how})")
            }
            Without::FailOnly if finding.violations.is_empty() => {
                finding.exercised = 0;
                format!("unknown: a pass needs {kind} reports from the peer ({how})")
            }
            Without::FailOnly => {
                format!("failed on the answers alone; no {kind} reports from the peer ({how})")
            }
            Without::Partial => {
                format!("judged without {kind} reports from the peer ({how}): only what the answers and final tasks show")
            }
        };
        notes.insert(finding.invariant, note);
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{Verdict, Violation, ViolationKind};

    fn finding(invariant: &'static str, violations: usize) -> Finding {
        Finding {
            invariant: Invariant::new(invariant),
            violations: (0..violations)
                .map(|_| Violation::new(ViolationKind::new("test"), "broke"))
                .collect(),
            exercised: 3,
        }
    }

    fn empty_record() -> RunRecord {
        crate::check::fixtures::one_turn_record()
    }

    #[test]
    fn the_kinds_parse() {
        assert_eq!("auto".parse(), Ok(Reports::Auto));
        assert_eq!(
            "none".parse(),
            Ok(Reports::Declared {
                effects: false,
                saves: false
            })
        );
        assert_eq!(
            "effects, saves".parse(),
            Ok(Reports::Declared {
                effects: true,
                saves: true
            })
        );
        assert!("effect".parse::<Reports>().is_err());
    }

    /// With nothing reported, exactly-once is unknown whatever it found (its violations
    /// are missing effects), a pass that needs effects or saves is unknown, a failure on the
    /// answers stays, and terminal-is-final keeps its verdict with a note.
    #[test]
    fn unreported_kinds_make_passes_unknown_and_keep_answer_failures() {
        let mut record = empty_record();
        record.effects.clear();
        record.saves.clear();
        let mut findings = vec![
            finding("exactly-once-effects", 2),
            finding("no-effect-after-cancel", 0),
            finding("context-match", 1),
            finding("versions-monotonic", 0),
            finding("terminal-is-final", 0),
            finding("no-lost-writes", 0),
        ];
        let notes = apply(Reports::Auto, false, &record, &mut findings);
        let verdicts: Vec<Verdict> = findings.iter().map(Finding::verdict).collect();
        assert_eq!(
            verdicts,
            [
                Verdict::Unknown,
                Verdict::Unknown,
                Verdict::Fail,
                Verdict::Unknown,
                Verdict::Pass,
                Verdict::Pass
            ]
        );
        assert_eq!(notes.len(), 5, "{notes:?}");
        assert!(!notes.contains_key(&Invariant::NO_LOST_WRITES));
    }

    /// A preset sends both, and a declared kind is trusted: a missing effect then fails.
    #[test]
    fn presets_and_declared_kinds_keep_every_verdict() {
        let mut record = empty_record();
        record.effects.clear();
        for (reports, preset) in [
            (Reports::Auto, true),
            (
                Reports::Declared {
                    effects: true,
                    saves: true,
                },
                false,
            ),
        ] {
            let mut findings = vec![finding("exactly-once-effects", 1)];
            let notes = apply(reports, preset, &record, &mut findings);
            assert!(notes.is_empty());
            assert_eq!(findings[0].verdict(), Verdict::Fail);
        }
    }
}
