//! Unit tests of the scenario language: parsing, validation and writing back.

use super::*;

const ABA: &str = r#"
name = "aba"
model = "a2a-python-1.1"
replicas = 2
[[step]]
send = { conversation = "c1", turn = 1, to = "replica-0" }
[[step]]
send = { conversation = "c1", turn = 2, to = "replica-1" }
[expect]
violations = ["no-lost-writes"]
"#;

#[test]
fn the_contract_example_parses() {
    let s = Script::parse(ABA, "aba.toml").unwrap();
    assert_eq!(s.steps.len(), 2);
    assert_eq!(s.turns["c1"], 2);
}

#[test]
fn a_script_waits_its_wait_steps_and_its_latest_until() {
    let s = Script::parse(
        &ABA.replace(
            "[expect]",
            "[[step]]\nwait-ms = 600000\n[[step]]\nconcurrent = [{ wait-ms = 5 }, { until-ms = 40 }]\n[[step]]\nuntil-ms = 30\n[expect]",
        ),
        "aba.toml",
    )
    .unwrap();
    assert_eq!(s.waits_ms(), 600_005 + 40);
    assert_eq!(Script::parse(ABA, "aba.toml").unwrap().waits_ms(), 0);
}

#[test]
fn an_unknown_key_names_the_line() {
    let bad = ABA.replace("replicas = 2", "replicas = 2\nreplics = 3");
    let err = Script::parse(&bad, "aba.toml").unwrap_err().to_string();
    assert!(err.starts_with("aba.toml:5:"), "{err}");
    assert!(err.contains("replics"), "{err}");
}

#[test]
fn a_step_with_two_keys_is_refused() {
    let bad = format!("{ABA}\n[[step]]\nkill = \"replica-0\"\nwait-ms = 5\n");
    assert!(Script::parse(&bad, "x")
        .unwrap_err()
        .message
        .contains("more than one key"));
}

#[test]
fn effect_steps_name_a_turn_from_1() {
    let ok = format!("{ABA}\n[[step]]\nhold-effect = {{ conversation = \"c1\", turn = 2 }}\n");
    let s = Script::parse(
        &ok.replace("[expect]\nviolations = [\"no-lost-writes\"]\n", ""),
        "x",
    )
    .unwrap();
    assert!(matches!(&s.steps[2], Step::Effect(EffectGate::Hold, t) if t.turn == 2));
    let bad = ok.replace("turn = 2 }\n", "turn = 0 }\n");
    let err = Script::parse(&bad, "x").unwrap_err().message;
    assert!(err.contains("hold-effect: turn starts at 1"), "{err}");
}

#[test]
fn an_agent_shape_reads_and_needs_the_data_part() {
    let text = ABA.replace("turn = 2, to", "turn = 2, effect = false, progress = 2, to");
    let s = Script::parse(&text, "x").unwrap();
    assert!(
        matches!(&s.steps[1], Step::Send(x) if x.effect == Some(false) && x.progress == Some(2))
    );
    let plain = ABA.replace(
        "turn = 2, to",
        "turn = 2, parts = \"text\", effect = false, to",
    );
    let err = Script::parse(&plain, "x").unwrap_err().message;
    assert!(
        err.contains("effect and progress ask in the scripted data part"),
        "{err}"
    );
    let many = ABA.replace("turn = 2, to", "turn = 2, progress = 11, to");
    let err = Script::parse(&many, "x").unwrap_err().message;
    assert!(err.contains("progress must be 0..=10"), "{err}");
}

#[test]
fn parts_read_and_a_question_needs_the_data_part() {
    let text = ABA.replace("turn = 2, to", "turn = 2, parts = \"file\", to");
    let s = Script::parse(&text, "x").unwrap();
    assert!(matches!(&s.steps[1], Step::Send(x) if x.parts == Some(Parts::File)));
    let bad = ABA.replace(
        "turn = 2, to",
        "turn = 2, parts = \"text\", needs_auth = true, to",
    );
    let err = Script::parse(&bad, "x").unwrap_err().message;
    assert!(
        err.contains("needs_auth asks in the scripted data part"),
        "{err}"
    );
}

#[test]
fn an_unknown_replica_is_refused() {
    let bad = ABA.replace("to = \"replica-1\"", "to = \"replica-7\"");
    assert!(Script::parse(&bad, "x")
        .unwrap_err()
        .message
        .contains("replica-7"));
}
#[test]
fn a_scenario_written_back_parses_to_the_same_steps() {
    // The header keys a generated or shrunk scenario may carry come back too.
    let text = format!(
        "think-ms = [200, 200]\nclient-wire = \"0.3\"\n{}\n{}",
        ABA.replace("[expect]\nviolations = [\"no-lost-writes\"]\n", ""),
        r#"
[[step]]
concurrent = [
  { send = { conversation = "c1", turn = 3, to = "replica-0", message_id = "m \"x\"", progress = 2, effect = false } },
  { sequence = [{ until-ms = 40 }, { kill = "replica-1" }] },
]
[[step]]
partition-oneway = ["replica-0", "store"]
[[step]]
repair = ["replica-0", "store"]
[[step]]
latency = { between = ["replica-1", "store"], max-ms = 200 }
[[step]]
latency = { between = ["replica-1", "store"] }
[[step]]
drop-reply = true
[[step]]
hold-effect = { conversation = "c1", turn = 2 }
[[step]]
concurrent = [{ await-effect = { conversation = "c1", turn = 2 } }, { release-effect = { conversation = "c1", turn = 2 } }]
[[step]]
get = { conversation = "c1" }
[expect]
violations = ["no-lost-writes"]
"#
    );
    let s = Script::parse(&text, "x.toml").unwrap();
    assert_eq!(s.step_count(), 14);
    let back = Script::parse(&s.to_toml(), "back.toml").unwrap_or_else(|e| {
        panic!("{e}\n{}", s.to_toml());
    });
    assert_eq!(back.steps, s.steps);
    assert_eq!(back.file, s.file);
    let again = Script::from_steps(&s.file, &s.steps).unwrap();
    assert_eq!(again.file, s.file);
}

#[test]
fn a_latency_longer_than_an_hour_is_refused() {
    let bad = format!(
        "{ABA}\n[[step]]\nlatency = {{ between = [\"replica-0\", \"store\"], max-ms = 99999999 }}\n"
    );
    assert!(Script::parse(&bad, "x")
        .unwrap_err()
        .message
        .contains("max-ms"));
}
