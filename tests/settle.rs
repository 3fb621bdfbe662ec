//! Stop when settled, and `tick-ms`: a generated run that ends once nothing can change any
//! more gives the verdicts of the same run stepped out to its whole liveness bound, on every
//! built-in model; a coarser tick steps fewer times and still replays; bad ticks are refused.

use std::time::Duration;

use a2a_chaos::experiment::Experiment;
use a2a_chaos::scenario::Script;
use a2a_chaos::sim::Sim;

/// The embedded default's tables (the full swarm) on every built-in model, few seeds.
fn experiment(tick_ms: u64) -> Experiment {
    let text = format!(
        r#"
name = "settle-test"
models = ["a2a-python-1.1", "a2a-python-1.3-memory", "a2a-python-1.3-plain",
          "a2a-python-1.3-versioned", "reference", "rasa-3.17", "mastra", "cognigy"]
routing = ["round-robin"]
replicas = 3
seeds = {{ start = 0, count = 4 }}
tick-ms = {tick_ms}
"#
    );
    Experiment::parse(&text, "settle-test", None).unwrap()
}

/// Every invariant's verdict and violation count.
fn verdicts(findings: &[a2a_chaos::check::Finding]) -> Vec<(&'static str, String, usize)> {
    findings
        .iter()
        .map(|f| {
            (
                f.invariant.as_str(),
                format!("{:?}", f.verdict()),
                f.violations.len(),
            )
        })
        .collect()
}

#[test]
fn ending_a_settled_run_early_changes_no_verdict() {
    let exp = experiment(1);
    let (mut early, mut runs, mut saved_ms) = (0, 0, 0u64);
    for profile in &exp.profiles {
        for seed in 0..exp.file.seeds.count {
            let settled = Sim::experiment_builder(&exp, profile, "round-robin", seed)
                .build()
                .unwrap()
                .check();
            let whole = Sim::experiment_builder(&exp, profile, "round-robin", seed)
                .settle(false)
                .build()
                .unwrap()
                .check();
            let (s, w) = (settled.record.unwrap(), whole.record.unwrap());
            let what = format!("{} seed {seed}", profile.name);
            assert_eq!(
                verdicts(&settled.findings),
                verdicts(&whole.findings),
                "{what}: settling early changed a verdict"
            );
            assert_eq!(
                s.history.len(),
                w.history.len(),
                "{what}: client operations"
            );
            assert_eq!(s.effects.len(), w.effects.len(), "{what}: effects");
            assert_eq!(s.final_tasks, w.final_tasks, "{what}: final tasks");
            assert!(
                w.settled_at_ms.is_none(),
                "{what}: settle(false) ended early"
            );
            assert!(s.sim_ms <= w.sim_ms, "{what}: the settled run ran longer");
            if let Some(at) = s.settled_at_ms {
                assert!(at >= s.healed_at_ms, "{what}: settled before the heal");
                early += 1;
                saved_ms += w.sim_ms - s.sim_ms;
            }
            runs += 1;
        }
    }
    // The rule must be exercised: most of these runs settle well before their bound.
    assert!(
        early * 2 > runs,
        "only {early} of {runs} runs ended early: the settle rule is not being exercised"
    );
    assert!(saved_ms > 0);
}

#[test]
fn a_coarser_tick_steps_fewer_times_and_replays() {
    let (fine, coarse) = (experiment(1), experiment(5));
    let profile = &fine.profiles[4];
    assert_eq!(profile.name, "reference");
    // The tick is turmoil's: the event engine has none.
    let run = |exp: &Experiment| {
        Sim::experiment_builder(exp, profile, "round-robin", 1)
            .engine(a2a_chaos::engine::Engine::Turmoil)
            .build()
            .unwrap()
            .run()
    };
    let (a, b, c) = (run(&fine), run(&coarse), run(&coarse));
    assert_eq!(b.trace_hash, c.trace_hash, "a 5 ms tick does not replay");
    assert!(
        b.steps * 3 < a.steps,
        "5 ms ticks: {} steps against {} at 1 ms",
        b.steps,
        a.steps
    );
}

#[test]
fn ticks_out_of_range_are_refused() {
    for bad in [0, 51] {
        let text = format!(
            "name = \"t\"\nmodels = [\"reference\"]\nrouting = [\"round-robin\"]\nseeds = {{ start = 0, count = 1 }}\ntick-ms = {bad}\n"
        );
        let err = Experiment::parse(&text, "t.toml", None).unwrap_err();
        assert!(
            err.to_string().contains("tick-ms = ") && err.to_string().contains("1..=50"),
            "{err}"
        );
        let scenario = format!("name = \"s\"\nmodel = \"reference\"\ntick-ms = {bad}\n");
        let err = Script::parse(&scenario, "s.toml").unwrap_err();
        assert!(err.to_string().contains("1..=50"), "{err}");
    }
    let err = Sim::builder()
        .tick(Duration::from_millis(100))
        .build()
        .map(|_| ())
        .unwrap_err();
    assert!(err.to_string().contains("1..=50"), "{err}");
}

#[test]
fn a_scenario_keeps_its_tick_through_its_file() {
    let text = "name = \"s\"\nmodel = \"reference\"\ntick-ms = 5\n\n[[step]]\nsend = { conversation = \"c1\", turn = 1 }\n";
    let script = Script::parse(text, "s.toml").unwrap();
    assert_eq!(script.file.tick_ms, 5);
    let again = Script::parse(&script.to_toml(), "again.toml").unwrap();
    assert_eq!(again.file.tick_ms, 5);
    let sim = Sim::scenario_builder(&script).build().unwrap();
    assert_eq!(sim.spec().tick, Duration::from_millis(5));
    // The default tick is not written back.
    let plain = Script::parse(
        "name = \"s\"\nmodel = \"reference\"\n\n[[step]]\nsend = { conversation = \"c1\", turn = 1 }\n",
        "p.toml",
    )
    .unwrap();
    assert!(!plain.to_toml().contains("tick-ms"));
}
