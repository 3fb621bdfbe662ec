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

/// A script of `steps` (TOML `[[step]]` tables) on `profile`, one replica, seed 0.
fn run_steps(profile: Profile, steps: &str) -> a2a_chaos::world::RunRecord {
    let script = Script::parse(
        &format!("name = \"steps\"\nmodel = \"reference\"\nreplicas = 1\n{steps}"),
        "steps.toml",
    )
    .unwrap();
    let record = Sim::scenario_builder(&script)
        .model(profile)
        .routing("round-robin")
        .seed(0)
        .build()
        .unwrap()
        .run();
    assert!(record.error.is_none(), "{:?}", record.error);
    record
}

/// Sends turn `turn` of `c` after `wait_ms` of silence.
fn send_after(c: &str, turn: u32, wait_ms: u64) -> String {
    format!(
        "[[step]]\nwait-ms = {wait_ms}\n\
         [[step]]\nsend = {{ conversation = \"{c}\", turn = {turn}, to = \"replica-0\" }}\n"
    )
}

/// A2A-BEHAVIOURS.md §4: Rasa's task timeout (600 s) is set when the task starts and later
/// messages do not extend it; Cognigy's 5-minute input wait restarts with every answer.
#[test]
fn rasa_times_a_task_out_from_its_start_whatever_messages_came() {
    let steps = [
        send_after("c1", 1, 0),
        send_after("c1", 2, 290_000),
        send_after("c1", 3, 290_000),
        send_after("c1", 4, 30_000),
    ]
    .concat();
    let end = |model: &str| {
        let record = run_steps(Profile::load(model).unwrap(), &steps);
        let id = &record.conversations["c1"];
        record.final_tasks[id].status.state.clone()
    };
    assert_eq!(end("rasa-3.17"), TaskState::Failed);
    assert_eq!(end("cognigy"), TaskState::Completed);
    assert_eq!(end("reference"), TaskState::Completed);
}

/// A2A-BEHAVIOURS.md §4: a context waiting for input keeps its `max_contexts` slot, so
/// parked conversations refuse a new one while nothing runs; a completed one frees its slot.
#[test]
fn rasa_parked_contexts_keep_their_max_contexts_slots() {
    use a2a_chaos::client::history::{OpKind, Outcome};
    let mut profile = Profile::load("rasa-3.17").unwrap();
    assert_eq!(profile.handler.max_contexts, Some(1000));
    profile.handler.max_contexts = Some(2);
    let steps = [
        send_after("c1", 1, 0),
        send_after("c2", 1, 0),
        send_after("c3", 1, 0),
        send_after("c1", 2, 0),
        send_after("c3", 1, 0),
        send_after("c2", 2, 0),
    ]
    .concat();
    let record = run_steps(profile, &steps);
    let c3: Vec<&Outcome> = record
        .history
        .iter()
        .filter(|op| matches!(&op.kind, OpKind::Send { conversation, .. } if conversation == "c3"))
        .map(|op| &op.outcome)
        .collect();
    assert!(
        matches!(c3[..], [Outcome::Fail { code: -32603, .. }, Outcome::Ok]),
        "{c3:?}"
    );
}

/// A send that arrives while a refused send holds its task's lock runs: a lock is not a
/// turn to join (tests/scenarios/h10-context-mismatch-ahead-of-the-turn-*, whose verdicts
/// pass either way: the stuck send only timed out, and no invariant judges a send that
/// was never acknowledged).
#[test]
fn a_send_behind_a_refused_one_runs_instead_of_joining_nothing() {
    for model in ["a2a-python-1.3-versioned", "reference"] {
        let path = format!(
            "{}/tests/scenarios/h10-context-mismatch-ahead-of-the-turn-{model}.toml",
            env!("CARGO_MANIFEST_DIR")
        );
        let script = Script::load(std::path::Path::new(&path)).unwrap();
        let record = Sim::scenario_builder(&script).build().unwrap().run();
        assert!(record.error.is_none(), "{model}: {:?}", record.error);
        let proper = record.history.iter().find(|op| {
            matches!(
                &op.kind,
                a2a_chaos::client::history::OpKind::Send {
                    turn: 2,
                    foreign_context: false,
                    ..
                }
            )
        });
        assert_eq!(
            proper.map(|op| &op.outcome),
            Some(&a2a_chaos::client::history::Outcome::Ok),
            "{model}: the proper turn 2 was not answered ok"
        );
        let effects = record
            .effects
            .iter()
            .filter(|e| e.applied && e.request.conversation == "c1" && e.request.turn == 2)
            .count();
        assert_eq!(effects, 1, "{model}: turn 2's effect");
    }
}
