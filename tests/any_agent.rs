//! A user's own a2a-sdk agent, judged live as the user would run it: the worked example
//! `examples/my-agent/server.py` (an ordinary agent whose artifact is named `receipt`, not
//! `turn-N`, with no port flag, no replica header and no ledger code; two added lines
//! report its business effect) is started through the Python adapter's launcher
//! (`a2a_chaos_adapter.py run`), which gives it its port, its replica header and its
//! effect and save reports. The verdicts must be judged, not `unknown`, and the hazards
//! found: a pod kill loses the acknowledged turn of an agent on `InMemoryTaskStore` (h08),
//! and a retry after a lost reply runs the order twice on a shared database (h03).
//!
//! The environment is the a2a-python peer's (`tests/peers/a2a-python/setup.sh`, into
//! `target/peer-venv/v1.3.0`); without python3 and PyPI the tests fail with a clear message
//! unless `A2A_CHAOS_SKIP_LIVE=1` (then they say they skipped). Only loopback is used; every
//! `live` is bounded by a deadline and killed by a guard, and its replicas die with it.

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

mod common;
use common::bounded;

/// The example agent through the launcher, in the peer's SDK 1.3.0 environment.
const AGENT: &str =
    "{venv}/bin/python {root}/adapters/python/a2a_chaos_adapter.py run {root}/examples/my-agent/server.py";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One install at a time (`setup.sh` is not safe to run twice at once).
static SETUP: Mutex<()> = Mutex::new(());

fn peer_installed() -> bool {
    let _one = SETUP.lock().unwrap_or_else(|e| e.into_inner());
    common::install_peer()
}

/// `a2a-chaos live ARGS... --json` from the repository root, killed after 90 s: the exit
/// code, the JSON object of the last line, and the whole output.
fn live(args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2a-chaos"));
    cmd.arg("live")
        .args(args)
        .arg("--json")
        .env_remove("A2A_CHAOS_LIVE_DB")
        .current_dir(root());
    let out = bounded(&mut cmd, Duration::from_secs(90));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let text = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let last = stdout.lines().last().unwrap_or_default();
    let value =
        serde_json::from_str(last).unwrap_or_else(|e| panic!("no JSON last line ({e}) in\n{text}"));
    (out.status.code(), value, text)
}

fn invariant<'a>(value: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    &value["invariants"][name]
}

fn verdict<'a>(value: &'a serde_json::Value, name: &str) -> &'a str {
    invariant(value, name)["verdict"].as_str().unwrap_or("?")
}

/// h08 on the example with its default `InMemoryTaskStore`, each replica its own memory:
/// the kill takes the acknowledged order with it. `no-lost-writes` is judged (a turn shown
/// by its message, the agent naming its artifact `receipt`) and fails; the effect reports
/// arrive, so `exactly-once-effects` is judged too.
#[test]
fn a_users_agent_in_memory_loses_the_acknowledged_turn_to_a_pod_kill() {
    if !peer_installed() {
        return;
    }
    let file = "tests/scenarios/h08-pod-kill-memory-store-a2a-python-1.3-memory.toml";
    let (code, value, text) = live(&[file, "--placement", "memory", "--peer", AGENT]);
    assert_eq!(code, Some(0), "the file's [expect] holds:\n{text}");
    assert_eq!(verdict(&value, "no-lost-writes"), "fail", "{text}");
    let note = invariant(&value, "no-lost-writes")["note"]
        .as_str()
        .unwrap_or("");
    assert!(
        note.contains("no artifact is named turn-N"),
        "the note says how turns were shown:\n{text}"
    );
    assert_eq!(verdict(&value, "exactly-once-effects"), "pass", "{text}");
}

/// h03 on the example with a shared database (`DATABASE_URL={db}`, the SDK's
/// `DatabaseTaskStore`): the reply to turn 2 is lost and the client retries with the same
/// messageId on the other replica, which places the order again. `exactly-once-effects`
/// fails on the two reported effects; no acknowledged turn is lost; the saves reported by
/// the observed store are judged by `versions-monotonic`.
#[test]
fn a_users_agent_on_a_shared_database_places_a_retried_order_twice() {
    if !peer_installed() {
        return;
    }
    let file = "tests/fidelity/h03-retry-after-lost-reply-a2a-python-1.3-plain.toml";
    let peer = format!("env DATABASE_URL={{db}} {AGENT}");
    let (code, value, text) = live(&[file, "--peer", &peer]);
    assert_eq!(code, Some(0), "the file's [expect] holds:\n{text}");
    assert_eq!(verdict(&value, "exactly-once-effects"), "fail", "{text}");
    assert!(
        text.contains("turn 2 of c1 took effect 2 times"),
        "the violation names the retried turn:\n{text}"
    );
    // `pass`, not `unknown`: the acknowledged turns were checked against the final task.
    assert_eq!(verdict(&value, "no-lost-writes"), "pass", "{text}");
    assert_eq!(verdict(&value, "versions-monotonic"), "pass", "{text}");
}

/// The same order desk on @a2a-js/sdk 1.3.0 (`examples/my-agent-js/server.mjs`, two added
/// lines), started through the JS adapter's launcher on the a2a-js peer's packages: with
/// each replica's `InMemoryTaskStore`, the pod kill loses the acknowledged order, judged by
/// the turn's message (the agent names its artifact `receipt`).
#[test]
fn a_users_js_agent_in_memory_loses_the_acknowledged_turn_to_a_pod_kill() {
    let installed = {
        let _one = SETUP.lock().unwrap_or_else(|e| e.into_inner());
        common::install_a2a_js()
    };
    if !installed {
        return;
    }
    const JS_AGENT: &str = "env NODE_PATH={a2a-js}/node_modules {a2a-js}/bin/node {root}/adapters/js/a2a-chaos-adapter.mjs run {root}/examples/my-agent-js/server.mjs";
    let file = "tests/scenarios/h08-pod-kill-memory-store-a2a-python-1.3-memory.toml";
    let (code, value, text) = live(&[file, "--placement", "memory", "--peer", JS_AGENT]);
    assert_eq!(code, Some(0), "the file's [expect] holds:\n{text}");
    assert_eq!(verdict(&value, "no-lost-writes"), "fail", "{text}");
    let note = invariant(&value, "no-lost-writes")["note"]
        .as_str()
        .unwrap_or("");
    assert!(note.contains("no artifact is named turn-N"), "{text}");
    assert_eq!(verdict(&value, "exactly-once-effects"), "pass", "{text}");
}

/// `live --hazard NAME` without `--model`: the hazard's script, held to nobody's `[expect]`
/// and to no dedup promise (the `-reference` file promises message dedup, which the example
/// never made). The retried order runs twice on the shared database, so
/// `exactly-once-effects` fails and the run exits 1 (every invariant must hold);
/// `dedup-contract` is `unknown`, not a failure of a promise nobody made.
#[test]
fn a_hazard_by_name_holds_a_users_agent_to_no_one_elses_promises() {
    if !peer_installed() {
        return;
    }
    let peer = "env DATABASE_URL={db} {root}/target/peer-venv/v1.3.0/bin/python {root}/adapters/python/a2a_chaos_adapter.py run {root}/examples/my-agent/server.py";
    let (code, value, text) = live(&["--hazard", "h03-retry-after-lost-reply", "--peer", peer]);
    assert_eq!(
        code,
        Some(1),
        "every invariant must hold, and one does not:\n{text}"
    );
    assert_eq!(verdict(&value, "exactly-once-effects"), "fail", "{text}");
    assert_eq!(verdict(&value, "dedup-contract"), "unknown", "{text}");
    assert_eq!(verdict(&value, "no-lost-writes"), "pass", "{text}");
}
