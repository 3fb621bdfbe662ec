//! `check-history`: a recorded history ([`super::recording`]) as a [`RunRecord`], and the
//! checkers its data supports.
//!
//! Each client exchange becomes one [`Op`](crate::client::history::Op) (an injected duplicate too: the server saw it);
//! the ledger's `effect` and `save` lines become the record's effects and save log; the
//! `final-task` lines its final tasks. Both A2A wires are read ([`super::wire`]).
//!
//! Turns: a message with the a2a-chaos data part (`{conversation, turn}`) is that turn;
//! any other message belongs to the conversation named after its contextId (the answer's,
//! when the message had none), and is its next turn unless an earlier message of the
//! conversation had the same messageId (a retry or a duplicate is the same turn), as the
//! adapters count. A turn is acknowledged by an `ok` answer that shows artifact `turn-N`;
//! when no artifact of the whole history is named `turn-N`, a turn is shown by its message
//! in the task's history instead (and an answer still `submitted` or `working` does not
//! acknowledge its own turn).
//!
//! Effects: an effect is the effect of the message that carried it. Its conversation and
//! turn are the ones assigned to its `message_id` here, whatever the adapter numbered: an
//! adapter numbers a plain message's turn within its *task*, and two tasks of one context
//! would otherwise claim one turn twice (a false double effect). An effect whose message no
//! client sent keeps the adapter's numbers (and is an effect never sent, unless they match
//! a sent turn).
//!
//! A checker whose data the history lacks is `unknown`, never `pass` ([`support`]), and the
//! reason is printed. Without `final-task` lines, no-lost-writes checks the later answers
//! only: the final tasks are taken as the union of everything seen, so that part can find
//! nothing. terminal-is-final also sees every streamed state as an observation at its
//! arrival, so a stream whose task leaves COMPLETED is caught.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::check::{self, Finding, Invariant};
use crate::client::history::OpKind;
use crate::ground::ledger::Effect;
use crate::host::Host;
use crate::model::Profile;
use crate::store::SaveRecord;
use crate::trace::{Event, Reply, TraceEvent};
use crate::world::RunRecord;

mod ops;

use super::recording::{self, Line};
use super::wire::{self, Item};
use ops::{is_turn_name, Builder};

/// A history read from a file, ready to check.
pub struct Recorded {
    /// The record every checker reads.
    pub record: RunRecord,
    /// The same, with each streamed state also an observation of its own (for
    /// terminal-is-final).
    pub by_event: RunRecord,
    /// Whether the file had `final-task` lines.
    pub has_final: bool,
    /// Whether a profile was named (`--model`): what the server promises.
    pub has_model: bool,
    /// What the reader noticed (split copies, unreadable lines), in words.
    pub notes: Vec<String>,
}

/// One exchange, put together from its lines.
#[derive(Default)]
struct Exchange {
    seq: u64,
    at_ms: u64,
    replica: Option<String>,
    body: Value,
    duplicate_of: Option<u64>,
    answered_ms: Option<u64>,
    answered_by: Option<String>,
    status: u16,
    answer: Option<Value>,
    stream: bool,
    dropped: bool,
    error: Option<String>,
    events: Vec<(u64, Value)>,
    ended: Option<(u64, Option<String>, bool)>,
}

impl Exchange {
    fn method(&self) -> &str {
        self.body
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    fn message(&self) -> &Value {
        self.body.pointer("/params/message").unwrap_or(&Value::Null)
    }

    /// Every result the exchange carried, with its time.
    fn results(&self) -> Vec<(u64, &Value)> {
        let mut out = Vec::new();
        if let (Some(a), Some(at)) = (&self.answer, self.answered_ms) {
            if let Some(r) = a.get("result") {
                out.push((at, r));
            }
        }
        for (at, e) in &self.events {
            if let Some(r) = e.get("result") {
                out.push((*at, r));
            }
        }
        out
    }

    fn answer_context(&self) -> Option<String> {
        self.results().iter().find_map(|(_, r)| {
            wire::task_refs(r)
                .into_iter()
                .map(|(_, c)| c)
                .find(|c| !c.is_empty())
        })
    }
}

/// Reads `path` into a record; `model` is the profile the checkers take as the server's
/// promises (`None`: the reference profile, and dedup-contract is unknown).
///
/// Identical copies of a line are read once (a note says so); two lines that record one
/// thing differently (two requests with one `seq`) make the recording malformed: `Err`,
/// naming the lines ([`recording::deduplicate`]). Lines may come in any order: every request
/// is read first, then what answers it, and a stream's events are put in time order.
pub fn load(path: &Path, model: Option<Profile>) -> Result<Recorded, recording::RecordingError> {
    let (lines, duplicates) = recording::deduplicate(recording::read(path)?)?;
    let mut exchanges: BTreeMap<u64, Exchange> = BTreeMap::new();
    let (mut effects, mut saves, mut finals) = (Vec::<Effect>::new(), Vec::new(), Vec::new());
    let (mut routing, mut seed, mut end_ms) = (String::from("recorded"), 0, 0);
    let mut notes: Vec<String> = duplicates.into_iter().collect();
    // Requests first, so an answer written before its request (lines out of order) finds it.
    let (requests, rest): (Vec<_>, Vec<_>) = lines
        .into_iter()
        .map(|n| n.line)
        .partition(|l| matches!(l, Line::Request { .. } | Line::Start { .. }));
    for line in requests.into_iter().chain(rest) {
        match line {
            Line::Start {
                routing: r,
                seed: s,
                ..
            } => {
                if !r.is_empty() {
                    routing = r;
                }
                seed = s;
            }
            Line::Request {
                seq,
                at_ms,
                replica,
                body,
                duplicate_of,
                ..
            } => {
                end_ms = end_ms.max(at_ms);
                exchanges.insert(
                    seq,
                    Exchange {
                        seq,
                        at_ms,
                        replica,
                        body,
                        duplicate_of,
                        ..Exchange::default()
                    },
                );
            }
            Line::Response {
                seq,
                at_ms,
                status,
                replica,
                body,
                stream,
                dropped,
                error,
            } => {
                end_ms = end_ms.max(at_ms);
                let Some(x) = exchanges.get_mut(&seq) else {
                    notes.push(format!(
                        "a response to request {seq}, which is not in the file, was skipped"
                    ));
                    continue;
                };
                x.answered_ms = Some(at_ms);
                x.answered_by = replica;
                x.status = status;
                x.answer = body;
                x.stream = stream;
                x.dropped = dropped;
                x.error = error;
            }
            Line::Event { seq, at_ms, data } => {
                end_ms = end_ms.max(at_ms);
                if let Some(x) = exchanges.get_mut(&seq) {
                    x.stream = true;
                    x.answered_ms.get_or_insert(at_ms);
                    x.events.push((at_ms, data));
                }
            }
            Line::End {
                seq,
                at_ms,
                error,
                dropped,
            } => {
                end_ms = end_ms.max(at_ms);
                if let Some(x) = exchanges.get_mut(&seq) {
                    x.ended = Some((at_ms, error, dropped));
                }
            }
            Line::Effect(e) => {
                end_ms = end_ms.max(e.at_ms);
                effects.push(e);
            }
            Line::Save(s) => saves.push(s.record().map_err(recording::RecordingError::BadSave)?),
            Line::FinalTask { replica, task, .. } => finals.push((replica, task)),
            Line::Stop { at_ms, .. } => end_ms = end_ms.max(at_ms),
        }
    }
    let mut exchanges: Vec<Exchange> = exchanges.into_values().collect();
    exchanges.sort_by_key(|x| (x.at_ms, x.seq));
    for x in &mut exchanges {
        x.events.sort_by_key(|(at, _)| *at);
    }
    effects.sort_by_key(|e| e.seq);
    let has_final = !finals.is_empty();
    let has_model = model.is_some();
    let profile = match model {
        Some(p) => p,
        None => Profile::load("reference").map_err(recording::RecordingError::Profile)?,
    };
    let mut b = Builder::default();
    b.assign_turns(&exchanges);
    b.named = exchanges
        .iter()
        .flat_map(|x| x.results())
        .flat_map(|(_, r)| wire::items(r))
        .any(|i| match i {
            Item::Task(t) => t.artifacts.iter().any(|a| is_turn_name(a)),
            Item::Artifact { name, .. } => is_turn_name(&name),
            _ => false,
        });
    let (history, extra) = b.ops(&exchanges);
    b.key_effects_by_message(&mut effects, &mut notes);
    let final_tasks = if has_final {
        b.final_tasks(&finals, &mut notes)
    } else {
        b.seen_union(&history)
    };
    // A recording writes saves as they arrive; the checkers read them as the store applied
    // them, as a live run's ledger hands them over.
    let saves = crate::live::observer::in_store_order(saves);
    let trace = trace_of(&exchanges, &effects, &saves);
    let record = RunRecord {
        seed,
        model: if has_model {
            profile.name.clone()
        } else {
            "recorded".into()
        },
        profile,
        routing,
        replicas: b.replicas.len().max(1),
        history: history.clone(),
        effects,
        final_tasks,
        saves,
        deliveries: Vec::new(),
        push_reports: Vec::new(),
        push_egress: Vec::new(),
        push_pending: Vec::new(),
        fault_rates: BTreeMap::new(),
        faults: Vec::new(),
        conversations: b.conversations.clone(),
        healed_at_ms: 0,
        settled_at_ms: None,
        trace_hash: "recorded".into(),
        trace,
        sim_ms: end_ms,
        steps: 0,
        error: None,
        workload_shape: None,
        points_fired: BTreeMap::new(),
        point_firings: Vec::new(),
        poll_slowed_until_ms: 0,
        cards: Default::default(),
        grants: Vec::new(),
    };
    let mut by_event = record.clone();
    by_event.history.extend(extra);
    Ok(Recorded {
        record,
        by_event,
        has_final,
        has_model,
        notes,
    })
}

/// A trace for the timeline: the proxy's forwards and drops, the answers, the ledger's
/// effects and the reported saves.
fn trace_of(exchanges: &[Exchange], effects: &[Effect], saves: &[SaveRecord]) -> Vec<TraceEvent> {
    let mut trace = Vec::new();
    let at = |at_ms: u64, host: Host, event: Event| TraceEvent { at_ms, host, event };
    // The recorded history is text: the hosts it names become hosts here.
    for x in exchanges {
        let target = Host::parse(x.replica.as_deref().unwrap_or("?"));
        let method = x.method().to_string();
        let what = match x.duplicate_of {
            Some(of) => format!("{method} (duplicate of request {of})"),
            None => method.clone(),
        };
        trace.push(at(
            x.at_ms,
            Host::Router,
            Event::Forward {
                method: what,
                context: x
                    .message()
                    .get("contextId")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                target: target.clone(),
                pinned: false,
            },
        ));
        if x.dropped || x.ended.as_ref().is_some_and(|e| e.2) {
            let when = x.answered_ms.unwrap_or(x.at_ms);
            trace.push(at(when, Host::Router, Event::DropReply { method, target }));
        } else if let Some(when) = x.answered_ms {
            let reply = match x.answer.as_ref().and_then(|a| a.get("error")) {
                Some(e) => Reply::Fail {
                    code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                },
                None if x.error.is_some() => Reply::Info {
                    why: x.error.clone().unwrap_or_default(),
                },
                None => Reply::Ok,
            };
            trace.push(at(
                when,
                Host::Client,
                Event::Answered {
                    op: format!("request {}", x.seq),
                    reply,
                    events: x.stream.then_some(x.events.len()),
                    via: None,
                },
            ));
        }
    }
    for e in effects {
        trace.push(at(
            e.at_ms,
            Host::Ledger,
            Event::Effect {
                conversation: e.request.conversation.clone(),
                turn: e.request.turn,
                task: e.request.task_id.clone(),
                replica: e.request.replica.clone(),
                key: e.request.key.clone(),
                applied: e.applied,
            },
        ));
    }
    for s in saves {
        trace.push(at(
            s.at_ms,
            Host::Store,
            Event::Save {
                task: s.task_id.clone(),
                version: s.version,
                replica: s.replica.clone(),
                mode: s.mode.to_string(),
            },
        ));
    }
    trace.sort_by_key(|e| e.at_ms);
    trace
}

/// What a history lacks for an invariant to be judged on it ([`support`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unsupported(pub &'static str);

/// Whether the history holds the data `invariant` needs: `Err` says what is missing.
pub fn support(recorded: &Recorded, invariant: Invariant) -> Result<(), Unsupported> {
    let r = &recorded.record;
    let sends = r
        .history
        .iter()
        .any(|o| matches!(o.kind, OpKind::Send { .. }));
    let need = |ok: bool, why: &'static str| if ok { Ok(()) } else { Err(Unsupported(why)) };
    match invariant {
        Invariant::NO_LOST_WRITES
        | Invariant::TERMINAL_IS_FINAL
        | Invariant::CANCEL_IDEMPOTENT
        | Invariant::STREAM_CONTINUITY => need(
            sends || !r.history.is_empty(),
            "no client requests in the history",
        ),
        Invariant::EXACTLY_ONCE_EFFECTS | Invariant::NO_EFFECT_AFTER_CANCEL => need(
            !r.effects.is_empty(),
            "no ledger effects recorded (report them with the adapters to the proxy's ledger)",
        ),
        Invariant::VERSIONS_MONOTONIC => need(
            !r.saves.is_empty(),
            "no saves recorded (report them with the adapters' store observer)",
        ),
        Invariant::LIVENESS => need(
            recorded.has_final,
            "no final tasks recorded (the proxy reads them when it stops)",
        ),
        Invariant::DEDUP_CONTRACT => need(
            recorded.has_model,
            "what the server promises about messageId dedup is unknown (name a model with --model)",
        ),
        Invariant::PUSH_ACCOUNTED | Invariant::PUSH_EGRESS_SAFE => {
            Err(Unsupported("push deliveries are not recorded"))
        }
        Invariant::OWNER_ISOLATION => Err(Unsupported("principals are not recorded")),
        Invariant::CONTEXT_MATCH => Err(Unsupported(
            "turns sent on a foreign contextId are not marked in a history",
        )),
        Invariant::CREDENTIAL_AUDIENCE | Invariant::CARD_FRESHNESS => {
            Err(Unsupported("the agent card's versions are not recorded"))
        }
        Invariant::AUTH_GRANT => Err(Unsupported("authorisation grants are not recorded")),
        _ => Err(Unsupported(
            "check-history does not know what this checker needs",
        )),
    }
}

/// What [`check_all`] found: every checker's finding, why each forced `unknown` is, and
/// what a checker that ran could not see.
pub struct Checked {
    pub findings: Vec<Finding>,
    pub unknown: BTreeMap<Invariant, String>,
    pub partial: BTreeMap<Invariant, String>,
}

/// Every built-in checker on the history: a supported one on its record, any other
/// `unknown` (no violations, nothing exercised) with the reason.
pub fn check_all(recorded: &Recorded) -> Checked {
    let mut findings = Vec::new();
    let mut unknown = BTreeMap::new();
    let mut partial = BTreeMap::new();
    for c in check::CHECKERS {
        let name = c.name();
        match support(recorded, name) {
            Ok(()) => {
                let run = if name == Invariant::TERMINAL_IS_FINAL {
                    &recorded.by_event
                } else {
                    &recorded.record
                };
                findings.push(check::run_checker(name, *c, run));
            }
            Err(why) => {
                unknown.insert(name, why.to_string());
                findings.push(Finding {
                    invariant: name,
                    violations: Vec::new(),
                    exercised: 0,
                });
            }
        }
    }
    if !recorded.has_final && !unknown.contains_key(&Invariant::NO_LOST_WRITES) {
        partial.insert(
            Invariant::NO_LOST_WRITES,
            "later answers checked; the final-task part is unknown (no final tasks recorded)"
                .to_string(),
        );
    }
    Checked {
        findings,
        unknown,
        partial,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(checked: &Checked, name: &str) -> crate::check::Verdict {
        checked
            .findings
            .iter()
            .find(|f| f.invariant == name)
            .map(Finding::verdict)
            .expect("every checker has a finding")
    }

    /// A task of context `ctx` as an a2a-sdk 0.3 server answers it.
    fn task(id: &str, history: &[&str], state: &str) -> Value {
        let h: Vec<Value> = history
            .iter()
            .map(|m| serde_json::json!({"messageId": m, "role": "user", "parts": [], "kind": "message"}))
            .collect();
        serde_json::json!({"kind": "task", "id": id, "contextId": "ctx",
            "status": {"state": state}, "artifacts": [{"artifactId": "x", "name": "answer", "parts": []}],
            "history": h})
    }

    /// A plain-text `message/send` of context `ctx`, continuing `task` when named.
    fn send(seq: u64, at: u64, id: &str, task: Option<&str>) -> Value {
        let mut message = serde_json::json!({"messageId": id, "contextId": "ctx", "role": "user",
            "parts": [{"kind": "text", "text": "hi"}]});
        if let Some(t) = task {
            message["taskId"] = t.into();
        }
        serde_json::json!({"type": "request", "seq": seq, "at_ms": at, "replica": "replica-0",
            "body": {"jsonrpc": "2.0", "id": seq, "method": "message/send", "params": {"message": message}}})
    }

    fn answer(seq: u64, at: u64, result: Value) -> Value {
        serde_json::json!({"type": "response", "seq": seq, "at_ms": at, "status": 200,
            "body": {"jsonrpc": "2.0", "id": seq, "result": result}})
    }

    /// An effect as the adapters report a plain message's: its turn counted within its task.
    fn effect(seq: u64, at: u64, task: &str, turn: u32, message: &str, by: &str) -> Value {
        serde_json::json!({"type": "effect", "seq": seq, "at_ms": at, "applied": true, "request": {
            "task_id": task, "context_id": "ctx", "conversation": "ctx", "turn": turn,
            "message_id": message, "replica": by, "key": null, "sent_ms": at}})
    }

    fn load_lines(name: &str, lines: &[Value]) -> Recorded {
        let path =
            std::env::temp_dir().join(format!("a2a-chaos-{name}-{}.jsonl", std::process::id()));
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, text).unwrap();
        let recorded = load(&path, None).unwrap();
        let _ = std::fs::remove_file(&path);
        recorded
    }

    /// A user's agent with its own artifact names and plain-text turns: its turns are
    /// counted per context, shown by their messages, and a later answer that lost one is
    /// caught; the double effect of a retried turn too.
    #[test]
    fn plain_turns_of_a_users_agent_are_checked_by_their_messages() {
        let t1 = |history: &[&str], state: &str| task("t1", history, state);
        let lines = [
            send(1, 0, "m1", Some("t1")),
            answer(1, 10, t1(&["m1"], "input-required")),
            send(2, 20, "m2", Some("t1")),
            answer(2, 30, t1(&["m1", "m2"], "input-required")),
            // The retry of turn 2 (same messageId), on another replica.
            send(3, 40, "m2", Some("t1")),
            answer(3, 50, t1(&["m1", "m2"], "input-required")),
            serde_json::json!({"type": "request", "seq": 4, "at_ms": 60,
                "body": {"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {"id": "t1"}}}),
            // Turn 2's message is gone.
            answer(4, 70, t1(&["m1"], "input-required")),
            effect(0, 5, "t1", 1, "m1", "replica-0"),
            effect(1, 25, "t1", 2, "m2", "replica-0"),
            effect(2, 45, "t1", 2, "m2", "replica-1"),
        ];
        let recorded = load_lines("plain", &lines);
        let turns: Vec<u32> = recorded
            .record
            .history
            .iter()
            .filter_map(|o| match &o.kind {
                OpKind::Send { turn, .. } => Some(*turn),
                _ => None,
            })
            .collect();
        assert_eq!(turns, vec![1, 2, 2], "a retry is the same turn");
        let checked = check_all(&recorded);
        use crate::check::Verdict;
        assert_eq!(verdict(&checked, "no-lost-writes"), Verdict::Fail);
        assert_eq!(verdict(&checked, "exactly-once-effects"), Verdict::Fail);
        assert_eq!(verdict(&checked, "versions-monotonic"), Verdict::Unknown);
        assert!(checked.unknown.contains_key(&Invariant::VERSIONS_MONOTONIC));
        assert!(checked.partial.contains_key(&Invariant::NO_LOST_WRITES));
    }

    /// Two tasks in one context (a finished order, then a new one), a reply the proxy
    /// dropped and the client retried, and a duplicate the proxy injected: each message took
    /// effect once, so nothing fails. The adapter numbered the second task's message turn 1
    /// of the context (its task's first); keyed by its message it is the context's turn 3.
    #[test]
    fn several_tasks_per_context_dropped_and_duplicated_replies_are_no_false_failure() {
        let dropped = |seq: u64, at: u64| {
            serde_json::json!({"type": "response", "seq": seq, "at_ms": at, "status": 200,
                "dropped": true, "body": {"jsonrpc": "2.0", "id": seq, "result": task("t2", &["m3"], "input-required")}})
        };
        let mut duplicate = send(6, 61, "m4", Some("t2"));
        duplicate["duplicate_of"] = 5.into();
        let lines = [
            send(1, 0, "m1", None),
            answer(1, 10, task("t1", &["m1"], "input-required")),
            send(2, 20, "m2", Some("t1")),
            answer(2, 30, task("t1", &["m1", "m2"], "completed")),
            // A new order in the same context: a new task. Its first reply is lost.
            send(3, 40, "m3", None),
            dropped(3, 45),
            send(4, 50, "m3", None),
            answer(4, 55, task("t2", &["m3"], "input-required")),
            // Its follow-up, which the proxy also sent a second time.
            send(5, 60, "m4", Some("t2")),
            duplicate,
            answer(5, 70, task("t2", &["m3", "m4"], "completed")),
            answer(6, 71, task("t2", &["m3", "m4"], "completed")),
            effect(0, 5, "t1", 1, "m1", "replica-0"),
            effect(1, 25, "t1", 2, "m2", "replica-1"),
            effect(2, 42, "t2", 1, "m3", "replica-0"),
            effect(3, 65, "t2", 2, "m4", "replica-1"),
        ];
        let recorded = load_lines("tasks-per-context", &lines);
        let sends: Vec<(String, u32)> = recorded
            .record
            .history
            .iter()
            .filter_map(|o| match &o.kind {
                OpKind::Send {
                    conversation, turn, ..
                } => Some((conversation.clone(), *turn)),
                _ => None,
            })
            .collect();
        let turns: Vec<u32> = sends.iter().map(|(_, t)| *t).collect();
        assert_eq!(
            turns,
            vec![1, 2, 3, 3, 4, 4],
            "turns are counted per context"
        );
        let keyed: Vec<u32> = recorded
            .record
            .effects
            .iter()
            .map(|e| e.request.turn)
            .collect();
        assert_eq!(keyed, vec![1, 2, 3, 4], "each effect is its message's turn");
        assert!(
            recorded.notes.iter().any(|n| n.contains("2 effect(s)")),
            "{:?}",
            recorded.notes
        );
        let checked = check_all(&recorded);
        use crate::check::Verdict;
        let once = checked
            .findings
            .iter()
            .find(|f| f.invariant == Invariant::EXACTLY_ONCE_EFFECTS)
            .unwrap();
        assert_eq!(once.verdict(), Verdict::Pass, "{:?}", once.violations);
        assert!(
            once.exercised >= 2,
            "the dropped and the duplicated turn are exercised"
        );
        assert_eq!(verdict(&checked, "no-lost-writes"), Verdict::Pass);
        assert_ne!(verdict(&checked, "terminal-is-final"), Verdict::Fail);

        // The same history where the duplicate ran the follow-up again: caught.
        let mut twice = lines.to_vec();
        twice.push(effect(4, 66, "t2", 2, "m4", "replica-0"));
        let checked = check_all(&load_lines("tasks-per-context-twice", &twice));
        assert_eq!(verdict(&checked, "exactly-once-effects"), Verdict::Fail);
    }

    /// A subscription that sees a new turn begin on a task already `working` (the Task event
    /// a2a-sdk's cluster mode logs for the turn's message, then the turn's own `working`
    /// status, then a progress update still `working`) saw three changes, not a repeat; the
    /// same status event delivered twice is a redelivery and fails `stream-continuity`.
    #[test]
    fn a_new_event_in_the_same_state_is_no_redelivery_and_the_same_event_twice_is() {
        let status = |at: &str| {
            serde_json::json!({"kind": "status-update", "taskId": "t1", "contextId": "ctx",
                "status": {"state": "working", "timestamp": at}, "final": false})
        };
        let stream = |name: &str, events: &[Value]| {
            let save = |at: u64, version: u64, state: &str| {
                serde_json::json!({"type": "save", "at_ms": at, "task_id": "t1",
                    "context_id": "ctx", "mode": "cas", "version": version, "state": state,
                    "replica": "replica-0"})
            };
            let mut lines = vec![
                send(1, 0, "m1", Some("t1")),
                save(5, 1, "working"),
                answer(1, 10, task("t1", &["m1"], "working")),
                save(30, 2, "working"),
                save(39, 3, "input-required"),
                serde_json::json!({"type": "request", "seq": 2, "at_ms": 20, "replica": "replica-1",
                    "body": {"jsonrpc": "2.0", "id": 2, "method": "tasks/resubscribe",
                        "params": {"id": "t1"}}}),
                serde_json::json!({"type": "response", "seq": 2, "at_ms": 21, "status": 200,
                    "stream": true}),
            ];
            for (i, result) in events.iter().enumerate() {
                lines.push(
                    serde_json::json!({"type": "event", "seq": 2, "at_ms": 22 + i as u64,
                    "data": {"jsonrpc": "2.0", "id": 2, "result": result}}),
                );
            }
            let last = task("t1", &["m1", "m2"], "input-required");
            lines.push(serde_json::json!({"type": "event", "seq": 2, "at_ms": 40,
                "data": {"jsonrpc": "2.0", "id": 2, "result": {"kind": "status-update",
                    "taskId": "t1", "contextId": "ctx", "status": {"state": "input-required"},
                    "final": true}}}));
            lines.push(serde_json::json!({"type": "end", "seq": 2, "at_ms": 41}));
            lines.push(serde_json::json!({"type": "final-task", "at_ms": 50,
                "replica": "replica-0", "task": last}));
            check_all(&load_lines(name, &lines))
        };
        use crate::check::Verdict;
        let snapshot = task("t1", &["m1"], "working");
        let new_turn = task("t1", &["m1", "m2"], "working");
        let changes = stream(
            "same-state-changes",
            &[
                snapshot.clone(),
                new_turn.clone(),
                status("2026-12-07T00:00:01Z"),
                status("2026-12-07T00:00:02Z"),
            ],
        );
        assert_eq!(verdict(&changes, "stream-continuity"), Verdict::Pass);
        let again = stream(
            "redelivered",
            &[
                snapshot,
                new_turn,
                status("2026-12-07T00:00:01Z"),
                status("2026-12-07T00:00:01Z"),
            ],
        );
        assert_eq!(verdict(&again, "stream-continuity"), Verdict::Fail);
        let finding = again
            .findings
            .iter()
            .find(|f| f.invariant == "stream-continuity")
            .unwrap();
        assert!(
            finding
                .violations
                .iter()
                .any(|v| v.kind == crate::check::ViolationKind::REDELIVERED),
            "{:?}",
            finding.violations
        );
    }
}
