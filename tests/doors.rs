//! Every door bounded (issue 39): `serve` and `proxy` against hostile peers, and what a
//! hostile upstream can put into a page.
//!
//! - 2,000 idle connections at a descriptor limit of 1024: both keep answering, promptly;
//! - a connection limit set above the descriptor limit: `accept` fails with EMFILE, which is
//!   logged and survived (the old loop exited);
//! - the memory attack: a 1 MiB SendMessage of 85,000 empty parts is refused (-32602), and
//!   thousands of tasks stay within `--max-tasks` (oldest at rest evicted);
//! - a replica name carrying `<script>` through `proxy` never reaches the timeline raw;
//! - the proxy's final read sends the client's credentials; it refuses to overwrite a
//!   history without `--force`.
//!
//! Each test prints what it measured (`-- --nocapture`).

mod doors_support;

use std::time::{Duration, Instant};

use doors_support::*;
use serde_json::json;

/// One test at a time: each loads the machine (thousands of sockets, megabytes of
/// requests), and what they measure (latency, memory) should not be another test's load.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Raises this process's descriptor limit to its hard limit (the test opens thousands of
/// sockets); returns the limit.
fn raise_own_fd_limit() -> u64 {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: get and set this process's own limit.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut l);
        l.rlim_cur = l.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &l);
    }
    l.rlim_cur
}

/// How many idle connections this process can open (2,000, unless its hard limit is lower).
fn idle_target() -> usize {
    let own = raise_own_fd_limit();
    (own.saturating_sub(200) as usize).min(2000)
}

/// `serve` keeps answering while 2,000 idle connections are open at `ulimit -n 1024`: at its
/// connection limit it sheds the oldest connection that sent no request, so a client that
/// sends one is served at once. The old loop exited on EMFILE (exit 1).
#[test]
fn serve_answers_through_2000_idle_connections_at_fd_limit_1024() {
    let _serial = serial();
    let n = idle_target();
    let (mut serve, addr, _) = serve(&[], Some(1024));
    let before = card(addr, Duration::from_secs(5)).expect("serve answers");
    let started = Instant::now();
    let idle = idle_connections(addr, n);
    let opened = started.elapsed();
    let mut worst = Duration::ZERO;
    for _ in 0..5 {
        let took = card(addr, Duration::from_secs(10)).expect("serve still answers");
        worst = worst.max(took);
    }
    let fds = serve.fds();
    eprintln!(
        "serve at fd limit 1024: {} idle connections opened in {:.1} s; it holds {fds} descriptors; card answered in {:.1} ms before, at most {:.1} ms with them open",
        idle.len(),
        opened.as_secs_f64(),
        before.as_secs_f64() * 1000.0,
        worst.as_secs_f64() * 1000.0
    );
    assert_eq!(idle.len(), n, "every idle connection was let in");
    assert!(worst < Duration::from_secs(2), "answered in {worst:?}");
    assert!(fds < 1024, "{fds} descriptors");
    assert!(serve.alive(), "serve is still running");
    drop(idle);
    assert_eq!(serve.terminate(), Some(0), "a clean stop");
}

/// The same for `proxy` (in front of a `serve` with no limit of its own): the card is
/// passed through while 2,000 idle connections are open to the proxy.
#[test]
fn proxy_answers_through_2000_idle_connections_at_fd_limit_1024() {
    let _serial = serial();
    let n = idle_target();
    let dir = scratch("proxy-idle");
    let (_up, up_addr, _) = serve(&[], None);
    let out = dir.join("history.jsonl");
    let (mut proxy, addr) = proxy(
        &format!("http://{up_addr}"),
        &out.display().to_string(),
        &["--no-final-read"],
        Some(1024),
    );
    card(addr, Duration::from_secs(5)).expect("the proxy answers");
    let idle = idle_connections(addr, n);
    let mut worst = Duration::ZERO;
    for _ in 0..5 {
        let took = card(addr, Duration::from_secs(10)).expect("the proxy still answers");
        worst = worst.max(took);
    }
    eprintln!(
        "proxy at fd limit 1024: {} idle connections open; it holds {} descriptors; the card through it at most {:.1} ms",
        idle.len(),
        proxy.fds(),
        worst.as_secs_f64() * 1000.0
    );
    assert_eq!(idle.len(), n);
    assert!(worst < Duration::from_secs(2), "answered in {worst:?}");
    assert!(proxy.alive());
    drop(idle);
    assert_eq!(proxy.terminate(), Some(0), "stopped as asked: exit 0");
    let _ = std::fs::remove_dir_all(&dir);
}

/// With a connection limit above what the descriptors allow, `accept` fails with EMFILE:
/// the failure is logged, the loop backs off and goes on, and once the idle connections
/// time out the server answers again.
#[test]
fn an_accept_that_fails_with_emfile_is_logged_and_survived() {
    let _serial = serial();
    raise_own_fd_limit();
    let (mut serve, addr, _) = serve(
        &["--max-connections", "5000", "--header-timeout-ms", "4000"],
        Some(256),
    );
    let idle = idle_connections(addr, 400);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !serve.stderr_text().contains("accept failed") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let started = Instant::now();
    let answered = loop {
        match card(addr, Duration::from_secs(3)) {
            Ok(_) => break Some(started.elapsed()),
            Err(_) if started.elapsed() < Duration::from_secs(20) => continue,
            Err(e) => {
                eprintln!("no answer: {e}");
                break None;
            }
        }
    };
    let log = serve.stderr_text();
    eprintln!(
        "serve at fd limit 256 with --max-connections 5000: {} idle connections; answered again after {answered:?}; log: {}",
        idle.len(),
        log.lines().find(|l| l.contains("accept failed")).unwrap_or("")
    );
    assert!(serve.alive(), "serve survived EMFILE: {log}");
    assert!(answered.is_some(), "serve answers again");
    assert!(
        log.contains("accept failed") && log.contains("Too many open files"),
        "{log}"
    );
    drop(idle);
    assert_eq!(serve.terminate(), Some(0));
}

fn send(text_parts: usize, id: u64, context: &str) -> serde_json::Value {
    let parts: Vec<serde_json::Value> = (0..text_parts.max(1))
        .map(|i| {
            if text_parts == 0 || i > 0 {
                json!({"text": ""})
            } else {
                json!({"text": "hi"})
            }
        })
        .collect();
    json!({"jsonrpc": "2.0", "id": id, "method": "SendMessage", "params": {
        "message": {"messageId": format!("m{id}"), "contextId": context, "role": "ROLE_USER",
                    "parts": parts},
        "configuration": {"returnImmediately": true}
    }})
}

/// The memory attack: a 1 MiB SendMessage of 85,000 empty text parts is refused with
/// -32602 (the usual error data), 600 tasks leave at most `--max-tasks` in the store (the
/// first is evicted), and 100 tasks of 900 KB each stay within `--max-store-mib` (each
/// such task held about 7 MB, so they used to take 700 MB): memory stays bounded.
#[test]
fn serve_refuses_85000_parts_and_keeps_its_task_store_bounded() {
    let _serial = serial();
    let (mut serve, addr, token) = serve(&["--max-tasks", "100", "--max-store-mib", "8"], None);
    let t = Duration::from_secs(20);
    card(addr, t).unwrap();
    let rss_start = serve.rss_kib();
    let mut attack = send(85_000, 1, "ctx-attack");
    attack["params"]["message"]["parts"][0] = json!({"text": ""});
    let bytes = serde_json::to_vec(&attack).unwrap().len();
    assert!(bytes <= 1 << 20, "{bytes} bytes");
    let answer = rpc(addr, &token, &attack, t).unwrap();
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("85000 parts"),
        "{answer}"
    );
    assert!(
        answer["error"]["data"].is_array(),
        "the usual error data: {answer}"
    );
    let rss_parts = serve.rss_kib();
    let first = rpc(addr, &token, &send(1, 2, "ctx-first"), t).unwrap();
    let first_id = first["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{first}"))
        .to_string();
    for i in 0..600u64 {
        let a = rpc(addr, &token, &send(1, 10 + i, &format!("ctx-{i}")), t).unwrap();
        assert!(a.get("result").is_some(), "{a}");
    }
    // Let the turns finish and the store be swept.
    std::thread::sleep(Duration::from_millis(1500));
    let rss_tasks = serve.rss_kib();
    let gone = rpc(
        addr,
        &token,
        &json!({"jsonrpc": "2.0", "id": 9, "method": "GetTask", "params": {"id": first_id}}),
        t,
    )
    .unwrap();
    let listed = rpc(
        addr,
        &token,
        &json!({"jsonrpc": "2.0", "id": 10, "method": "ListTasks", "params": {"pageSize": 100}}),
        t,
    )
    .unwrap();
    let big = "x".repeat(900_000);
    for i in 0..100u64 {
        let mut m = send(1, 5000 + i, &format!("ctx-big-{i}"));
        m["params"]["message"]["parts"][0]["text"] = json!(big);
        let a = rpc(addr, &token, &m, t).unwrap();
        assert!(a.get("result").is_some(), "{}", &a.to_string()[..200]);
    }
    std::thread::sleep(Duration::from_millis(1000));
    let rss_big = serve.rss_kib();
    eprintln!(
        "serve RSS: {} KiB at start, {} KiB after the 85,000-part message ({bytes} bytes), {} KiB after 601 tasks with --max-tasks 100, {} KiB after 100 tasks of 900 KB with --max-store-mib 8",
        rss_start, rss_parts, rss_tasks, rss_big
    );
    assert!(rss_big < rss_start + 300 * 1024, "{rss_big} KiB");
    assert_eq!(
        gone["error"]["code"], -32001,
        "the oldest task was evicted: {gone}"
    );
    assert!(
        listed["result"]["nextPageToken"]
            .as_str()
            .unwrap_or("")
            .is_empty(),
        "at most 100 tasks: {listed}"
    );
    assert!(rss_parts < rss_start + 64 * 1024, "{rss_parts} KiB");
    assert!(rss_tasks < rss_start + 64 * 1024, "{rss_tasks} KiB");
    assert_eq!(serve.terminate(), Some(0));
}

/// A tiny HTTP server on a thread that answers every request with `body` and the header
/// `x-a2a-chaos-replica: <name>`, for `count` requests.
fn hostile_upstream(name: &'static str, count: usize) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in listener.incoming().take(count) {
            let Ok(mut s) = stream else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let mut buf = vec![0u8; 65536];
            let mut got = Vec::new();
            // Read the head and a Content-Length body.
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&got);
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let len = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if body.len() >= len {
                        break;
                    }
                }
            }
            let body = r#"{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1","contextId":"ctx","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","name":"turn-1","parts":[{"text":"done"}]}]}}}"#;
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-a2a-chaos-replica: {name}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    addr
}

/// A hostile upstream names itself `<script>alert(1)</script>` in `x-a2a-chaos-replica`;
/// the proxy records it, and check-history's timeline shows it escaped: no `<script` from
/// the input reaches the page.
#[test]
fn a_replica_name_with_a_script_never_reaches_the_timeline_raw() {
    let _serial = serial();
    let dir = scratch("script");
    let up = hostile_upstream("<script>alert(1)</script>", 4);
    let out = dir.join("history.jsonl");
    let (mut proxy, addr) = proxy(
        &format!("http://{up}"),
        &out.display().to_string(),
        &["--no-final-read", "--max-requests", "1"],
        None,
    );
    let a = rpc(addr, "t", &send(1, 1, "ctx"), Duration::from_secs(10)).unwrap();
    assert!(a.get("result").is_some(), "{a}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while proxy.alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let history = std::fs::read_to_string(&out).unwrap();
    assert!(
        history.contains("<script>alert(1)</script>"),
        "recorded as sent"
    );
    let page = dir.join("timeline.html");
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_a2a-chaos"))
        .args(["check-history", &out.display().to_string(), "--timeline"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(check.status.code().is_some_and(|c| c < 2), "{check:?}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<script"), "a live script in the page");
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "shown escaped"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The proxy's final read (GetTask of every task it saw) sends the credentials the task's
/// client sent; without them a server that checks tokens answers 401 and no final copy is
/// recorded. An existing history is not overwritten without `--force`.
#[test]
fn the_proxys_final_read_sends_the_token_and_a_history_is_kept_without_force() {
    let _serial = serial();
    let dir = scratch("token");
    let (_up, up_addr, token) = serve(&[], None);
    let out = dir.join("history.jsonl");
    let out_s = out.display().to_string();
    let (mut proxy, addr) = proxy(
        &format!("http://{up_addr}"),
        &out_s,
        &["--max-requests", "1"],
        None,
    );
    let mut one = send(1, 1, "ctx");
    one["params"]["configuration"]["returnImmediately"] = json!(false);
    let a = rpc(addr, &token, &one, Duration::from_secs(20)).unwrap();
    assert!(a.get("result").is_some(), "{a}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while proxy.alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let history = std::fs::read_to_string(&out).unwrap();
    assert!(
        history.contains("\"type\":\"final-task\""),
        "the final read was answered: {history}"
    );
    // A second proxy on the same --out refuses, and leaves the history alone.
    let (mut again, _) = start(
        &[
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            &format!("http://{up_addr}"),
            "--out",
            &out_s,
        ],
        None,
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let code = loop {
        if let Ok(Some(s)) = again.child.try_wait() {
            break s.code();
        }
        assert!(Instant::now() < deadline, "the second proxy did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code, Some(2));
    let said = again.stderr_at_exit();
    assert!(said.contains("--force"), "{said}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), history);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `serve --no-auth` checks no token whatever the model says: its card declares no security
/// scheme and a message without `Authorization` is answered; its banner prints the next
/// command (a curl without a token, then the proxy).
#[test]
fn serve_no_auth_answers_without_a_token_and_prints_the_next_command() {
    let _serial = serial();
    let (mut up, addr, lines) = {
        let (proc, lines) = start(&["serve", "--listen", "127.0.0.1:0", "--no-auth"], None);
        let addr = doors_support::address(&lines);
        (proc, addr, lines)
    };
    let mut banner = Vec::new();
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(5)) {
        let done = line.starts_with("then:");
        banner.push(line);
        if done {
            break;
        }
    }
    let banner = banner.join("\n");
    assert!(
        !banner.contains("Bearer"),
        "no token is asked for:\n{banner}"
    );
    assert!(banner.contains("try: curl -s http://"), "{banner}");
    assert!(banner.contains("a2a-chaos proxy --upstream"), "{banner}");
    let card = request(
        addr,
        "GET",
        "/.well-known/agent-card.json",
        &[],
        b"",
        Duration::from_secs(10),
    )
    .unwrap();
    assert!(!card.body.contains("securitySchemes"), "{}", card.body);
    let a = request(
        addr,
        "POST",
        "/",
        &[("Content-Type", "application/json"), ("A2A-Version", "1.0")],
        &serde_json::to_vec(&send(1, 1, "ctx")).unwrap(),
        Duration::from_secs(10),
    )
    .unwrap();
    assert_eq!(a.status, 200, "{a:?}");
    assert!(a.body.contains("\"result\""), "{a:?}");
    assert_eq!(up.terminate(), Some(0));
}
