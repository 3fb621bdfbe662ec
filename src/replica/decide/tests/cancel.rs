//! CancelTask's decisions ([`crate::replica::decide::cancel`]).

use a2a::{Message, Part, Role, TaskState};

use super::{model, task};
use crate::replica::decide::cancel::*;
use crate::replica::{rpc, set_marker, Refusal, MARKER_KEY};
use crate::store::{SaveError, SaveMode, StoreError};

#[test]
fn a_second_cancel_is_answered_with_the_canceled_task_or_refused() {
    let canceled = task(TaskState::Canceled);
    // cancel.second_cancel: the reference's cancel is idempotent; a2a-sdk refuses it.
    assert_eq!(
        on_read(&model("reference"), "t1", &canceled),
        OnRead::AlreadyCanceled
    );
    assert_eq!(
        on_read(&model("a2a-python-1.3-plain"), "t1", &canceled),
        OnRead::NotCancelable(rpc(-32002, "task t1 is Canceled"))
    );
    // Any other terminal task is not cancelable, even where cancel is idempotent.
    assert_eq!(
        on_read(&model("reference"), "t1", &task(TaskState::Completed)),
        OnRead::NotCancelable(rpc(-32002, "task t1 is Completed"))
    );
    assert_eq!(
        on_read(&model("reference"), "t1", &task(TaskState::Working)),
        OnRead::Write
    );
}

#[test]
fn a_cancel_that_writes_nothing_answers_the_task_as_it_stands() {
    // cancel.writes_nothing (a2a-python 1.1.0-1.1.3, #1170).
    let p = model("a2a-python-1.1.3.toml");
    assert_eq!(
        on_read(&p, "t1", &task(TaskState::Working)),
        OnRead::Unwritten
    );
    // A terminal task is still refused first.
    assert!(matches!(
        on_read(&p, "t1", &task(TaskState::Completed)),
        OnRead::NotCancelable(_)
    ));
}

#[test]
fn a_cancel_reads_the_copy_held_here_where_the_model_says_so() {
    // cancel.parked_task = "cached" (a2a-sdk 1.1.5): the copy held here, whatever the store.
    let cached = model("a2a-python-1.1");
    assert_eq!(reads(&cached, true, true), CancelReads::Parked);
    assert_eq!(reads(&cached, true, false), CancelReads::Parked);
    // "cached-after-check" (a2a-sdk 1.3): the store decides whether it is cancelable.
    let checked = model("a2a-python-1.3-plain");
    assert_eq!(reads(&checked, true, false), CancelReads::Parked);
    assert_eq!(reads(&checked, true, true), CancelReads::Stored);
    // No copy held here, or a model that reads the store.
    assert_eq!(reads(&cached, false, false), CancelReads::Stored);
    assert_eq!(reads(&model("reference"), true, false), CancelReads::Stored);
}

#[test]
fn a_cancel_stops_a_running_turn_as_the_models_stop_rule_allows() {
    let sdk = model("a2a-python-1.3-plain");
    assert!(stops_run(&sdk, true, false));
    assert!(!stops_run(&sdk, false, false));
    // Mastra stops only streaming runs.
    let mastra = model("mastra");
    assert!(!stops_run(&mastra, true, false));
    assert!(stops_run(&mastra, true, true));
}

#[test]
fn a_remote_cancel_sets_only_the_state_where_the_model_says_so() {
    let mut t = task(TaskState::InputRequired);
    let mut reply = Message::new(Role::Agent, vec![Part::text("done turn 1")]);
    reply.message_id = "m1-reply".into();
    t.status.message = Some(reply.clone());
    // cancel.remote_write = "state-only" (a2a-sdk 1.3): the status keeps its message.
    let sdk = model("a2a-python-1.3-plain");
    let remote = canceled_copy(&sdk, &t, false);
    assert_eq!(remote.status.state, TaskState::Canceled);
    assert_eq!(remote.status.message, Some(reply.clone()));
    assert_eq!(remote.history, None);
    // Held here, it is a status change: the reply moves to the history.
    let local = canceled_copy(&sdk, &t, true);
    assert_eq!(local.status.state, TaskState::Canceled);
    assert_eq!(local.status.message, None);
    assert_eq!(local.history, Some(vec![reply]));
}

#[test]
fn a_fenced_cancel_clears_the_turns_markers() {
    let mut t = task(TaskState::Working);
    set_marker(
        &mut t,
        "effectPending",
        Some(serde_json::json!({"untilMs": 9})),
    );
    set_marker(&mut t, "runnerUntilMs", Some(serde_json::json!(9)));
    let fenced = canceled_copy(&model("reference"), &t, false);
    assert_eq!(fenced.metadata, None);
    let unfenced = canceled_copy(&model("a2a-python-1.3-versioned"), &t, false);
    assert!(unfenced
        .metadata
        .is_some_and(|m| m.contains_key(MARKER_KEY)));
}

#[test]
fn a_cancel_is_written_as_the_store_and_the_model_say() {
    assert_eq!(
        save(&model("reference"), 4),
        CancelSave::Fenced(SaveMode::Cas(Some(4)))
    );
    // cancel.store_write = "whole-task": a2a-sdk 1.3's versioned store merges the copy.
    assert_eq!(
        save(&model("a2a-python-1.3-versioned"), 4),
        CancelSave::Once(SaveMode::CancelWhole)
    );
    let mut onto = model("a2a-python-1.3-versioned");
    onto.cancel.store_write = None;
    assert_eq!(save(&onto, 4), CancelSave::Once(SaveMode::Cancel));
    // Mastra's own versioned memory; a plain store is overwritten.
    assert_eq!(
        save(&model("mastra"), 4),
        CancelSave::Once(SaveMode::Cas(Some(4)))
    );
    assert_eq!(
        save(&model("a2a-python-1.3-plain"), 4),
        CancelSave::Once(SaveMode::Overwrite)
    );
}

#[test]
fn a_fenced_cancel_waits_for_a_pending_effect_until_its_deadline() {
    let reference = model("reference");
    let mut t = task(TaskState::Working);
    assert_eq!(fence(&reference, &t, 100, 5000), Fence::Write);
    set_marker(
        &mut t,
        "effectPending",
        Some(serde_json::json!({"untilMs": 2600})),
    );
    assert_eq!(pending_until(&t), Some(2600));
    assert_eq!(fence(&reference, &t, 100, 5000), Fence::Wait);
    assert!(matches!(
        fence(&reference, &t, 100, 100),
        Fence::GiveUp(Refusal::Http(503, _))
    ));
    // The intent's lease ran out: the pod died mid-effect, the cancel writes.
    assert_eq!(fence(&reference, &t, 2600, 5000), Fence::Write);
}

#[test]
fn a_cancels_write_is_answered_retried_or_read_again() {
    let reference = model("reference");
    let fenced = CancelSave::Fenced(SaveMode::Cas(Some(1)));
    let once = CancelSave::Once(SaveMode::Cancel);
    let conflict = Err(SaveError::Conflict { current: Some(2) });
    assert_eq!(on_saved(&reference, fenced, &Ok(2)), OnSaved::Canceled(2));
    assert_eq!(on_saved(&reference, fenced, &conflict), OnSaved::Retry);
    assert_eq!(
        on_saved(&reference, fenced, &Err(SaveError::NotCancelable)),
        OnSaved::Retry
    );
    assert_eq!(on_saved(&reference, once, &conflict), OnSaved::Reread);
    let gone = Err(SaveError::Unavailable(StoreError::Unanswered(
        "timeout".into(),
    )));
    assert!(matches!(
        on_saved(&reference, fenced, &gone),
        OnSaved::Fail(Refusal::Http(503, _))
    ));
    assert_eq!(
        on_saved(&reference, once, &gone),
        OnSaved::Fail(rpc(-32603, "timeout"))
    );
}

#[test]
fn a_cancel_that_lost_to_another_cancel_answers_the_canceled_task() {
    let canceled = task(TaskState::Canceled);
    assert_eq!(lost("t1", Some(canceled.clone())), Ok(canceled));
    let changed = Err(rpc(-32002, "task t1 changed while canceling"));
    assert_eq!(lost("t1", Some(task(TaskState::Completed))), changed);
    assert_eq!(lost("t1", Some(task(TaskState::Working))), changed);
    assert_eq!(lost("t1", None), changed);
}

#[test]
fn a_cancel_leaves_a_finished_active_task_or_forgets_the_parked_one() {
    // cancel.keeps_task with handler.cache_snapshot (a2a-sdk 1.1.5).
    let old = model("a2a-python-1.1");
    assert_eq!(keeps(&old, false, false), Keeps::KeepFinished);
    assert_eq!(keeps(&old, true, false), Keeps::Forget);
    // A running turn nobody waits on (a non-blocking send's) leaves nothing either.
    assert_eq!(keeps(&old, false, true), Keeps::Forget);
    let mut cache_only = model("a2a-python-1.1");
    cache_only.cancel.keeps_task = false;
    assert_eq!(keeps(&cache_only, false, true), Keeps::Replace);
    assert_eq!(keeps(&model("reference"), false, true), Keeps::Nothing);
}
