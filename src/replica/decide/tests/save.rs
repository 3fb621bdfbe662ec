//! The saves' decisions ([`crate::replica::decide::save`]).

use a2a::TaskState;

use super::{model, never, task, MODELS};
use crate::replica::decide::after_effect;
use crate::replica::decide::save::*;
use crate::replica::{rpc, Refusal};
use crate::store::SaveMode;

#[test]
fn a_versioned_store_is_written_with_compare_and_swap() {
    for name in MODELS {
        let p = model(name);
        let mode = save_mode(&p, Some(3));
        if p.store.versioned {
            assert_eq!(mode, SaveMode::Cas(Some(3)), "{name}");
        } else {
            assert_eq!(mode, SaveMode::Overwrite, "{name}");
        }
    }
}

#[test]
fn a_conflict_is_reread_until_the_model_gives_up() {
    // The reference re-applies its change 16 times, a2a-sdk once.
    let reference = model("reference");
    assert_eq!(on_conflict(&reference, 15), OnConflict::Reread);
    assert_eq!(
        on_conflict(&reference, 16),
        OnConflict::GiveUp {
            reread_and_fail: true,
            refusal: rpc(-32603, "concurrent task modification"),
        }
    );
    let plain = model("a2a-python-1.3-plain");
    assert_eq!(on_conflict(&plain, 0), OnConflict::Reread);
    assert!(matches!(
        on_conflict(&plain, 1),
        OnConflict::GiveUp {
            reread_and_fail: true,
            ..
        }
    ));
    // a2a-python#1366: the FAILED write is made on the stale copy, conflicts and is skipped.
    assert!(matches!(
        on_conflict(&model("a2a-python-1.3-versioned"), 1),
        OnConflict::GiveUp {
            reread_and_fail: false,
            ..
        }
    ));
    // Mastra gives up with its own code.
    assert!(matches!(
        on_conflict(&model("mastra"), 1),
        OnConflict::GiveUp {
            refusal: Refusal::Rpc(-32600, _),
            ..
        }
    ));
    // The FAILED write never lands on a task already terminal.
    assert!(fails_on_give_up(&task(TaskState::Working)));
    assert!(!fails_on_give_up(&task(TaskState::Canceled)));
}

#[test]
fn a_conflicts_reread_that_finds_the_task_terminal_ends_the_save_with_it() {
    for state in [TaskState::Canceled, TaskState::Completed, TaskState::Failed] {
        let fresh = task(state);
        // The busy rule is not asked of a terminal copy.
        assert_eq!(
            on_reread(Ok(Some((fresh.clone(), 7))), "t1", never),
            OnReread::Terminal(Box::new(fresh), 7)
        );
    }
}

#[test]
fn a_conflicts_reread_is_refused_reapplied_or_fails() {
    let fresh = task(TaskState::Working);
    assert_eq!(
        on_reread(Ok(Some((fresh.clone(), 4))), "t1", |_| true),
        OnReread::Refused(Box::new(fresh.clone()))
    );
    assert_eq!(
        on_reread(Ok(Some((fresh.clone(), 4))), "t1", |_| false),
        OnReread::Reapply(Box::new(fresh), 4)
    );
    assert_eq!(
        on_reread(Ok(None), "t1", never),
        OnReread::Fail(rpc(-32001, "task t1 not found"))
    );
    assert_eq!(
        on_reread(Err("timeout".into()), "t1", never),
        OnReread::Fail(rpc(-32603, "timeout"))
    );
}

#[test]
fn a_save_before_the_effect_that_finds_the_task_terminal_answers_it_or_refuses() {
    let canceled = task(TaskState::Canceled);
    let terminal = || Ok(Saved::Terminal(Box::new(canceled.clone()), 5));
    // handler.terminal_reread_answers_task: a2a-sdk 1.3 with a versioned store answers the
    // send with the task its consumer re-read.
    assert_eq!(
        before_effect(&model("a2a-python-1.3-versioned"), terminal(), true),
        BeforeEffect::AnswerTerminal(Box::new(canceled.clone()))
    );
    // Elsewhere the send is refused with the model's code for a terminal task, and no
    // executor runs on.
    for (name, code) in [("a2a-python-1.3-plain", -32004), ("a2a-python-1.1", -32602)] {
        assert_eq!(
            before_effect(&model(name), terminal(), true),
            BeforeEffect::Refuse {
                refusal: rpc(code, "task t1 is Canceled"),
                orphan_runs: false,
            },
            "{name}"
        );
    }
    assert_eq!(
        before_effect(&model("reference"), Ok(Saved::Version(9)), true),
        BeforeEffect::Landed(9)
    );
}

#[test]
fn a_consumer_failure_before_the_effect_leaves_the_executor_running_where_it_outlives_it() {
    let failed = || Err(rpc(-32603, "concurrent task modification"));
    // handler.executor_outlives_consumer (a2a-sdk 1.x): once the request read the task,
    // the executor runs on to its effect in the background.
    let sdk = model("a2a-python-1.3-versioned");
    assert_eq!(
        before_effect(&sdk, failed(), true),
        BeforeEffect::Refuse {
            refusal: rpc(-32603, "concurrent task modification"),
            orphan_runs: true,
        }
    );
    // A new task's request had not started the executor.
    assert!(matches!(
        before_effect(&sdk, failed(), false),
        BeforeEffect::Refuse {
            orphan_runs: false,
            ..
        }
    ));
    // The reference has no such executor, and answers 503: outcome unknown.
    let reference = model("reference");
    let BeforeEffect::Refuse {
        refusal,
        orphan_runs,
    } = before_effect(&reference, failed(), true)
    else {
        panic!("a failed save is refused");
    };
    assert!(!orphan_runs);
    assert!(matches!(refusal, Refusal::Http(503, _)));
    assert_eq!(
        refusal,
        after_effect(&reference, rpc(-32603, "concurrent task modification"))
    );
}

#[test]
fn a_result_over_a_task_canceled_meanwhile_is_dropped() {
    assert!(result_dropped(&task(TaskState::Canceled)));
    assert!(!result_dropped(&task(TaskState::Completed)));
}

#[test]
fn a_failure_after_the_effect_is_503_only_where_the_model_says_outcome_unknown() {
    let refusal = rpc(-32603, "store timeout");
    assert_eq!(
        after_effect(&model("reference"), refusal.clone()),
        Refusal::Http(
            503,
            "outcome unknown, retry with the same messageId (-32603: store timeout)".into()
        )
    );
    assert_eq!(after_effect(&model("mastra"), refusal.clone()), refusal);
    // An HTTP refusal stays as it is.
    let busy = Refusal::Http(409, "busy".into());
    assert_eq!(after_effect(&model("reference"), busy.clone()), busy);
}
