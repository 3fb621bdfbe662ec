//! The turn's decisions ([`crate::replica::decide::turn`]).

use a2a::{Artifact, Part, StreamResponse, TaskState};

use super::{model, task, MODELS};
use crate::replica::decide::turn::*;
use crate::replica::decide::Saved;
use crate::replica::{rpc, Refusal, TurnInfo};

fn info(turn: u32, turns: u32) -> TurnInfo {
    TurnInfo {
        conversation: "c1".into(),
        turn,
        turns,
    }
}

#[test]
fn each_model_plans_its_turn_from_its_knobs() {
    let plan = |name| turn_plan(&model(name));
    let reference = plan("reference");
    assert!(reference.fenced && !reference.fails_task && !reference.artifact_first);
    assert!(!reference.push_every_save && !reference.caches);
    let sdk = plan("a2a-python-1.3-versioned");
    assert!(!sdk.fenced && sdk.fails_task && sdk.artifact_first && sdk.push_every_save);
    assert!(plan("a2a-python-1.1").caches);
    assert_eq!(plan("cognigy").input_timeout_ms, Some(300_000));
    for name in MODELS {
        if name != "cognigy" {
            assert_eq!(plan(name).input_timeout_ms, None, "{name}");
        }
    }
}

#[test]
fn an_executor_beside_its_consumer_thinks_while_the_working_status_is_saved() {
    use std::time::Duration;
    let think = Duration::from_millis(40);
    let sdk = turn_plan(&model("a2a-python-1.3-versioned"));
    assert!(sdk.thinks_while_saving);
    assert_eq!(think_left(&sdk, think, 7), Duration::from_millis(33));
    assert_eq!(
        think_left(&sdk, think, 55),
        Duration::ZERO,
        "saves longer than the think"
    );
    let reference = turn_plan(&model("reference"));
    assert!(!reference.thinks_while_saving);
    assert_eq!(
        think_left(&reference, think, 7),
        think,
        "the saves come first"
    );
}

#[test]
fn an_executor_canceled_past_its_think_made_its_effect() {
    let never = || -> u64 { panic!("no draw where the think's bounds decide") };
    assert!(
        thought_before_cancel((20, 60), 60, never),
        "past the longest think"
    );
    assert!(
        !thought_before_cancel((20, 60), 19, never),
        "before the shortest"
    );
    assert!(
        thought_before_cancel((40, 40), 40, never),
        "the peers' fixed think, over"
    );
    assert!(!thought_before_cancel((40, 40), 39, never));
    assert!(
        thought_before_cancel((20, 60), 30, || 30),
        "a drawn think just over"
    );
    assert!(!thought_before_cancel((20, 60), 30, || 31));
}

#[test]
fn after_its_think_a_turn_stops_asks_for_authorisation_fences_or_acts() {
    let never = || -> bool { panic!("authorisation is asked only of a turn that needs it") };
    let fenced = turn_plan(&model("reference"));
    let plain = turn_plan(&model("a2a-python-1.3-plain"));
    // A cancel that reached the turn during its think stops it first.
    assert_eq!(after_think(&fenced, true, true, never), AfterThink::Stop);
    assert_eq!(
        after_think(&fenced, false, true, || false),
        AfterThink::AskForAuth
    );
    assert_eq!(
        after_think(&fenced, false, true, || true),
        AfterThink::Fence
    );
    assert_eq!(after_think(&fenced, false, false, never), AfterThink::Fence);
    assert_eq!(after_think(&plain, false, false, never), AfterThink::Effect);
}

#[test]
fn a_cancel_after_the_effect_stops_only_an_unfenced_turn() {
    let fenced = turn_plan(&model("reference"));
    let plain = turn_plan(&model("a2a-python-1.3-plain"));
    assert!(!stops_after_compose(&fenced, true));
    assert!(stops_after_compose(&plain, true));
    assert!(!stops_after_compose(&plain, false));
}

#[test]
fn a_fenced_effect_holds_off_a_cancel_for_its_lease() {
    assert_eq!(
        effect_intent(&info(2, 3), "m1", 1000),
        serde_json::json!({"turn": 2, "messageId": "m1", "untilMs": 1000 + EFFECT_LEASE_MS})
    );
}

#[test]
fn an_effect_is_keyed_at_the_ledger_where_the_model_says_so() {
    assert_eq!(
        effect_key(&model("reference"), "ctx-1", "m1"),
        Some("ctx-1/m1".into())
    );
    assert_eq!(
        effect_key(&model("a2a-python-1.3-plain"), "ctx-1", "m1"),
        None
    );
}

#[test]
fn a_failed_effect_is_answered_as_an_unknown_outcome() {
    assert!(matches!(
        effect_failed(&model("reference"), "ledger timeout"),
        Refusal::Http(503, _)
    ));
    assert_eq!(
        effect_failed(&model("a2a-python-1.3-plain"), "ledger timeout"),
        rpc(-32603, "business effect failed: ledger timeout")
    );
}

#[test]
fn a_turns_save_lands_finds_the_task_terminal_or_fails_as_after_the_effect() {
    let reference = model("reference");
    assert_eq!(
        turn_saved(&reference, Ok(Saved::Version(3))),
        TurnSaved::Landed(3)
    );
    let canceled = Box::new(task(TaskState::Canceled));
    assert_eq!(
        turn_saved(&reference, Ok(Saved::Terminal(canceled.clone(), 4))),
        TurnSaved::Terminal(canceled, 4)
    );
    assert!(matches!(
        turn_saved(&reference, Err(rpc(-32603, "timeout"))),
        TurnSaved::Fail(Refusal::Http(503, _))
    ));
}

#[test]
fn a_turn_leaves_its_task_waiting_for_input_until_the_last_turn() {
    assert_eq!(next_state(&info(1, 2)), TaskState::InputRequired);
    assert_eq!(next_state(&info(2, 2)), TaskState::Completed);
    assert_eq!(next_state(&info(3, 2)), TaskState::Completed);
}

#[test]
fn a_streaming_turns_end_sends_its_artifact_then_its_status() {
    let t = task(TaskState::InputRequired);
    let artifact = Artifact {
        artifact_id: "t1-turn-1".into(),
        name: Some("turn-1".into()),
        description: None,
        parts: vec![Part::text("result of turn 1")],
        metadata: None,
        extensions: None,
    };
    let sdk = turn_plan(&model("a2a-python-1.1"));
    let end = turn_end(&sdk, &t, Some(&artifact), &TaskState::InputRequired, true);
    assert!(end.cache);
    assert_eq!(end.input_timer_ms, None);
    assert!(matches!(
        end.events.as_slice(),
        [StreamResponse::ArtifactUpdate(a), StreamResponse::StatusUpdate(s)]
            if a.artifact == artifact && s.status.state == TaskState::InputRequired
    ));
    // A send without a stream gets no events; a turn without an artifact only its status.
    assert!(
        turn_end(&sdk, &t, Some(&artifact), &TaskState::InputRequired, false)
            .events
            .is_empty()
    );
    assert_eq!(
        turn_end(&sdk, &t, None, &TaskState::InputRequired, true)
            .events
            .len(),
        1
    );
}

#[test]
fn an_input_wait_is_timed_only_where_the_model_fails_it() {
    let t = task(TaskState::InputRequired);
    let cognigy = turn_plan(&model("cognigy"));
    assert_eq!(
        turn_end(&cognigy, &t, None, &TaskState::InputRequired, false).input_timer_ms,
        Some(300_000)
    );
    assert_eq!(
        turn_end(&cognigy, &t, None, &TaskState::Completed, false).input_timer_ms,
        None
    );
}

#[test]
fn a_streaming_turn_stopped_by_a_cancel_ends_its_stream_with_the_task_where_the_model_sends_it() {
    let canceled = Ok(task(TaskState::Canceled));
    // handler.stream_ends_with_terminal: a2a-sdk's subscribers hear the canceled task.
    for name in [
        "a2a-python-1.1",
        "a2a-python-1.3-memory",
        "a2a-python-1.3-plain",
    ] {
        assert!(
            matches!(
                stopped_event(&model(name), &canceled),
                Some(StreamResponse::Task(t)) if t.status.state == TaskState::Canceled
            ),
            "{name}"
        );
    }
    for name in ["reference", "mastra", "rasa-3.17", "cognigy"] {
        assert_eq!(stopped_event(&model(name), &canceled), None, "{name}");
    }
    // A refused turn's stream just ends.
    let refused = Err(rpc(-32603, "failed"));
    assert_eq!(
        stopped_event(&model("a2a-python-1.3-plain"), &refused),
        None
    );
}
