//! Smoke test of `a2a-chaos bench --quick`: it exits 0 and writes a CSV with the expected
//! metrics. No timing is asserted: speed is measured by the benchmark, not by tests.

use std::process::Command;

#[test]
fn bench_quick_exits_0_and_writes_every_metric() {
    let dir = std::env::temp_dir().join(format!("a2a-chaos-bench-{}", std::process::id()));
    let csv = dir.join("bench.csv");
    let out = Command::new(env!("CARGO_BIN_EXE_a2a-chaos"))
        .args(["bench", "--quick", "--out"])
        .arg(&csv)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("load average"), "{stdout}");
    let text = std::fs::read_to_string(&csv).expect("bench.csv is written");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("metric,value,unit,target,met,note"));
    let metrics: Vec<&str> = lines.filter_map(|l| l.split(',').next()).collect();
    for expected in [
        "baseline_wall_us_per_request",
        "baseline_unpaced_wall_us_per_request",
        "standard_wall_us_per_request",
        "cost_per_request_vs_baseline",
        "idle_wall_us_per_tick",
        "sim_per_wall_ceiling",
        "turmoil_standard_idle_share",
        "turmoil_active_cost_per_request_vs_baseline",
        "baseline_events_wall_us_per_request",
        "seeds_per_core_vs_turmoil",
        "turmoil_standard_wall_us_per_request",
        "standard_seeds_per_sec_1t",
        "standard_requests_per_sec_1t",
        "standard_sim_per_wall_1t",
        "standard_seeds_per_sec_2t",
        "speedup_2t_vs_1t",
        "hazards_found_within_target",
        "bench_wall_s",
    ] {
        assert!(
            metrics.contains(&expected),
            "{expected} missing from {text}"
        );
    }
    for model in a2a_chaos::model::names() {
        let search = format!("hazard_search_wall_s/{model}");
        assert!(metrics.contains(&search.as_str()), "{search} missing");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
