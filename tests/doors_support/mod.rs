//! What the tests of the servers' doors share (`tests/doors.rs`, `tests/fuzz_doors.rs`):
//! starting `serve` and `proxy` as child processes (optionally under a descriptor limit),
//! plain HTTP/1.1 over std sockets, idle connections, and a process's memory.
#![allow(dead_code)] // each test binary uses part of it

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A child process, stopped (SIGKILL) and reaped when dropped, whatever the test did.
pub struct Proc {
    pub child: Child,
    /// What it wrote to stderr so far (drained by a thread).
    pub stderr: std::sync::Arc<std::sync::Mutex<String>>,
    /// Set once the reader has read its stderr to the end.
    pub stderr_done: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Its resident memory, in KiB (`VmRSS` of /proc/PID/status).
    pub fn rss_kib(&self) -> u64 {
        status_kib(self.pid(), "VmRSS:")
    }

    /// How many descriptors it holds open.
    pub fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// Sends SIGTERM and waits (at most 10 s) for its exit code.
    pub fn terminate(&mut self) -> Option<i32> {
        // SAFETY: a signal to a child this struct owns.
        unsafe { libc::kill(self.pid() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Its stderr so far.
    pub fn stderr_text(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// All of its stderr, once it has exited: waits (at most 10 s) until the reader has
    /// read to the end, since the exit can come before the reader took the last lines.
    pub fn stderr_at_exit(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.stderr_done.load(std::sync::atomic::Ordering::Acquire)
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.stderr_text()
    }
}

/// A field of /proc/PID/status in KiB (`VmRSS:`, `VmHWM:`).
pub fn status_kib(pid: u32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Starts `a2a-chaos <args>` with at most `fds` descriptors (soft and hard limit) when
/// given; returns it and the lines of its stdout as they come.
pub fn start(args: &[&str], fds: Option<u64>) -> (Proc, mpsc::Receiver<String>) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2a-chaos"));
    cmd.args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(n) = fds {
        // SAFETY: setrlimit is async-signal-safe and touches only the child.
        unsafe {
            cmd.pre_exec(move || {
                let limit = libc::rlimit {
                    rlim_cur: n,
                    rlim_max: n,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().expect("a2a-chaos starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let err = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (sink, finished) = (err.clone(), done.clone());
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let mut s = sink.lock().unwrap();
            if s.len() < 1 << 20 {
                s.push_str(&line);
                s.push('\n');
            }
        }
        finished.store(true, std::sync::atomic::Ordering::Release);
    });
    (
        Proc {
            child,
            stderr: err,
            stderr_done: done,
        },
        rx,
    )
}

/// The first `http://ADDR/` on a line of `lines` within 20 s.
pub fn address(lines: &mpsc::Receiver<String>) -> SocketAddr {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = lines
            .recv_timeout(left)
            .expect("the server prints its address within 20 s");
        if let Some(i) = line.find("http://") {
            let addr: String = line[i + 7..].chars().take_while(|c| *c != '/').collect();
            return addr.parse().expect("an address");
        }
    }
}

/// `serve` on a free loopback port with `extra` flags (and a descriptor limit): the process,
/// its address and its Bearer token.
pub fn serve(extra: &[&str], fds: Option<u64>) -> (Proc, SocketAddr, String) {
    let mut args = vec!["serve", "--listen", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let (proc, lines) = start(&args, fds);
    let addr = address(&lines);
    let deadline = Instant::now() + Duration::from_secs(20);
    let token = loop {
        let line = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("serve prints its token");
        if let Some(i) = line.find("Authorization: Bearer ") {
            let rest = &line[i + "Authorization: Bearer ".len()..];
            break rest.split('`').next().unwrap_or("").to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (proc, addr, token)
}

/// `proxy` in front of `upstreams`, writing `out`, with `extra` flags: the process and its
/// address.
pub fn proxy(upstreams: &str, out: &str, extra: &[&str], fds: Option<u64>) -> (Proc, SocketAddr) {
    let mut args = vec![
        "proxy",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        upstreams,
        "--out",
        out,
    ];
    args.extend_from_slice(extra);
    let (proc, lines) = start(&args, fds);
    let addr = address(&lines);
    std::thread::spawn(move || for _ in lines {});
    (proc, addr)
}

/// An HTTP answer: status and body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    /// The status line and headers, as sent.
    pub head: String,
    pub body: String,
}

/// One HTTP/1.1 request (`Connection: close`) with its whole answer, within `timeout`.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> Result<Answer, String> {
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(timeout)).unwrap();
    s.set_write_timeout(Some(timeout)).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())
        .and_then(|()| s.write_all(body))
        .map_err(|e| format!("write: {e}"))?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(|e| format!("read: {e}"))?;
    let text = String::from_utf8_lossy(&raw).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status line in {:?}", &text[..text.len().min(200)]))?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .map(|(h, b)| (h.to_string(), b.to_string()))
        .unwrap_or_default();
    Ok(Answer { status, head, body })
}

/// A JSON-RPC call (A2A 1.0) with the token; the parsed answer.
pub fn rpc(
    addr: SocketAddr,
    token: &str,
    body: &serde_json::Value,
    timeout: Duration,
) -> Result<serde_json::Value, String> {
    let auth = format!("Bearer {token}");
    let a = request(
        addr,
        "POST",
        "/",
        &[
            ("Content-Type", "application/json"),
            ("A2A-Version", "1.0"),
            ("Authorization", &auth),
        ],
        &serde_json::to_vec(body).unwrap(),
        timeout,
    )?;
    serde_json::from_str(&a.body).map_err(|e| format!("{e}: {} {}", a.status, a.body))
}

/// The agent card, fetched within `timeout`, and how long it took.
pub fn card(addr: SocketAddr, timeout: Duration) -> Result<Duration, String> {
    let started = Instant::now();
    let a = request(
        addr,
        "GET",
        "/.well-known/agent-card.json",
        &[],
        b"",
        timeout,
    )?;
    if a.status != 200 || !a.body.contains("\"name\"") {
        return Err(format!("status {}: {}", a.status, a.body));
    }
    Ok(started.elapsed())
}

/// Opens `n` connections to `addr` that send nothing, on 8 threads; returns those that
/// connected within 3 s each.
pub fn idle_connections(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    let per = n.div_ceil(8);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let count = per.min(n.saturating_sub(t * per));
            std::thread::spawn(move || {
                (0..count)
                    .filter_map(|_| TcpStream::connect_timeout(&addr, Duration::from_secs(3)).ok())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect()
}

/// A scratch directory for one test, empty.
pub fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("a2a-chaos-doors-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
