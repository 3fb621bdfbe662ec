//! Fuzzing model profiles: `model::Profile::parse` on arbitrary text, on structure-aware
//! mutations of every profile in `models/`, and on generated profiles with hostile knob
//! values.
//!
//! The promise under test: a profile that does not parse, or leaves a knob uncited, gives one
//! clear `InputError` naming the file (and line and column where the TOML parser locates the
//! problem), never a panic; a profile that parses cites every knob and nothing else, and
//! survives a write and a re-read unchanged.

mod fuzz_support;

use a2a_chaos::model::Profile;
use fuzz_support::{check_input_error, corpus, fuzz, mutate, mutation, pick, toml_noise};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

const ORIGIN: &str = "fuzz/model.toml";

fn check_parse(text: &str) -> Result<u64, TestCaseError> {
    match Profile::parse(text, ORIGIN) {
        Err(e) => check_input_error(&e, ORIGIN, text)?,
        Ok(p) => {
            fuzz_support::accepted();
            // Exactly the knobs the profile sets are cited: every field of its knob groups,
            // the optional card group's when it has one, each optional knob it sets.
            let knobs = p.knobs();
            for knob in &knobs {
                prop_assert!(
                    p.sources.get(knob).is_some_and(|s| !s.trim().is_empty()),
                    "knob {knob} uncited"
                );
            }
            prop_assert_eq!(p.sources.len(), knobs.len());
            let again = toml::to_string(&p)
                .map_err(|e| TestCaseError::fail(format!("cannot write back: {e}")))?;
            let reparsed = Profile::parse(&again, ORIGIN)
                .map_err(|e| TestCaseError::fail(format!("re-read failed: {e}\n{again}")))?;
            prop_assert_eq!(toml::to_string(&reparsed).unwrap(), again);
        }
    }
    Ok(1)
}

#[test]
fn fuzz_model_arbitrary_text() {
    fuzz("model/arbitrary-text", 3000, 1, toml_noise, |text| {
        check_parse(&text)
    });
}

#[test]
fn fuzz_model_mutated_profiles() {
    let files = corpus("models");
    let n = files.len();
    fuzz(
        "model/mutated-profiles",
        5000,
        1,
        move || (0..n, proptest::collection::vec(mutation(), 1..4)),
        |(i, edits)| check_parse(&mutate(&files[i].1, &edits)),
    );
}

/// Every knob a complete profile has (the reference's, which sets every optional one).
fn all_knobs() -> Vec<String> {
    Profile::load("reference").unwrap().knobs()
}

/// A profile with every knob set from a pool of ordinary and hostile values, and a
/// `[sources]` table that may miss, blank or invent a knob.
fn generated_profile() -> impl Strategy<Value = String> {
    let knobs = all_knobs();
    let u32s: &'static [&'static str] = &["0", "1", "5", "4294967295"];
    let bad_u32s: &'static [&'static str] = &["4294967296", "-1", "1.5"];
    let u64s: &'static [&'static str] = &["0", "1", "5000", "18446744073709551615"];
    let bad_u64s: &'static [&'static str] = &["-1", "1e3", "18446744073709551616"];
    let bools: &'static [&'static str] = &["true", "false"];
    // How `[sources]` goes wrong, if it does: (kind, knob index).
    let sources = prop_oneof![
        8 => Just(None),
        1 => (0u8..3, 0..knobs.len()).prop_map(Some),
    ];
    (
        (
            pick(&["\"memory\"", "\"shared\""], &["\"disk\""]),
            pick(bools, &["1"]),
            pick(u32s, bad_u32s),
        ),
        (
            pick(bools, &[]),
            pick(
                &["\"reject-before-executor\"", "\"reject-after-executor\"", "\"ignore\""],
                &["\"maybe\""],
            ),
            pick(&["-32004", "-32603", "0", "2147483647"], &["-2147483649"]),
            pick(u32s, bad_u32s),
            pick(&["\"rpc-error\"", "\"unavailable\""], &["\"silent\""]),
        ),
        (
            pick(&["\"none\"", "\"per-pod\"", "\"shared\""], &["\"global\""]),
            pick(u64s, bad_u64s),
            pick(u64s, bad_u64s),
        ),
        pick(bools, &[]),
        sources,
    )
        .prop_map(move |((placement, versioned, retries), handler, dedup, key, sources)| {
            let (cache, mismatch, code, reapply, after) = handler;
            let (scope, ttl, lease) = dedup;
            let mut s = format!(
                "name = \"gen\"\ndescription = \"generated\"\n\
                 [store]\nplacement = {placement}\nversioned = {versioned}\ntransient_retries = {retries}\n\
                 [handler]\ncache_snapshot = {cache}\ncontext_mismatch = {mismatch}\n\
                 message_to_terminal_code = {code}\nconflict_reapply = {reapply}\n\
                 after_effect_failure = {after}\n\
                 [dedup]\nscope = {scope}\nttl_ms = {ttl}\nlease_ms = {lease}\n\
                 [ledger]\nidempotency_key = {key}\n[sources]\n"
            );
            for (i, knob) in knobs.iter().enumerate() {
                match sources {
                    Some((0, k)) if k == i => {}
                    Some((1, k)) if k == i => s.push_str(&format!("\"{knob}\" = \"  \"\n")),
                    _ => s.push_str(&format!("\"{knob}\" = \"choice: fuzz\"\n")),
                }
            }
            if matches!(sources, Some((2, _))) {
                s.push_str("\"store.colour\" = \"choice: fuzz\"\n");
            }
            s
        })
}

#[test]
fn fuzz_model_generated_profiles() {
    fuzz("model/generated", 3000, 1, generated_profile, |text| {
        check_parse(&text)
    });
}

#[test]
fn every_builtin_profile_survives_the_checks() {
    for (name, text) in a2a_chaos::model::BUILTIN {
        check_parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn a_negative_or_huge_knob_names_its_line() {
    let (_, text) = a2a_chaos::model::BUILTIN[0];
    for bad in [
        "ttl_ms = -1",
        "ttl_ms = 18446744073709551616",
        "ttl_ms = nan",
    ] {
        let t = text
            .lines()
            .scan(false, |done, l| {
                // The first `ttl_ms` (the dedup TTL): the card group has one too.
                Some(if !*done && l.starts_with("ttl_ms") {
                    *done = true;
                    bad
                } else {
                    l
                })
            })
            .collect::<Vec<_>>()
            .join("\n");
        let err = Profile::parse(&t, "m.toml").unwrap_err();
        let line = t.lines().position(|l| l == bad).unwrap() + 1;
        assert!(
            err.origin.starts_with(&format!("m.toml:{line}:")),
            "{bad}: {err}"
        );
    }
}
