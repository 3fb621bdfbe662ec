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

mod auth_grant;
mod cancel_idempotent;
mod card_freshness;
mod context_match;
mod credential_audience;
mod dedup_contract;
mod exactly_once;
pub mod hazards;
mod liveness;
mod no_effect_after_cancel;
mod no_lost_writes;
mod owner_isolation;
mod push_accounted;
mod push_egress;
mod stream_continuity;
mod terminal_final;
mod versions;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::client::history::{Op, OpKind};
use crate::error::InputError;
use crate::world::RunRecord;

/// One broken promise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub invariant: &'static str,
    /// Which way the promise broke, within its invariant (`double-effect`, `lost`, ...):
    /// what hazard recognition and reports match on.
    pub kind: &'static str,
    /// What broke, naming turns, replicas and versions.
    pub detail: String,
    /// What the sentence points at, for the timeline and shrink.
    pub anchors: Anchors,
}

/// What a violation points at, beside its sentence.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Anchors {
    /// The turn the sentence is about (it begins with it), when it is about one.
    pub turn: Option<(String, u32)>,
    /// Every conversation whose turn the sentence names, in order.
    pub conversations: Vec<String>,
    /// The task it is about.
    pub task: Option<String>,
    /// The hosts it names (replicas, card hosts).
    pub hosts: Vec<String>,
    /// A URL it names (a push target).
    pub url: Option<String>,
    /// The simulated times it cites, in order.
    pub times_ms: Vec<u64>,
}

impl Violation {
    /// A violation of `kind`, in words; [`check_all`] fills in the invariant.
    pub fn new(kind: &'static str, detail: impl Into<String>) -> Violation {
        Violation {
            invariant: "",
            kind,
            detail: detail.into(),
            anchors: Anchors::default(),
        }
    }

    /// The turn the sentence is about.
    pub fn about(mut self, conversation: &str, turn: u32) -> Violation {
        self.anchors.turn = Some((conversation.to_string(), turn));
        self.names_turn(conversation)
    }

    /// A conversation whose turn the sentence names.
    pub fn names_turn(mut self, conversation: &str) -> Violation {
        if !self.anchors.conversations.iter().any(|c| c == conversation) {
            self.anchors.conversations.push(conversation.to_string());
        }
        self
    }

    /// The task it is about.
    pub fn task(mut self, id: &str) -> Violation {
        self.anchors.task = Some(id.to_string());
        self
    }

    /// A host it names.
    pub fn host(mut self, host: &str) -> Violation {
        self.anchors.hosts.push(host.to_string());
        self
    }

    /// A URL it names.
    pub fn url(mut self, url: &str) -> Violation {
        self.anchors.url = Some(url.to_string());
        self
    }

    /// A simulated time it cites.
    pub fn at(mut self, ms: u64) -> Violation {
        self.anchors.times_ms.push(ms);
        self
    }
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
    ("owner-isolation", &owner_isolation::OwnerIsolation),
    ("context-match", &context_match::ContextMatch),
    ("credential-audience", &credential_audience::CredentialAudience),
    ("card-freshness", &card_freshness::CardFreshness),
    ("auth-grant", &auth_grant::AuthGrant),
];

/// Names of the implemented invariants.
pub fn names() -> Vec<&'static str> {
    CHECKERS.iter().map(|(n, _)| *n).collect()
}

/// Refuses invariant names that are unknown.
pub fn validate_names(names_given: &[String], origin: &str) -> Result<(), InputError> {
    for name in names_given {
        if CHECKERS.iter().any(|(n, _)| n == name) {
            continue;
        }
        let why = format!("unknown invariant `{name}`; known: {}", names().join(", "));
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

/// Who created each conversation's task: the principal of its earliest first turn.
pub fn owners(history: &[Op]) -> BTreeMap<&str, &str> {
    let mut owners = BTreeMap::new();
    for op in history {
        if let OpKind::Send {
            conversation,
            turn: 1,
            foreign_context: false,
            ..
        } = &op.kind
        {
            owners
                .entry(conversation.as_str())
                .or_insert(op.principal.as_str());
        }
    }
    owners
}

/// `c1#2`: a turn, as tables and messages name it.
pub fn turn_label(conversation: &str, turn: u32) -> String {
    format!("turn {turn} of {conversation}")
}
