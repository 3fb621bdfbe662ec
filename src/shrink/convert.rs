//! From a finished run to timed steps: every client operation of a [`RunRecord`] (pinned to
//! the replica that served it), every reply the router dropped, every grant and every fault
//! the driver applied, each at its simulated time on its lane.
//!
//! The operations are matched to the router's typed trace ([`trace::Event::Forward`] and
//! [`trace::Event::DropReply`]) to find where a lost answer went and which replies were
//! dropped.

use std::collections::{BTreeMap, BTreeSet};

use crate::auth::DEFAULT_PRINCIPAL;
use crate::client::history::{OpKind, Outcome};
use crate::client::Parts;
use crate::faults::{lost_reply, Action};
use crate::host::Host;
use crate::scenario::{SendStep, Step, TaskStep};
use crate::trace;
use crate::workload;
use crate::world::RunRecord;

/// A timed step: one thing the original run did, as a scenario step, with its simulated
/// time and its lane. (Not [`crate::trace::Event`], the trace's typed event.)
#[derive(Debug, Clone, PartialEq)]
pub struct Timed {
    /// Simulated ms since the start of the original run.
    pub at_ms: u64,
    /// The conversation it belongs to; `None` for the fault lane.
    pub conversation: Option<String>,
    /// Which lane of its conversation: requests that overlapped in time get different
    /// lanes; 0 for most.
    pub lane: u32,
    /// What it did.
    pub step: Step,
}

/// What a conversion found, and what it could not carry over.
#[derive(Debug, Clone, Default)]
pub struct Conversion {
    /// Everything carried over, in time order (faults first at the same instant).
    pub events: Vec<Timed>,
    /// What was left out or replayed differently, in sentences.
    pub notes: Vec<String>,
}

/// A routed request in the router's trace.
struct Forward {
    at_ms: u64,
    method: String,
    context: String,
    target: Host,
}

fn method_matches(kind: &OpKind, method: &str) -> bool {
    match kind {
        OpKind::Send { .. } => method == "SendMessage" || method == "SendStreamingMessage",
        OpKind::Get { .. } => method == "GetTask",
        OpKind::Cancel { .. } => method == "CancelTask",
        OpKind::Subscribe { .. } => method == "SubscribeToTask",
        OpKind::SetPush { .. } => method == "CreateTaskPushNotificationConfig",
    }
}

/// Converts a finished run (with its trace kept) into timed steps.
pub fn convert(record: &RunRecord) -> Conversion {
    let seed = record.seed;
    let mut notes = Vec::new();
    let mut forwards: Vec<(Forward, bool)> = Vec::new();
    let mut drops: Vec<(u64, String, Host, bool)> = Vec::new();
    for e in record.trace.iter().filter(|e| e.host == Host::Router) {
        match &e.event {
            trace::Event::DropReply { method, target } => {
                drops.push((e.at_ms, method.clone(), target.clone(), false));
            }
            trace::Event::Forward {
                method,
                context,
                target,
                ..
            } => {
                let forward = Forward {
                    at_ms: e.at_ms,
                    method: method.clone(),
                    context: context.clone().unwrap_or_else(|| "-".into()),
                    target: target.clone(),
                };
                forwards.push((forward, false));
            }
            _ => {}
        }
    }
    if record.trace.is_empty() {
        notes.push(
            "the run kept no trace: lost answers are not pinned to a replica and lost replies are not replayed"
                .into(),
        );
    }
    let mut events = Vec::new();
    let mut skipped_push = false;
    // Per conversation, when each of its lanes is free again.
    let mut lanes: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for op in &record.history {
        let conversation = op.kind.conversation().to_string();
        let ends = lanes.entry(conversation.clone()).or_default();
        let lane = match ends.iter().position(|end| *end <= op.invoke_ms) {
            Some(i) => i,
            None => {
                ends.push(0);
                ends.len() - 1
            }
        };
        ends[lane] = op.complete_ms;
        let lane = lane as u32;
        let context = workload::context_id(seed, &conversation);
        let forward = forwards.iter_mut().find(|(f, used)| {
            !*used
                && method_matches(&op.kind, &f.method)
                && f.context == context
                && (op.invoke_ms..=op.complete_ms).contains(&f.at_ms)
                && op.replica.as_ref().is_none_or(|r| *r == f.target)
        });
        let (routed_at, routed_to) = match forward {
            Some((f, used)) => {
                *used = true;
                (Some(f.at_ms), Some(f.target.clone()))
            }
            None => (None, None),
        };
        let to = op.replica.clone().or(routed_to);
        let dropped = match (&op.outcome, routed_at, &to) {
            (Outcome::Info { .. }, Some(from), Some(target)) => drops
                .iter_mut()
                .find(|(at, method, t, used)| {
                    !*used
                        && method_matches(&op.kind, method)
                        && t == target
                        && (from..=op.complete_ms).contains(at)
                })
                .map(|d| d.3 = true)
                .is_some(),
            _ => false,
        };
        let principal = (op.principal != DEFAULT_PRINCIPAL).then(|| op.principal.clone());
        let task = |conversation: String| TaskStep {
            conversation,
            to: to.clone(),
            principal: principal.clone(),
            task_id: None,
        };
        let step = match &op.kind {
            OpKind::Send {
                turn,
                message_id,
                blocking,
                foreign_context,
                omitted_context,
                needs_auth,
                reply,
                parts,
                shape,
                ..
            } => {
                // A reply's messageId is the turn's with `-replyN`, which the script derives
                // again; any other messageId that is not the turn's own is written out.
                let own = workload::message_id(seed, &conversation, *turn);
                let derived = match reply {
                    Some(_) => message_id
                        .strip_prefix(&own)
                        .and_then(|rest| rest.strip_prefix("-reply"))
                        .is_some_and(|n| n.parse::<u32>().is_ok()),
                    None => *message_id == own,
                };
                Step::Send(SendStep {
                    conversation: conversation.clone(),
                    turn: *turn,
                    to: to.clone(),
                    message_id: (!derived).then(|| message_id.clone()),
                    blocking: (!blocking).then_some(false),
                    streaming: None,
                    principal: principal.clone(),
                    context_id: foreign_context.then(|| "ctx-foreign".to_string()),
                    needs_auth: needs_auth.then_some(true),
                    reply: reply.clone(),
                    task_id: None,
                    omit_context_id: omitted_context.then_some(true),
                    parts: (*parts != Parts::Data).then_some(*parts),
                    effect: (!shape.effect).then_some(false),
                    progress: (shape.progress > 0).then_some(shape.progress),
                })
            }
            OpKind::Get { .. } => Step::Get(task(conversation.clone())),
            OpKind::Cancel { .. } => Step::Cancel(task(conversation.clone())),
            OpKind::Subscribe { .. } => Step::Subscribe(task(conversation.clone())),
            OpKind::SetPush { .. } => {
                skipped_push = true;
                continue;
            }
        };
        if dropped {
            events.push(Timed {
                at_ms: op.invoke_ms,
                conversation: Some(conversation.clone()),
                lane,
                step: Step::Fault(lost_reply::DropNextReply.into()),
            });
        }
        events.push(Timed {
            at_ms: op.invoke_ms,
            conversation: Some(conversation),
            lane,
            step,
        });
    }
    if skipped_push {
        notes.push("set-push operations are left out (their URL is not recorded)".into());
    }
    // Out-of-band grants (the user authorising a paused task at the identity provider).
    for grant in &record.grants {
        let Some(conversation) = record
            .conversations
            .iter()
            .find(|(_, id)| **id == grant.task_id)
            .map(|(c, _)| c.clone())
        else {
            notes.push(format!(
                "a grant of task {} is left out: no conversation owns it",
                grant.task_id
            ));
            continue;
        };
        events.push(Timed {
            at_ms: grant.at_ms,
            conversation: Some(conversation.clone()),
            lane: 0,
            step: Step::Authorize(TaskStep {
                conversation,
                to: None,
                principal: (grant.subject != DEFAULT_PRINCIPAL).then(|| grant.subject.clone()),
                task_id: None,
            }),
        });
    }
    let mut rate_seen = false;
    let mut unreadable = BTreeSet::new();
    for (at_ms, action) in &record.faults {
        match action {
            Action::LostReplyRate(_) => rate_seen = true,
            action if action.to_step().is_none() => {
                unreadable.insert(action.to_string());
            }
            action => events.push(Timed {
                at_ms: *at_ms,
                conversation: None,
                lane: 0,
                step: Step::Fault(action.clone()),
            }),
        }
    }
    if rate_seen {
        notes.push(
            "the lost-reply rate is replayed as one drop-reply before each send whose reply the router dropped"
                .into(),
        );
    }
    for text in unreadable {
        notes.push(format!("fault `{text}` has no step kind and is left out"));
    }
    // Faults first at the same instant: the driver applies them before the tick.
    events.sort_by_key(|e| (e.at_ms, e.conversation.is_some()));
    Conversion { events, notes }
}
