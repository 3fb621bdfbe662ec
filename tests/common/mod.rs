//! What the live integration tests share: installing the test peers (a2a-python, Mastra,
//! @a2a-js/sdk), a guard that kills a child process however the test ends, and a bounded
//! run of a command.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Kills the child when dropped.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Installs the a2a-python peer; `false` when it cannot be and `A2A_CHAOS_SKIP_LIVE=1` (the
/// test skips).
pub fn install_peer() -> bool {
    install("a2a-python", "python3 (with venv) and PyPI")
}

/// Installs the Mastra peer (Node 22 and the locked packages, from npm); `false` when it
/// cannot be and `A2A_CHAOS_SKIP_LIVE=1`.
#[allow(dead_code)] // not every test binary that shares this module runs Mastra
pub fn install_mastra() -> bool {
    install("mastra", "npm and the npm registry")
}

/// Installs the @a2a-js/sdk peer (npm, and Node 22 when the machine's is older than 20);
/// `false` when it cannot be and `A2A_CHAOS_SKIP_LIVE=1`.
#[allow(dead_code)] // not every test binary that shares this module runs it
pub fn install_a2a_js() -> bool {
    install("a2a-js", "npm and the npm registry")
}

/// Runs `tests/peers/<peer>/setup.sh` (idempotent, into `target/`).
fn install(peer: &str, needs: &str) -> bool {
    let skip = std::env::var("A2A_CHAOS_SKIP_LIVE").is_ok_and(|v| v == "1");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let setup = Command::new("bash")
        .arg(root.join(format!("tests/peers/{peer}/setup.sh")))
        .current_dir(root)
        .output();
    match setup {
        Ok(o) if o.status.success() => {}
        other => {
            let why = match other {
                Ok(o) => format!(
                    "{}{}",
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                ),
                Err(e) => e.to_string(),
            };
            if skip {
                eprintln!("skipped: the {peer} peer could not be installed (A2A_CHAOS_SKIP_LIVE=1): {why}");
                return false;
            }
            panic!(
                "tests/peers/{peer}/setup.sh failed: the live tests need {needs}; set A2A_CHAOS_SKIP_LIVE=1 to skip them.\n{why}"
            );
        }
    }
    true
}

/// Runs `cmd` to its end, killing it after `limit`; its output. The pipes are drained by
/// threads, so a chatty child cannot block on a full pipe. (Not every test crate runs
/// commands this way.)
#[allow(dead_code)]
pub fn bounded(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped")));
    let mut guard = Guard(child);
    let started = Instant::now();
    let status = loop {
        match guard.0.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > limit => {
                drop(guard);
                panic!("{cmd:?} did not finish within {limit:?}: killed")
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => panic!("waiting for {cmd:?}: {e}"),
        }
    };
    Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}
