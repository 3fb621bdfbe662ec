//! Fuzzing whole simulated runs: inputs that parse must run to an end, and a run that
//! panics or never ends must be contained and reported, never crash or hang the tool.
//!
//! - `fuzz_runs_generated_experiments`: small generated experiments (every model and routing,
//!   random workloads, fault mixes and windows) through `runner::run_one`;
//! - `fuzz_runs_mutated_scenarios`: mutations of the pinned scenarios that still parse,
//!   through `world::run` with a short simulated-time budget;
//! - containment: a run that reaches an `expect` is reported with its seed and reproduce
//!   command, and a sweep carries on past it; a run that never ends is cut at its
//!   simulated-time budget (`world::RunSpec::budget`) and reported with an error.
//!
//! Runs are slow next to parsing (tens of ms each), so the default counts are small; see
//! `docs/FUZZING.md` for longer runs. The bugs found here are fixed; each stays pinned by a
//! `bug_*` test at the bottom, with its postmortem, and no property steps around it.

mod fuzz_support;

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use a2a_chaos::experiment::Experiment;
use a2a_chaos::model::Profile;
use a2a_chaos::scenario::Script;
use a2a_chaos::sim::Sim;
use a2a_chaos::sweep::runner::{self, SweepOptions};
use fuzz_support::{corpus, fuzz, mutate, mutation};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

fn experiment(text: &str) -> Experiment {
    Experiment::parse(text, "fuzz/run.toml", None).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// A run's error must be `None`.
fn check_run_error(error: &Option<String>, input: &str) -> Result<(), TestCaseError> {
    match error {
        None => Ok(()),
        Some(e) => Err(TestCaseError::fail(format!("the run failed: {e}\n{input}"))),
    }
}

// ------------------------------------------------------------------ generated experiments

fn generated_run() -> impl Strategy<Value = String> {
    (
        proptest::sample::select(
            &[
                "\"reference\"",
                "\"a2a-python-1.1\"",
                "\"a2a-python-1.3-plain\"",
                "\"a2a-python-1.3-versioned\"",
                "\"a2a-python-1.3-memory\"",
            ][..],
        ),
        proptest::sample::select(
            &[
                "\"round-robin\"",
                "\"context-affinity\"",
                "\"random\"",
                "\"affinity-failover\"",
            ][..],
        ),
        (1usize..4, 0u64..1_000_000),
        (1u32..13, 1u32..5, 0u32..4),
        (
            prop_oneof![Just(1u64), Just(50), Just(1500), Just(10_000)],
            prop_oneof![Just(0u64), Just(200), Just(5_000)],
            prop_oneof![Just(0u64), Just(1), Just(500)],
            prop_oneof![Just(0.0f64), Just(0.3), Just(1.0)],
        ),
        (
            any::<bool>(),
            prop_oneof![Just(0u64), Just(500), Just(3000)],
            prop_oneof![Just(0u64), Just(2000)],
        ),
        proptest::collection::btree_map(
            proptest::sample::select(&["kill", "partition", "latency", "lost-reply"][..]),
            0usize..4,
            0..4,
        ),
    )
        .prop_map(
            |(
                model,
                routing,
                (replicas, seed),
                (conversations, turns, retries),
                timing,
                faults,
                rates,
            )| {
                let (timeout, backoff, spread, duplicates) = timing;
                let (swarm, window, liveness) = faults;
                let mut s = format!(
                    "name = \"run\"\nmodels = [{model}]\nrouting = [{routing}]\n\
                     replicas = {replicas}\nseeds = {{ start = {seed}, count = 1 }}\n\
                     [workload]\nconversations = {conversations}\nturns = {turns}\n\
                     retries = {retries}\nrequest-timeout-ms = {timeout}\n\
                     retry-backoff-ms = {backoff}\nstart-spread-ms = {spread}\n\
                     duplicate-rate = {duplicates:?}\n\
                     [faults]\nswarm = {swarm}\nwindow-ms = {window}\nliveness-ms = {liveness}\n"
                );
                // Running without faults is said explicitly (an empty `[faults]` is refused).
                if rates.is_empty() {
                    s.push_str("none = true\n");
                }
                // Values within what each rate means (faults::Rate): a probability in [0, 1];
                // arrivals per second up to a heavy 50/s, which every window drawn here
                // lets the planner place.
                for (k, i) in rates {
                    let v = if k == "lost-reply" {
                        [0.0f64, 0.5, 1.0, 1.0][i]
                    } else {
                        [0.0f64, 0.5, 2.0, 50.0][i]
                    };
                    s.push_str(&format!("{k} = {v:?}\n"));
                }
                s
            },
        )
}

#[test]
fn fuzz_runs_generated_experiments() {
    fuzz("runs/generated-experiments", 12, 1, generated_run, |text| {
        let exp = experiment(&text);
        let summary = runner::run_one(
            &exp,
            &exp.profiles[0],
            &exp.file.routing[0],
            exp.file.seeds.start,
        );
        check_run_error(&summary.error, &text)?;
        prop_assert_eq!(
            summary.requests,
            summary.ok + summary.fail + summary.info,
            "every operation has one outcome"
        );
        prop_assert!(!summary.trace_hash.is_empty());
        prop_assert!(summary.sim_ms < exp.budget.as_millis() as u64 + 1);
        fuzz_support::accepted();
        Ok(1)
    });
}

// ------------------------------------------------------------------ mutated scenarios

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".into())
}

#[test]
fn fuzz_runs_mutated_scenarios() {
    let files = corpus("tests/scenarios");
    let n = files.len();
    fuzz(
        "runs/mutated-scenarios",
        12,
        1,
        move || (0..n, proptest::collection::vec(mutation(), 0..3)),
        |(i, edits)| {
            let text = mutate(&files[i].1, &edits);
            let Ok(script) = Script::parse(&text, "fuzz/run.toml") else {
                return Ok(1);
            };
            let Ok(profile) = Profile::load(&script.file.model) else {
                return Ok(1);
            };
            let Ok(sim) = Sim::scenario_builder(&script)
                .model(profile)
                .budget(Duration::from_secs(30))
                .build()
            else {
                return Ok(1);
            };
            let record = match std::panic::catch_unwind(AssertUnwindSafe(|| sim.run())) {
                Ok(record) => record,
                Err(panic) => {
                    let why = panic_message(&*panic);
                    return Err(TestCaseError::fail(format!(
                        "the run panicked: {why}\n{text}"
                    )));
                }
            };
            match &record.error {
                Some(e) if e.contains("did not finish") => {}
                other => check_run_error(other, &text)?,
            }
            // The budget is checked once per step: a run may end within one tick past it
            // (`tick-ms` of the scenario, 1 ms unless it says otherwise).
            let tick_ms = script.file.tick_ms.max(1);
            prop_assert!(
                record.sim_ms <= 30_000 + tick_ms,
                "ran {} ms past a 30 s budget (tick {tick_ms} ms)",
                record.sim_ms
            );
            fuzz_support::accepted();
            Ok(1)
        },
    );
}

// ------------------------------------------------------------------ the command line

/// `a2a-chaos check FILE --json` on a mutated scenario: exit 0 or 1 with the contract's JSON
/// object last on stdout, or exit 2 with one clear line on stderr naming the file; never a
/// panic (exit 101).
#[test]
fn fuzz_runs_cli_check_on_mutated_scenarios() {
    let files = corpus("tests/scenarios");
    let n = files.len();
    let dir = std::env::temp_dir().join(format!("a2a-chaos-fuzz-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    fuzz(
        "runs/cli-check",
        20,
        1,
        move || (0..n, proptest::collection::vec(mutation(), 0..3)),
        |(i, edits)| {
            let text = mutate(&files[i].1, &edits);
            if text.contains("models") {
                // An experiment: a sweep of hundreds of runs, not what this property is for.
                return Ok(1);
            }
            let path = dir.join("mutated.toml");
            std::fs::write(&path, &text).unwrap();
            let path = path.display().to_string();
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_a2a-chaos"))
                .args(["check", &path, "--json"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .output()
                .expect("the binary runs");
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            match out.status.code() {
                Some(0 | 1) => {
                    let last = stdout.lines().last().unwrap_or("");
                    let v: serde_json::Value = serde_json::from_str(last).map_err(|e| {
                        TestCaseError::fail(format!("last line is not JSON ({e}): {last}"))
                    })?;
                    prop_assert_eq!(
                        v["expectations_met"].as_bool(),
                        Some(out.status.code() == Some(0)),
                        "{}",
                        v
                    );
                    fuzz_support::accepted();
                }
                Some(2) => {
                    // One message; it spans lines only when it quotes a multi-line value.
                    let first = stderr.lines().next().unwrap_or("");
                    prop_assert!(
                        first.starts_with(&format!("error: {path}")),
                        "names the file first: {stderr}"
                    );
                    prop_assert!(!stderr.contains("panicked"), "{stderr}");
                }
                other => {
                    return Err(TestCaseError::fail(format!(
                        "exit {other:?}\n{stderr}\n{text}"
                    )))
                }
            }
            Ok(1)
        },
    );
}

// ------------------------------------------------------------------ containment

const SMALL: &str = r#"
name = "small"
models = ["reference"]
routing = ["round-robin"]
replicas = 2
seeds = { start = 40, count = 2 }
[workload]
conversations = 2
turns = 2
[faults]
none = true
window-ms = 500
liveness-ms = 500
"#;

/// A spec the front door would refuse (an unknown routing strategy), built by hand so that
/// the run panics inside a simulated host: the router's `expect`.
fn panicking_spec(exp: &Experiment, seed: u64) -> a2a_chaos::world::RunSpec {
    let sim = Sim::from_experiment(exp, &exp.profiles[0], "round-robin", seed).unwrap();
    let mut spec = sim.spec().clone();
    // A router whose strategy cannot be made: it panics inside its simulated host.
    spec.strategy = || -> Box<dyn a2a_chaos::router::Strategy> {
        panic!("the routing strategy cannot be made")
    };
    spec
}

#[test]
fn an_unknown_routing_is_refused_before_the_run() {
    let exp = experiment(SMALL);
    let err = Sim::experiment_builder(&exp, &exp.profiles[0], "no-such-routing", 42)
        .build()
        .map(|_| ())
        .expect_err("refused");
    assert!(
        err.to_string()
            .contains("unknown routing `no-such-routing`"),
        "{err}"
    );
    let summary = runner::run_one(&exp, &exp.profiles[0], "no-such-routing", 42);
    let error = summary.error.as_deref().expect("the refusal is reported");
    assert!(error.starts_with("refused: "), "{error}");
    assert_eq!(summary.seed, 42);
    assert_eq!(summary.routing, "no-such-routing");
    assert!(exp
        .reproduce(summary.seed, &summary.model, &summary.routing)
        .contains("--seed 42"));
}

#[test]
fn a_panicking_run_is_contained() {
    let exp = experiment(SMALL);
    let spec = panicking_spec(&exp, 42);
    let error = a2a_chaos::sim::contain(|| a2a_chaos::world::run(&spec))
        .map(|_| ())
        .expect_err("the panic is contained")
        .to_string();
    assert!(
        error.contains("the routing strategy cannot be made"),
        "{error}"
    );
}

#[test]
fn a_sweep_carries_on_past_a_refused_run() {
    let mut exp = experiment(SMALL);
    exp.file.routing = vec!["round-robin".into(), "no-such-routing".into()];
    let runs = runner::sweep(
        &exp,
        &SweepOptions {
            jobs: 1,
            progress: false,
        },
    );
    assert_eq!(runs.len(), 4, "every seed of every combination is reported");
    for r in &runs {
        let panicked = r.error.as_deref().is_some_and(|e| e.starts_with("refused"));
        assert_eq!(
            panicked,
            r.routing == "no-such-routing",
            "{} seed {}: {:?}",
            r.routing,
            r.seed,
            r.error
        );
    }
}

#[test]
fn a_run_that_outlasts_its_budget_is_cut_and_reported() {
    // The experiment's own budget covers the slowest run its workload allows; a model that
    // livelocks would outlast it. Stand in for one with a 20 s budget and conversations that
    // start up to 100 s in.
    let exp = experiment(
        &SMALL
            .replace("turns = 2", "turns = 2\nstart-spread-ms = 100000")
            .replace("window-ms = 500", "window-ms = 0")
            .replace("liveness-ms = 500", "liveness-ms = 0"),
    );
    assert!(
        exp.budget > Duration::from_secs(100),
        "the budget covers the workload"
    );
    let record = Sim::experiment_builder(&exp, &exp.profiles[0], "round-robin", 3)
        .budget(Duration::from_secs(20))
        .build()
        .unwrap()
        .run();
    let error = record.error.as_deref().expect("the cut is reported");
    assert!(error.contains("did not finish"), "{error}");
    assert!(error.contains("budget 20 simulated s"), "{error}");
    assert!(
        record.sim_ms >= 20_000 && record.sim_ms <= 20_002,
        "{}",
        record.sim_ms
    );
}

#[test]
fn a_scenario_that_waits_forever_is_cut_at_its_budget() {
    let script = Script::parse(
        "name = \"w\"\nmodel = \"reference\"\n[[step]]\nsend = { conversation = \"c1\", turn = 1 }\n\
         [[step]]\nwait-ms = 9223372036854775807\n",
        "w.toml",
    )
    .unwrap();
    let profile = Profile::load("reference").unwrap();
    let record = Sim::scenario_builder(&script)
        .model(profile)
        .budget(Duration::from_secs(5))
        .build()
        .unwrap()
        .run();
    let error = record.error.as_deref().expect("the cut is reported");
    assert!(
        error.contains("did not finish") && error.contains("budget 5 simulated s"),
        "{error}"
    );
    assert_eq!(record.history.len(), 1, "the send before the wait ran");
}

// ------------------------------------------------------------------ fixed bugs, pinned

/// Postmortem (fixed): a panic inside a simulated host (here the router's strategy) was
/// reported as tokio's own follow-up panic, "a spawned task panicked and the LocalSet is
/// configured to shutdown on unhandled panic", so the report said that a run panicked but
/// not where or why. Fixed in src/sim/summary.rs, `contain`: a panic hook installed once
/// keeps the first panic's message and location while a run is contained, and the report
/// carries that.
#[test]
fn bug_a_contained_panic_loses_its_message() {
    let exp = experiment(SMALL);
    let spec = panicking_spec(&exp, 42);
    let error = a2a_chaos::sim::contain(|| a2a_chaos::world::run(&spec))
        .err()
        .map(|p| p.to_string())
        .unwrap_or_default();
    assert!(
        error.contains("the routing strategy cannot be made"),
        "{error}"
    );
}

/// Postmortem (fixed): turmoil queues at most 64 unaccepted connections per listener
/// (`tcp_capacity`, default 64) and panics with "server socket buffer full" past that. A
/// valid experiment whose conversations started together (`conversations = 120`,
/// `start-spread-ms = 0`; or 100 with `duplicate-rate = 1.0`) crashed every run at the
/// router. Fixed in src/world/mod.rs, `run`: the builder raises the cap to
/// `world::TCP_CAPACITY` (4,096).
#[test]
fn bug_a_burst_of_connections_crashes_every_run() {
    let exp = experiment(
        &SMALL
            .replace(
                "conversations = 2",
                "conversations = 120\nstart-spread-ms = 0",
            )
            .replace("replicas = 2", "replicas = 3"),
    );
    let summary = runner::run_one(&exp, &exp.profiles[0], "round-robin", 0);
    assert_eq!(summary.error, None);
}

/// Postmortem (fixed, as `bug_a_burst_of_connections_crashes_every_run`): a `concurrent`
/// step of more than 64 sends opened that many connections to the router in the same
/// instant, past turmoil's accept queue (`tcp_capacity`, 64), and the run panicked with
/// "server socket buffer full"; through `a2a-chaos check` that was a crash (exit 101). Found
/// by `fuzz_runs_cli_check_on_mutated_scenarios` (a pinned scenario with one line repeated
/// 72 times). Fixed by the same cap, `world::TCP_CAPACITY` in src/world/mod.rs.
#[test]
fn bug_a_wide_concurrent_step_crashes_the_run() {
    let sends: Vec<String> = (0..100)
        .map(|i| format!("{{ send = {{ conversation = \"c{i}\", turn = 1 }} }}"))
        .collect();
    let script = Script::parse(
        &format!(
            "name = \"wide\"\nmodel = \"reference\"\n[[step]]\nconcurrent = [{}]\n",
            sends.join(", ")
        ),
        "wide.toml",
    )
    .unwrap();
    let summary = std::panic::catch_unwind(|| Sim::from_scenario(&script).unwrap().check().summary)
        .expect("the run does not panic");
    assert_eq!(summary.error, None);
}

fn ttl_scenario() -> String {
    let dir = std::env::temp_dir().join(format!("a2a-chaos-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = dir.join("huge-ttl.toml");
    let (_, text) = a2a_chaos::model::BUILTIN
        .iter()
        .find(|(n, _)| *n == "a2a-python-1.3-memory")
        .unwrap();
    let text = text
        .replace("name = \"a2a-python-1.3-memory\"", "name = \"huge-ttl\"")
        .replace("scope = \"none\"", "scope = \"per-pod\"")
        .replace("ttl_ms = 0", "ttl_ms = 18446744073709551615");
    std::fs::write(&model, text).unwrap();
    let scenario = dir.join("huge-ttl-scenario.toml");
    std::fs::write(
        &scenario,
        format!(
            "name = \"huge-ttl\"\nmodel = \"{}\"\nreplicas = 1\n\
             [[step]]\nsend = {{ conversation = \"c1\", turn = 1 }}\n\
             [[step]]\nsend = {{ conversation = \"c1\", turn = 1 }}\n\
             [expect]\nviolations = []\n",
            model.display()
        ),
    )
    .unwrap();
    scenario.display().to_string()
}

/// Postmortem (fixed): `now_ms + lease_ms` and `now_ms + ttl_ms` were unchecked, and both
/// come from a model profile. With `ttl_ms = 18446744073709551615` (a "remember forever"
/// TTL) the first finished turn panicked with "attempt to add with overflow" in debug
/// builds, and in release the sum wrapped so the entry expired at once and a retry ran its
/// effect again. Fixed in src/store/state.rs, `StoreState::claim` and `StoreState::finish`:
/// `now_ms.saturating_add(...)`.
#[test]
fn bug_a_huge_dedup_ttl_overflows_the_store_clock() {
    let script = Script::load(std::path::Path::new(&ttl_scenario())).unwrap();
    let summary = std::panic::catch_unwind(|| Sim::from_scenario(&script).unwrap().check().summary)
        .expect("the run does not panic");
    assert_eq!(summary.error, None);
    assert_eq!(summary.effects, 1, "the retry is deduplicated");
}

/// Postmortem (fixed): unlike `runner::run_one`, a scenario run (what `check` and `replay`
/// run) was not wrapped in `catch_unwind`, so a run that panicked (the TTL overflow above)
/// crashed `a2a-chaos check` with exit 101 and a backtrace, where the contract promises a
/// clear message and exit 1 or 2, never a panic. Fixed in src/sim/mod.rs: every run goes
/// through `sim::contain`, and a panic becomes the summary's `error`, which `check` reports
/// as a failed expectation.
#[test]
fn bug_a_panicking_scenario_run_crashes_check() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_a2a-chaos"))
        .args(["check", &ttl_scenario()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the binary runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(101), "it panicked: {err}");
    assert!(!err.contains("panicked at"), "{err}");
}
