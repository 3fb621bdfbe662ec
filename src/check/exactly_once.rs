//! `exactly-once-effects`: one business effect per logical operation.
//!
//! The logical operation is a turn of a conversation, whatever messageIds, retries and
//! duplicates carried it. Its applied effects at the ledger must be at most one; exactly one
//! when any attempt was acknowledged (an `ok` whose answer shows the turn's artifact); none
//! when every attempt was refused (`fail`: the client was told it did not happen, so it may
//! do it again); zero or one when the outcome was unknown (`info`, or an `ok` that does not
//! show the turn: a non-blocking answer or a task canceled under it). A `reply` (a step's
//! answer with text of its own and a messageId of its own) is an operation of its own: two
//! different answers to one wait, sent at once as the seeds' "A and B continue the same task
//! at once", may each take effect once. A reply to a turn that asked for authorisation is
//! not: it grants that turn's action, which still takes effect once. An effect belongs to
//! the operation of the message that carried it (by messageId), whatever turn the agent
//! numbered it. Exercised: turns that were retried, duplicated, refused or left unknown,
//! where double or phantom effects could happen.

use std::collections::{BTreeMap, BTreeSet};

use crate::check::{
    turn_label, Checker, Finding, Invariant, LiveNeeds, Report, Violation, ViolationKind, Without,
};
use crate::client::history::{OpKind, Outcome};
use crate::host::Host;
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

/// One logical operation: a turn of a conversation, whatever messageIds carried it, or one
/// reply to it (its messageId).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Operation {
    conversation: String,
    turn: u32,
    reply: Option<String>,
}

impl Operation {
    fn label(&self) -> String {
        let turn = turn_label(&self.conversation, self.turn);
        match &self.reply {
            Some(id) => format!("the reply {id} to {turn}"),
            None => turn,
        }
    }
}

impl Checker for ExactlyOnce {
    fn name(&self) -> Invariant {
        Invariant::EXACTLY_ONCE_EFFECTS
    }

    fn live(&self) -> LiveNeeds {
        LiveNeeds::Reports(Report::Effects, Without::Unknown)
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
        // Turns that asked for authorisation (a reply to one grants the turn's own action),
        // and the other replies, each an operation of its own (by its messageId).
        let mut asking: BTreeSet<(&str, u32)> = BTreeSet::new();
        let mut answers: Vec<(&str, u32, &str)> = Vec::new();
        for op in &run.history {
            if let OpKind::Send {
                conversation,
                turn,
                message_id,
                needs_auth,
                reply,
                ..
            } = &op.kind
            {
                if *needs_auth {
                    asking.insert((conversation, *turn));
                }
                if reply.is_some() {
                    answers.push((conversation, *turn, message_id));
                }
            }
        }
        let replies: BTreeSet<&str> = answers
            .into_iter()
            .filter(|(c, t, _)| !asking.contains(&(*c, *t)))
            .map(|(_, _, id)| id)
            .collect();
        let operation = |conversation: &str, turn: u32, message_id: &str| Operation {
            conversation: conversation.to_string(),
            turn,
            reply: replies.get(message_id).map(|id| id.to_string()),
        };
        let mut attempts: BTreeMap<Operation, Vec<&Outcome>> = BTreeMap::new();
        // The operations each messageId was sent for: an effect belongs to the operation of
        // the message that carried it, so the agent's own count of turns and name for the
        // conversation (a message without the scripted data part is numbered from the
        // task's history) are its business, not the client's. A messageId sent for several
        // turns goes by the turn the effect names.
        let mut sent: BTreeMap<&str, Vec<Operation>> = BTreeMap::new();
        // Operations whose turn asked the agent for no effect (`effect = false`): none is
        // owed, and one made anyway is reported as such.
        let mut effectless: BTreeSet<Operation> = BTreeSet::new();
        for op in &run.history {
            if let OpKind::Send {
                conversation,
                turn,
                message_id,
                shape,
                ..
            } = &op.kind
            {
                let this = operation(conversation, *turn, message_id);
                let ops = sent.entry(message_id).or_default();
                if !ops.contains(&this) {
                    ops.push(this.clone());
                }
                if !shape.effect {
                    effectless.insert(this);
                    continue;
                }
                let acknowledged = op
                    .acknowledged()
                    .is_some_and(|t| t.artifacts.contains(&format!("turn-{turn}")));
                let outcome = match &op.outcome {
                    Outcome::Ok if !acknowledged => &unacknowledged,
                    other => other,
                };
                attempts.entry(this).or_default().push(outcome);
            }
        }
        let mut effects: BTreeMap<Operation, Vec<(&Host, u64)>> = BTreeMap::new();
        for e in run.effects.iter().filter(|e| e.applied) {
            let r = &e.request;
            let own = operation(&r.conversation, r.turn, &r.message_id);
            let carried = match sent.get(r.message_id.as_str()).map(Vec::as_slice) {
                Some([only]) => only.clone(),
                Some(several) => several
                    .iter()
                    .find(|o| o.turn == r.turn)
                    .unwrap_or(&several[0])
                    .clone(),
                None => own,
            };
            effects
                .entry(carried)
                .or_default()
                .push((&e.request.replica, e.at_ms));
        }
        // `replica-0 at 12 ms, replica-1 at 40 ms`, and the violation's anchors for them.
        let listed = |list: &[(&Host, u64)]| {
            list.iter()
                .map(|(r, at)| format!("{r} at {at} ms"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let anchored = |mut v: Violation, list: &[(&Host, u64)]| {
            for (r, at) in list {
                v = v.host(r).at(*at);
            }
            v
        };
        let mut violations = Vec::new();
        let mut exercised = 0;
        for (op, outcomes) in &attempts {
            let (conversation, turn, what) = (&op.conversation, &op.turn, op.label());
            let done = effects.get(op);
            let n = done.map_or(0, Vec::len);
            let ok = outcomes.iter().any(|o| matches!(o, Outcome::Ok));
            let info = outcomes.iter().any(|o| matches!(o, Outcome::Info { .. }));
            let words: Vec<&str> = outcomes.iter().map(|o| o.word()).collect();
            if outcomes.len() > 1 || !ok {
                exercised += 1;
            }
            let done: &[(&Host, u64)] = done.map_or(&[], Vec::as_slice);
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
        for (op, list) in &effects {
            if !attempts.contains_key(op) {
                let why = if effectless.contains(op) {
                    "its turn asked for no effect"
                } else {
                    "the client never sent it"
                };
                let v = Violation::new(
                    ViolationKind::EFFECT_NEVER_SENT,
                    format!("{} took effect ({}) but {why}", op.label(), listed(list)),
                )
                .about(&op.conversation, op.turn);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::fixtures::record_of;

    /// Two different answers to one wait (the turn's own message and a `reply`) are two
    /// operations: each takes effect once, and that is no double effect. The same turn sent
    /// again with its own messageId is the same operation.
    #[test]
    fn a_reply_is_an_operation_of_its_own() {
        let turn = |extra: &str| {
            format!("[[step]]\nsend = {{ conversation = \"c1\", turn = 2{extra} }}\n")
        };
        // Three turns, so that the task still waits for input after turn 2.
        let (first, last) = (
            "[[step]]\nsend = { conversation = \"c1\", turn = 1 }\n",
            "[[step]]\nsend = { conversation = \"c1\", turn = 3 }\n",
        );
        let answers = record_of(&format!(
            "{first}{}{}{last}",
            turn(""),
            turn(", reply = \"other\"")
        ));
        assert_eq!(answers.effects.iter().filter(|e| e.applied).count(), 4);
        let found = ExactlyOnce.check(&answers);
        assert!(found.violations.is_empty(), "{:?}", found.violations);

        // The same turn again with a messageId of its own (a client that makes a new one
        // for a retry) is the same operation: its second effect is a double effect.
        let retried = turn(", message_id = \"a-new-id-for-the-retry\"");
        let twice = record_of(&format!("{first}{}{retried}{last}", turn("")));
        assert_eq!(twice.effects.iter().filter(|e| e.applied).count(), 4);
        let found = ExactlyOnce.check(&twice);
        assert_eq!(found.violations.len(), 1);
        assert_eq!(found.violations[0].kind, ViolationKind::DOUBLE_EFFECT);
    }

    /// A turn that asks the agent for no effect (`effect = false`) owes none: acknowledged
    /// ok with no effect at the ledger, it is no violation, and the other turns are still
    /// judged.
    #[test]
    fn a_turn_without_an_effect_owes_none() {
        let run = record_of(
            "[[step]]\nsend = { conversation = \"c1\", turn = 1, effect = false }\n\
             [[step]]\nsend = { conversation = \"c1\", turn = 2 }\n\
             [[step]]\nsend = { conversation = \"c1\", turn = 2 }\n",
        );
        let applied: Vec<_> = run.effects.iter().filter(|e| e.applied).collect();
        assert_eq!(applied.len(), 1, "only turn 2's first send runs an effect");
        assert_eq!(applied[0].request.turn, 2);
        let found = ExactlyOnce.check(&run);
        assert!(found.violations.is_empty(), "{:?}", found.violations);
    }

    /// A message without the scripted data part is numbered and named by the agent (from
    /// the task's history and the contextId): its effect still belongs to the client's
    /// operation, by the messageId that carried it.
    #[test]
    fn an_effect_belongs_to_the_message_that_carried_it() {
        let plain = |turn: u32| {
            format!(
                "[[step]]\nsend = {{ conversation = \"c1\", turn = {turn}, parts = \"text\" }}\n"
            )
        };
        let run = record_of(&format!("{}{}", plain(1), plain(2)));
        let applied: Vec<_> = run.effects.iter().filter(|e| e.applied).collect();
        assert_eq!(applied.len(), 2);
        assert!(applied.iter().all(|e| e.request.conversation != "c1"));
        let found = ExactlyOnce.check(&run);
        assert!(found.violations.is_empty(), "{:?}", found.violations);
    }
}
