//! `auth-grant`: no business effect of a task that asked for authorisation runs without an
//! out-of-band grant.
//!
//! A task the agent put in `auth-required` (A2A-BEHAVIOURS.md §1: an interrupted state) waits
//! for the user to authorise the paused action out of band. The Cognigy seed (缓存、
//! AUTH_REQUIRED与可执行验收) warns that the client's second call with a message is not that
//! authorisation, and that a message saying "yes" is not a credential: the trusted source is
//! the user or the service that grants it. So every business effect of such a task that
//! starts after its first `auth-required` save needs a grant for the task, by its owner,
//! recorded before the effect started.
//!
//! Ground truth: the store's save log (when the task went `auth-required`), the ledger (when
//! each effect was sent, and whether it applied) and the identity provider's grants
//! ([`crate::auth::Grants`]); the client history only names the message that came before.
//!
//! Exercised: messages sent to a task after it asked for authorisation (answers and
//! retries), where a server could take the message as the grant. Unknown in a run where no
//! task asked for authorisation, or nobody answered.

use std::collections::BTreeMap;

use a2a::TaskState;

use crate::check::{owners, turn_label, Checker, Finding, Invariant, Violation, ViolationKind};
use crate::client::history::OpKind;
use crate::store::SaveRecord;
use crate::world::RunRecord;

impl Invariant {
    /// `auth-grant`.
    pub const AUTH_GRANT: Invariant = Invariant::new("auth-grant");
}

/// How `auth-grant` breaks.
impl ViolationKind {
    /// `effect-without-grant`.
    pub const EFFECT_WITHOUT_GRANT: ViolationKind = ViolationKind::new("effect-without-grant");
}

/// The auth-grant checker.
pub struct AuthGrant;

impl Checker for AuthGrant {
    fn name(&self) -> Invariant {
        Invariant::AUTH_GRANT
    }

    fn describe(&self) -> &'static str {
        "no effect of a task that asked for authorisation runs without an out-of-band grant by its owner"
    }

    fn check(&self, run: &RunRecord) -> Finding {
        // The first time each task asked for authorisation (the save log is in time order).
        let mut asked: BTreeMap<&str, &SaveRecord> = BTreeMap::new();
        for s in run
            .saves
            .iter()
            .filter(|s| s.state == TaskState::AuthRequired)
        {
            asked.entry(s.task_id.as_str()).or_insert(s);
        }
        let owners = owners(&run.history);
        let conversation_of: BTreeMap<&str, &str> = run
            .conversations
            .iter()
            .map(|(c, t)| (t.as_str(), c.as_str()))
            .collect();
        let mut exercised = 0;
        for op in &run.history {
            let OpKind::Send { conversation, .. } = &op.kind else {
                continue;
            };
            let answered = run
                .conversations
                .get(conversation)
                .and_then(|t| asked.get(t.as_str()))
                .is_some_and(|s| op.invoke_ms > s.at_ms);
            if answered {
                exercised += 1;
            }
        }
        let mut violations = Vec::new();
        for e in run.effects.iter().filter(|e| e.applied) {
            let r = &e.request;
            let Some(save) = asked.get(r.task_id.as_str()) else {
                continue;
            };
            if r.sent_ms < save.at_ms {
                continue;
            }
            let owner = conversation_of
                .get(r.task_id.as_str())
                .and_then(|c| owners.get(c))
                .copied();
            let granted = run.grants.iter().any(|g| {
                g.task_id == r.task_id
                    && g.at_ms <= r.sent_ms
                    && owner.is_none_or(|o| o == g.subject)
            });
            if granted {
                continue;
            }
            // The message the effect ran on: the last send of the conversation before it.
            let answer = run
                .history
                .iter()
                .filter(|o| {
                    o.kind.conversation() == r.conversation
                        && (save.at_ms..=r.sent_ms).contains(&o.invoke_ms)
                })
                .filter_map(|o| match &o.kind {
                    OpKind::Send { message_id, .. } => Some((o.invoke_ms, message_id)),
                    _ => None,
                })
                .next_back();
            let mut v = Violation::new(
                ViolationKind::EFFECT_WITHOUT_GRANT,
                format!(
                    "{} took effect ({} at {} ms) after task {} asked for authorisation (auth-required v{} by {} at {} ms), with no out-of-band grant{} before it{}",
                    turn_label(&r.conversation, r.turn),
                    r.replica,
                    e.at_ms,
                    r.task_id,
                    save.version,
                    save.replica,
                    save.at_ms,
                    owner.map(|o| format!(" by {o}")).unwrap_or_default(),
                    answer
                        .map(|(at, m)| format!("; the client had sent message {m} at {at} ms"))
                        .unwrap_or_default(),
                ),
            )
            .about(&r.conversation, r.turn)
            .task(&r.task_id)
            .host(&r.replica)
            .at(e.at_ms)
            .at(save.at_ms);
            if let Some((at, _)) = answer {
                v = v.at(at);
            }
            violations.push(v);
        }
        Finding {
            invariant: Invariant::AUTH_GRANT,
            violations,
            exercised,
        }
    }
}
