//! The handlers' decisions, tested with the shipped profiles and plain values: no turmoil,
//! no tokio runtime, no store and no network. Each test names the behaviour and the knob
//! it pins; a profile is changed in a test only for a knob no shipped model sets.

use a2a::{Message, Part, Role, Task, TaskState, TaskStatus};

use crate::model::Profile;

mod cancel;
mod save;
mod send;
mod subscribe;
mod turn;

/// Every built-in model.
const MODELS: [&str; 8] = [
    "a2a-python-1.1",
    "a2a-python-1.3-memory",
    "a2a-python-1.3-plain",
    "a2a-python-1.3-versioned",
    "cognigy",
    "mastra",
    "rasa-3.17",
    "reference",
];

/// A built-in model, or a profile under `tests/models/` (a name ending in `.toml`).
fn model(name: &str) -> Profile {
    let path = if name.ends_with(".toml") {
        format!("{}/tests/models/{name}", env!("CARGO_MANIFEST_DIR"))
    } else {
        name.to_string()
    };
    Profile::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Task `t1` of context `ctx-1`, in `state`.
fn task(state: TaskState) -> Task {
    Task {
        id: "t1".into(),
        context_id: "ctx-1".into(),
        status: TaskStatus {
            state,
            message: None,
            timestamp: None,
        },
        artifacts: None,
        history: None,
        metadata: None,
    }
}

/// A user message `m1` to `task_id`, in `context`.
fn message(task_id: Option<&str>, context: Option<&str>) -> Message {
    let mut m = Message::new(Role::User, vec![Part::text("hi")]);
    m.message_id = "m1".into();
    m.task_id = task_id.map(str::to_string);
    m.context_id = context.map(str::to_string);
    m
}

/// A predicate a decision must not ask.
fn never(_: &Task) -> bool {
    panic!("asked a predicate the decision must not ask")
}
