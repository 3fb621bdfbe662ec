//! A scenario written back as a readable TOML file, with `toml_edit`.
//!
//! Top-level keys first, then `[card]`, one `[[step]]` table per step (a `concurrent` or
//! `sequence` list gets one line per element; inline tables stay on one line), then
//! `[expect]`. The file parses back to the same scenario.

use toml_edit::{value, Array, ArrayOfTables, DocumentMut, Item, Table, Value};

use super::{default_await_effect, default_tick_ms, default_timeout, ScenarioFile, Step};

/// A TOML value as `toml_edit` writes it.
/// Each item as an inline table, in an array.
fn inline_tables<T: serde::Serialize>(items: &[T]) -> Array {
    items
        .iter()
        .map(|item| {
            edit_value(&toml::Value::try_from(item).expect("an expectation serialises to TOML"))
        })
        .collect()
}

fn edit_value(v: &toml::Value) -> Value {
    v.to_string()
        .parse()
        .expect("a TOML value prints as TOML that parses back")
}

/// A list of steps, one element per line.
fn step_list(steps: &[Step]) -> Value {
    let mut array = Array::new();
    for s in steps {
        let mut item = edit_value(&s.to_value());
        item.decor_mut().set_prefix("\n  ");
        array.push_formatted(item);
    }
    if !steps.is_empty() {
        array.set_trailing_comma(true);
        array.set_trailing("\n");
    }
    Value::Array(array)
}

/// The scenario as a TOML file.
pub fn to_toml(file: &ScenarioFile) -> String {
    let mut doc = DocumentMut::new();
    doc["name"] = value(&file.name);
    if let Some(d) = &file.description {
        doc["description"] = value(d);
    }
    if let Some(p) = &file.postmortem {
        doc["postmortem"] = value(p);
    }
    doc["model"] = value(&file.model);
    doc["replicas"] = value(file.replicas as i64);
    doc["routing"] = value(&file.routing);
    doc["seed"] = value(file.seed as i64);
    if file.request_timeout_ms != default_timeout() {
        doc["request-timeout-ms"] = value(file.request_timeout_ms as i64);
    }
    if file.await_effect_ms != default_await_effect() {
        doc["await-effect-ms"] = value(file.await_effect_ms as i64);
    }
    if file.tick_ms != default_tick_ms() {
        doc["tick-ms"] = value(file.tick_ms as i64);
    }
    if let Some([lo, hi]) = file.think_ms {
        doc["think-ms"] = value(Array::from_iter([lo as i64, hi as i64]));
    }
    if let Some(wire) = file.client_wire {
        doc["client-wire"] = value(match wire {
            crate::client::Dialect::V1 => "1.0",
            crate::client::Dialect::V03 => "0.3",
        });
    }
    if let Some(c) = &file.card {
        let mut card = Table::new();
        card["max-age-s"] = value(c.max_age_s as i64);
        doc["card"] = Item::Table(card);
    }
    let mut steps = ArrayOfTables::new();
    for step in &file.step {
        let mut t = Table::new();
        let v = match step {
            Step::Concurrent(v) | Step::Sequence(v) => step_list(v),
            other => edit_value(&other.to_pair().1),
        };
        t[step.to_pair().0] = Item::Value(v);
        steps.push(t);
    }
    if !steps.is_empty() {
        doc["step"] = Item::ArrayOfTables(steps);
    }
    let mut expect = Table::new();
    let names: Array = file.expect.violations.iter().map(String::as_str).collect();
    expect["violations"] = value(names);
    if !file.expect.exercised.is_empty() {
        let names: Array = file.expect.exercised.iter().map(String::as_str).collect();
        expect["exercised"] = value(names);
    }
    if file.expect.allow_unexercised {
        expect["allow-unexercised"] = value(true);
    }
    if let Some(n) = file.expect.max_refused_continuations {
        expect["max-refused-continuations"] = value(n as i64);
    }
    if let Some(n) = file.expect.max_failed_turns {
        expect["max-failed-turns"] = value(n as i64);
    }
    // Per-call and per-task expectations, one inline table each.
    if !file.expect.call.is_empty() {
        expect["call"] = value(inline_tables(&file.expect.call));
    }
    if !file.expect.task.is_empty() {
        expect["task"] = value(inline_tables(&file.expect.task));
    }
    doc["expect"] = Item::Table(expect);
    doc.to_string()
}
