//! Shared machinery of the `fuzz_*` targets: the runner, the case count, and structure-aware
//! mutation of real TOML files.
//!
//! Every target is a proptest property run with a fixed RNG seed, so `cargo test` fuzzes the
//! same inputs on every machine. Two environment variables widen a run (see
//! `docs/FUZZING.md`):
//! - `A2A_CHAOS_FUZZ_CASES`: inputs per property (default: each property's own small count);
//! - `A2A_CHAOS_FUZZ_SEED`: the proptest RNG seed (default 0).
//!
//! A failing input is printed shrunk and is not written to `proptest-regressions/`: pin it as
//! a named test instead (STYLE.md habit 5).

// Each `fuzz_*` test crate uses a different part of this module.
#![allow(dead_code)]

use std::cell::Cell;
use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use a2a_chaos::error::InputError;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};

/// Inputs a property runs: `A2A_CHAOS_FUZZ_CASES`, or `default` when unset.
pub fn inputs(default: u64) -> u64 {
    match std::env::var("A2A_CHAOS_FUZZ_CASES") {
        Ok(v) => v
            .trim()
            .replace('_', "")
            .parse()
            .unwrap_or_else(|_| panic!("A2A_CHAOS_FUZZ_CASES = {v:?} is not a number")),
        Err(_) => default,
    }
}

/// The proptest RNG seed: `A2A_CHAOS_FUZZ_SEED`, or 0.
pub fn seed() -> u64 {
    std::env::var("A2A_CHAOS_FUZZ_SEED")
        .ok()
        .map(|v| {
            v.trim()
                .parse()
                .unwrap_or_else(|_| panic!("A2A_CHAOS_FUZZ_SEED = {v:?} is not a u64"))
        })
        .unwrap_or(0)
}

thread_local! {
    /// Inputs the system under test accepted in the running property (proptest runs a
    /// property on the test's own thread).
    static ACCEPTED: Cell<u64> = const { Cell::new(0) };
    /// Inputs that hit a known, pinned bug and were stepped around.
    static KNOWN_BUG: Cell<u64> = const { Cell::new(0) };
}

/// Counts one input that hit a known bug (pinned by an `#[ignore]`d test) and was skipped.
pub fn known_bug() {
    KNOWN_BUG.with(|a| a.set(a.get() + 1));
}

/// Counts one input that was accepted (parsed, answered with a result), so a run shows how
/// much of the fuzzing got past the first check.
pub fn accepted() {
    ACCEPTED.with(|a| a.set(a.get() + 1));
}

/// Stack for the thread a property runs on: proptest builds deeply nested value trees for
/// structured strategies, and at the test profile's `opt-level = 1` their frames outgrow the
/// 2 MiB a test thread gets.
const FUZZ_STACK_BYTES: usize = 256 << 20;

/// Runs `f` on a thread with [`FUZZ_STACK_BYTES`] of stack, passing on its panic.
pub fn on_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(FUZZ_STACK_BYTES)
            .spawn_scoped(scope, f)
            .expect("a thread starts")
            .join()
    })
    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Runs `test` on `default_inputs` inputs (or `A2A_CHAOS_FUZZ_CASES`) drawn from the
/// strategy `make` builds, where one case carries `inputs_per_case` inputs. Prints the count
/// and the wall time. `test` returns how many inputs the case really ran. The strategy is
/// built on the fuzz thread (proptest's boxed strategies do not cross threads).
pub fn fuzz<S>(
    name: &str,
    default_inputs: u64,
    inputs_per_case: u64,
    make: impl FnOnce() -> S + Send,
    test: impl Fn(S::Value) -> Result<u64, TestCaseError> + Sync,
) where
    S: Strategy,
    S::Value: Debug,
{
    let total = inputs(default_inputs);
    let cases = total.div_ceil(inputs_per_case.max(1)).max(1);
    let config = Config {
        cases: u32::try_from(cases).unwrap_or(u32::MAX),
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed()),
        max_shrink_iters: 2048,
        ..Config::default()
    };
    let outcome = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name(format!("fuzz {name}"))
            .stack_size(FUZZ_STACK_BYTES)
            .spawn_scoped(scope, || {
                let strategy = make();
                let mut runner = TestRunner::new(config);
                let ran = AtomicU64::new(0);
                ACCEPTED.with(|a| a.set(0));
                KNOWN_BUG.with(|a| a.set(0));
                let started = Instant::now();
                let result = runner.run(&strategy, |value| {
                    let n = test(value)?;
                    ran.fetch_add(n, Ordering::Relaxed);
                    Ok(())
                });
                let secs = started.elapsed().as_secs_f64();
                eprintln!(
                    "fuzz {name}: {} inputs in {cases} cases ({} accepted, {} on known bugs), \
                     {secs:.2} s (seed {})",
                    ran.load(Ordering::Relaxed),
                    ACCEPTED.with(Cell::get),
                    KNOWN_BUG.with(Cell::get),
                    seed()
                );
                result.map_err(|e| e.to_string())
            })
            .expect("a fuzz thread starts")
            .join()
    });
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("fuzz {name} failed: {e}"),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Checks that an error on a file named `origin` is one clear message naming the file, and,
/// when it is located, a line and column inside `text`.
pub fn check_input_error(err: &InputError, origin: &str, text: &str) -> Result<(), TestCaseError> {
    prop_assert!(
        err.origin.starts_with(origin),
        "error does not name the file: {err:?}"
    );
    prop_assert!(!err.message.trim().is_empty(), "empty message: {err:?}");
    let shown = err.to_string();
    prop_assert!(shown.starts_with(origin), "{shown}");
    // `file:LINE:COL` when the TOML parser located the problem (`file: step N` and the like
    // when validation did).
    let located = err
        .origin
        .strip_prefix(origin)
        .and_then(|r| r.strip_prefix(':'))
        .filter(|r| r.starts_with(|c: char| c.is_ascii_digit()));
    if let Some(rest) = located {
        let mut parts = rest.split(':');
        let line: usize =
            parts.next().unwrap_or("").parse().map_err(|_| {
                TestCaseError::fail(format!("bad location in origin {:?}", err.origin))
            })?;
        let column: usize =
            parts.next().unwrap_or("").parse().map_err(|_| {
                TestCaseError::fail(format!("bad location in origin {:?}", err.origin))
            })?;
        let lines = text.matches('\n').count() + 1;
        prop_assert!(
            (1..=lines).contains(&line),
            "line {line} outside 1..={lines}: {err:?}"
        );
        prop_assert!(column >= 1, "column 0: {err:?}");
    }
    Ok(())
}

/// Values that break parsers and validators: limits, signs, NaN, infinities, unicode, wrong
/// types, empty containers.
pub const HOSTILE_VALUES: &[&str] = &[
    "0",
    "1",
    "-1",
    "-0",
    "2",
    "16",
    "17",
    "200",
    "201",
    "50",
    "51",
    "10000",
    "10001",
    "10000000",
    "10000001",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "1e308",
    "-1e308",
    "1e-320",
    "0.5",
    "1.5",
    "nan",
    "-nan",
    "+nan",
    "inf",
    "-inf",
    "0x7fffffffffffffff",
    "0o777",
    "0b1",
    "1_000_000",
    "true",
    "false",
    "\"\"",
    "\" \"",
    "\"replica-0\"",
    "\"replica-1\"",
    "\"replica-99\"",
    "\"replica-18446744073709551616\"",
    "\"replica--1\"",
    "\"client\"",
    "\"store\"",
    "\"router\"",
    "\"all\"",
    "\"reference\"",
    "\"a2a-python-1.1\"",
    "\"a2a-python-1.3-memory\"",
    "\"models/reference.toml\"",
    "\"missing.toml\"",
    "\"round-robin\"",
    "\"context-affinity\"",
    "\"no-lost-writes\"",
    "\"liveness\"",
    "\"memory\"",
    "\"shared\"",
    "\"per-pod\"",
    "\"none\"",
    "\"rpc-error\"",
    "\"unavailable\"",
    "\"\\u0000\"",
    "\"\\uD800\"",
    "\"ü🦀\u{202e}\u{200b}\"",
    "\"\u{FEFF}\"",
    "'literal \\n'",
    "\"\"\"\nmulti\nline\"\"\"",
    "[]",
    "[[]]",
    "[1, \"a\"]",
    "[\"replica-0\", \"store\"]",
    "[\"replica-0\", \"replica-0\"]",
    "[\"client\", \"client\"]",
    "[\"no-lost-writes\", \"nope\"]",
    "{}",
    "{ start = 0, count = 1 }",
    "{ start = 18446744073709551615, count = 1 }",
    "{ conversation = \"c1\", turn = 1 }",
    "{ conversation = \"c1\", turn = 0 }",
    "{ conversation = \"c1\", turn = 4294967295, to = \"replica-0\" }",
    "{ conversation = \"c1\" }",
    "[ { send = { conversation = \"c1\", turn = 1 } } ]",
    "[ { concurrent = [] } ]",
    "1979-05-27T07:32:00Z",
    "07:32:00",
    "1979-05-27",
];

/// Fragments inserted as whole lines: headers, stray syntax, duplicated keys.
pub const HOSTILE_LINES: &[&str] = &[
    "[[step]]",
    "[step]",
    "[expect]",
    "[expect.reference]",
    "[workload]",
    "[faults]",
    "[sources]",
    "[store]",
    "[handler]",
    "[dedup]",
    "[ledger]",
    "[[[",
    "]]",
    "=",
    "= 1",
    "key =",
    "\"\" = 1",
    "a.b.c = 1",
    "name = \"dup\"",
    "replicas = 3",
    "seed = -1",
    "kill = \"replica-0\"",
    "wait-ms = 18446744073709551615",
    "drop-reply = true",
    "heal = \"all\"",
    "partition = [\"replica-0\", \"replica-0\"]",
    "violations = [\"no-lost-writes\"]",
    "kill = nan",
    "window-ms = 18446744073709551615",
    "liveness-ms = 18446744073709551615",
    "\"store.placement\" = \"\"",
    "\"unknown.knob\" = \"x\"",
    "# comment \u{1F980}",
    "\u{0}",
    "\u{7f}",
    "\r",
    "\t",
    "ü = 1",
    "\"ü\" = \"🦀\"",
];

/// One edit of a text file, addressed by indexes reduced modulo the file's size.
#[derive(Debug, Clone)]
pub enum Mutation {
    DeleteLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    /// Replaces the value of a `key = value` line (or the whole line) with a hostile value.
    SetValue(usize, usize),
    /// Swaps the values of two `key = value` lines.
    SwapValues(usize, usize),
    InsertLine(usize, usize),
    InsertText(usize, String),
    /// Cuts the file at a byte offset (on a char boundary).
    Truncate(usize),
    /// Renames a key by one character.
    MangleKey(usize, char),
    /// Repeats a line many times.
    RepeatLine(usize, usize),
}

/// A strategy for one mutation.
pub fn mutation() -> impl Strategy<Value = Mutation> {
    let idx = any::<usize>();
    prop_oneof![
        3 => idx.prop_map(Mutation::DeleteLine),
        2 => idx.prop_map(Mutation::DuplicateLine),
        1 => (idx, idx).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        6 => (idx, idx).prop_map(|(a, b)| Mutation::SetValue(a, b)),
        2 => (idx, idx).prop_map(|(a, b)| Mutation::SwapValues(a, b)),
        3 => (idx, idx).prop_map(|(a, b)| Mutation::InsertLine(a, b)),
        2 => (idx, ".{0,12}").prop_map(|(a, s)| Mutation::InsertText(a, s)),
        1 => idx.prop_map(Mutation::Truncate),
        2 => (idx, any::<char>()).prop_map(|(a, c)| Mutation::MangleKey(a, c)),
        1 => (idx, 0usize..300).prop_map(|(a, n)| Mutation::RepeatLine(a, n)),
    ]
}

fn split_value(line: &str) -> Option<(&str, &str)> {
    let eq = line.find('=')?;
    Some((&line[..eq], &line[eq + 1..]))
}

/// Applies `mutations` to `text`, in order.
pub fn mutate(text: &str, mutations: &[Mutation]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for m in mutations {
        let n = lines.len().max(1);
        match m {
            Mutation::DeleteLine(i) => {
                if !lines.is_empty() {
                    lines.remove(i % n);
                }
            }
            Mutation::DuplicateLine(i) => {
                if !lines.is_empty() {
                    let l = lines[i % n].clone();
                    lines.insert(i % n, l);
                }
            }
            Mutation::SwapLines(a, b) => {
                if !lines.is_empty() {
                    lines.swap(a % n, b % n);
                }
            }
            Mutation::SetValue(i, v) => {
                if !lines.is_empty() {
                    let value = HOSTILE_VALUES[v % HOSTILE_VALUES.len()];
                    let l = &mut lines[i % n];
                    *l = match split_value(l) {
                        Some((key, _)) => format!("{key}= {value}"),
                        None => value.to_string(),
                    };
                }
            }
            Mutation::SwapValues(a, b) => {
                if !lines.is_empty() {
                    let (a, b) = (a % n, b % n);
                    if let (Some((ka, va)), Some((kb, vb))) =
                        (split_value(&lines[a]), split_value(&lines[b]))
                    {
                        let (na, nb) = (format!("{ka}={vb}"), format!("{kb}={va}"));
                        lines[a] = na;
                        lines[b] = nb;
                    }
                }
            }
            Mutation::InsertLine(i, l) => {
                let line = HOSTILE_LINES[l % HOSTILE_LINES.len()];
                lines.insert(i % (lines.len() + 1), line.to_string());
            }
            Mutation::InsertText(i, s) => {
                if !lines.is_empty() {
                    let l = &mut lines[i % n];
                    let at = floor_char_boundary(l, i / n % (l.len() + 1));
                    l.insert_str(at, s);
                }
            }
            Mutation::Truncate(i) => {
                let mut joined = lines.join("\n");
                let at = floor_char_boundary(&joined, i % (joined.len() + 1));
                joined.truncate(at);
                lines = joined.lines().map(str::to_string).collect();
            }
            Mutation::MangleKey(i, c) => {
                if !lines.is_empty() {
                    let l = &mut lines[i % n];
                    if let Some(eq) = l.find('=') {
                        let at = floor_char_boundary(l, eq / 2);
                        l.insert(at, *c);
                    }
                }
            }
            Mutation::RepeatLine(i, times) => {
                if !lines.is_empty() {
                    let l = lines[i % n].clone();
                    let at = i % n;
                    for _ in 0..*times {
                        lines.insert(at, l.clone());
                    }
                }
            }
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The files under `dir` (relative to the crate) ending in `.toml`, sorted, with their text.
pub fn corpus(dir: &str) -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut out: Vec<(String, String)> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("readable corpus file");
            (
                format!("{dir}/{}", p.file_name().unwrap().to_string_lossy()),
                text,
            )
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no .toml files in {dir}");
    out
}

/// Arbitrary bytes, biased towards TOML's own punctuation, as text (lossily decoded).
pub fn toml_noise() -> impl Strategy<Value = String> {
    let atom = prop_oneof![
        4 => "[a-z_\\-]{1,8}",
        2 => Just(" = ".to_string()),
        2 => Just("\n".to_string()),
        1 => Just("[[step]]\n".to_string()),
        1 => Just("[".to_string()),
        1 => Just("]".to_string()),
        1 => Just("{".to_string()),
        1 => Just("}".to_string()),
        1 => Just("\"".to_string()),
        1 => Just(",".to_string()),
        1 => Just(".".to_string()),
        2 => proptest::sample::select(HOSTILE_VALUES).prop_map(str::to_string),
        1 => any::<String>(),
    ];
    prop_oneof![
        3 => proptest::collection::vec(atom, 0..40).prop_map(|v| v.concat()),
        1 => proptest::collection::vec(any::<u8>(), 0..256)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        1 => any::<String>(),
    ]
}

/// A field value for generated files: usually one of `valid`, sometimes one of `invalid`
/// or a hostile value, so most files get past the first check and some do not.
pub fn pick(
    valid: &'static [&'static str],
    invalid: &'static [&'static str],
) -> BoxedStrategy<String> {
    let valid = proptest::sample::select(valid).prop_map(str::to_string);
    let hostile = proptest::sample::select(HOSTILE_VALUES).prop_map(str::to_string);
    if invalid.is_empty() {
        prop_oneof![20 => valid, 1 => hostile].boxed()
    } else {
        let invalid = proptest::sample::select(invalid).prop_map(str::to_string);
        prop_oneof![20 => valid, 1 => invalid, 1 => hostile].boxed()
    }
}
