//! Model behaviours that no invariant judges, checked against the ground truth directly:
//! what a profile's knob promises is what the simulated store ends with.

use a2a::TaskState;
use a2a_chaos::model::Profile;
use a2a_chaos::scenario::Script;
use a2a_chaos::sim::Sim;

/// Turn 1 of 2, silence for `wait_ms`, then turn 2: the final state of the task.
fn state_after_silence(model: &str, wait_ms: u64) -> TaskState {
    let script = Script::parse(
        &format!(
            "name = \"silence\"\nmodel = \"{model}\"\nreplicas = 1\n\
             [[step]]\nsend = {{ conversation = \"c1\", turn = 1, to = \"replica-0\" }}\n\
             [[step]]\nwait-ms = {wait_ms}\n\
             [[step]]\nsend = {{ conversation = \"c1\", turn = 2, to = \"replica-0\" }}\n"
        ),
        "silence.toml",
    )
    .unwrap();
    let profile = Profile::load(model).unwrap();
    let record = Sim::scenario_builder(&script)
        .model(profile)
        .routing("round-robin")
        .seed(0)
        .build()
        .unwrap()
        .run();
    assert!(record.error.is_none(), "{:?}", record.error);
    let task_id = record.conversations.get("c1").expect("turn 1 made a task");
    record.final_tasks[task_id].status.state.clone()
}

/// A2A-BEHAVIOURS.md §5: Cognigy fails an input wait with no follow-up after 5 minutes.
#[test]
fn cognigy_fails_an_input_wait_after_five_minutes() {
    assert_eq!(
        state_after_silence("cognigy", 290_000),
        TaskState::Completed
    );
    assert_eq!(state_after_silence("cognigy", 301_000), TaskState::Failed);
}

/// The other models wait for the next message however long it takes.
#[test]
fn the_reference_waits_for_input() {
    assert_eq!(
        state_after_silence("reference", 301_000),
        TaskState::Completed
    );
}
