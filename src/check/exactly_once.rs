//! `exactly-once-effects`: one business effect per logical operation.
//!
//! The logical operation is a turn of a conversation, whatever messageIds, retries and
//! duplicates carried it. Its applied effects at the ledger must be at most one; exactly one
//! when any attempt was acknowledged (an `ok` whose answer shows the turn's artifact); none
//! when every attempt was refused (`fail`: the client was told it did not happen, so it may
//! do it again); zero or one when the outcome was unknown (`info`, or an `ok` that does not
//! show the turn: a non-blocking answer or a task canceled under it). Exercised: turns that were retried, duplicated, refused or left
//! unknown, where double or phantom effects could happen.

use std::collections::BTreeMap;

use crate::check::{turn_label, Checker, Finding, Invariant, Violation, ViolationKind};
use crate::client::history::{OpKind, Outcome};
use crate::world::RunRecord;

impl Invariant {
    /// `exactly-once-effects`.
    pub const EXACTLY_ONCE_EFFECTS: Invariant = Invariant::new("exactly-once-effects");
}

/// How `exactly-once-effects` breaks.
impl ViolationKind {
    /// `double-effect`.
    pub const DOUBLE_EFFECT: ViolationKind = ViolationKind::new("double-effect");
    /// `acknowledged-without-effect`.
    pub const ACKNOWLEDGED_WITHOUT_EFFECT: ViolationKind =
        ViolationKind::new("acknowledged-without-effect");
    /// `effect-after-refusal`.
    pub const EFFECT_AFTER_REFUSAL: ViolationKind = ViolationKind::new("effect-after-refusal");
    /// `effect-never-sent`.
    pub const EFFECT_NEVER_SENT: ViolationKind = ViolationKind::new("effect-never-sent");
}

/// The exactly-once-effects checker.
pub struct ExactlyOnce;

impl Checker for ExactlyOnce {
    fn name(&self) -> Invariant {
        Invariant::EXACTLY_ONCE_EFFECTS
    }

    fn describe(&self) -> &'static str {
        "per turn: effects <= 1; exactly 1 when acknowledged ok; 0 when refused; 0 or 1 when unknown"
    }

    fn check(&self, run: &RunRecord) -> Finding {
        // An `ok` acknowledges the turn only when its answer shows the turn's artifact; an
        // `ok` without it (a non-blocking answer, a task canceled under the turn) leaves the
        // effect unknown, like `info`.
        let unacknowledged = Outcome::Info {
            why: "answered without the turn's artifact".into(),
        };
        let mut attempts: BTreeMap<(String, u32), Vec<&Outcome>> = BTreeMap::new();
        for op in &run.history {
            if let OpKind::Send {
                conversation, turn, ..
            } = &op.kind
            {
                let acknowledged = op
                    .acknowledged()
                    .is_some_and(|t| t.artifacts.contains(&format!("turn-{turn}")));
                let outcome = match &op.outcome {
                    Outcome::Ok if !acknowledged => &unacknowledged,
                    other => other,
                };
                attempts
                    .entry((conversation.clone(), *turn))
                    .or_default()
                    .push(outcome);
            }
        }
        let mut effects: BTreeMap<(String, u32), Vec<(&str, u64)>> = BTreeMap::new();
        for e in run.effects.iter().filter(|e| e.applied) {
            effects
                .entry((e.request.conversation.clone(), e.request.turn))
                .or_default()
                .push((e.request.replica.as_str(), e.at_ms));
        }
        // `replica-0 at 12 ms, replica-1 at 40 ms`, and the violation's anchors for them.
        let listed = |list: &[(&str, u64)]| {
            list.iter()
                .map(|(r, at)| format!("{r} at {at} ms"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let anchored = |mut v: Violation, list: &[(&str, u64)]| {
            for (r, at) in list {
                v = v.host(r).at(*at);
            }
            v
        };
        let mut violations = Vec::new();
        let mut exercised = 0;
        for ((conversation, turn), outcomes) in &attempts {
            let what = turn_label(conversation, *turn);
            let done = effects.get(&(conversation.clone(), *turn));
            let n = done.map_or(0, Vec::len);
            let ok = outcomes.iter().any(|o| matches!(o, Outcome::Ok));
            let info = outcomes.iter().any(|o| matches!(o, Outcome::Info { .. }));
            let words: Vec<&str> = outcomes.iter().map(|o| o.word()).collect();
            if outcomes.len() > 1 || !ok {
                exercised += 1;
            }
            let done: &[(&str, u64)] = done.map_or(&[], Vec::as_slice);
            if n > 1 {
                let v = Violation::new(
                    ViolationKind::DOUBLE_EFFECT,
                    format!(
                        "{what} took effect {n} times ({}); the client saw [{}]",
                        listed(done),
                        words.join(", ")
                    ),
                )
                .about(conversation, *turn);
                violations.push(anchored(v, done));
            } else if ok && n == 0 {
                violations.push(
                    Violation::new(
                        ViolationKind::ACKNOWLEDGED_WITHOUT_EFFECT,
                        format!("{what} was acknowledged ok but never took effect at the ledger"),
                    )
                    .about(conversation, *turn),
                );
            } else if !ok && !info && n == 1 {
                let refusal = outcomes
                    .iter()
                    .find_map(|o| match o {
                        Outcome::Fail { code, message } => Some(format!("{code} {message}")),
                        _ => None,
                    })
                    .unwrap_or_default();
                let v = Violation::new(
                    ViolationKind::EFFECT_AFTER_REFUSAL,
                    format!(
                        "{what} was refused ({refusal}) yet took effect ({}): a client that retries does it twice",
                        listed(done)
                    ),
                )
                .about(conversation, *turn);
                violations.push(anchored(v, done));
            }
        }
        // Effects no client operation accounts for (a turn the client never sent).
        for ((conversation, turn), list) in &effects {
            if !attempts.contains_key(&(conversation.clone(), *turn)) {
                let v = Violation::new(
                    ViolationKind::EFFECT_NEVER_SENT,
                    format!(
                        "{} took effect ({}) but the client never sent it",
                        turn_label(conversation, *turn),
                        listed(list)
                    ),
                )
                .about(conversation, *turn);
                violations.push(anchored(v, list));
            }
        }
        Finding {
            invariant: Invariant::EXACTLY_ONCE_EFFECTS,
            violations,
            exercised,
        }
    }
}
