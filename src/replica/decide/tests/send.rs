//! SendMessage's decisions ([`crate::replica::decide::send`]).

use a2a::{StreamResponse, TaskState};

use super::{message, model, task, MODELS};
use crate::replica::decide::send::*;
use crate::replica::{rpc, set_marker, Refusal};
use crate::store::Claim;

/// A blocking, non-streaming client send that read `task`, nothing held or queued.
fn read<'a>(task: Option<&'a a2a::Task>, message: &'a a2a::Message) -> TaskRead<'a> {
    TaskRead {
        task,
        message,
        queued: false,
        held: false,
        internal: false,
        blocking: true,
        streaming: false,
    }
}

#[test]
fn a_send_to_a_terminal_task_is_refused_with_the_models_code() {
    let msg = message(Some("t1"), None);
    for name in MODELS {
        let p = model(name);
        for state in [TaskState::Completed, TaskState::Canceled, TaskState::Failed] {
            let t = task(state);
            let code = p.handler.message_to_terminal_code;
            assert_eq!(
                on_task(&p, "t1", read(Some(&t), &msg)),
                OnTask::Terminal(rpc(code, "task t1 is terminal")),
                "{name}"
            );
        }
    }
    // The codes differ: a2a-sdk 1.1 answers -32602, 1.3 -32004, Mastra -32600.
    let code = |name| model(name).handler.message_to_terminal_code;
    assert_eq!(code("a2a-python-1.1"), -32602);
    assert_eq!(code("a2a-python-1.3-versioned"), -32004);
    assert_eq!(code("mastra"), -32600);
}

#[test]
fn a_queued_duplicate_runs_on_a_terminal_task_only_where_the_model_runs_it() {
    // handler.queued_terminal: a2a-sdk 1.3 without an event stream runs a queued turn on
    // its live ActiveTask whatever the store holds ("run"); with one it refuses ("refuse").
    let msg = message(Some("t1"), None);
    let done = task(TaskState::Completed);
    let queued = TaskRead {
        queued: true,
        ..read(Some(&done), &msg)
    };
    let plain = model("a2a-python-1.3-plain");
    assert_eq!(
        on_task(&plain, "t1", queued),
        OnTask::Start { mismatch: false }
    );
    let parked = TaskRead {
        held: true,
        ..read(Some(&done), &msg)
    };
    assert_eq!(
        on_task(&plain, "t1", parked),
        OnTask::Start { mismatch: false }
    );
    let versioned = model("a2a-python-1.3-versioned");
    assert_eq!(
        on_task(&versioned, "t1", queued),
        OnTask::Terminal(rpc(-32004, "task t1 is terminal"))
    );
    // A send that is neither queued nor held is refused either way.
    assert!(matches!(
        on_task(&plain, "t1", read(Some(&done), &msg)),
        OnTask::Terminal(_)
    ));
}

#[test]
fn an_unknown_task_is_not_found_or_goes_on_in_a_new_task() {
    let msg = message(Some("t9"), None);
    assert_eq!(
        on_task(&model("reference"), "t9", read(None, &msg)),
        OnTask::NotFound(rpc(-32001, "task t9 not found"))
    );
    // Rasa: the conversation goes on in a new task on this pod.
    let new = on_task(&model("rasa-3.17"), "t9", read(None, &msg));
    assert_eq!(new, OnTask::NewTask);
    assert!(!new.takes_active_task());
}

#[test]
fn a_foreign_context_is_refused_before_the_run_after_it_or_ignored() {
    let msg = message(Some("t1"), Some("ctx-other"));
    let t = task(TaskState::InputRequired);
    let before = on_task(&model("reference"), "t1", read(Some(&t), &msg));
    assert_eq!(
        before,
        OnTask::ForeignContext(rpc(-32602, "contextId does not match the task's"))
    );
    assert!(!before.takes_active_task());
    // a2a-sdk 1.1 runs the turn, then refuses it; Mastra ignores the contextId.
    for (name, refused) in [("a2a-python-1.1", true), ("mastra", false)] {
        let p = model(name);
        assert_eq!(
            on_task(&p, "t1", read(Some(&t), &msg)),
            OnTask::Start { mismatch: true },
            "{name}"
        );
        assert_eq!(refused_after_run(&p, true).is_some(), refused, "{name}");
        assert_eq!(refused_after_run(&p, false), None, "{name}");
    }
    // The message's own context, or none, is no mismatch.
    assert!(!foreign_context(&message(None, Some("ctx-1")), "ctx-1"));
    assert!(!foreign_context(&message(None, None), "ctx-1"));
}

#[test]
fn a_turn_fails_where_its_task_manager_holds_another_context() {
    // a2a-sdk 1.x gives a task-only request a new context ("ctx-new"); the TaskManager of
    // the replica's ActiveTask holds its last run's context, or takes the request's.
    let sdk = model("a2a-python-1.3-versioned");
    let fails = |manager, request| manager_context_fails(&sdk, manager, request, "ctx-1", false);
    assert!(
        fails(None, "ctx-new"),
        "a task-only follow-up on another replica"
    );
    assert!(
        !fails(Some("ctx-1"), "ctx-new"),
        "on the replica that ran the task"
    );
    assert!(
        fails(Some("ctx-new"), "ctx-1"),
        "any turn after a task-only run here"
    );
    assert!(!fails(None, "ctx-1"), "a message with its context");
    assert!(
        !manager_context_fails(&sdk, Some("ctx-new"), "ctx-1", "ctx-1", true),
        "a message the task already holds is not saved again, so nothing compares"
    );
    // The specification's rule: the context is the task's, wherever the message lands.
    assert!(!manager_context_fails(
        &model("reference"),
        None,
        "ctx-new",
        "ctx-1",
        false
    ));
}

#[test]
fn the_busy_rule_refuses_a_clients_turn_to_a_working_task_but_not_the_takeover() {
    let p = model("reference");
    let msg = message(Some("t1"), None);
    let working = task(TaskState::Working);
    let decision = on_task(&p, "t1", read(Some(&working), &msg));
    assert_eq!(decision, OnTask::Busy);
    assert!(decision.takes_active_task());
    let takeover = TaskRead {
        internal: true,
        ..read(Some(&working), &msg)
    };
    assert_eq!(
        on_task(&p, "t1", takeover),
        OnTask::Start { mismatch: false }
    );
    // On the copy a conflict re-reads, the turn's own message means the write was its own.
    assert!(busy_on_reread(&p, &working, false, "m1"));
    let mut own = working.clone();
    own.history = Some(vec![msg.clone()]);
    assert!(!busy_on_reread(&p, &own, false, "m1"));
    // A model without takeover has no busy rule.
    assert!(!busy(&model("a2a-python-1.3-plain"), &working, false));
}

#[test]
fn a_nonblocking_follow_up_to_a_working_task_is_answered_as_it_stands_where_the_model_drops_it() {
    let msg = message(Some("t1"), None);
    let working = task(TaskState::Working);
    let nonblocking = TaskRead {
        blocking: false,
        ..read(Some(&working), &msg)
    };
    assert_eq!(
        on_task(&model("mastra"), "t1", nonblocking),
        OnTask::Current
    );
    assert_eq!(
        on_task(&model("a2a-python-1.3-plain"), "t1", nonblocking),
        OnTask::Start { mismatch: false }
    );
}

#[test]
fn a_blocking_follow_up_waits_for_a_suspended_run_that_was_resumed() {
    let p = model("mastra");
    let msg = message(Some("t1"), None);
    let mut resumed = task(TaskState::Working);
    assert_eq!(
        on_task(&p, "t1", read(Some(&resumed), &msg)),
        OnTask::Start { mismatch: false }
    );
    set_marker(&mut resumed, "suspendedRun", Some(serde_json::json!(1)));
    assert_eq!(
        on_task(&p, "t1", read(Some(&resumed), &msg)),
        OnTask::AwaitResumedRun
    );
    // Not a streaming send, and not a model that tells runs apart.
    let streaming = TaskRead {
        streaming: true,
        ..read(Some(&resumed), &msg)
    };
    assert_eq!(
        on_task(&p, "t1", streaming),
        OnTask::Start { mismatch: false }
    );
    assert!(!awaits_resumed_run(
        &model("reference"),
        &resumed,
        true,
        false
    ));
}

#[test]
fn a_send_joins_a_turn_running_here_where_the_model_queues_it() {
    let asked = |held: bool| move || held;
    let never = || -> bool { panic!("the lock is asked only with handler.per_task_lock") };
    // a2a-sdk 1.3: one ActiveTask per task; its context check comes first.
    let p = model("a2a-python-1.3-versioned");
    assert_eq!(joins_running_turn(&p, true, never), Some(true));
    assert_eq!(joins_running_turn(&p, false, asked(true)), Some(true));
    assert_eq!(joins_running_turn(&p, false, asked(false)), None);
    // a2a-sdk 1.1 checks the context after the run.
    let old = model("a2a-python-1.1");
    assert_eq!(joins_running_turn(&old, true, never), Some(false));
    // Models without it never join; Mastra has no lock to ask.
    for name in ["reference", "rasa-3.17", "cognigy", "mastra"] {
        let p = model(name);
        assert!(!joins_running_turns(&p), "{name}");
        assert_eq!(joins_running_turn(&p, true, never), None, "{name}");
    }
    let mut unlocked = model("a2a-python-1.3-plain");
    unlocked.handler.per_task_lock = false;
    assert_eq!(joins_running_turn(&unlocked, false, never), None);
}

#[test]
fn a_queued_duplicate_is_answered_by_the_turn_it_joined() {
    let parked = task(TaskState::InputRequired);
    assert_eq!(
        joined(Some(Ok(parked.clone()))),
        Joined {
            queued_runs: true,
            answer: Ok(parked),
        }
    );
    // A turn that failed takes its queue with it.
    let failed = task(TaskState::Failed);
    assert!(!joined(Some(Ok(failed))).queued_runs);
    let refused = Refusal::Http(503, "outcome unknown".into());
    assert_eq!(
        joined(Some(Err(refused.clone()))),
        Joined {
            queued_runs: false,
            answer: Err(refused),
        }
    );
    assert_eq!(
        joined(None).answer,
        Err(rpc(-32603, "the running turn ended with no answer"))
    );
}

#[test]
fn dedup_claims_follow_the_scope_and_a_duplicate_in_flight_is_409() {
    assert_eq!(
        dedup_claim(&model("reference")),
        Some((DedupAt::Shared, 2500))
    );
    assert_eq!(
        dedup_claim(&model("rasa-3.17")),
        Some((DedupAt::PerPod, u64::MAX / 4))
    );
    assert_eq!(dedup_claim(&model("a2a-python-1.3-plain")), None);
    assert_eq!(on_claim(Ok(Claim::New), "m1"), OnClaim::Run);
    assert_eq!(
        on_claim(Ok(Claim::InFlight), "m1"),
        OnClaim::InFlight(Refusal::Http(409, "message m1 is in flight".into()))
    );
    assert_eq!(
        on_claim(
            Ok(Claim::Done {
                task_id: "t1".into()
            }),
            "m1"
        ),
        OnClaim::Replay {
            task_id: "t1".into()
        }
    );
    assert_eq!(
        on_claim(
            Err(crate::store::StoreError::Unanswered("store timeout".into())),
            "m1"
        ),
        OnClaim::Fail(rpc(-32603, "store timeout"))
    );
}

#[test]
fn a_send_is_answered_after_its_turn_or_at_once() {
    let reference = model("reference");
    assert_eq!(send_answer(&reference, true, true), SendAnswer::AfterTurn);
    assert_eq!(
        send_answer(&reference, false, true),
        SendAnswer::Now {
            first_saved: false,
            closes_consumer: false
        }
    );
    // a2a-sdk answers a non-blocking send that creates a task with its first event.
    let sdk = model("a2a-python-1.3-versioned");
    assert_eq!(
        send_answer(&sdk, false, true),
        SendAnswer::Now {
            first_saved: true,
            closes_consumer: false
        }
    );
    assert_eq!(
        send_answer(&sdk, false, false),
        SendAnswer::Now {
            first_saved: false,
            closes_consumer: false
        }
    );
    // a2a-java before #351: a blocking send is answered at its first event and closes its
    // consumer.
    let java = model("a2a-java-main-351.toml");
    assert!(matches!(
        send_answer(&java, true, true),
        SendAnswer::Now {
            closes_consumer: true,
            ..
        }
    ));
    assert!(matches!(
        send_answer(&java, false, true),
        SendAnswer::Now {
            closes_consumer: false,
            ..
        }
    ));
}

#[test]
fn a_per_event_model_saves_the_user_message_on_its_own_first() {
    let sdk = model("a2a-python-1.3-plain");
    assert_eq!(
        user_save(&sdk, false),
        UserSave {
            own_save: true,
            appends: false
        }
    );
    // A message the history holds already (a retry) is not saved again.
    assert!(!user_save(&sdk, true).own_save);
    assert!(!user_save(&model("reference"), false).own_save);
    // Mastra appends duplicates (but saves per step).
    assert_eq!(
        user_save(&model("mastra"), true),
        UserSave {
            own_save: false,
            appends: true
        }
    );
}

#[test]
fn a_working_save_carries_the_runner_lease_where_the_model_takes_over() {
    let reference = model("reference");
    let lease = reference.recovery.runner_lease_ms;
    assert_eq!(
        runner_until(&reference, 1000),
        Some(serde_json::json!(1000 + lease))
    );
    assert_eq!(runner_until(&model("a2a-python-1.3-plain"), 1000), None);
}

#[test]
fn a_streaming_follow_up_starts_with_a_status_update_where_the_model_says_so() {
    let t = task(TaskState::Working);
    let sdk = model("a2a-python-1.3-plain");
    assert!(matches!(
        first_stream_event(&sdk, &t, false),
        StreamResponse::StatusUpdate(_)
    ));
    assert!(matches!(
        first_stream_event(&sdk, &t, true),
        StreamResponse::Task(_)
    ));
    assert!(matches!(
        first_stream_event(&model("reference"), &t, false),
        StreamResponse::Task(_)
    ));
}

#[test]
fn a_turn_that_ends_waiting_for_input_parks_its_task_and_a_cached_copy_goes_otherwise() {
    let old = model("a2a-python-1.1");
    for state in [TaskState::InputRequired, TaskState::AuthRequired] {
        assert_eq!(
            turn_ended(&old, &Ok(task(state)), false),
            TurnEnded {
                parked: true,
                forget_cache: false
            }
        );
    }
    let done = Ok(task(TaskState::Completed));
    assert_eq!(
        turn_ended(&old, &done, false),
        TurnEnded {
            parked: false,
            forget_cache: true
        }
    );
    // A finished ActiveTask a cancel kept keeps its copy; a model without a cache has none.
    assert!(!turn_ended(&old, &done, true).forget_cache);
    assert!(!turn_ended(&model("reference"), &done, false).forget_cache);
    let refused = Err(rpc(-32603, "failed"));
    assert!(!turn_ended(&old, &refused, false).parked);
}
