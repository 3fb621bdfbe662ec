//! The proxy as the load balancers users run it: the agent card it relays sends clients
//! back through it, a refused upstream is retried on the next one (`--retry-next`), each
//! attempt recorded, and a sticky cookie keeps a client on the upstream that answered it
//! (`--sticky-cookie`). One real `serve` and one address where nothing listens, on
//! loopback; every process is stopped by its guard.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod doors_support;
use doors_support::{proxy, request, scratch, serve};

/// A loopback address where nothing listens (a replica that is down).
fn dead_address() -> std::net::SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

fn send(id: u64, cookie: Option<&str>, addr: std::net::SocketAddr, token: &str) -> (String, Value) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "SendMessage", "params": {
        "message": {"messageId": format!("m{id}"), "contextId": "ctx", "role": "ROLE_USER",
                    "parts": [{"text": "hi"}]},
        "configuration": {"returnImmediately": true}}});
    let auth = format!("Bearer {token}");
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("A2A-Version", "1.0"),
        ("Authorization", auth.as_str()),
    ];
    if let Some(c) = cookie {
        headers.push(("Cookie", c));
    }
    let a = request(
        addr,
        "POST",
        "/",
        &headers,
        &serde_json::to_vec(&body).unwrap(),
        Duration::from_secs(20),
    )
    .unwrap();
    let value = serde_json::from_str(&a.body).unwrap_or_else(|e| panic!("{e}: {a:?}"));
    (a.head, value)
}

#[test]
fn the_card_leads_back_to_the_proxy_a_refused_upstream_is_retried_and_cookies_stick() {
    let dir = scratch("balancer");
    let (_up, up_addr, token) = serve(&[], None);
    let dead = dead_address();
    let out = dir.join("history.jsonl");
    let (mut proxy, addr) = proxy(
        &format!("http://{dead},http://{up_addr}"),
        &out.display().to_string(),
        &[
            "--retry-next",
            "--sticky-cookie",
            "--no-final-read",
            "--max-requests",
            "3",
        ],
        None,
    );

    // Round-robin sends the first request to the dead replica: refused, retried on the
    // live one, answered, and the answer pins the client to it.
    let (head, first) = send(1, None, addr, &token);
    assert!(first.get("result").is_some(), "{first}");
    let cookie = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with("set-cookie:")
                .then(|| l["set-cookie:".len()..].trim().to_string())
        })
        .expect("a sticky cookie");
    assert!(
        cookie.starts_with("a2a-chaos-replica=replica-1"),
        "{cookie}"
    );
    // The card, fetched through the proxy: every interface URL points at the proxy.
    let card = request(
        addr,
        "GET",
        "/.well-known/agent-card.json",
        &[],
        b"",
        Duration::from_secs(20),
    )
    .unwrap();
    assert_eq!(card.status, 200, "{card:?}");
    let card: Value = serde_json::from_str(&card.body).unwrap();
    let urls: Vec<&str> = card["supportedInterfaces"]
        .as_array()
        .expect("a 1.0 card")
        .iter()
        .filter_map(|i| i["url"].as_str())
        .collect();
    assert!(!urls.is_empty(), "{card}");
    for url in urls {
        assert!(
            url.starts_with(&format!("http://{addr}")),
            "{url} in {card}"
        );
    }

    let pair = cookie.split(';').next().unwrap().to_string();
    // With the cookie, both later requests stay on replica-1 (round-robin alone would
    // have sent one of them to replica-0 first).
    for id in [2, 3] {
        let (_, a) = send(id, Some(&pair), addr, &token);
        assert!(a.get("result").is_some(), "{a}");
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while proxy.alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!proxy.alive(), "the proxy stops after 3 answered requests");

    let history = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<Value> = history
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let requests: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "request")
        .map(|l| l["replica"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        requests,
        ["replica-0", "replica-1", "replica-1", "replica-1"],
        "the refused attempt, its retry, and two sticky requests:\n{history}"
    );
    let refused = lines
        .iter()
        .find(|l| l["type"] == "response" && l["seq"] == 1)
        .expect("the refused attempt is recorded");
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("retried on the next upstream")),
        "{refused}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A tiny upstream on a thread that answers every request `502 Bad Gateway` (after reading
/// its head and body), for `count` requests.
fn bad_gateway_upstream(count: usize) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in listener.incoming().take(count) {
            let Ok(mut s) = stream else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let mut got = Vec::new();
            let mut buf = [0u8; 8192];
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&got).to_string();
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
            let body = r#"{"error":"upstream unavailable"}"#;
            let _ = write!(
                s,
                "HTTP/1.1 502 Bad Gateway\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    addr
}

/// `--retry-next` on a 502: the client is answered by the next upstream, and the 502 it
/// never saw is recorded as a dropped answer of its own exchange (a send the first upstream
/// may have acted on), then the retry as a second exchange.
#[test]
fn a_502_is_retried_on_the_next_upstream_and_recorded_as_an_answer_the_client_never_saw() {
    let dir = scratch("balancer-502");
    let (_up, up_addr, token) = serve(&[], None);
    let bad = bad_gateway_upstream(4);
    let out = dir.join("history.jsonl");
    let (mut proxy, addr) = proxy(
        &format!("http://{bad},http://{up_addr}"),
        &out.display().to_string(),
        &["--retry-next", "--no-final-read", "--max-requests", "1"],
        None,
    );
    let (_, answer) = send(1, None, addr, &token);
    assert!(answer.get("result").is_some(), "{answer}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while proxy.alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let history = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<Value> = history
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let responses: Vec<(u64, bool)> = lines
        .iter()
        .filter(|l| l["type"] == "response")
        .map(|l| {
            (
                l["status"].as_u64().unwrap_or(0),
                l["dropped"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    assert_eq!(responses, [(502, true), (200, false)], "{history}");
    let _ = std::fs::remove_dir_all(&dir);
}
