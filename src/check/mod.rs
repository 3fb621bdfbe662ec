//! Invariant checkers: what users trust, so each one must be able to fail.
//!
//! A checker reads a [`RunRecord`]: the client history (with `info` outcomes that may or
//! may not have happened) and the ground truth of the hosts that do not lie about
//! themselves (the ledger, the store's save log, the webhook). It returns its violations, in
//! sentences a user understands, and an `exercised` count: how often the run reached the
//! case the invariant is about (stateright's `sometimes`). A checker that found nothing to
//! check says `unknown`, never `pass`.
//!
//! Adding a checker is one file in this folder plus one line in [`CHECKERS`].

mod cancel_idempotent;
mod card_freshness;
mod credential_audience;
mod dedup_contract;
mod exactly_once;
mod liveness;
mod no_effect_after_cancel;
mod no_lost_writes;
mod push_accounted;
mod push_egress;
mod stream_continuity;
mod terminal_final;
mod versions;

use serde::Serialize;

use crate::cluster::RunRecord;
use crate::error::InputError;

/// One broken promise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub invariant: &'static str,
    /// What broke, naming turns, replicas and versions.
    pub detail: String,
}

/// `pass`, `fail` or `unknown` (nothing exercised the invariant).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    Unknown,
}

impl Verdict {
    /// The word used in tables and JSON.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Unknown => "unknown",
        }
    }
}

/// What one checker found in one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub invariant: &'static str,
    pub violations: Vec<Violation>,
    /// How many times the run reached the case this invariant is about.
    pub exercised: u64,
}

impl Finding {
    /// The verdict: any violation fails; nothing exercised is unknown.
    pub fn verdict(&self) -> Verdict {
        if !self.violations.is_empty() {
            Verdict::Fail
        } else if self.exercised == 0 {
            Verdict::Unknown
        } else {
            Verdict::Pass
        }
    }
}

/// An invariant checker.
pub trait Checker: Sync {
    /// One sentence: what it promises.
    fn describe(&self) -> &'static str;
    /// Checks one run.
    fn check(&self, run: &RunRecord) -> Finding;
}

/// The checkers, by invariant name.
#[rustfmt::skip]
pub const CHECKERS: &[(&str, &dyn Checker)] = &[
    ("no-lost-writes", &no_lost_writes::NoLostWrites),
    ("exactly-once-effects", &exactly_once::ExactlyOnce),
    ("terminal-is-final", &terminal_final::TerminalIsFinal),
    ("versions-monotonic", &versions::VersionsMonotonic),
    ("no-effect-after-cancel", &no_effect_after_cancel::NoEffectAfterCancel),
    ("cancel-idempotent", &cancel_idempotent::CancelIdempotent),
    ("dedup-contract", &dedup_contract::DedupContract),
    ("stream-continuity", &stream_continuity::StreamContinuity),
    ("liveness", &liveness::Liveness),
    ("push-accounted", &push_accounted::PushAccounted),
    ("push-egress-safe", &push_egress::PushEgressSafe),
    ("credential-audience", &credential_audience::CredentialAudience),
    ("card-freshness", &card_freshness::CardFreshness),
];

/// Invariant names in the contract that this version does not check yet.
pub const NOT_YET_CHECKED: &[&str] = &["owner-isolation"];

/// Names of the implemented invariants.
pub fn names() -> Vec<&'static str> {
    CHECKERS.iter().map(|(n, _)| *n).collect()
}

/// Refuses invariant names that are unknown or not checked by this version.
pub fn validate_names(names_given: &[String], origin: &str) -> Result<(), InputError> {
    for name in names_given {
        if CHECKERS.iter().any(|(n, _)| n == name) {
            continue;
        }
        let why = if NOT_YET_CHECKED.contains(&name.as_str()) {
            format!("invariant `{name}` is in the contract but this version does not check it yet")
        } else {
            format!("unknown invariant `{name}`; known: {}", names().join(", "))
        };
        return Err(InputError::new(origin, why));
    }
    Ok(())
}

/// Runs every checker on one run.
pub fn check_all(run: &RunRecord) -> Vec<Finding> {
    CHECKERS
        .iter()
        .map(|(name, checker)| {
            let mut f = checker.check(run);
            f.invariant = name;
            for v in &mut f.violations {
                v.invariant = name;
            }
            f
        })
        .collect()
}

/// `c1#2`: a turn, as tables and messages name it.
pub fn turn_label(conversation: &str, turn: u32) -> String {
    format!("turn {turn} of {conversation}")
}
