//! What a differential run compares: the observables of one run, simulated or live.
//!
//! Verdicts alone hide a model that is right for the wrong reason, so a run is reduced to
//! everything a client and the ledger could see, in a form that does not depend on what the
//! two worlds cannot share (task ids the real SDK draws at random, timings, error texts):
//! - every client operation's outcome, grouped by what it asked for (`send c1#2`,
//!   `cancel c1`), as `ok` with the task state in the answer (a stream's last state when
//!   no event held the task), `fail` with its code, or `info`; whether a stream began with
//!   the task; for a send, whether the replica that answered performed its effect (a
//!   blocking `ok`: before the answer or only after it); operations that asked the same thing at once are compared as a multiset, since
//!   which of two concurrent duplicates wins is not an observable;
//! - the effects per turn at the ledger: how many arrived, how many were applied;
//! - the final task of every conversation: its state, artifact names, the client's message
//!   ids in its history and how many agent messages it holds (their ids are the server's);
//! - every invariant's verdict.
//!
//! [`Observables::diff`] lists every difference, each with both sides, but for one the live
//! observer cannot see ([`Observables::blind`]): a plain store's saves carry no versions, and
//! the observer reads a save's base from its content, so a stale save that dropped nothing
//! the stored version held (its artifacts and message ids are all still there: what it
//! overwrote differed only in its state) can read as built on the stored version. A simulated run whose
//! every `versions-monotonic` violation is such a save fails there while the live observer
//! may say `pass`; that pair is not a difference. Any other pair is, and a stale save that
//! dropped something is never blind. Nor is a simulated verdict against a live `unknown` of
//! an invariant no live run judges ([`unseen_pair`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use a2a::Role;

use crate::check::versions::Breach;
use crate::check::{self, Invariant, LiveNeeds, Verdict};
use crate::client::history::Outcome;
use crate::sim::RunSummary;
use crate::store::{SaveMode, SaveRecord};
use crate::world::RunRecord;

/// The observables of one run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Observables {
    /// Operation → its outcomes, sorted.
    pub ops: BTreeMap<String, Vec<String>>,
    /// `c1#2` → (effects that arrived, effects applied).
    pub effects: BTreeMap<String, (usize, usize)>,
    /// Conversation → its final task, in words (`absent` when no task was stored).
    pub tasks: BTreeMap<String, String>,
    /// Invariant → verdict.
    pub verdicts: BTreeMap<Invariant, Verdict>,
    /// Invariants that fail here only on what the live observer cannot see: their `fail`
    /// against the other side's `pass` is not a difference (see the module's docs).
    pub blind: BTreeSet<Invariant>,
    /// Why the run did not finish, when it did not.
    pub error: Option<String>,
}

impl Observables {
    /// The observables of a finished run.
    pub fn of(record: &RunRecord, summary: &RunSummary) -> Observables {
        let mut ops: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for op in &record.history {
            let outcome = match &op.outcome {
                Outcome::Ok => match (&op.task, op.stream_states.last()) {
                    (Some(view), _) => format!("ok {:?}", view.state),
                    (None, Some(state)) => format!("ok {state:?}"),
                    (None, None) => "ok".to_string(),
                },
                Outcome::Fail { code, .. } => format!("fail {code}"),
                Outcome::Info { .. } => "info".to_string(),
            };
            let outcome = if op.stream_states.is_empty() {
                outcome
            } else if op.stream_snapshot_first {
                format!("{outcome} (stream from the task)")
            } else {
                format!("{outcome} (stream from an update)")
            };
            let outcome = match its_effect(record, op) {
                Some(when) => format!("{outcome}; {when}"),
                None => outcome,
            };
            ops.entry(op.kind.label()).or_default().push(outcome);
        }
        for outcomes in ops.values_mut() {
            outcomes.sort();
        }
        let mut effects: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for e in &record.effects {
            let entry = effects
                .entry(format!("{}#{}", e.request.conversation, e.request.turn))
                .or_default();
            entry.0 += 1;
            if e.applied {
                entry.1 += 1;
            }
        }
        let mut tasks = BTreeMap::new();
        for (conversation, id) in &record.conversations {
            let words = match record.final_tasks.get(id) {
                Some(task) => {
                    let history = task.history.as_deref().unwrap_or_default();
                    let users: Vec<&str> = history
                        .iter()
                        .filter(|m| m.role == Role::User)
                        .map(|m| m.message_id.as_str())
                        .collect();
                    format!(
                        "{:?}; artifacts [{}]; history [{}] and {} agent messages",
                        task.status.state,
                        crate::store::artifact_names(task).join(" "),
                        users.join(" "),
                        history.len() - users.len()
                    )
                }
                None => "absent".to_string(),
            };
            tasks.insert(conversation.clone(), words);
        }
        let verdicts: BTreeMap<Invariant, Verdict> = summary
            .invariants
            .iter()
            .map(|i| (i.name, i.verdict))
            .collect();
        Observables {
            ops,
            effects,
            tasks,
            verdicts,
            blind: BTreeSet::new(),
            error: summary.error.clone().or_else(|| record.error.clone()),
        }
    }

    /// The observables of a finished simulated run, with [`Observables::blind`] filled in.
    /// Only the simulation's side is ever blind: a live `fail` is a stale save the observer
    /// did see, and a simulated `pass` against it is a difference.
    pub fn of_simulated(record: &RunRecord, summary: &RunSummary) -> Observables {
        let mut observed = Observables::of(record, summary);
        if stale_saves_are_unseen(&record.saves) {
            observed.blind.insert(Invariant::VERSIONS_MONOTONIC);
        }
        let never = check::CHECKERS
            .iter()
            .filter(|c| c.live() == LiveNeeds::Never);
        observed.blind.extend(never.map(|c| c.name()));
        observed
    }

    /// Every difference between `self` (one side) and `other`, in words; empty when none.
    pub fn diff(&self, other: &Observables, mine: &str, theirs: &str) -> Vec<Difference> {
        let mut out = Vec::new();
        let mut compare_as = |what: &str, invariant, a: Option<String>, b: Option<String>| {
            if a != b {
                out.push(Difference {
                    what: what.to_string(),
                    invariant,
                    sides: [
                        (mine.to_string(), a.unwrap_or_else(|| "none".into())),
                        (theirs.to_string(), b.unwrap_or_else(|| "none".into())),
                    ],
                });
            }
        };
        let mut compare = |what: &str, a, b| compare_as(what, None, a, b);
        for key in union(&self.ops, &other.ops) {
            let words = |o: &Observables| o.ops.get(&key).map(|v| v.join(", "));
            compare(&format!("`{key}`"), words(self), words(other));
        }
        for key in union(&self.effects, &other.effects) {
            let words = |o: &Observables| {
                o.effects
                    .get(&key)
                    .map(|(arrived, applied)| format!("{arrived} arrived, {applied} applied"))
            };
            compare(&format!("effects of {key}"), words(self), words(other));
        }
        for key in union(&self.tasks, &other.tasks) {
            compare(
                &format!("final task of {key}"),
                self.tasks.get(&key).cloned(),
                other.tasks.get(&key).cloned(),
            );
        }
        for key in union(&self.verdicts, &other.verdicts) {
            let (a, b) = (self.verdicts.get(&key), other.verdicts.get(&key));
            let unseen = |o: &Observables, v: Option<&Verdict>, w: Option<&Verdict>| {
                o.blind.contains(&key) && unseen_pair(key, v.copied(), w.copied())
            };
            if unseen(self, a, b) || unseen(other, b, a) {
                continue;
            }
            let word = |v: Option<&Verdict>| v.map(|v| v.word().to_string());
            compare_as(key.as_str(), Some(key), word(a), word(b));
        }
        compare_as("run error", None, self.error.clone(), other.error.clone());
        out
    }
}

/// Whether the effect of a send ran, as the call can know it: an effect of its message
/// performed by the replica that answered it. A blocking answer that says the turn happened
/// (`ok`) tells whether that effect ran before it or only after (a duplicate answered by the
/// turn already running); a non-blocking answer, a failure or an unknown outcome tells only
/// that it ran, since which comes first is then a race of the real system's timing (a
/// non-blocking answer against the agent's think time; a2a-sdk answers a failed consumer
/// while its executor runs on).
fn its_effect(record: &RunRecord, op: &crate::client::history::Op) -> Option<&'static str> {
    let crate::client::history::OpKind::Send {
        conversation,
        turn,
        message_id,
        blocking,
        ..
    } = &op.kind
    else {
        return None;
    };
    let replica = op.replica.as_ref()?;
    let times: Vec<u64> = record
        .effects
        .iter()
        .filter(|e| {
            e.request.conversation == *conversation
                && e.request.turn == *turn
                && e.request.message_id == *message_id
                && e.request.replica == *replica
        })
        .map(|e| e.at_ms)
        .collect();
    let first = *times.iter().min()?;
    Some(match op.outcome {
        Outcome::Ok if *blocking && first <= op.complete_ms => "its effect before the answer",
        Outcome::Ok if *blocking => "its effect after the answer",
        _ => "its effect ran",
    })
}

/// Whether a blind side's verdict `mine` of `invariant` against the other side's `theirs`
/// is what the live observer cannot see: a `fail` against a `pass`, or any verdict of an
/// invariant no live run judges ([`check::never_judged_live`]) against a live `unknown`.
pub fn unseen_pair(invariant: Invariant, mine: Option<Verdict>, theirs: Option<Verdict>) -> bool {
    (mine == Some(Verdict::Fail) && theirs == Some(Verdict::Pass))
        || (check::never_judged_live(invariant) && theirs == Some(Verdict::Unknown))
}

/// Whether every save `versions-monotonic` reports in this run is one the live observer's
/// content rule cannot tell from an up-to-date save: a plain-store save (no versions in its
/// report) built on an older version than the stored one, that still holds every artifact and
/// message id of the stored one. False when there is none, or one that went back.
fn stale_saves_are_unseen(saves: &[SaveRecord]) -> bool {
    let breaches = crate::check::versions::breaches(saves);
    !breaches.is_empty()
        && breaches.iter().all(|(i, breach)| {
            let s = &saves[*i];
            if *breach != Breach::StaleBase || s.mode != SaveMode::Overwrite {
                return false;
            }
            let stored = saves[..*i]
                .iter()
                .rev()
                .find(|p| p.task_id == s.task_id && Some(p.version) == s.before);
            let holds = |had: &[String], has: &[String]| had.iter().all(|x| has.contains(x));
            stored.is_some_and(|stored| {
                holds(&stored.artifacts, &s.artifacts) && holds(&stored.history, &s.history)
            })
        })
}

fn union<K: Ord + Clone, V>(a: &BTreeMap<K, V>, b: &BTreeMap<K, V>) -> Vec<K> {
    let mut keys: Vec<K> = a.keys().chain(b.keys()).cloned().collect();
    keys.sort();
    keys.dedup();
    keys
}

/// One observable on which two runs differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// What differs (`\`send c1#2\``, `effects of c1#2`, `exactly-once-effects`).
    pub what: String,
    /// The invariant, when what differs is its verdict.
    pub invariant: Option<Invariant>,
    /// Each side's name and value.
    pub sides: [(String, String); 2],
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [(a, x), (b, y)] = &self.sides;
        write!(f, "{}: {a} {x}; {b} {y}", self.what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_difference_names_both_sides() {
        let mut a = Observables::default();
        let mut b = Observables::default();
        a.verdicts
            .insert(Invariant::EXACTLY_ONCE_EFFECTS, Verdict::Pass);
        b.verdicts
            .insert(Invariant::EXACTLY_ONCE_EFFECTS, Verdict::Fail);
        b.effects.insert("c1#1".into(), (2, 2));
        let d = a.diff(&b, "simulated", "real");
        let words: Vec<String> = d.iter().map(ToString::to_string).collect();
        assert_eq!(
            words,
            [
                "effects of c1#1: simulated none; real 2 arrived, 2 applied",
                "exactly-once-effects: simulated pass; real fail",
            ]
        );
        assert!(a.diff(&a, "x", "y").is_empty());
    }

    fn save(version: u64, before: u64, based_on: u64, artifacts: &[&str]) -> SaveRecord {
        SaveRecord {
            at_ms: version,
            task_id: "t".into(),
            context_id: "c".into(),
            mode: SaveMode::Overwrite,
            before: (before > 0).then_some(before),
            based_on: (based_on > 0).then_some(based_on),
            version,
            state: a2a::TaskState::Working,
            replica: crate::host::Host::Replica(0),
            artifacts: artifacts.iter().map(ToString::to_string).collect(),
            history: vec!["m1".into()],
        }
    }

    #[test]
    fn only_a_stale_save_that_kept_everything_is_unseen() {
        // v3 is built on v1 while the store held v2, which held nothing v3 lacks.
        let kept = [
            save(1, 0, 0, &["turn-1"]),
            save(2, 1, 1, &["turn-1"]),
            save(3, 2, 1, &["turn-1", "turn-2"]),
        ];
        assert!(stale_saves_are_unseen(&kept));
        // v2 held turn-2, which v3 dropped: content shows it, so it is never unseen.
        let dropped = [
            save(1, 0, 0, &["turn-1"]),
            save(2, 1, 1, &["turn-1", "turn-2"]),
            save(3, 2, 1, &["turn-1"]),
        ];
        assert!(!stale_saves_are_unseen(&dropped));
        // A versioned store's save carries its base: never unseen.
        let mut cas = kept.clone();
        cas[2].mode = SaveMode::Cas(Some(1));
        assert!(!stale_saves_are_unseen(&cas));
        // No stale save at all: nothing to explain.
        assert!(!stale_saves_are_unseen(&kept[..2]));
    }

    #[test]
    fn an_unseen_fail_against_a_pass_is_no_difference() {
        let mut simulated = Observables::default();
        simulated
            .verdicts
            .insert(Invariant::VERSIONS_MONOTONIC, Verdict::Fail);
        let mut real = Observables::default();
        real.verdicts
            .insert(Invariant::VERSIONS_MONOTONIC, Verdict::Pass);
        assert_eq!(simulated.diff(&real, "simulated", "real").len(), 1);
        simulated.blind.insert(Invariant::VERSIONS_MONOTONIC);
        assert!(simulated.diff(&real, "simulated", "real").is_empty());
        // The pair is the same whichever side diff is called on.
        assert!(real.diff(&simulated, "real", "simulated").is_empty());
        let mut unknown = real.clone();
        unknown
            .verdicts
            .insert(Invariant::VERSIONS_MONOTONIC, Verdict::Unknown);
        assert_eq!(simulated.diff(&unknown, "simulated", "real").len(), 1);
    }

    #[test]
    fn a_verdict_no_live_run_judges_is_no_difference() {
        let mut simulated = Observables::default();
        simulated
            .verdicts
            .insert(Invariant::PUSH_EGRESS_SAFE, Verdict::Pass);
        let mut real = Observables::default();
        real.verdicts
            .insert(Invariant::PUSH_EGRESS_SAFE, Verdict::Unknown);
        assert_eq!(simulated.diff(&real, "simulated", "real").len(), 1);
        simulated.blind.insert(Invariant::PUSH_EGRESS_SAFE);
        assert!(simulated.diff(&real, "simulated", "real").is_empty());
        assert!(real.diff(&simulated, "real", "simulated").is_empty());
        // Another invariant's live unknown still is one.
        simulated.blind.insert(Invariant::LIVENESS);
        simulated
            .verdicts
            .insert(Invariant::LIVENESS, Verdict::Pass);
        real.verdicts.insert(Invariant::LIVENESS, Verdict::Unknown);
        assert_eq!(simulated.diff(&real, "simulated", "real").len(), 1);
    }
}
