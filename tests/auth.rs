//! Issue 10's authorisation gaps end to end: `auth-required` answered with a message that is
//! not a credential (`auth-grant`), a server that stops streaming when its card says so, and
//! discovery without credentials (a fetchable card authorises nothing).

use std::path::Path;

use a2a_chaos::check::{check_all, Verdict};
use a2a_chaos::client::history::{OpKind, Outcome};
use a2a_chaos::experiment::Experiment;
use a2a_chaos::model::{self, AuthResume, Profile};
use a2a_chaos::scenario::Script;
use a2a_chaos::sim::Sim;
use a2a_chaos::world::RunRecord;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn run(script: &Script) -> RunRecord {
    let record = Sim::from_scenario(script).unwrap().run();
    assert!(record.error.is_none(), "{:?}", record.error);
    record
}

fn verdict(record: &RunRecord, invariant: &str) -> (Verdict, u64) {
    let f = check_all(record)
        .into_iter()
        .find(|f| f.invariant == invariant)
        .unwrap();
    (f.verdict(), f.exercised)
}

const ANSWERED_YES: &str = r#"
name = "answered-yes"
model = "MODEL"
replicas = 1
[[step]]
send = { conversation = "c1", turn = 1 }
[[step]]
send = { conversation = "c1", turn = 2, needs_auth = true }
[[step]]
send = { conversation = "c1", turn = 2, reply = "yes" }
[[step]]
get = { conversation = "c1" }
"#;

/// Every built-in model that resumes on any message runs the effect on a "yes"; every one
/// that waits for a grant does not, and `auth-grant` says which.
#[test]
fn a_yes_is_a_credential_only_to_models_that_resume_on_any_message() {
    for name in model::names() {
        let profile = Profile::load(name).unwrap();
        let script = Script::parse(&ANSWERED_YES.replace("MODEL", name), "yes.toml").unwrap();
        let record = run(&script);
        let (v, exercised) = verdict(&record, "auth-grant");
        assert!(exercised >= 1, "{name}: the answer exercises auth-grant");
        let effects_of_turn_2 = record
            .effects
            .iter()
            .filter(|e| e.applied && e.request.turn == 2)
            .count();
        match profile.auth.resume() {
            AuthResume::AnyMessage => {
                assert_eq!(v, Verdict::Fail, "{name}");
                assert_eq!(effects_of_turn_2, 1, "{name}");
            }
            AuthResume::Grant => {
                assert_eq!(v, Verdict::Pass, "{name}");
                assert_eq!(effects_of_turn_2, 0, "{name}");
                let task = record.final_tasks.values().next().unwrap();
                assert_eq!(task.status.state, a2a::TaskState::AuthRequired, "{name}");
            }
        }
    }
}

#[test]
fn a_grant_by_someone_else_does_not_authorise_the_owners_task() {
    let text = ANSWERED_YES.replace("MODEL", "reference").replace(
        "[[step]]\nsend = { conversation = \"c1\", turn = 2, reply = \"yes\" }",
        "[[step]]\nauthorize = { conversation = \"c1\", principal = \"bob\" }\n[[step]]\nsend = { conversation = \"c1\", turn = 2, reply = \"yes\" }",
    );
    let record = run(&Script::parse(&text, "bob.toml").unwrap());
    assert_eq!(record.grants.len(), 1);
    assert!(record.effects.iter().all(|e| e.request.turn != 2));
    assert_eq!(verdict(&record, "auth-grant").0, Verdict::Pass);
    // The owner's own grant does.
    let text = text.replace("principal = \"bob\" }", "}");
    let record = run(&Script::parse(&text, "alice.toml").unwrap());
    assert_eq!(
        record
            .effects
            .iter()
            .filter(|e| e.request.turn == 2)
            .count(),
        1
    );
    assert_eq!(verdict(&record, "auth-grant").0, Verdict::Pass);
}

#[test]
fn a_run_where_nothing_asked_for_authorisation_leaves_auth_grant_unknown() {
    let script =
        Script::load(&root().join("tests/scenarios/h01-aba-continuation-reference.toml")).unwrap();
    assert_eq!(verdict(&run(&script), "auth-grant").0, Verdict::Unknown);
}

/// The workload knob: under swarm faults, the models that resume on a message break
/// `auth-grant` and the reference holds every invariant, with the flow exercised.
#[test]
fn the_auth_required_workload_finds_the_hazard_and_the_reference_holds() {
    let exp = Experiment::load(&root().join("tests/experiments/auth-required.toml")).unwrap();
    for profile in &exp.profiles {
        let mut failed = 0;
        let mut exercised = 0;
        for seed in 0..4 {
            let sim = Sim::from_experiment(&exp, profile, "round-robin", seed).unwrap();
            let record = sim.run();
            assert!(record.error.is_none(), "{:?}", record.error);
            let again = sim.run();
            assert_eq!(
                record.trace_hash, again.trace_hash,
                "{} seed {seed}",
                profile.name
            );
            let findings = check_all(&record);
            let f = findings
                .iter()
                .find(|f| f.invariant == "auth-grant")
                .unwrap();
            exercised += f.exercised;
            if f.verdict() == Verdict::Fail {
                failed += 1;
            }
            if profile.name == "reference" {
                let broken: Vec<_> = findings
                    .iter()
                    .filter(|f| f.verdict() == Verdict::Fail)
                    .map(|f| (f.invariant, f.violations[0].detail.clone()))
                    .collect();
                assert!(broken.is_empty(), "reference seed {seed}: {broken:?}");
                assert!(!record.grants.is_empty(), "the user had to authorise");
            }
        }
        assert!(exercised > 0, "{}", profile.name);
        match profile.auth.resume() {
            AuthResume::AnyMessage => assert!(failed > 0, "{}", profile.name),
            AuthResume::Grant => assert_eq!(failed, 0),
        }
    }
}

const STREAM_AFTER_OFF: &str = r#"
name = "stream-after-off"
model = "mastra"
replicas = 1
[card]
max-age-s = 2
[[step]]
send = { conversation = "c1", turn = 1 }
[[step]]
card = { streaming = false }
[[step]]
wait-ms = 2500
[[step]]
subscribe = { conversation = "c1" }
[[step]]
send = { conversation = "c1", turn = 2, streaming = true }
"#;

/// A client holding the old card still streams; the server, whose card now says it does not,
/// refuses with -32004 and runs nothing. The refusal is a `fail`, judged stale by
/// `card-freshness` and not a broken stream by `stream-continuity`.
#[test]
fn the_server_refuses_streams_once_its_card_turns_streaming_off() {
    let record = run(&Script::parse(STREAM_AFTER_OFF, "off.toml").unwrap());
    let refused: Vec<_> = record
        .history
        .iter()
        .filter(|o| {
            matches!(
                o.kind,
                OpKind::Subscribe { .. } | OpKind::Send { turn: 2, .. }
            )
        })
        .collect();
    assert_eq!(refused.len(), 2);
    for op in refused {
        assert!(
            matches!(op.outcome, Outcome::Fail { code: -32004, .. }),
            "{:?}",
            op.outcome
        );
        assert_eq!(op.replica, Some(a2a_chaos::host::Host::Replica(0)));
    }
    assert!(record.effects.iter().all(|e| e.request.turn == 1));
    assert_eq!(verdict(&record, "card-freshness").0, Verdict::Fail);
    assert_ne!(verdict(&record, "stream-continuity").0, Verdict::Fail);
    assert_ne!(verdict(&record, "exactly-once-effects").0, Verdict::Fail);
    // Before the change, the same server streams.
    let before = STREAM_AFTER_OFF.replace("card = { streaming = false }", "wait-ms = 1");
    let record = run(&Script::parse(&before, "on.toml").unwrap());
    assert!(record.history.iter().all(|o| o.outcome == Outcome::Ok));
}

/// Cognigy discovers without a credential (its client's default); Mastra's fetch carries the
/// caller's token. Either way the card authorises nothing: the caller with no token is
/// refused on every call after a successful discovery.
#[test]
fn a_fetchable_card_is_not_an_authorised_call() {
    for (model, credential) in [
        ("cognigy", None),
        ("reference", None),
        (
            "mastra",
            Some(("alice".to_string(), "http://router:8080".to_string())),
        ),
    ] {
        let path = root().join("tests/scenarios/c05-discovery-is-not-authorisation-cognigy.toml");
        let text = std::fs::read_to_string(path)
            .unwrap()
            .replace("model = \"cognigy\"", &format!("model = \"{model}\""));
        let record = run(&Script::parse(&text, "c05.toml").unwrap());
        let fetch = &record.cards.fetches[0];
        assert_eq!(fetch.status, Some(200), "{model}");
        assert_eq!(fetch.credential, credential, "{model}");
        for op in &record.history {
            if op.principal == a2a_chaos::auth::ANONYMOUS {
                // Refused although discovery had already succeeded.
                assert!(op.invoke_ms > fetch.complete_ms);
                assert!(
                    matches!(op.outcome, Outcome::Fail { code: 401, .. }),
                    "{model}: {:?}",
                    op.outcome
                );
            } else {
                assert_eq!(op.outcome, Outcome::Ok, "{model}");
            }
        }
        // Every call that went out carried its principal's own credential, or none.
        for u in &record.cards.uses {
            let expected = (u.principal != a2a_chaos::auth::ANONYMOUS)
                .then(|| "http://router:8080".to_string());
            assert_eq!(u.credential_audience, expected, "{model}");
        }
    }
}

/// A swarm failure of `auth-grant` shrinks to the two steps that show it: the turn that asks
/// for authorisation and the message that resumed it (a "yes", or, for Cognigy, which
/// resumes on any message, simply the next turn). The history keeps both (`needs_auth`, and
/// `reply` on an answer), so the shrunk script reproduces the failure.
#[test]
fn an_auth_grant_failure_shrinks_to_the_request_and_the_message_that_resumed_it() {
    let out =
        std::env::temp_dir().join(format!("a2a-chaos-auth-shrink-{}.toml", std::process::id()));
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_a2a-chaos"))
        .current_dir(root())
        .args([
            "shrink",
            "tests/experiments/auth-required.toml",
            "--seed",
            "2",
            "--invariant",
            "auth-grant",
            "--model",
            "cognigy",
            "--routing",
            "context-affinity",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        status.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let script = Script::load(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let text = script.to_toml();
    assert!(text.contains("needs_auth = true"), "{text}");
    assert!(
        text.contains("reply = \"yes\"") || text.contains("turn = 2"),
        "{text}"
    );
    assert!(script.step_count() <= 3, "{text}");
    let record = run(&script);
    assert_eq!(verdict(&record, "auth-grant").0, Verdict::Fail, "{text}");
}

/// The reference's runs authorise tasks out of band; converting such a run back into steps
/// keeps each grant as an `authorize` step of the conversation that owns the task.
#[test]
fn a_converted_run_keeps_its_out_of_band_grants() {
    let exp = Experiment::load(&root().join("tests/experiments/auth-required.toml")).unwrap();
    let profile = exp.profiles.iter().find(|p| p.name == "reference").unwrap();
    let record = Sim::experiment_builder(&exp, profile, "round-robin", 0)
        .keep_trace(true)
        .build()
        .unwrap()
        .run();
    assert!(!record.grants.is_empty(), "the user had to authorise");
    let converted = a2a_chaos::shrink::convert(&record);
    let authorised: Vec<_> = converted
        .events
        .iter()
        .filter_map(|e| match &e.step {
            a2a_chaos::scenario::Step::Authorize(s) => Some(s.conversation.clone()),
            _ => None,
        })
        .collect();
    // A grant of a task no conversation owns (a retry that made a second task on another
    // replica) has no step to hang on: it is left out, and said so in the notes.
    let owner = |task: &str| {
        record
            .conversations
            .iter()
            .find(|(_, id)| id.as_str() == task)
            .map(|(c, _)| c.clone())
    };
    let owned: Vec<_> = record
        .grants
        .iter()
        .filter(|g| owner(&g.task_id).is_some())
        .collect();
    assert!(!owned.is_empty(), "a conversation's task was authorised");
    assert_eq!(authorised.len(), owned.len(), "{:?}", converted.notes);
    for grant in &owned {
        assert!(authorised.contains(&owner(&grant.task_id).unwrap()));
    }
    for grant in record.grants.iter().filter(|g| owner(&g.task_id).is_none()) {
        assert!(
            converted.notes.iter().any(|n| n.contains(&grant.task_id)),
            "{:?}",
            converted.notes
        );
    }
}
