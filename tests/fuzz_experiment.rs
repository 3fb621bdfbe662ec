//! Fuzzing experiment files: `experiment::Experiment::parse` on arbitrary text, on
//! structure-aware mutations of `experiments/default.toml`, and on generated experiments
//! full of hostile values.
//!
//! The promise under test (CONTRACT.md): unusable input gives one clear `InputError` naming
//! the file (with line and column where the TOML parser locates the problem), never a panic;
//! usable input gives an experiment that respects every bound (seed count, replicas,
//! conversations, turns, fault rates) and a simulated-time budget that really covers its
//! fault window and liveness phase. The bounds are pinned by the `bound_*` tests.
//!
//! No known bug is stepped around: the two this target found (a budget that overflowed, a
//! fault window without an upper bound) are fixed, and each stays pinned by its `bug_*`
//! test below.

mod fuzz_support;

use a2a_chaos::experiment::{Experiment, SEEDS_MAX};
use a2a_chaos::faults::FAULTS;
use a2a_chaos::scenario::REPLICAS_MAX;
use a2a_chaos::workload::{CONVERSATIONS_MAX, TURNS_MAX};
use fuzz_support::{check_input_error, corpus, fuzz, mutate, mutation, pick, toml_noise};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

const ORIGIN: &str = "fuzz/experiment.toml";

/// What every parse must satisfy: a clear error, or an experiment within every bound.
fn check_parse(text: &str) -> Result<u64, TestCaseError> {
    match Experiment::parse(text, ORIGIN, None) {
        Err(e) => check_input_error(&e, ORIGIN, text)?,
        Ok(exp) => {
            fuzz_support::accepted();
            let f = &exp.file;
            prop_assert!(!f.models.is_empty() && !f.routing.is_empty());
            prop_assert_eq!(exp.profiles.len(), f.models.len());
            for r in &f.routing {
                prop_assert!(a2a_chaos::router::strategy(r).is_some(), "routing {r}");
            }
            prop_assert!((1..=REPLICAS_MAX).contains(&f.replicas));
            prop_assert!((1..=SEEDS_MAX).contains(&f.seeds.count));
            prop_assert!(f.seeds.start.checked_add(f.seeds.count).is_some());
            let w = &f.workload;
            prop_assert!((1..=CONVERSATIONS_MAX).contains(&w.conversations));
            prop_assert!((1..=TURNS_MAX).contains(&w.turns));
            prop_assert!(w.gap_ms[0] <= w.gap_ms[1]);
            prop_assert!((0.0..=1.0).contains(&w.duplicate_rate));
            prop_assert!(w.request_timeout_ms > 0);
            for (name, rate) in &f.faults.rates {
                prop_assert!(FAULTS.iter().any(|(n, _)| n == name), "fault {name}");
                prop_assert!(rate.is_finite() && *rate >= 0.0, "{name} = {rate}");
                // Within what the rate means (a probability, or what the planner places).
                let kind = a2a_chaos::faults::fault(name).expect("a known fault");
                let max = kind.rate().max(f.faults.window_ms, f.faults.swarm);
                prop_assert!(*rate <= max, "{name} = {rate} over {max}");
            }
            // The budget covers the fault window and the liveness phase.
            let needed = u128::from(f.faults.window_ms) + u128::from(f.faults.liveness_ms);
            prop_assert!(exp.budget.as_millis() > needed, "budget {:?}", exp.budget);
            for m in &f.models {
                let _ = exp.expected(m);
            }
            // What parsed must survive a write and a re-read unchanged.
            let again = toml::to_string(f)
                .map_err(|e| TestCaseError::fail(format!("cannot write back: {e}")))?;
            let reparsed = Experiment::parse(&again, ORIGIN, None)
                .map_err(|e| TestCaseError::fail(format!("re-read failed: {e}\n{again}")))?;
            prop_assert_eq!(&reparsed.file, f);
        }
    }
    Ok(1)
}

#[test]
fn fuzz_experiment_arbitrary_text() {
    fuzz("experiment/arbitrary-text", 3000, 1, toml_noise, |text| {
        check_parse(&text)
    });
}

#[test]
fn fuzz_experiment_mutated_default() {
    let mut files = corpus("experiments");
    files.push((
        "embedded".into(),
        a2a_chaos::experiment::DEFAULT.to_string(),
    ));
    let n = files.len();
    fuzz(
        "experiment/mutated-default",
        4000,
        1,
        move || (0..n, proptest::collection::vec(mutation(), 1..4)),
        |(i, edits)| check_parse(&mutate(&files[i].1, &edits)),
    );
}

fn generated_experiment() -> impl Strategy<Value = String> {
    let models = proptest::collection::vec(
        pick(
            &[
                "\"reference\"",
                "\"a2a-python-1.1\"",
                "\"a2a-python-1.3-memory\"",
                "\"models/reference.toml\"",
            ],
            &["\"nope\"", "\"\"", "\"missing.toml\""],
        ),
        1..4,
    );
    let routing = proptest::collection::vec(
        pick(
            &[
                "\"round-robin\"",
                "\"context-affinity\"",
                "\"random\"",
                "\"affinity-failover\"",
            ],
            &["\"sticky\""],
        ),
        1..3,
    );
    let workload = proptest::collection::btree_map(
        proptest::sample::select(
            &[
                "conversations",
                "turns",
                "request-timeout-ms",
                "retries",
                "retry-backoff-ms",
                "start-spread-ms",
            ][..],
        ),
        pick(
            &["1", "2", "8", "50"],
            &["0", "201", "51", "-1", "4294967296", "0.5"],
        ),
        0..4,
    );
    let workload_extra = proptest::option::of(prop_oneof![
        pick(
            &["[0, 1]", "[50, 250]", "[0, 18446744073709551615]"],
            &["[5, 1]", "[0]"]
        )
        .prop_map(|v| format!("gap-ms = {v}")),
        pick(&["0.0", "0.5", "1.0"], &["1.5", "-0.1", "nan"])
            .prop_map(|v| format!("duplicate-rate = {v}")),
        Just("think-ms = 5".to_string()),
    ]);
    let faults = proptest::collection::btree_map(
        proptest::sample::select(&["kill", "partition", "latency", "lost-reply"][..]),
        pick(
            &["0.0", "0.5", "1.0", "3", "1e308"],
            &["-0.1", "nan", "inf"],
        ),
        0..4,
    );
    let fault_extra = proptest::option::of(prop_oneof![
        pick(&["true", "false"], &["1"]).prop_map(|v| format!("swarm = {v}")),
        pick(&["0", "3000", "100000"], &["-1"]).prop_map(|v| format!("window-ms = {v}")),
        pick(&["0", "2000"], &["-1"]).prop_map(|v| format!("liveness-ms = {v}")),
        Just("meteor = 1.0".to_string()),
    ]);
    let expect = proptest::option::of(pick(
        &[
            "[expect]\nviolations = []",
            "[expect]\nviolations = [\"no-lost-writes\"]",
            "[expect.reference]\nviolations = []",
        ],
        &[
            "[expect.nope]\nviolations = []",
            "[expect.reference]\nviolations = [\"nope\"]",
            "[expect]\nreference = 1",
        ],
    ));
    (
        (models, routing),
        proptest::option::of(pick(&["1", "3", "16"], &["0", "17"])),
        (
            pick(&["0", "1000", "18446744073709551614"], &["-1"]),
            pick(&["1", "100", "10000000"], &["0", "10000001"]),
        ),
        (workload, workload_extra),
        (faults, fault_extra),
        expect,
    )
        .prop_map(
            |((models, routing), replicas, (start, count), (workload, wx), (faults, fx), expect)| {
                let mut s = format!(
                    "name = \"gen\"\nmodels = [{}]\nrouting = [{}]\nseeds = {{ start = {start}, count = {count} }}\n",
                    models.join(", "),
                    routing.join(", ")
                );
                if let Some(r) = replicas {
                    s.push_str(&format!("replicas = {r}\n"));
                }
                s.push_str("[workload]\n");
                for (k, v) in workload {
                    s.push_str(&format!("{k} = {v}\n"));
                }
                if let Some(x) = wx {
                    s.push_str(&format!("{x}\n"));
                }
                s.push_str("[faults]\n");
                for (k, v) in faults {
                    s.push_str(&format!("{k} = {v}\n"));
                }
                if let Some(x) = fx {
                    s.push_str(&format!("{x}\n"));
                }
                if let Some(e) = expect {
                    s.push_str(&format!("{e}\n"));
                }
                s
            },
        )
}

#[test]
fn fuzz_experiment_generated() {
    fuzz(
        "experiment/generated",
        3000,
        1,
        generated_experiment,
        |text| check_parse(&text),
    );
}

// ------------------------------------------------------------------ bounds

fn with(line_in_section: &str, section: &str) -> String {
    let base = a2a_chaos::experiment::DEFAULT;
    base.replace(
        &format!("[{section}]\n"),
        &format!("[{section}]\n{line_in_section}\n"),
    )
}

fn seeds(start: u64, count: u64) -> String {
    a2a_chaos::experiment::DEFAULT.replace(
        "seeds = { start = 0, count = 100 }",
        &format!("seeds = {{ start = {start}, count = {count} }}"),
    )
}

#[test]
fn bound_seed_count_is_one_to_ten_million() {
    for (count, ok) in [
        (0, false),
        (1, true),
        (SEEDS_MAX, true),
        (SEEDS_MAX + 1, false),
    ] {
        let got = Experiment::parse(&seeds(0, count), "s.toml", None);
        assert_eq!(got.is_ok(), ok, "count {count}: {got:?}");
        if let Err(e) = got {
            assert!(e.message.contains("seeds.count"), "{e}");
        }
    }
}

#[test]
fn bound_seed_range_may_not_overflow() {
    let err = Experiment::parse(&seeds(u64::MAX, 1), "s.toml", None).unwrap_err();
    assert!(err.message.contains("overflows"), "{err}");
    assert!(Experiment::parse(&seeds(u64::MAX - 1, 1), "s.toml", None).is_ok());
}

#[test]
fn bound_conversations_and_turns() {
    let cases = [
        (format!("conversations = {CONVERSATIONS_MAX}"), true),
        (format!("conversations = {}", CONVERSATIONS_MAX + 1), false),
        ("conversations = 0".to_string(), false),
        (format!("turns = {TURNS_MAX}"), true),
        (format!("turns = {}", TURNS_MAX + 1), false),
        ("turns = 0".to_string(), false),
    ];
    for (line, ok) in cases {
        // The default sets both; the added line comes first, so drop the default's.
        let key = line.split(' ').next().unwrap();
        let text = with(&line, "workload")
            .replace(&format!("\n{key} = 4\n"), "\n")
            .replace(&format!("\n{key} = 8\n"), "\n");
        let got = Experiment::parse(&text, "w.toml", None);
        assert_eq!(got.is_ok(), ok, "{line}: {got:?}");
        if let Err(e) = got {
            assert!(e.message.contains(key), "{line}: {e}");
        }
    }
}

#[test]
fn bound_fault_rates_must_be_finite_and_non_negative() {
    for rate in ["nan", "inf", "-inf", "-0.5"] {
        let text = a2a_chaos::experiment::DEFAULT.replace("kill = 0.6", &format!("kill = {rate}"));
        let err = Experiment::parse(&text, "f.toml", None).unwrap_err();
        assert!(err.message.contains("kill"), "{rate}: {err}");
    }
    // A rate means arrivals per simulated second over the window: one past what the planner
    // places (1,000 a fault, half of that expected at the swarm's largest draw) would plan a
    // thousand kills near t = 0, close to none at all, so it is refused naming its range.
    let text = a2a_chaos::experiment::DEFAULT.replace("kill = 0.6", "kill = 1e308");
    let err = Experiment::parse(&text, "f.toml", None).unwrap_err();
    assert!(
        err.message.contains("kill = 1e308 is out of range")
            && err.message.contains("the range is [0, 95.238]"),
        "{err}"
    );
    let text = a2a_chaos::experiment::DEFAULT.replace("kill = 0.6", "kill = 95");
    assert!(Experiment::parse(&text, "f.toml", None).is_ok());
    // A probability is in [0, 1].
    for (line, ok) in [("lost-reply = 1.0", true), ("lost-reply = 7", false)] {
        let text = a2a_chaos::experiment::DEFAULT.replace("lost-reply = 0.03", line);
        assert_eq!(
            Experiment::parse(&text, "f.toml", None).is_ok(),
            ok,
            "{line}"
        );
    }
}

#[test]
fn bound_replicas() {
    for (n, ok) in [
        (0, false),
        (1, true),
        (REPLICAS_MAX, true),
        (REPLICAS_MAX + 1, false),
    ] {
        let text =
            a2a_chaos::experiment::DEFAULT.replace("replicas = 3", &format!("replicas = {n}"));
        assert_eq!(
            Experiment::parse(&text, "r.toml", None).is_ok(),
            ok,
            "replicas {n}"
        );
    }
}

// ------------------------------------------------------------------ fixed bugs, pinned

/// Postmortem (fixed): `Experiment::parse` computed the budget as
/// `window_ms + liveness_ms + 120_000` unchecked. With `window-ms = 18446744073709551615` it
/// panicked with "attempt to add with overflow" in debug builds and wrapped to a 124 s
/// budget in release (so the run was cut short long before its own fault window ended).
/// Fixed in src/faults/mod.rs, `FaultSpec::validate` (both phases at most `PHASE_MS_MAX`,
/// one simulated hour), and src/experiment.rs, `budget_for` (saturating sums).
#[test]
fn bug_huge_fault_window_overflows_the_budget() {
    for line in [
        "window-ms = 18446744073709551615",
        "liveness-ms = 18446744073709551615",
    ] {
        let text = with(line, "faults")
            .replace("\nwindow-ms = 3000\n", "\n")
            .replace("\nliveness-ms = 4000\n", "\n");
        let got = std::panic::catch_unwind(|| Experiment::parse(&text, "f.toml", None));
        match got {
            Err(_) => panic!("{line}: Experiment::parse panicked"),
            Ok(Ok(exp)) => panic!("{line}: accepted with a budget of {:?}", exp.budget),
            Ok(Err(e)) => assert!(e.message.contains("ms"), "{line}: {e}"),
        }
    }
}

/// Postmortem (fixed): nothing capped `window-ms` or `liveness-ms`, and the run budget grows
/// with them, so `window-ms = 1000000000000` (about 31 simulated years at 1 ms a tick) was a
/// run that never ends in practice. Fixed in src/faults/mod.rs, `FaultSpec::validate`: both
/// are at most `PHASE_MS_MAX` (3,600,000 ms).
#[test]
fn bug_fault_window_has_no_upper_bound() {
    let text = with("window-ms = 1000000000000", "faults").replace("\nwindow-ms = 3000\n", "\n");
    assert!(
        Experiment::parse(&text, "f.toml", None).is_err(),
        "a 31-year fault window was accepted"
    );
}
