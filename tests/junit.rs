//! `check --junit FILE`: the file a failing check writes loads in an XML parser as a JUnit
//! report, one test case per scenario (or per model × routing of an experiment), with the
//! violation's sentence and the reproduce command as the failure message.

use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("a2a-chaos-junit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn check(args: &[&str]) -> i32 {
    let out = Command::new(env!("CARGO_BIN_EXE_a2a-chaos"))
        .arg("check")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the binary runs");
    out.status.code().expect("an exit code")
}

#[test]
fn a_failing_scenario_check_writes_a_junit_failure_with_sentence_and_reproduce() {
    let pinned = "tests/scenarios/h01-aba-continuation-a2a-python-1.1.toml";
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(pinned))
        .unwrap()
        .replace(
            "violations = [\"no-lost-writes\", \"versions-monotonic\"]",
            "violations = []",
        );
    let scenario = scratch("strict.toml");
    std::fs::write(&scenario, text).unwrap();
    let report = scratch("strict.xml");
    let scenario_arg = scenario.display().to_string();
    let code = check(&[&scenario_arg, "--junit", &report.display().to_string()]);
    assert_eq!(code, 1);

    let xml = std::fs::read_to_string(&report).unwrap();
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(root.attribute("tests"), Some("1"));
    assert_eq!(root.attribute("failures"), Some("1"));
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), 1);
    assert_eq!(cases[0].attribute("name"), Some("h01-aba-continuation"));
    let failure = cases[0]
        .children()
        .find(|n| n.has_tag_name("failure"))
        .expect("a failure element");
    let message = failure.attribute("message").unwrap();
    assert!(
        message.contains("turn 2 of c1, acknowledged by replica-1"),
        "{message}"
    );
    assert!(
        message.contains(&format!("a2a-chaos replay {scenario_arg} --seed 0")),
        "{message}"
    );
    let body = failure.text().unwrap_or("");
    assert!(body.contains("versions-monotonic"), "{body}");
    let out = cases[0]
        .children()
        .find(|n| n.has_tag_name("system-out"))
        .and_then(|n| n.text())
        .unwrap_or("");
    assert!(out.contains("points fired: none"), "{out}");

    // The same file, met: a case without a failure.
    let ok = scratch("ok.xml");
    assert_eq!(check(&[pinned, "--junit", &ok.display().to_string()]), 0);
    let xml = std::fs::read_to_string(&ok).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    assert_eq!(doc.root_element().attribute("failures"), Some("0"));
    assert!(!doc.descendants().any(|n| n.has_tag_name("failure")));
}

#[test]
fn an_experiment_check_has_one_case_per_model_and_routing() {
    let exp = scratch("sweep.toml");
    std::fs::write(
        &exp,
        r#"name = "junit-sweep"
models = ["a2a-python-1.3-memory", "reference"]
routing = ["round-robin", "context-affinity"]
replicas = 2
seeds = { start = 0, count = 2 }
[workload]
conversations = 3
turns = 2
[faults]
swarm = false
window-ms = 1000
liveness-ms = 1000
kill = 1.0
buggify = 1.0
[expect]
violations = []
"#,
    )
    .unwrap();
    let report = scratch("sweep.xml");
    let code = check(&[
        &exp.display().to_string(),
        "--jobs",
        "2",
        "--junit",
        &report.display().to_string(),
    ]);
    let xml = std::fs::read_to_string(&report).unwrap();
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let names: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| n.attribute("name").unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "a2a-python-1.3-memory / round-robin",
            "a2a-python-1.3-memory / context-affinity",
            "reference / round-robin",
            "reference / context-affinity",
        ]
    );
    let failed = doc
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .count();
    assert_eq!(
        doc.root_element().attribute("failures"),
        Some(failed.to_string().as_str())
    );
    assert_eq!(code, if failed > 0 { 1 } else { 0 });
    // Every case lists the points that fired in its runs.
    assert!(doc
        .descendants()
        .filter(|n| n.has_tag_name("system-out"))
        .all(|n| n.text().unwrap_or("").contains("points fired: ")));
}
