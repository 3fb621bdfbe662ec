//! The profile loader's own tests: every built-in profile loads and cites its knobs, and
//! optional knobs default when absent.

use super::*;

#[test]
fn every_builtin_profile_loads_and_cites_every_knob() {
    for (name, _) in BUILTIN {
        let p = Profile::load(name).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&p.name, name, "a profile's name matches its registry line");
    }
}

#[test]
fn every_builtin_profile_describes_its_card_client() {
    for (name, _) in BUILTIN {
        let p = Profile::load(name).unwrap();
        assert!(p.card.is_some(), "{name} has no [card] group");
    }
}

#[test]
fn card_knobs_must_be_cited_when_present_and_may_be_absent() {
    let (_, text) = BUILTIN[0];
    let uncited = text.replace("\"card.verify\"", "\"card.verify_typo\"");
    let err = Profile::parse(&uncited, "x.toml").unwrap_err().to_string();
    assert!(err.contains("card.verify"), "{err}");
    // A profile written before the card group (no [card], no card sources) loads.
    let mut old = String::new();
    let mut skip = false;
    for line in text.lines() {
        if line.starts_with('[') {
            skip = line == "[card]";
        }
        if !skip && !line.starts_with("\"card.") {
            old.push_str(line);
            old.push('\n');
        }
    }
    let p = Profile::parse(&old, "old.toml").unwrap_or_else(|e| panic!("{e}"));
    assert!(p.card.is_none());
}

#[test]
fn optional_knobs_are_cited_when_set_and_default_when_absent() {
    for (name, _) in BUILTIN {
        let p = Profile::load(name).unwrap();
        assert!(
            p.auth.auth_required_resume.is_some(),
            "{name} sets auth.auth_required_resume"
        );
        let card = p.card.as_ref().unwrap();
        assert!(
            card.discovery_credential.is_some(),
            "{name} sets card.discovery_credential"
        );
    }
    let (_, text) = BUILTIN[0];
    let uncited = text.replace(
        "\"auth.auth_required_resume\"",
        "\"auth.auth_required_resume_typo\"",
    );
    let err = Profile::parse(&uncited, "x.toml").unwrap_err().to_string();
    assert!(err.contains("auth.auth_required_resume"), "{err}");
    // Left out with its source, the knob takes its default.
    let old: String = text
        .lines()
        .filter(|l| {
            !l.starts_with("auth_required_resume")
                && !l.starts_with("\"auth.auth_required_resume\"")
                && !l.starts_with("discovery_credential")
                && !l.starts_with("\"card.discovery_credential\"")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let p = Profile::parse(&old, "old.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.auth.resume(), AuthResume::AnyMessage);
    assert!(p.card.unwrap().fetch_with_credential());
}

#[test]
fn a_missing_source_is_refused() {
    let (_, text) = BUILTIN[0];
    let cut = text.replace("\"dedup.ttl_ms\"", "\"dedup.ttl_ms_typo\"");
    let err = Profile::parse(&cut, "x.toml").unwrap_err().to_string();
    assert!(err.contains("dedup.ttl_ms"), "{err}");
}

/// The text of the built-in profile `name`.
fn builtin(name: &str) -> &'static str {
    BUILTIN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
        .expect("built in")
}

#[test]
fn keeping_the_task_after_a_subscription_needs_a_cached_snapshot() {
    let text = builtin("a2a-python-1.1");
    assert!(Profile::parse(text, "x.toml").is_ok());
    let uncached = text.replace("cache_snapshot = true", "cache_snapshot = false");
    let err = Profile::parse(&uncached, "x.toml").unwrap_err().to_string();
    assert!(
        err.contains("subscribe.keeps_task needs handler.cache_snapshot"),
        "{err}"
    );
}

#[test]
fn keeping_the_task_after_a_cancel_needs_a_cached_snapshot() {
    let text = builtin("a2a-python-1.1");
    // Without the subscription's keeps_task, only the cancel's needs the cache.
    let cancel_only = text
        .replace("cache_snapshot = true", "cache_snapshot = false")
        .replace("keeps_task = true\n\n[dedup]", "\n[dedup]");
    let err = Profile::parse(&cancel_only, "x.toml")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cancel.keeps_task needs handler.cache_snapshot"),
        "{err}"
    );
}

#[test]
fn keeping_a_failed_consumers_task_needs_an_executor_that_runs_on() {
    let text = builtin("a2a-python-1.1");
    let no_orphan = text.replace(
        "executor_outlives_consumer = true",
        "executor_outlives_consumer = false",
    );
    let err = Profile::parse(&no_orphan, "x.toml")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("handler.failed_consumer_keeps_task needs handler.executor_outlives_consumer"),
        "{err}"
    );
}

#[test]
fn anonymous_dispatch_is_refused_with_shared_push_configs() {
    let text = std::fs::read_to_string("tests/models/a2a-python-1.0.1.toml").unwrap();
    let p = Profile::parse(&text, "a2a-python-1.0.1.toml").unwrap_or_else(|e| panic!("{e}"));
    assert!(p.push.dispatch_as_anonymous);
    let shared = text.replace("shared_configs = false", "shared_configs = true");
    let err = Profile::parse(&shared, "x.toml").unwrap_err().to_string();
    assert!(err.contains("per-pod configs only"), "{err}");
}
