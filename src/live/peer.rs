//! Real replica processes: a command template, started, killed and restarted on loopback.
//!
//! A peer command is a shell command template (run as `sh -c "exec ..."`, so the process
//! killed is the replica itself) with these placeholders, each substituted shell-quoted:
//! `{index}`, `{name}` (`replica-N`), `{port}`, `{ledger}` (the ledger's base URL), `{db}` (the
//! shared database's SQLAlchemy URL), `{webhook}` (the `host:port` through which this replica
//! reaches the run's webhook, where its pushes go whatever URL they name), `{model}`, `{sdk}` and `{store}` (from the model's
//! `[fidelity]` table), `{venv}` (the peer's virtual environment for `{sdk}`) and `{root}` (the
//! repository), `{mastra}` (where `tests/peers/mastra/setup.sh` installed Node and Mastra),
//! `{a2a-js}` (where `tests/peers/a2a-js/setup.sh` installed Node and @a2a-js/sdk), `{dir}`
//! (the run's directory, which holds the logs), `{think-ms}` (the scenario's `think-ms`, its
//! midpoint for a range, else 40); the same values are in the replica's
//! environment as `A2A_CHAOS_*` ([`Fleet::environment`]). The
//! preset `a2a-python` is the test peer under `tests/peers/a2a-python/`, run from the virtual
//! environments `tests/peers/a2a-python/setup.sh` makes (under `target/peer-venv/`, or
//! `$A2A_CHAOS_PEER_VENV`); the preset `mastra` is the one under `tests/peers/mastra/`, run
//! with the Node that its `setup.sh` installs (under `target/peer-mastra/`, or
//! `$A2A_CHAOS_MASTRA_DIR`); the preset `a2a-js` is the @a2a-js/sdk server under
//! `tests/peers/a2a-js/` (under `target/peer-a2a-js/`, or `$A2A_CHAOS_PEER_JS`), whose
//! tasks live in each process's own memory. A model's `[fidelity]` table names its preset.
//!
//! With the `a2a-python` preset, a user's own task store replaces the model's
//! ([`UserStore`]: `live --store module:Class --pythonpath DIR`), in the replicas and in the
//! final read of the database alike.
//!
//! Each replica's output goes to `replica-N.log` in the run's directory. Every process is
//! killed when the fleet is dropped, so a failing run leaves nothing behind.
//!
//! With the preset and a PostgreSQL URL, each run gets a database of its own
//! ([`RunDatabase`], `src/live/run_db.rs`).

use std::cell::RefCell;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::error::InputError;
use crate::host::Host;
use crate::model::Profile;
use crate::net::{self, Call};

use super::setup::SetupError;

pub use super::run_db::{database_name, is_postgres, RunDatabase};

/// Makes the replica die when the thread that started it does, so a run that is killed
/// (Ctrl-C, SIGTERM, SIGKILL) leaves no replica behind (Linux; elsewhere the fleet's
/// `Drop` is the only guard).
pub(crate) fn die_with_parent(command: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl is async-signal-safe and touches only the forked child.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}

/// The a2a-python test peer's preset name.
pub const PRESET_A2A_PYTHON: &str = "a2a-python";

/// The Mastra test peer's preset name.
pub const PRESET_MASTRA: &str = "mastra";

/// The @a2a-js/sdk test peer's preset name.
pub const PRESET_A2A_JS: &str = "a2a-js";

/// Every preset, for messages.
pub const PRESETS: [&str; 3] = [PRESET_A2A_PYTHON, PRESET_MASTRA, PRESET_A2A_JS];

/// How to start a replica: a preset name or a command template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerCommand(pub String);

impl PeerCommand {
    /// Whether this is the `a2a-python` preset.
    pub fn is_a2a_python(&self) -> bool {
        self.0 == PRESET_A2A_PYTHON
    }

    /// Whether this is the `mastra` preset.
    pub fn is_mastra(&self) -> bool {
        self.0 == PRESET_MASTRA
    }

    /// Whether this is the `a2a-js` preset.
    pub fn is_a2a_js(&self) -> bool {
        self.0 == PRESET_A2A_JS
    }

    /// Whether this is one of the repository's own peers, whose reports (effects and saves)
    /// and final-task reads are known; any other command is the user's server.
    pub fn is_preset(&self) -> bool {
        PRESETS.contains(&self.0.as_str())
    }

    /// Whether the replicas serve the tasks they hold at `GET /__a2a_chaos/tasks` for
    /// certain (the Mastra and a2a-js presets); a user's command is asked too, and read with
    /// GetTask when it does not serve that path (`live::tasks_from`).
    pub fn serves_tasks(&self) -> bool {
        self.is_mastra() || self.is_a2a_js()
    }

    /// The template, with a preset expanded.
    pub fn template(&self) -> String {
        match self.0.as_str() {
            PRESET_A2A_PYTHON => "{venv}/bin/python {root}/tests/peers/a2a-python/server.py --port {port} --name {name} --ledger {ledger} --db {db} --store {store} --webhook-via {webhook}".into(),
            PRESET_MASTRA => "{mastra}/bin/node {root}/tests/peers/mastra/server.mjs --port {port} --name {name} --ledger {ledger} --ledger-timeout-ms 500 --install-dir {mastra}".into(),
            PRESET_A2A_JS => "{a2a-js}/bin/node {root}/tests/peers/a2a-js/server.mjs --port {port} --name {name} --ledger {ledger}".into(),
            _ => self.0.clone(),
        }
    }
}

/// The repository root: the current directory when it holds the peers, else the one this
/// binary was built from.
pub fn root() -> PathBuf {
    let here = PathBuf::from(".");
    if here.join("tests/peers").is_dir() {
        return std::fs::canonicalize(&here).unwrap_or(here);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where the peer's virtual environments live (one `v<sdk>` folder per SDK version).
pub fn venv_base() -> PathBuf {
    match std::env::var_os("A2A_CHAOS_PEER_VENV") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => root().join("target/peer-venv"),
    }
}

/// Where the Mastra peer's Node and packages live (`bin/node`, `node_modules/`).
pub fn mastra_base() -> PathBuf {
    match std::env::var_os("A2A_CHAOS_MASTRA_DIR") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => root().join("target/peer-mastra"),
    }
}

/// Where the a2a-js peer's Node and packages live (`bin/node`, `node_modules/`).
pub fn a2a_js_base() -> PathBuf {
    match std::env::var_os("A2A_CHAOS_PEER_JS") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => root().join("target/peer-a2a-js"),
    }
}

/// A user's own task store for the `a2a-python` preset: `server.py --store module:Class`
/// (an a2a-sdk `TaskStore` or `VersionedTaskStore`, constructed as `Class(db_url)`), imported
/// with the `pythonpath` directories first on `sys.path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserStore {
    /// `module:Class` (or `module:Outer.Inner`).
    pub class: String,
    /// Directories to import it from.
    pub pythonpath: Vec<String>,
}

impl UserStore {
    /// Refuses a class path that is not `module:Class`.
    pub fn parse(class: &str, pythonpath: Vec<String>) -> Result<UserStore, InputError> {
        let valid = class
            .split_once(':')
            .is_some_and(|(module, attr)| !module.is_empty() && !attr.is_empty());
        if !valid {
            return Err(InputError::new("--store", format!(
                "--store `{class}`: expected module:Class (an a2a-sdk TaskStore or VersionedTaskStore, e.g. mystore:MyTaskStore)"
            )));
        }
        Ok(UserStore {
            class: class.to_string(),
            pythonpath,
        })
    }

    /// `--pythonpath DIR ...`, as `server.py` takes them.
    fn pythonpath_args(&self) -> Vec<String> {
        self.pythonpath
            .iter()
            .flat_map(|dir| ["--pythonpath".to_string(), dir.clone()])
            .collect()
    }

    /// `--store module:Class --pythonpath DIR ...`, as `server.py --dump` takes them.
    fn args(&self) -> Vec<String> {
        let mut args = vec!["--store".to_string(), self.class.clone()];
        args.extend(self.pythonpath_args());
        args
    }
}

/// A fresh directory for one run under `base`.
pub fn fresh_dir(base: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(base)?;
    for n in 0.. {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let dir = base.join(format!("run-{stamp}-{}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    unreachable!("an unbounded range")
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// `text` as one shell word: as it is when nothing in it is special to the shell, else
/// quoted as `quote` does (how a reproduce command prints its flags).
pub fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=+,@".contains(c));
    if plain {
        text.to_string()
    } else {
        quote(text)
    }
}

/// The replicas of one live run.
pub struct Fleet {
    command: PeerCommand,
    model: String,
    sdk: String,
    store: String,
    /// The model's `[fidelity] args`, appended to a preset's command line.
    args: Vec<String>,
    /// The user's own store, in place of the model's (the `a2a-python` preset only).
    user_store: Option<UserStore>,
    ledger: String,
    db: String,
    /// Per replica, the ledger and database URLs it is given instead, through the links
    /// of the run's [`super::network::Network`].
    routes: Vec<Option<Route>>,
    dir: PathBuf,
    children: Vec<Option<Child>>,
    addrs: Vec<Option<SocketAddr>>,
    /// When each replica that was sent SIGTERM is SIGKILLed if it has not exited.
    draining: Vec<Option<Instant>>,
    /// Replicas frozen by SIGSTOP (`pause`), until SIGCONT.
    paused: Vec<bool>,
    /// Whether the a2a-python preset runs with push on (`server.py --push`; `live
    /// --allow-loopback-push`).
    push: bool,
    /// The agent's think time, ms, when a scenario sets one (`--think-ms` of every preset;
    /// `{think-ms}` and `A2A_CHAOS_THINK_MS` for a user's command).
    think_ms: Option<u64>,
}

/// Where one replica finds the ledger and the database: through its own links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The ledger's base URL.
    pub ledger: String,
    /// The `host:port` through which the replica reaches the webhook.
    pub webhook: String,
    /// The database URL, when the database is reached over TCP (else the fleet's).
    pub db: Option<String>,
}

impl Fleet {
    /// A fleet of `replicas` processes, none started yet.
    pub fn new(
        command: PeerCommand,
        profile: &Profile,
        ledger: String,
        db: String,
        dir: PathBuf,
        replicas: usize,
        user_store: Option<UserStore>,
    ) -> Self {
        let fidelity = profile.fidelity.clone().unwrap_or_default();
        // The model's arguments are for the peer it names, not for another preset.
        let args = if command.0 == fidelity.peer {
            fidelity.args
        } else {
            Vec::new()
        };
        Fleet {
            command,
            model: profile.name.clone(),
            sdk: fidelity.sdk,
            store: user_store
                .as_ref()
                .map_or(fidelity.store, |u| u.class.clone()),
            args,
            user_store,
            ledger,
            db,
            routes: vec![None; replicas],
            dir,
            children: (0..replicas).map(|_| None).collect(),
            addrs: vec![None; replicas],
            draining: vec![None; replicas],
            paused: vec![false; replicas],
            push: false,
            think_ms: None,
        }
    }

    /// The same fleet with push notifications on in the a2a-python preset (`server.py
    /// --push`), as `live --allow-loopback-push` asks. Mastra always serves push (and
    /// refuses a loopback target); the a2a-js peer has none; a user's command decides.
    pub fn with_push(mut self, on: bool) -> Self {
        self.push = on;
        self
    }

    /// The same fleet with the agent thinking `think_ms` before each effect (a scenario's
    /// `think-ms`); `None` leaves the peer's own default.
    pub fn with_think_ms(mut self, think_ms: Option<u64>) -> Self {
        self.think_ms = think_ms;
        self
    }

    /// Gives replica `index` (from its next start) the ledger and database URLs of `route`
    /// instead of the fleet's.
    pub fn set_route(&mut self, index: usize, route: Route) {
        if let Some(slot) = self.routes.get_mut(index) {
            *slot = Some(route);
        }
    }

    /// The ledger URL replica `index` is given.
    fn ledger_of(&self, index: usize) -> String {
        match self.routes.get(index) {
            Some(Some(r)) => r.ledger.clone(),
            _ => self.ledger.clone(),
        }
    }

    /// The `host:port` through which replica `index` reaches the webhook (empty before the
    /// fleet is routed).
    fn webhook_of(&self, index: usize) -> String {
        match self.routes.get(index) {
            Some(Some(r)) => r.webhook.clone(),
            _ => String::new(),
        }
    }

    /// The database URL replica `index` is given.
    fn db_of(&self, index: usize) -> String {
        match self.routes.get(index) {
            Some(Some(Route { db: Some(db), .. })) => db.clone(),
            _ => self.db.clone(),
        }
    }

    /// The ledger's and the database's URLs, as the fleet was made with.
    pub fn urls(&self) -> (&str, &str) {
        (&self.ledger, &self.db)
    }

    /// The think time a command's `{think-ms}` and `A2A_CHAOS_THINK_MS` say: the
    /// scenario's, else the presets' default.
    fn think_ms_or_default(&self) -> u64 {
        self.think_ms.unwrap_or(super::THINK_MS_DEFAULT)
    }

    /// What replica `index` on `port` finds in its environment besides `live`'s own: what
    /// the placeholders say, for a server (or the adapters, which read `A2A_CHAOS_LEDGER`
    /// and `A2A_CHAOS_REPLICA`) that takes its settings from the environment.
    pub fn environment(&self, index: usize, port: u16) -> Vec<(&'static str, String)> {
        vec![
            ("A2A_CHAOS_INDEX", index.to_string()),
            ("A2A_CHAOS_REPLICA", Host::Replica(index).to_string()),
            ("A2A_CHAOS_PORT", port.to_string()),
            ("A2A_CHAOS_LEDGER", self.ledger_of(index)),
            // Saves and reads are watched, not the replica's traffic: they go to the ledger
            // itself, around the link a fault may stop (docs/PEERS.md).
            ("A2A_CHAOS_REPORTS", self.ledger.clone()),
            ("A2A_CHAOS_DB", self.db_of(index)),
            ("A2A_CHAOS_WEBHOOK", self.webhook_of(index)),
            ("A2A_CHAOS_RUN_DIR", self.dir.display().to_string()),
            ("A2A_CHAOS_THINK_MS", self.think_ms_or_default().to_string()),
        ]
    }

    /// The command line of replica `index` on `port`.
    pub fn command_line(&self, index: usize, port: u16) -> String {
        let venv = venv_base().join(format!("v{}", self.sdk));
        let mut line = self.command.template();
        for (key, value) in [
            ("{index}", index.to_string()),
            ("{name}", Host::Replica(index).to_string()),
            ("{port}", port.to_string()),
            ("{ledger}", self.ledger_of(index)),
            ("{db}", self.db_of(index)),
            ("{webhook}", self.webhook_of(index)),
            ("{model}", self.model.clone()),
            ("{sdk}", self.sdk.clone()),
            ("{store}", self.store.clone()),
            ("{venv}", venv.display().to_string()),
            ("{root}", root().display().to_string()),
            ("{mastra}", mastra_base().display().to_string()),
            ("{a2a-js}", a2a_js_base().display().to_string()),
            ("{dir}", self.dir.display().to_string()),
            ("{think-ms}", self.think_ms_or_default().to_string()),
        ] {
            line = line.replace(key, &quote(&value));
        }
        if self.command.template() != self.command.0 {
            // The preset's template names the store ({store}); its import path follows.
            let pythonpath = self.user_store.iter().flat_map(UserStore::pythonpath_args);
            let push = (self.push && self.command.is_a2a_python()).then(|| "--push".to_string());
            // Every preset peer takes --think-ms (its default is THINK_MS_DEFAULT).
            let think = self
                .think_ms
                .into_iter()
                .flat_map(|ms| ["--think-ms".to_string(), ms.to_string()]);
            for arg in self
                .args
                .iter()
                .cloned()
                .chain(pythonpath)
                .chain(push)
                .chain(think)
            {
                line.push(' ');
                line.push_str(&quote(&arg));
            }
        }
        line
    }

    /// Starts replica `index` on a free loopback port; returns its address.
    pub fn start(&mut self, index: usize) -> Result<SocketAddr, SetupError> {
        self.kill(index);
        let port = super::ports::reserve().map_err(SetupError::io("no free port"))?;
        let line = self.command_line(index, port);
        let log_path = self.dir.join(format!("replica-{index}.log"));
        let cannot_open = || SetupError::io(format!("cannot open {}", log_path.display()));
        let log = crate::files::append_no_follow(&log_path).map_err(cannot_open())?;
        let err = log.try_clone().map_err(cannot_open())?;
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!("exec {line}"))
            .envs(self.environment(index, port))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err);
        die_with_parent(&mut command);
        let child = command.spawn().map_err(SetupError::io(format!(
            "cannot start replica-{index} (`{line}`)"
        )))?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        self.children[index] = Some(child);
        self.addrs[index] = Some(addr);
        Ok(addr)
    }

    /// Sends SIGTERM to replica `index` (nothing if it is not running); it is SIGKILLed
    /// `grace` later if it is still running then ([`Fleet::drained`]).
    pub fn terminate(&mut self, index: usize, grace: Duration) {
        if self.signal(index, libc::SIGTERM) {
            self.draining[index] = Some(Instant::now() + grace);
        }
    }

    /// Freezes replica `index` (SIGSTOP): it runs nothing, its sockets stay open.
    pub fn pause(&mut self, index: usize) {
        if self.signal(index, libc::SIGSTOP) {
            self.paused[index] = true;
        }
    }

    /// Lets a frozen replica `index` go on (SIGCONT).
    pub fn resume(&mut self, index: usize) {
        if self.paused.get(index) == Some(&true) {
            self.signal(index, libc::SIGCONT);
            self.paused[index] = false;
        }
    }

    /// Sends `signal` to replica `index`; `false` when it is not running.
    fn signal(&mut self, index: usize, signal: libc::c_int) -> bool {
        let Some(Some(child)) = self.children.get_mut(index) else {
            return false;
        };
        // A child already reaped (`try_wait` in `is_running`) has no pid of its own any more.
        if !matches!(child.try_wait(), Ok(None)) {
            return false;
        }
        let Ok(pid) = i32::try_from(child.id()) else {
            return false;
        };
        // SAFETY: kill(2) on our own child's pid; `try_wait` just found it running and not
        // reaped, so the pid is still that process's.
        unsafe {
            libc::kill(pid, signal);
        }
        true
    }

    /// Whether replica `index`, sent SIGTERM, has finished draining: it exited, or its
    /// grace period is over and it is SIGKILLed now. `true` for one that is not draining.
    pub fn drained(&mut self, index: usize) -> bool {
        let Some(deadline) = self.draining.get(index).copied().flatten() else {
            return true;
        };
        if self.is_running(index) && Instant::now() < deadline {
            return false;
        }
        self.kill(index);
        true
    }

    /// SIGKILLs replica `index` (nothing if it is not running).
    pub fn kill(&mut self, index: usize) {
        if let Some(d) = self.draining.get_mut(index) {
            *d = None;
        }
        if let Some(p) = self.paused.get_mut(index) {
            *p = false;
        }
        if let Some(mut child) = self.children.get_mut(index).and_then(Option::take) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Whether replica `index` runs.
    pub fn is_running(&mut self, index: usize) -> bool {
        match self.children.get_mut(index) {
            Some(Some(child)) => matches!(child.try_wait(), Ok(None)),
            _ => false,
        }
    }

    /// The first replica that runs and is neither draining (its listener may be closed)
    /// nor paused.
    pub fn live_index(&mut self) -> Option<usize> {
        (0..self.children.len())
            .find(|i| self.draining[*i].is_none() && !self.paused[*i] && self.is_running(*i))
    }

    /// Whether replica `index` is frozen by a `pause`.
    pub fn is_paused(&self, index: usize) -> bool {
        self.paused.get(index) == Some(&true)
    }

    /// The address replica `index` listens on, when it was started.
    pub fn addr(&self, index: usize) -> Option<SocketAddr> {
        self.addrs.get(index).copied().flatten()
    }

    /// The last lines of replica `index`'s log.
    pub fn log_tail(&self, index: usize) -> String {
        let path = self.dir.join(format!("replica-{index}.log"));
        let text = crate::input::read_bytes(&path, crate::input::FileKind::Log)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(15)..].join("\n");
        format!("{} (last lines):\n{tail}", path.display())
    }

    /// Whether the peer can read tasks straight from the shared database: the `a2a-python`
    /// preset with a database store (`server.py --dump`, or a replica's `/a2a-chaos/dump`);
    /// not another peer command, nor per-process memory.
    pub fn can_dump(&self) -> bool {
        self.command.0 == PRESET_A2A_PYTHON && self.store != "memory"
    }

    /// The command the replicas start from.
    pub fn command(&self) -> &PeerCommand {
        &self.command
    }

    /// Reads tasks straight from the shared database with `server.py --dump` (a Python
    /// process of its own); `None` when the peer cannot ([`Fleet::can_dump`]).
    pub fn dump(&self, ids: &[String]) -> Option<Result<Vec<a2a::Task>, SetupError>> {
        if !self.can_dump() {
            return None;
        }
        let python = venv_base().join(format!("v{}/bin/python", self.sdk));
        let script = root().join("tests/peers/a2a-python/server.py");
        let out = Command::new(python)
            .arg(script)
            .arg("--dump")
            .arg("--db")
            .arg(&self.db)
            .args(self.user_store.iter().flat_map(UserStore::args))
            .arg("--")
            .args(ids)
            .stdin(Stdio::null())
            .output();
        Some(match out {
            Err(e) => Err(SetupError::io("cannot run the dump")(e)),
            Ok(o) if !o.status.success() => Err(SetupError::Process(format!(
                "the dump failed ({}): {}",
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            ))),
            Ok(o) => parse_dump(&o.stdout).map_err(SetupError::Process),
        })
    }

    /// Kills every replica.
    pub fn stop_all(&mut self) {
        for i in 0..self.children.len() {
            self.kill(i);
        }
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// The tasks in `server.py --dump`'s output (and in `/a2a-chaos/dump`'s answer).
pub(super) fn parse_dump(stdout: &[u8]) -> Result<Vec<a2a::Task>, String> {
    let value: serde_json::Value =
        serde_json::from_slice(stdout).map_err(|e| format!("unreadable dump: {e}"))?;
    let mut tasks = Vec::new();
    if let Some(map) = value["tasks"].as_object() {
        for (id, task) in map {
            tasks.push(
                serde_json::from_value(task.clone())
                    .map_err(|e| format!("task {id} in the dump: {e}"))?,
            );
        }
    }
    Ok(tasks)
}

/// Waits until replica `index` serves its card, or fails with its log when it exits or the
/// timeout passes.
pub async fn wait_ready(
    fleet: &Rc<RefCell<Fleet>>,
    index: usize,
    timeout: Duration,
) -> Result<(), SetupError> {
    let started = Instant::now();
    let addr = fleet.borrow().addrs[index]
        .ok_or_else(|| SetupError::Process("replica not started".into()))?;
    loop {
        if !fleet.borrow_mut().is_running(index) {
            let f = fleet.borrow();
            return Err(SetupError::Process(format!(
                "replica-{index} (`{}`) exited at start; {}",
                f.command_line(index, addr.port()),
                f.log_tail(index)
            )));
        }
        let call = Call::get(
            addr.ip().to_string(),
            addr.port(),
            "/.well-known/agent-card.json",
            Duration::from_secs(1),
        );
        if let Ok(reply) = net::send(&call).await {
            if reply.status.is_success() {
                return Ok(());
            }
        }
        if started.elapsed() > timeout {
            let f = fleet.borrow();
            return Err(SetupError::Process(format!(
                "replica-{index} did not answer its card within {} s; {}",
                timeout.as_secs(),
                f.log_tail(index)
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgresql_urls_are_recognised() {
        assert!(is_postgres("postgresql+asyncpg://u:p@localhost/a2a"));
        assert!(is_postgres("postgresql://u@localhost/a2a"));
        assert!(!is_postgres("sqlite+aiosqlite:///tmp/tasks.db"));
        assert!(!is_postgres("postgresqlish"));
    }

    #[test]
    fn a_runs_database_is_named_after_its_directory() {
        let name = database_name(Path::new("target/live-runs/run-1700000000000-42-0"));
        assert_eq!(name, "a2a_chaos_run_1700000000000_42_0");
        assert!(name.len() <= 63, "PostgreSQL's identifier limit");
    }
}
