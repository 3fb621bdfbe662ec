//! Fuzz and soak of every server door on real sockets (issue 39): `serve`'s JSON-RPC door,
//! `proxy`, and the proxy's ledger (`/effect`, `/save`, `/read`).
//!
//! For a bounded time per door (`A2A_CHAOS_SOAK_MS`, default 3,000 ms), four threads throw
//! what no script sends: random bytes, garbage after a valid head, a body shorter than its
//! `Content-Length`, a head sent a byte at a time (slowloris), a 100 MB `Content-Length`
//! with nothing behind it, connections reset at once, chunked junk, hostile JSON-RPC (deep
//! nesting, wrong types, batches, huge numbers, invalid UTF-8, tens of thousands of parts),
//! idle connections held open, and answers never read. The doors run under a descriptor
//! limit of 256, below the hundreds of connections a soak holds open. Every exchange must
//! end in an HTTP answer or a close within 5 s, never a hang. Then the door must still
//! answer a valid request promptly, the process must still run, and its memory must stay
//! bounded.
//!
//! The inputs are drawn from `A2A_CHAOS_FUZZ_SEED` (default 0), so a run throws the same
//! inputs on every machine; their timing is real. See docs/FUZZING.md.

mod doors_support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use doors_support::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

/// The descriptor limit the doors run under: fewer than the connections a soak holds open,
/// so the connection limit and the shedding are exercised, not just the parsers.
const FDS: u64 = 256;

/// How long each door is soaked.
fn soak() -> Duration {
    let ms = std::env::var("A2A_CHAOS_SOAK_MS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(3000);
    Duration::from_millis(ms)
}

fn seed() -> u64 {
    std::env::var("A2A_CHAOS_FUZZ_SEED")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// What a door is: where to knock, and the paths and headers its valid requests carry.
#[derive(Clone)]
struct Door {
    addr: SocketAddr,
    paths: Vec<&'static str>,
    token: String,
}

/// Counts of what was thrown.
#[derive(Default)]
struct Tally {
    inputs: AtomicU64,
    answered: AtomicU64,
    held: AtomicU64,
}

/// A hostile JSON-RPC body.
fn hostile_json(rng: &mut ChaCha8Rng) -> Vec<u8> {
    let message = |parts: serde_json::Value| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message":
            {"messageId": "m", "role": "ROLE_USER", "parts": parts}}})
    };
    match rng.random_range(0..12) {
        0 => {
            let depth = rng.random_range(100..2000);
            format!("{}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes()
        }
        1 => {
            let n = rng.random_range(1000..80_000);
            serde_json::to_vec(&message(json!(vec![json!({"text": ""}); n]))).unwrap()
        }
        2 => br#"{"jsonrpc":"2.0","id":{"a":1},"method":7,"params":"x"}"#.to_vec(),
        3 => {
            br#"[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}},1,null]"#.to_vec()
        }
        4 => b"{\"jsonrpc\":\"2.0\",\"id\":1e999999,\"method\":\"GetTask\"}".to_vec(),
        5 => {
            let mut b = br#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":""#.to_vec();
            b.extend_from_slice(&[0xff, 0xfe, 0xc0, 0x80]);
            b.extend_from_slice(br#"","role":"ROLE_USER","parts":[{"text":"x"}]}}}"#);
            b
        }
        6 => serde_json::to_vec(&message(json!([{"text": "\u{202e}\u{0}\u{1b}[31m"}]))).unwrap(),
        7 => serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask",
            "params": {"id": "x".repeat(rng.random_range(1..200_000))}}),
        )
        .unwrap(),
        8 => serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks",
            "params": {"pageSize": -5, "pageToken": "\u{0}"}}))
        .unwrap(),
        9 => serde_json::to_vec(
            &json!({"task_id": 1, "context_id": [], "turn": -1, "replica": null}),
        )
        .unwrap(),
        10 => {
            let n = rng.random_range(1..4096);
            (0..n).map(|_| rng.random::<u8>()).collect()
        }
        _ => serde_json::to_vec(&message(
            json!([{"data": {"conversation": "c", "turn": u64::MAX, "turns": 0}}]),
        ))
        .unwrap(),
    }
}

/// Reads whatever comes back within 5 s; whether it ended (an answer or a close), not a hang.
fn drain(s: &mut TcpStream) -> bool {
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = [0u8; 8192];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) => {
                return !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                )
            }
        }
    }
}

/// One attack thread: until `until`, one hostile exchange after another; connections it
/// holds open are returned to be closed at the end.
fn attack(door: &Door, rng: &mut ChaCha8Rng, until: Instant, tally: &Tally) -> Vec<TcpStream> {
    let mut held = Vec::new();
    while Instant::now() < until {
        let Ok(mut s) = TcpStream::connect_timeout(&door.addr, Duration::from_secs(2)) else {
            continue;
        };
        tally.inputs.fetch_add(1, Ordering::Relaxed);
        let path = door.paths[rng.random_range(0..door.paths.len())];
        let auth = format!("Bearer {}", door.token);
        let head = |len: usize, extra: &str| {
            format!(
                "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nAuthorization: {auth}\r\nContent-Length: {len}\r\n{extra}\r\n"
            )
        };
        let kind = rng.random_range(0..10);
        let ended = match kind {
            // Random bytes, then wait for whatever comes back.
            0 => {
                let n = rng.random_range(1..8192);
                let junk: Vec<u8> = (0..n).map(|_| rng.random()).collect();
                let _ = s.write_all(&junk);
                drain(&mut s)
            }
            // A valid head, then a hostile JSON-RPC body.
            1..=3 => {
                let body = hostile_json(rng);
                let _ = s
                    .write_all(head(body.len(), "").as_bytes())
                    .and_then(|()| s.write_all(&body));
                drain(&mut s)
            }
            // A body shorter than its Content-Length, then silence (held).
            4 => {
                let _ = s.write_all(head(5000, "").as_bytes());
                let _ = s.write_all(b"{\"jsonrpc\":");
                held.push(s);
                tally.held.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            // Slowloris: a few bytes of a head, then silence (held).
            5 => {
                let h = head(2, "");
                let k = rng.random_range(1..h.len());
                let _ = s.write_all(&h.as_bytes()[..k]);
                held.push(s);
                tally.held.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            // 100 MB announced, nothing sent, closed.
            6 => {
                let _ = s.write_all(head(100_000_000, "").as_bytes());
                let _ = s.shutdown(std::net::Shutdown::Write);
                drain(&mut s)
            }
            // Chunked junk.
            7 => {
                let _ = s.write_all(
                    format!("POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n", "q".repeat(100))
                        .as_bytes(),
                );
                drain(&mut s)
            }
            // A streaming request whose answer is never read (held).
            8 => {
                let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1,
                    "method": "SendStreamingMessage", "params": {"message": {"messageId":
                    format!("s{}", rng.random::<u32>()), "role": "ROLE_USER", "parts": [{"text": "hi"}]}}}))
                .unwrap();
                let _ = s
                    .write_all(head(body.len(), "Accept: text/event-stream\r\n").as_bytes())
                    .and_then(|()| s.write_all(&body));
                held.push(s);
                tally.held.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            // Reset at once.
            _ => {
                use std::os::fd::AsRawFd;
                let linger = libc::linger {
                    l_onoff: 1,
                    l_linger: 0,
                };
                // SAFETY: SO_LINGER on a socket this thread owns, with a valid struct.
                unsafe {
                    libc::setsockopt(
                        s.as_raw_fd(),
                        libc::SOL_SOCKET,
                        libc::SO_LINGER,
                        (&linger as *const libc::linger).cast(),
                        std::mem::size_of::<libc::linger>() as libc::socklen_t,
                    );
                }
                drop(s);
                true
            }
        };
        assert!(ended, "an exchange of kind {kind} on {path} hung for 5 s");
        tally.answered.fetch_add(1, Ordering::Relaxed);
        if held.len() > 200 {
            held.drain(..100);
        }
    }
    held
}

/// Soaks `door` for [`soak`] on four threads; returns the tally.
fn soak_door(name: &str, door: &Door) -> Arc<Tally> {
    let tally = Arc::new(Tally::default());
    let until = Instant::now() + soak();
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let (door, tally) = (door.clone(), tally.clone());
            let mut rng = ChaCha8Rng::seed_from_u64(seed() ^ (t << 32) ^ name.len() as u64);
            std::thread::spawn(move || attack(&door, &mut rng, until, &tally))
        })
        .collect();
    let held: Vec<TcpStream> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("an attack thread"))
        .collect();
    drop(held);
    tally
}

fn send_message(id: &str) -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message":
        {"messageId": id, "role": "ROLE_USER", "parts": [{"text": "hi"}]}}})
}

fn report(name: &str, tally: &Tally, after: Duration, rss_kib: u64) {
    eprintln!(
        "fuzz doors/{name}: {} hostile exchanges ({} ended in an answer or a close, {} held open) in {:.1} s (seed {}); a valid request answered {:.1} ms after; RSS {} MiB",
        tally.inputs.load(Ordering::Relaxed),
        tally.answered.load(Ordering::Relaxed),
        tally.held.load(Ordering::Relaxed),
        soak().as_secs_f64(),
        seed(),
        after.as_secs_f64() * 1000.0,
        rss_kib / 1024
    );
}

#[test]
fn fuzz_doors_serve_json_rpc() {
    let (mut serve, addr, token) = serve(&["--header-timeout-ms", "1000"], Some(FDS));
    let door = Door {
        addr,
        paths: vec!["/", "/", "/.well-known/agent-card.json", "/nope"],
        token: token.clone(),
    };
    let tally = soak_door("serve", &door);
    let started = Instant::now();
    card(addr, Duration::from_secs(5)).expect("the card after the soak");
    let answer = rpc(
        addr,
        &token,
        &send_message("after"),
        Duration::from_secs(10),
    )
    .unwrap();
    assert!(answer.get("result").is_some(), "{answer}");
    let after = started.elapsed();
    report("serve", &tally, after, serve.rss_kib());
    assert!(serve.alive(), "{}", serve.stderr_text());
    assert!(serve.rss_kib() < 512 * 1024, "{} KiB", serve.rss_kib());
    assert_eq!(serve.terminate(), Some(0));
}

#[test]
fn fuzz_doors_proxy() {
    let dir = scratch("fuzz-proxy");
    let (_up, up_addr, token) = serve(&[], None);
    let out = dir.join("history.jsonl");
    let (mut proxy, addr) = proxy(
        &format!("http://{up_addr}"),
        &out.display().to_string(),
        &["--header-timeout-ms", "1000", "--no-final-read"],
        Some(FDS),
    );
    let door = Door {
        addr,
        paths: vec!["/", "/", "/.well-known/agent-card.json"],
        token: token.clone(),
    };
    let tally = soak_door("proxy", &door);
    let started = Instant::now();
    card(addr, Duration::from_secs(5)).expect("the card through the proxy after the soak");
    let answer = rpc(
        addr,
        &token,
        &send_message("after"),
        Duration::from_secs(10),
    )
    .unwrap();
    assert!(answer.get("result").is_some(), "{answer}");
    let after = started.elapsed();
    report("proxy", &tally, after, proxy.rss_kib());
    assert!(proxy.alive(), "{}", proxy.stderr_text());
    assert_eq!(proxy.terminate(), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fuzz_doors_ledger() {
    let dir = scratch("fuzz-ledger");
    let (_up, up_addr, _) = serve(&[], None);
    let out = dir.join("history.jsonl");
    let (proc_, lines) = start(
        &[
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            &format!("http://{up_addr}"),
            "--out",
            &out.display().to_string(),
            "--header-timeout-ms",
            "1000",
            "--no-final-read",
        ],
        Some(FDS),
    );
    let mut proxy = proc_;
    // The first line names the proxy's address, then its ledger's.
    let first = lines
        .recv_timeout(Duration::from_secs(20))
        .expect("the proxy's first line");
    let ledger: SocketAddr = first
        .split("ledger on http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no ledger address in {first}"));
    std::thread::spawn(move || for _ in lines {});
    let door = Door {
        addr: ledger,
        paths: vec!["/effect", "/save", "/read", "/"],
        token: String::new(),
    };
    let tally = soak_door("ledger", &door);
    let started = Instant::now();
    let effect = json!({"task_id": "t", "context_id": "c", "conversation": "c1", "turn": 1,
        "message_id": "m1", "replica": "replica-0", "key": null, "sent_ms": 0});
    let a = request(
        ledger,
        "POST",
        "/effect",
        &[("Content-Type", "application/json")],
        &serde_json::to_vec(&effect).unwrap(),
        Duration::from_secs(5),
    )
    .expect("the ledger answers after the soak");
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(a.body.contains("applied"), "{}", a.body);
    report("ledger", &tally, started.elapsed(), proxy.rss_kib());
    assert!(proxy.alive(), "{}", proxy.stderr_text());
    assert_eq!(proxy.terminate(), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}
