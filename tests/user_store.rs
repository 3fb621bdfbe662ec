//! A user's own server and task store in CI: `live --store` runs the user-store scenario on
//! the a2a-python peer with the shipped buggy store (caught) and its fixed twin (passes); a
//! Node A2A server (@a2a-js/sdk) gets verdicts with reproduce commands; a server that reports
//! nothing gets `unknown`, never `pass`; the proxy records a duplicated request's double
//! effect, and keeps its effects when killed; the adapters' own unit tests run in the peer's
//! environment and under Node.
//!
//! The peer is installed as in tests/live.rs (`tests/peers/a2a-python/setup.sh`, idempotent);
//! without python3 and PyPI the tests fail with a clear message unless
//! `A2A_CHAOS_SKIP_LIVE=1` (then they say they skipped). Every process is bounded by a
//! deadline and killed by a guard, on failure too; a live run's replicas die with it
//! (PR_SET_PDEATHSIG).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

mod common;
use common::{bounded, Guard};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One install at a time (`setup.sh` is not safe to run twice at once).
static SETUP: Mutex<()> = Mutex::new(());

/// The SDK 1.3.0 environment's python, installing the peer if needed; `None` when it cannot
/// be installed and `A2A_CHAOS_SKIP_LIVE=1`.
fn peer_python() -> Option<PathBuf> {
    let _one = SETUP.lock().unwrap_or_else(|e| e.into_inner());
    if !common::install_peer() {
        return None;
    }
    let base = std::env::var("A2A_CHAOS_PEER_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root().join("target/peer-venv"));
    Some(base.join("v1.3.0/bin/python"))
}

/// `live --json` of the user-store scenario on the a2a-python preset with the user's store
/// (`--store kvstore:STORE --pythonpath tests/user-store`): the exit code and the JSON object.
fn live_with_store(store: &str) -> (Option<i32>, serde_json::Value, String) {
    live(&[
        "tests/user-store/scenarios/u01-concurrent-continuations.toml",
        "--store",
        &format!("kvstore:{store}"),
        "--pythonpath",
        "tests/user-store",
        "--json",
    ])
}

/// `a2a-chaos live ARGS...` from the repository root, bounded: the exit code, the JSON
/// object on the last line when there is one (else `null`), and the whole output.
fn live(args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let out = bounded(
        Command::new(env!("CARGO_BIN_EXE_a2a-chaos"))
            .arg("live")
            .args(args)
            .env_remove("A2A_CHAOS_LIVE_DB")
            .current_dir(root()),
        Duration::from_secs(90),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let text = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let last = stdout.lines().last().unwrap_or_default();
    let value = if args.contains(&"--json") {
        serde_json::from_str(last).unwrap_or_else(|e| panic!("no JSON last line ({e}) in\n{text}"))
    } else {
        serde_json::Value::Null
    };
    (out.status.code(), value, text)
}

/// The @a2a-js/sdk peer's Node, installing the peer if needed; `false` when it cannot be
/// installed and `A2A_CHAOS_SKIP_LIVE=1`.
fn a2a_js_peer() -> bool {
    let _one = SETUP.lock().unwrap_or_else(|e| e.into_inner());
    common::install_a2a_js()
}

/// A Node A2A server (@a2a-js/sdk 1.3.0, each replica its own `InMemoryTaskStore`) run as a
/// newcomer would, by preset: a pod kill loses the acknowledged turn its memory held, and
/// the output names the violation and the command that reproduces it.
#[test]
fn a_node_a2a_server_gets_verdicts_with_reproduce_commands() {
    if !a2a_js_peer() {
        return;
    }
    let file = "tests/scenarios/h08-pod-kill-memory-store-a2a-python-1.3-memory.toml";
    let (code, _, text) = live(&[file, "--peer", "a2a-js"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("no-lost-writes         fail"), "{text}");
    assert!(
        text.contains(&format!("reproduce: a2a-chaos live {file} --peer a2a-js")),
        "{text}"
    );

    // The same server taking its port, name and ledger from the environment `live` gives
    // it: its effect reports arrive.
    let from_env = "{a2a-js}/bin/node {root}/tests/peers/a2a-js/server.mjs \
                    --port $A2A_CHAOS_PORT --name $A2A_CHAOS_REPLICA --ledger $A2A_CHAOS_LEDGER";
    let (_, value, text) = live(&[file, "--peer", from_env, "--placement", "memory", "--json"]);
    assert_eq!(verdict(&value, "no-lost-writes"), "fail", "{text}");
    assert_eq!(verdict(&value, "exactly-once-effects"), "pass", "{text}");
}

/// A server started from a command of the user's own that reports nothing to the ledger:
/// the invariants that read effects or saves are `unknown`, each with the reason, never
/// `pass`; declaring the effects it does not send makes exactly-once fail on them instead.
#[test]
fn a_server_that_reports_nothing_gets_unknown_not_pass() {
    if !a2a_js_peer() {
        return;
    }
    // The a2a-js peer without its adapter's reports (`--ledger none`): no effect, no save.
    let silent = "{a2a-js}/bin/node {root}/tests/peers/a2a-js/server.mjs --port {port} \
                  --name {name} --ledger none";
    let file = "tests/scenarios/h03-retry-after-lost-reply-reference.toml";
    let (_, value, text) = live(&[file, "--peer", silent, "--placement", "memory", "--json"]);
    assert_eq!(verdict(&value, "no-lost-writes"), "pass", "{text}");
    let exactly_once = &value["invariants"]["exactly-once-effects"];
    assert_eq!(exactly_once["verdict"], "unknown", "{text}");
    let note = exactly_once["note"].as_str().unwrap_or("");
    assert!(note.contains("needs effect reports"), "{text}");
    let (code, value, text) = live(&[
        file,
        "--peer",
        silent,
        "--placement",
        "memory",
        "--reports",
        "effects,saves",
        "--json",
    ]);
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(verdict(&value, "exactly-once-effects"), "fail", "{text}");
    let reproduce = value["first_violation"]["reproduce"].as_str().unwrap_or("");
    assert!(
        reproduce.contains("--placement memory --reports effects,saves"),
        "{text}"
    );
}

fn verdict<'a>(value: &'a serde_json::Value, invariant: &str) -> &'a str {
    value["invariants"][invariant]["verdict"]
        .as_str()
        .unwrap_or("?")
}

/// The buggy store (read-modify-write, never looking at `prev_version`) loses turn 3 and
/// overwrites versions: `live` catches both and exits 1. Its fixed twin (compare-and-swap)
/// meets `[expect] violations = []` and exits 0, with both invariants exercised.
#[test]
fn the_buggy_user_store_is_caught_and_its_fixed_twin_passes() {
    if peer_python().is_none() {
        return;
    }
    let (code, buggy, text) = live_with_store("BuggyKVTaskStore");
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(buggy["expectations_met"], false, "{text}");
    assert_eq!(verdict(&buggy, "no-lost-writes"), "fail", "{text}");
    assert_eq!(verdict(&buggy, "versions-monotonic"), "fail", "{text}");

    let (code, fixed, text) = live_with_store("FixedKVTaskStore");
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(fixed["expectations_met"], true, "{text}");
    assert_eq!(verdict(&fixed, "no-lost-writes"), "pass", "{text}");
    assert_eq!(verdict(&fixed, "versions-monotonic"), "pass", "{text}");
}

/// The Python adapter's unit tests, in the peer's environment (they need a2a-sdk).
#[test]
fn the_python_adapter_tests_pass() {
    let Some(python) = peer_python() else {
        return;
    };
    let out = bounded(
        Command::new(python)
            .args(["-m", "unittest", "discover", "-s", "adapters/python"])
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .current_dir(root()),
        Duration::from_secs(60),
    );
    assert_succeeded(&out);
}

/// The JavaScript adapter's unit tests and its launcher's (`node --test`), on the Node the
/// a2a-js peer's setup installs (`target/peer-a2a-js/bin/node`, with its packages for the
/// launcher's test of the example agent on the real SDK).
#[test]
fn the_js_adapter_tests_pass() {
    if !common::install_a2a_js() {
        return;
    }
    let peer = root().join("target/peer-a2a-js");
    // `node --test DIR` no longer finds the files on Node 22: name each one.
    let mut files: Vec<String> = std::fs::read_dir(root().join("adapters/js"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".test.mjs"))
        .map(|n| format!("adapters/js/{n}"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no adapters/js/*.test.mjs");
    let out = bounded(
        Command::new(peer.join("bin/node"))
            .arg("--test")
            .args(&files)
            .env("A2A_CHAOS_PEER_JS", &peer)
            .current_dir(root()),
        Duration::from_secs(120),
    );
    assert_succeeded(&out);
}

/// Fails the test with the command's output unless it exited 0.
fn assert_succeeded(out: &Output) {
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `a2a-chaos check-history --json FILE`: exit code and the JSON object.
fn check_history(file: &Path) -> (Option<i32>, serde_json::Value, String) {
    let out = bounded(
        Command::new(env!("CARGO_BIN_EXE_a2a-chaos"))
            .arg("check-history")
            .arg(file)
            .arg("--json")
            .current_dir(root()),
        Duration::from_secs(30),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let text = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("no JSON last line ({e}) in\n{text}"));
    (out.status.code(), value, text)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("a2a-chaos-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A 1.0 stream whose task goes back to WORKING after COMPLETED breaks terminal-is-final,
/// in either wire; with no effects, saves or final tasks those checkers say `unknown`.
#[test]
fn check_history_catches_a_stream_that_resumes_after_completed() {
    let dir = scratch("resume");
    let v10 = [
        r#"{"type":"start","version":1,"routing":"round-robin"}"#,
        r#"{"type":"request","seq":1,"at_ms":0,"replica":"replica-0","body":{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m1","contextId":"ctx","role":"ROLE_USER","parts":[{"text":"hi"}]}}}}"#,
        r#"{"type":"response","seq":1,"at_ms":2,"status":200,"stream":true}"#,
        r#"{"type":"event","seq":1,"at_ms":3,"data":{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1","contextId":"ctx","status":{"state":"TASK_STATE_WORKING"},"history":[{"messageId":"m1","role":"ROLE_USER","parts":[]}]}}}}"#,
        r#"{"type":"event","seq":1,"at_ms":5,"data":{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t1","contextId":"ctx","status":{"state":"TASK_STATE_COMPLETED"}}}}}"#,
        r#"{"type":"event","seq":1,"at_ms":7,"data":{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t1","contextId":"ctx","status":{"state":"TASK_STATE_WORKING"}}}}}"#,
        r#"{"type":"event","seq":1,"at_ms":9,"data":{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t1","contextId":"ctx","status":{"state":"TASK_STATE_COMPLETED"}}}}}"#,
        r#"{"type":"end","seq":1,"at_ms":10}"#,
    ];
    let v03: Vec<String> = v10
        .iter()
        .map(|l| {
            l.replace("SendStreamingMessage", "message/stream")
                .replace("ROLE_USER", "user")
                .replace(r#"{"task":{"id""#, r#"{"kind":"task","id""#)
                .replace(
                    r#"{"statusUpdate":{"taskId""#,
                    r#"{"kind":"status-update","taskId""#,
                )
                .replace("TASK_STATE_WORKING", "working")
                .replace("TASK_STATE_COMPLETED", "completed")
        })
        .map(|l| {
            // A 0.3 result is the kind-tagged object itself, not wrapped: one brace fewer.
            if l.contains(r#""kind":"#) {
                l.replacen("}}}}", "}}}", 1)
            } else {
                l
            }
        })
        .collect();
    for (wire, lines) in [("1.0", v10.map(str::to_string).to_vec()), ("0.3", v03)] {
        let file = dir.join(format!("history-{wire}.jsonl"));
        std::fs::write(&file, lines.join("\n") + "\n").unwrap();
        let (code, value, text) = check_history(&file);
        assert_eq!(code, Some(1), "{wire}: {text}");
        assert_eq!(
            verdict(&value, "terminal-is-final"),
            "fail",
            "{wire}: {text}"
        );
        assert_eq!(verdict(&value, "exactly-once-effects"), "unknown", "{text}");
        assert_eq!(verdict(&value, "versions-monotonic"), "unknown", "{text}");
        assert!(
            value["unknown_because"]["exactly-once-effects"].is_string(),
            "{text}"
        );
        assert!(value["partial"]["no-lost-writes"].is_string(), "{text}");
        // The timeline page draws the history.
        let page = dir.join(format!("timeline-{wire}.html"));
        let out = bounded(
            Command::new(env!("CARGO_BIN_EXE_a2a-chaos"))
                .arg("check-history")
                .arg(&file)
                .arg("--timeline")
                .arg(&page),
            Duration::from_secs(30),
        );
        assert_eq!(out.status.code(), Some(1));
        let html = std::fs::read_to_string(&page).expect("a timeline page");
        assert!(html.contains("terminal-is-final"), "{html}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A port for a child to bind, from below the ephemeral range (see `a2a_chaos::live::ports`).
fn free_port() -> u16 {
    a2a_chaos::live::ports::reserve().expect("a free port")
}

/// A JSON-RPC call over real TCP (no token: the test peer asks for none).
fn rpc(addr: &str, body: serde_json::Value) -> serde_json::Value {
    use a2a_chaos::net::{self, Call, RealNet};
    let (host, port) = addr.rsplit_once(':').expect("host:port");
    let call = Call::post_json(
        host.to_string(),
        port.parse().expect("a port"),
        "/",
        serde_json::to_vec(&body).unwrap(),
        Duration::from_secs(10),
    )
    .header("a2a-version", "1.0");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    net::install_real(RealNet::new());
    let reply = tokio::task::LocalSet::new().block_on(&rt, async move { net::send(&call).await });
    net::uninstall_real();
    serde_json::from_slice(&reply.expect("an answer").body).expect("JSON")
}

/// Waits until a replica answers its card, within 30 s.
fn wait_ready(port: u16) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the replica on port {port} did not start within 30 s");
}

/// Starts `a2a-chaos proxy` with `flags`; its guard and listen address.
fn start_proxy(flags: &[String]) -> (Guard, String) {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2a-chaos"))
        .arg("proxy")
        .args(flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("a2a-chaos proxy starts");
    let stdout = child.stdout.take().expect("piped");
    let guard = Guard(child);
    let mut first = String::new();
    let mut reader = std::io::BufReader::new(stdout);
    reader.read_line(&mut first).unwrap();
    let addr = first
        .split("http://")
        .nth(1)
        .and_then(|s| s.split('/').next())
        .unwrap_or_else(|| panic!("no address in `{first}`"))
        .to_string();
    // Keep draining its output so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in reader.lines() {});
    (guard, addr)
}

/// Waits for the proxy to stop by itself (`--max-requests`), within 20 s.
fn wait_stopped(mut proxy: Guard) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(20) {
        if let Ok(Some(status)) = proxy.0.try_wait() {
            assert!(status.success(), "the proxy exited with {status}");
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the proxy did not stop after --max-requests");
}

/// Two turns of conversation `c` and a GetTask, through the proxy at `addr`.
fn converse(addr: &str, c: &str) {
    let message = |turn: u32, task: Option<&str>| {
        serde_json::json!({
            "messageId": format!("{c}-m{turn}"), "contextId": format!("ctx-{c}"), "taskId": task,
            "role": "ROLE_USER",
            "parts": [{"text": "hello"}, {"data": {"conversation": c, "turn": turn, "turns": 2}}]
        })
    };
    let sent = rpc(
        addr,
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message(1, None)}}),
    );
    let id = sent["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no task in {sent}"))
        .to_string();
    let sent = rpc(
        addr,
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"message": message(2, Some(&id))}}),
    );
    assert!(sent.get("result").is_some(), "{sent}");
    rpc(
        addr,
        serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": id}}),
    );
}

/// The proxy in front of two real a2a-python replicas: with request 1 (turn 1) duplicated,
/// check-history shows the double effect the replicas reported to the proxy's ledger; a
/// clean recording shows none.
#[test]
fn a_duplicated_request_through_the_proxy_shows_as_a_double_effect() {
    let Some(python) = peer_python() else {
        return;
    };
    let dir = scratch("proxy");
    let ledger = free_port();
    let ports = [free_port(), free_port()];
    let upstreams = format!(
        "http://127.0.0.1:{},http://127.0.0.1:{}",
        ports[0], ports[1]
    );
    let proxy_flags = |out: &Path, faults: &[&str]| -> Vec<String> {
        let mut f: Vec<String> = [
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            &upstreams,
            "--routing",
            "round-robin",
            "--max-requests",
            "3",
            "--duration-ms",
            "30000",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        f.push("--ledger-listen".into());
        f.push(format!("127.0.0.1:{ledger}"));
        f.push("--out".into());
        f.push(out.display().to_string());
        f.extend(faults.iter().map(|s| s.to_string()));
        f
    };
    // The first proxy listens before the replicas start, so their ledger is there.
    let duplicated = dir.join("duplicated.jsonl");
    // Request k is duplicated when (k + seed) % 3 == 0: request 1, turn 1 of c1.
    let (proxy, addr) = start_proxy(&proxy_flags(
        &duplicated,
        &["--duplicate-every", "3", "--seed", "2"],
    ));
    let db = format!("sqlite+aiosqlite:///{}", dir.join("tasks.db").display());
    let mut replicas = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let child = Command::new(&python)
            .arg(root().join("tests/peers/a2a-python/server.py"))
            .args([
                "--port",
                &port.to_string(),
                "--name",
                &format!("replica-{i}"),
            ])
            .args([
                "--ledger",
                &format!("http://127.0.0.1:{ledger}"),
                "--db",
                &db,
            ])
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("a replica starts");
        replicas.push(Guard(child));
        // The first creates the schema.
        wait_ready(*port);
    }
    converse(&addr, "c1");
    wait_stopped(proxy);
    let (code, value, text) = check_history(&duplicated);
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(verdict(&value, "exactly-once-effects"), "fail", "{text}");
    let detail = value["first_violation"]["detail"].as_str().unwrap_or("");
    assert!(detail.contains("took effect 2 times"), "{text}");

    let clean = dir.join("clean.jsonl");
    let (proxy, addr) = start_proxy(&proxy_flags(&clean, &[]));
    converse(&addr, "c2");
    wait_stopped(proxy);
    let (code, value, text) = check_history(&clean);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(
        value["invariants"]["exactly-once-effects"]["violations"], 0,
        "{text}"
    );
    assert_ne!(verdict(&value, "exactly-once-effects"), "fail", "{text}");
    assert_ne!(verdict(&value, "no-lost-writes"), "fail", "{text}");

    // A proxy killed outright (SIGKILL: no final read, no stop line) has already written
    // the effects its ledger heard: they are flushed as they arrive.
    let killed = dir.join("killed.jsonl");
    let mut flags = proxy_flags(&killed, &[]);
    let at = flags
        .iter()
        .position(|f| f == "--max-requests")
        .expect("a flag");
    flags.drain(at..at + 2);
    let (proxy, addr) = start_proxy(&flags);
    converse(&addr, "c3");
    std::thread::sleep(Duration::from_millis(500));
    drop(proxy);
    let text = std::fs::read_to_string(&killed).expect("the recording");
    let effects = text
        .lines()
        .filter(|l| l.contains(r#""type":"effect""#))
        .count();
    assert_eq!(effects, 2, "{text}");
    assert!(!text.contains(r#""type":"stop""#), "{text}");
    drop(replicas);
    let _ = std::fs::remove_dir_all(&dir);
}
