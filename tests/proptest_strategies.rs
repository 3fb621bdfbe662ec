//! The proptest strategies as a user would use them: the `reference` design holds on
//! generated scenarios, and a broken design fails and shrinks to a tiny scenario.

use a2a_chaos::scenario::{Script, Step};
use a2a_chaos::sim::Sim;
use a2a_chaos::strategies::{
    fault_schedules, scenarios, with_faults, GeneratedScenario, ScenarioConfig, StepKind,
};
use proptest::prelude::*;
use proptest::test_runner::{
    Config, FileFailurePersistence, RngSeed, TestError, TestRng, TestRunner,
};

/// Where proptest records the seeds of failing cases; committed, so a failure found once is
/// replayed first on every later run (and on every machine).
const REGRESSIONS: &str = "proptest-regressions/proptest_strategies.txt";

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        rng_seed: RngSeed::Fixed(0),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(REGRESSIONS))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(24))]

    #[test]
    fn the_reference_holds_on_generated_scenarios(s in scenarios("reference")) {
        let summary = Sim::from_scenario(&s).unwrap().check().summary;
        prop_assert!(
            summary.violated().is_empty() && summary.error.is_none(),
            "{:?} violated ({:?}) in {:?}", summary.violated(), summary.error, s
        );
    }

    #[test]
    fn the_reference_holds_with_a_fault_schedule_beside_a_script(
        schedule in fault_schedules(2, 4, StepKind::FAULTS)
    ) {
        let script = Script::parse(
            r#"
name = "three-turns"
model = "reference"
replicas = 2
[[step]]
send = { conversation = "c1", turn = 1 }
[[step]]
send = { conversation = "c1", turn = 2 }
[[step]]
send = { conversation = "c1", turn = 3 }
"#,
            "three-turns.toml",
        )
        .unwrap();
        let s = with_faults(&script, &schedule).unwrap();
        let summary = Sim::from_scenario(&s).unwrap().check().summary;
        prop_assert!(summary.violated().is_empty(), "{:?} in\n{}", summary.violated(), s.to_toml());
    }
}

/// Runs the property "no invariant is violated" on `model`; returns the minimal failing
/// scenario proptest shrank to, and the invariants it violates.
fn minimal_failure(config: ScenarioConfig) -> (GeneratedScenario, Vec<&'static str>) {
    let runner_config = Config {
        cases: 64,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(
        runner_config.clone(),
        TestRng::deterministic_rng(runner_config.rng_algorithm),
    );
    let result = runner.run(&scenarios(config), |s| {
        let summary = Sim::from_scenario(&s).unwrap().check().summary;
        prop_assert!(summary.violated().is_empty(), "{:?}", summary.violated());
        Ok(())
    });
    match result {
        Err(TestError::Fail(_, minimal)) => {
            let violated = Sim::from_scenario(&minimal)
                .unwrap()
                .check()
                .summary
                .violated()
                .into_iter()
                .map(|i| i.as_str())
                .collect();
            (minimal, violated)
        }
        other => panic!("expected a failure, got {other:?}"),
    }
}

fn is_fault(s: &Step) -> bool {
    matches!(s, Step::Fault(_))
}

#[test]
fn a_per_pod_memory_store_fails_and_shrinks_to_a_send_and_a_kill() {
    let (minimal, violated) = minimal_failure(ScenarioConfig::new("a2a-python-1.3-memory"));
    assert!(
        violated.contains(&"no-lost-writes"),
        "{violated:?} {minimal:?}"
    );
    assert!(minimal.step_count() <= 3, "{minimal:?}");
    assert_eq!(minimal.file.replicas, 1, "{minimal:?}");
    assert_eq!(
        minimal.steps.iter().filter(|s| is_fault(s)).count(),
        1,
        "{minimal:?}"
    );
}

#[test]
fn no_message_dedup_fails_and_shrinks_to_one_message_sent_twice() {
    let (minimal, violated) = minimal_failure(ScenarioConfig::new("a2a-python-1.3-versioned"));
    assert!(
        violated.contains(&"exactly-once-effects"),
        "{violated:?} {minimal:?}"
    );
    assert_eq!(minimal.step_count(), 2, "{minimal:?}");
    assert!(!minimal.steps.iter().any(is_fault), "{minimal:?}");
    // What it prints is a scenario file that `a2a-chaos check` runs as it is.
    let back = Script::parse(&minimal.to_toml(), "minimal.toml").unwrap();
    assert_eq!(
        Sim::from_scenario(&back)
            .unwrap()
            .check()
            .summary
            .violated(),
        violated
    );
}
