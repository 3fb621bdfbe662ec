//! SubscribeToTask's decisions ([`crate::replica::decide::subscribe`]).

use a2a::{Artifact, Part, StreamResponse, TaskState};

use super::{model, task};
use crate::model::SubscribeSource;
use crate::replica::decide::subscribe::*;
use crate::replica::rpc;

#[test]
fn an_unknown_task_gets_an_empty_stream_only_from_mastra() {
    assert!(unknown_gets_empty_stream(&model("mastra")));
    assert!(!unknown_gets_empty_stream(&model("reference")));
}

#[test]
fn a_terminal_task_gets_its_snapshot_or_a_refusal() {
    let never = || -> bool { panic!("a terminal task needs no ActiveTask to refuse it") };
    let done = task(TaskState::Completed);
    // Mastra: the snapshot, then the end.
    assert_eq!(
        opening(&model("mastra"), "t1", &done, never),
        Opening::Snapshot
    );
    // subscribe.terminal_code: a2a-sdk 1.1 answers -32602, the default is -32004.
    assert_eq!(
        opening(&model("a2a-python-1.1"), "t1", &done, never),
        Opening::Refuse(rpc(-32602, "task t1 is terminal"))
    );
    assert_eq!(
        opening(&model("reference"), "t1", &done, never),
        Opening::Refuse(rpc(-32004, "task t1 is terminal"))
    );
}

#[test]
fn a_finished_active_task_left_by_a_cancel_refuses_a_subscriber() {
    let working = task(TaskState::Working);
    let old = model("a2a-python-1.1");
    assert!(matches!(
        opening(&old, "t1", &working, || true),
        Opening::Refuse(_)
    ));
    assert_eq!(opening(&old, "t1", &working, || false), Opening::Follow);
}

#[test]
fn a_stream_plan_follows_the_interrupted_rule_and_where_the_task_is_held() {
    // The default: an interrupted state ends the stream, read from the model's source.
    let reference = stream_plan(&model("reference"), false);
    assert!(reference.snapshot_ends && reference.later_ends && !reference.failure_cuts);
    assert_eq!(reference.source, SubscribeSource::StoreEvents);
    assert!(!reference.attaches);
    // a2a-sdk 1.3 (versioned): the stream stays open where the task is held, and taps that
    // replica's own events there.
    let sdk = model("a2a-python-1.3-versioned");
    let held = stream_plan(&sdk, true);
    assert!(!held.snapshot_ends && !held.later_ends && held.failure_cuts);
    assert_eq!(held.source, SubscribeSource::LocalOnly);
    assert!(held.attaches);
    let remote = stream_plan(&sdk, false);
    assert!(!remote.snapshot_ends && remote.later_ends && !remote.failure_cuts);
    assert_eq!(remote.source, SubscribeSource::StoreEvents);
    // A subscription registers an ActiveTask on a2a-sdk 1.3 without an event stream.
    assert!(stream_plan(&model("a2a-python-1.3-plain"), false).attaches);
}

#[test]
fn a_stream_ends_at_a_terminal_state_and_where_the_plan_says_at_an_interrupted_one() {
    assert!(ends(&TaskState::Completed, false));
    assert!(!ends(&TaskState::InputRequired, false));
    assert!(ends(&TaskState::InputRequired, true));
    assert!(ends(&TaskState::AuthRequired, true));
    assert!(!ends(&TaskState::Working, true));
}

#[test]
fn each_later_version_brings_its_new_artifacts_then_its_status() {
    let plan = stream_plan(&model("reference"), false);
    let working = task(TaskState::Working);
    let mut saved = task(TaskState::InputRequired);
    saved.artifacts = Some(vec![Artifact {
        artifact_id: "t1-turn-1".into(),
        name: Some("turn-1".into()),
        description: None,
        parts: vec![Part::text("result of turn 1")],
        metadata: None,
        extensions: None,
    }]);
    let Step { events, ends } = step(&plan, &working, &saved);
    assert!(matches!(
        events.as_slice(),
        [
            StreamResponse::ArtifactUpdate(_),
            StreamResponse::StatusUpdate(_)
        ]
    ));
    assert!(ends);
    // Nothing new, nothing sent.
    let same = step(&plan, &working, &working);
    assert!(same.events.is_empty() && !same.ends);
}

#[test]
fn a_failed_turn_cuts_the_stream_before_its_status_where_the_model_says_so() {
    let working = task(TaskState::Working);
    let mut failed = task(TaskState::Failed);
    failed.artifacts = Some(vec![Artifact {
        artifact_id: "t1-turn-1".into(),
        name: None,
        description: None,
        parts: vec![Part::text("partial")],
        metadata: None,
        extensions: None,
    }]);
    // subscribe.failure = "error": the artifact, then the end, without the FAILED status.
    let cut = step(
        &stream_plan(&model("a2a-python-1.3-plain"), false),
        &working,
        &failed,
    );
    assert!(matches!(
        cut.events.as_slice(),
        [StreamResponse::ArtifactUpdate(_)]
    ));
    assert!(cut.ends);
    let told = step(&stream_plan(&model("reference"), false), &working, &failed);
    assert_eq!(told.events.len(), 2);
    assert!(told.ends);
}
