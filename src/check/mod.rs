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
pub mod versions;
mod wait_honoured;

/// Records for the checkers' unit tests to edit.
#[cfg(test)]
pub(crate) mod fixtures {
    use crate::world::RunRecord;

    /// The record of a real run of the reference model on one replica taking `steps`
    /// (the `[[step]]` tables of a scenario file).
    pub(crate) fn record_of(steps: &str) -> RunRecord {
        let text = format!("name = \"t\"\nmodel = \"reference\"\nreplicas = 1\n{steps}");
        let script = crate::scenario::Script::parse(&text, "test").expect("a scenario");
        crate::sim::Sim::from_scenario(&script)
            .expect("it builds")
            .run()
    }

    /// The record of a real one-turn run of the reference model.
    pub(crate) fn one_turn_record() -> RunRecord {
        record_of("[[step]]\nsend = { conversation = \"c1\", turn = 1 }\n")
    }
}

use std::collections::BTreeMap;
use std::fmt;

use serde::{Serialize, Serializer};

use crate::client::history::{Op, OpKind};
use crate::error::InputError;
use crate::world::RunRecord;

/// Declares a name type: a `&'static str` that prints, pads, serialises and debugs as
/// the name itself, compared by value, with one constant per built-in name.
macro_rules! name_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(&'static str);

        impl $name {
            /// A name of your own (kebab-case).
            pub const fn new(name: &'static str) -> $name {
                $name(name)
            }

            /// The name, as reports print it.
            pub const fn as_str(self) -> &'static str {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(self.0, f)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.0)
            }
        }

        /// A name read from outside (a file, a flag) is compared with its text.
        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                self.0 == other.as_str()
            }
        }
    };
}

name_type! {
    /// An invariant's name (`no-lost-writes`): kebab-case, unique in a run. Reports,
    /// `[expect]`, shrink and hazard recognition match on it; the built-in ones are
    /// constants declared beside their checkers (`Invariant::NO_LOST_WRITES`, ...), and a
    /// checker of your own names its invariant with [`Invariant::new`].
    Invariant
}

name_type! {
    /// Which way a promise broke, within its invariant (`double-effect`, `task-lost`, ...):
    /// what hazard recognition matches on. The built-in kinds are constants declared beside
    /// their checkers (`ViolationKind::DOUBLE_EFFECT`, ...); a checker of your own names
    /// its kinds with [`ViolationKind::new`].
    ViolationKind
}

/// One broken promise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub invariant: Invariant,
    /// Which way the promise broke, within its invariant (`double-effect`, `lost`, ...):
    /// what hazard recognition and reports match on.
    pub kind: ViolationKind,
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
    pub fn new(kind: ViolationKind, detail: impl Into<String>) -> Violation {
        Violation {
            invariant: Invariant::new(""),
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

    /// A host it names (a [`crate::host::Host`], or a name a record gives).
    pub fn host(mut self, host: impl std::fmt::Display) -> Violation {
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
    pub invariant: Invariant,
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

/// When an invariant must hold, in stateright's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// A safety property: it must hold at every moment of the run (a lost write, a double
    /// effect, a terminal task that moved on).
    Always,
    /// A liveness property: once the faults are healed, it must hold by the end of the run
    /// (every task settles, every final state is pushed or recorded).
    Eventually,
}

impl Class {
    /// The word used in `a2a-chaos list` and JSON.
    pub fn word(self) -> &'static str {
        match self {
            Class::Always => "always",
            Class::Eventually => "eventually",
        }
    }
}

/// What an invariant needs from a live run's peer beyond what every live run observes (the
/// answers, the final tasks, the webhook's deliveries): [`Checker::live`], read where a live
/// run weakens the verdicts of invariants whose reports did not come
/// (`crate::live::reports`) and where `fidelity` compares the two worlds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveNeeds {
    /// Nothing more: judged on what every live run observes.
    Nothing,
    /// The peer's reports of one kind, and how the verdict reads without them.
    Reports(Report, Without),
    /// No live run judges it: it reads what only the simulation sees.
    Never,
}

/// A kind of report a live peer sends to the ledger (docs/PEERS.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// `POST {ledger}/effect`: each business effect.
    Effects,
    /// `POST {ledger}/save`: each save of the task store.
    Saves,
}

/// How an invariant reads a kind of report its peer did not send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Without {
    /// Nothing it says holds: `unknown`.
    Unknown,
    /// A violation it found on the answers holds; a pass does not: `unknown`.
    FailOnly,
    /// Its verdict stands, judged on the rest; say so.
    Partial,
}

/// An invariant checker. Implement it to check an invariant of your own
/// ([`crate::sim::Builder::checker`]); the built-in ones are registered in [`CHECKERS`].
pub trait Checker: Sync {
    /// The invariant's name (`no-lost-writes`): kebab-case, unique in a run.
    fn name(&self) -> Invariant;
    /// One sentence: what it promises.
    fn describe(&self) -> &'static str;
    /// Always (safety) or eventually (liveness, after the heal).
    fn class(&self) -> Class {
        Class::Always
    }
    /// Checks one run: the violations, in sentences, and how often the run reached the case
    /// the invariant is about (zero makes the verdict `unknown`).
    fn check(&self, run: &RunRecord) -> Finding;
    /// What it needs from a live run's peer: say so if it reads effects or saves, or a live
    /// run without them reports a `pass` it cannot know.
    fn live(&self) -> LiveNeeds {
        LiveNeeds::Nothing
    }
}

/// The built-in checker of `invariant`, if it is one.
pub fn checker_of(invariant: Invariant) -> Option<&'static dyn Checker> {
    CHECKERS.iter().copied().find(|c| c.name() == invariant)
}

/// Whether no live run judges `invariant` ([`LiveNeeds::Never`]).
pub fn never_judged_live(invariant: Invariant) -> bool {
    checker_of(invariant).is_some_and(|c| c.live() == LiveNeeds::Never)
}

/// The built-in checkers, in the order of reports and CSV columns.
#[rustfmt::skip]
pub const CHECKERS: &[&dyn Checker] = &[
    &no_lost_writes::NoLostWrites,
    &exactly_once::ExactlyOnce,
    &terminal_final::TerminalIsFinal,
    &versions::VersionsMonotonic,
    &no_effect_after_cancel::NoEffectAfterCancel,
    &cancel_idempotent::CancelIdempotent,
    &dedup_contract::DedupContract,
    &stream_continuity::StreamContinuity,
    &liveness::Liveness,
    &push_accounted::PushAccounted,
    &push_egress::PushEgressSafe,
    &owner_isolation::OwnerIsolation,
    &context_match::ContextMatch,
    &credential_audience::CredentialAudience,
    &card_freshness::CardFreshness,
    &auth_grant::AuthGrant,
    &wait_honoured::WaitHonoured,
];

/// Names of the built-in invariants.
pub fn names() -> Vec<Invariant> {
    CHECKERS.iter().map(|c| c.name()).collect()
}

/// The built-in checker named `name`: where a name read from outside becomes an invariant.
pub fn by_name(name: &str) -> Option<&'static dyn Checker> {
    CHECKERS.iter().copied().find(|c| c.name() == name)
}

/// The built-in invariant named `name`.
pub fn invariant(name: &str) -> Option<Invariant> {
    by_name(name).map(|c| c.name())
}

/// Refuses invariant names that are not built in.
pub fn validate_names(names_given: &[String], origin: &str) -> Result<(), InputError> {
    validate_names_in(names_given, &names(), origin)
}

/// Refuses invariant names that are not in `known`.
pub fn validate_names_in(
    names_given: &[String],
    known: &[Invariant],
    origin: &str,
) -> Result<(), InputError> {
    for name in names_given {
        if known.iter().any(|k| k == name) {
            continue;
        }
        let known: Vec<&str> = known.iter().map(|k| k.as_str()).collect();
        let why = format!("unknown invariant `{name}`; known: {}", known.join(", "));
        return Err(InputError::new(origin, why));
    }
    Ok(())
}

/// Runs one checker on one run, naming its finding and violations.
pub fn run_checker(name: Invariant, checker: &dyn Checker, run: &RunRecord) -> Finding {
    let mut f = checker.check(run);
    f.invariant = name;
    for v in &mut f.violations {
        v.invariant = name;
    }
    f
}

/// Runs every built-in checker on one run.
pub fn check_all(run: &RunRecord) -> Vec<Finding> {
    CHECKERS
        .iter()
        .map(|c| run_checker(c.name(), *c, run))
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
            omitted_context: false,
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
