//! Turns shown by their messages: how a live run judges an agent that names its artifacts
//! its own way.
//!
//! The checkers recognise a turn in a task by its artifact `turn-N` (the scripted agent's
//! convention, [`crate::replica`]). A user's real agent names its artifacts after its
//! business (`reply`, `receipt`, or nothing at all), so without help every answer would be
//! an `ok` that acknowledges nothing and `no-lost-writes` would judge nothing. When no
//! answer and no final task of a run holds an artifact named `turn-N`, [`by_message`]
//! rewrites the record so that a task *shows* turn N when the turn's user message (its
//! `messageId`, which the client chose) is in the task's history, as `check-history` does
//! for a recording ([`super::history`]):
//!
//! - every answer's task view and every final task gets artifacts `turn-N`, one per turn
//!   whose message the task's history holds, in history order;
//! - an answer still `submitted` or `working` does not show its own turn (the agent has not
//!   answered it yet), so it acknowledges nothing;
//! - a run where any artifact is named `turn-N` is left exactly as it was, and so is every
//!   run of the repository's own peers (`live::pool` applies it to a user's command only):
//!   they name their artifacts `turn-N`, so a run of theirs without one (a turn canceled
//!   before its save) holds no turn, and showing it by its message would invent one.
//!
//! What this cannot see: an agent that keeps the message but loses the work it did for it
//! (its artifact) still shows the turn. The saves are not rewritten: `versions-monotonic`
//! infers versions from their content as before.

use std::collections::BTreeMap;

use a2a::TaskState;

use crate::client::history::{OpKind, TaskView};
use crate::world::RunRecord;

/// The note printed under `no-lost-writes` when [`by_message`] applied.
pub const NOTE: &str =
    "no artifact is named turn-N: a turn counts as shown when its message is in the task's history";

/// Whether `name` is a turn's artifact name, `turn-N`.
fn is_turn_name(name: &str) -> bool {
    name.strip_prefix("turn-")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Rewrites `record` so that turns are shown by their messages, when no artifact of the
/// run is named `turn-N` (see the module's documentation); whether it did.
pub fn by_message(record: &mut RunRecord) -> bool {
    let named = record
        .history
        .iter()
        .filter_map(|o| o.task.as_ref())
        .any(|v| v.artifacts.iter().any(|a| is_turn_name(a)))
        || record.final_tasks.values().any(|t| {
            crate::store::artifact_names(t)
                .iter()
                .any(|a| is_turn_name(a))
        });
    if named {
        return false;
    }
    let turns: BTreeMap<String, u32> = record
        .history
        .iter()
        .filter_map(|o| match &o.kind {
            OpKind::Send {
                message_id, turn, ..
            } => Some((message_id.clone(), *turn)),
            _ => None,
        })
        .collect();
    for op in &mut record.history {
        let own = match &op.kind {
            OpKind::Send { turn, .. } => Some(*turn),
            _ => None,
        };
        if let Some(view) = op.task.as_mut() {
            view.artifacts = shown(&turns, view, own);
        }
    }
    for task in record.final_tasks.values_mut() {
        let view = TaskView::of(task);
        task.artifacts = Some(
            shown(&turns, &view, None)
                .into_iter()
                .map(|name| a2a::Artifact {
                    artifact_id: name.clone(),
                    name: Some(name),
                    description: None,
                    parts: Vec::new(),
                    metadata: None,
                    extensions: None,
                })
                .collect(),
        );
    }
    true
}

/// The `turn-N` names `view` shows: one per turn whose message its history holds, but not
/// `own` (the answer's own turn) while the task is still submitted or working.
fn shown(turns: &BTreeMap<String, u32>, view: &TaskView, own: Option<u32>) -> Vec<String> {
    let unfinished = matches!(view.state, TaskState::Submitted | TaskState::Working);
    let mut names = Vec::new();
    for id in &view.history {
        let Some(&n) = turns.get(id) else { continue };
        let name = format!("turn-{n}");
        if (unfinished && own == Some(n)) || names.contains(&name) {
            continue;
        }
        names.push(name);
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(state: TaskState, history: &[&str]) -> TaskView {
        TaskView {
            id: "t1".into(),
            context_id: "ctx".into(),
            state,
            artifacts: vec!["receipt".into()],
            history: history.iter().map(|m| m.to_string()).collect(),
        }
    }

    #[test]
    fn a_turn_is_shown_by_its_message_once_the_task_answered_it() {
        let turns = BTreeMap::from([("m1".to_string(), 1), ("m2".to_string(), 2)]);
        let answered = view(TaskState::InputRequired, &["m1", "agent-1", "m2", "m2"]);
        assert_eq!(shown(&turns, &answered, Some(2)), ["turn-1", "turn-2"]);
        // Still working on turn 2: it shows turn 1 only.
        let working = view(TaskState::Working, &["m1", "agent-1", "m2"]);
        assert_eq!(shown(&turns, &working, Some(2)), ["turn-1"]);
        // A final task (no own turn) shows every turn its history holds.
        assert_eq!(shown(&turns, &working, None), ["turn-1", "turn-2"]);
        assert!(is_turn_name("turn-12") && !is_turn_name("turn-") && !is_turn_name("receipt"));
    }
}
