//! Live runs: a scripted scenario over real TCP against real A2A replicas on loopback.
//!
//! `a2a-chaos live` runs the same script as `check`, with the same client, router, history
//! and checkers, but nothing is simulated:
//! - the replicas are real processes (the test peer under `tests/peers/`, or any command),
//!   started from a command template with their port, the ledger's URL and the database URL,
//!   all sharing one database;
//! - the project's own ledger (which also keeps the save log the replicas report, see
//!   [`observer`]), webhook and router serve on loopback ports in this process, through the
//!   real transport of [`crate::net`];
//! - `kill` is SIGKILL of the replica's process, `restart` starts it again and waits until it
//!   answers; `drain` is SIGTERM, then SIGKILL at the end of the grace period if the process
//!   has not exited (a `restart` first waits for that); `drop-reply` is the router losing the
//!   next reply, as in the simulation.
//!   Partitions and latency cannot be made on loopback: a scenario with them is refused
//!   (exit 2) before anything starts.
//! - `set-push` runs only with `--allow-loopback-push` ([`LiveOptions::allow_loopback_push`]):
//!   its target moves to the run's webhook on loopback ([`push_target`]), the a2a-python
//!   preset starts with push on, and what the webhook receives is the run's deliveries, read
//!   by the same push checkers as a simulated run's.
//!
//! Time is real: [`crate::trace::now_ms`] counts milliseconds since the run began. A live
//! run is not deterministic, so it has no trace hash to compare; its verdicts are what
//! `a2a-chaos fidelity` compares with the simulation's.

pub mod history;
pub mod kill_points;
pub mod link;
pub mod network;
pub mod observer;
pub mod peer;
pub mod pool;
pub mod ports;
pub mod postgres;
pub mod proxy;
pub mod recording;
pub mod reports;
pub mod run_db;
pub mod setup;
pub mod shown;
pub mod wire;

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use crate::error::InputError;
use crate::faults::{drain, kill, kill_point, pause, Action};
use crate::host::Host;
use crate::model::Profile;
use crate::net::{self, Call, RealNet};
use crate::router::RouterControl;
use crate::scenario::{Script, Step};
use crate::sim::RunSummary;
use crate::trace::{Event, Tone, Trace};
use crate::world::RunRecord;

pub use peer::PeerCommand;
pub use pool::Pool;

/// Everything a live run needs besides the script.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// How to start replica `i`; `None`: the preset the model's `[fidelity]` table names
    /// ([`LiveOptions::peer_for`]).
    pub peer: Option<PeerCommand>,
    /// The database every replica shares (SQLAlchemy URL); default: a fresh SQLite file in
    /// the run's work directory. With the preset, a PostgreSQL URL names the server and its
    /// role: each run creates a database of its own there and drops it at the end.
    pub db: Option<String>,
    /// Where peer logs and the SQLite file go (a fresh directory under it per run).
    pub work_dir: PathBuf,
    /// How long a started replica may take to answer its card.
    pub ready_timeout: Duration,
    /// The user's own task store, in place of the model's (the `a2a-python` preset only).
    pub user_store: Option<peer::UserStore>,
    /// Which reports the peer sends ([`reports`]).
    pub reports: reports::Reports,
    /// Where the replicas keep their tasks, when not where the model says: `memory` (each
    /// process its own, read from every running replica at the end) or `shared`.
    pub placement: Option<crate::model::Placement>,
    /// Whether `set-push` steps may run (`live --allow-loopback-push`): their configs name
    /// the run's own webhook on loopback, a private address every model refuses to send to
    /// unless told otherwise, so the run asks for it explicitly ([`push_target`]).
    pub allow_loopback_push: bool,
    /// How long the agent thinks before each turn's effect, ms: a scenario's `think-ms`
    /// ([`run_scenario`] sets it from the script). A preset peer takes one fixed value, so
    /// a range runs at its midpoint; `None` leaves the peer at its default (40 ms, the
    /// midpoint of the simulation's default 20-60).
    pub think_ms: Option<u64>,
    /// Whether each pool starts a PostgreSQL server of its own instead of sharing the
    /// command's, so that its runs may kill the store (`kill = "store"`);
    /// [`run_scenario`] sets it for a scenario that does.
    pub own_store: bool,
}

impl LiveOptions {
    /// How replicas of `profile` start: the command asked for, else the preset its
    /// `[fidelity]` table names, else `a2a-python`.
    pub fn peer_for(&self, profile: &Profile) -> PeerCommand {
        self.peer.clone().unwrap_or_else(|| {
            PeerCommand(
                profile
                    .fidelity
                    .as_ref()
                    .map_or(peer::PRESET_A2A_PYTHON.to_string(), |f| f.peer.clone()),
            )
        })
    }

    /// Where the replicas of `profile` keep their tasks: as asked, else per process for
    /// the a2a-js preset (the SDK's `InMemoryTaskStore`), else as the model says.
    pub fn placement_for(&self, profile: &Profile) -> crate::model::Placement {
        match self.placement {
            Some(p) => p,
            None if self.peer_for(profile).is_a2a_js() => crate::model::Placement::Memory,
            None => profile.store.placement,
        }
    }
}

/// The hosts a scenario's push target may name in a live run: in the simulation both are
/// the webhook host.
const PUSH_HOSTS: &[&str] = &["webhook", "hooks.example"];

/// Where a `set-push` step's `url` points in a live run: the same path on the run's own
/// webhook (`webhook_addr`, on loopback), or why it cannot run live. Only the webhook's
/// hosts (`PUSH_HOSTS`) are served, so a real peer never sends anywhere else, and not
/// `/redirect/...` (the simulated receiver's redirect names a private address that does not
/// exist on this machine) nor `/hang/...` (a receiver that never answers).
pub fn push_target(url: &str, webhook_addr: &str) -> Result<String, PushTargetError> {
    let (host, _, path) = crate::protocol::parse_http_url(url)
        .ok_or_else(|| PushTargetError::NotHttp(url.to_string()))?;
    if !PUSH_HOSTS.contains(&host.as_str()) {
        return Err(PushTargetError::Elsewhere {
            url: url.to_string(),
        });
    }
    match crate::ground::webhook::WebhookMode::from_path(&path) {
        Some(
            mode @ (crate::ground::webhook::WebhookMode::Redirect
            | crate::ground::webhook::WebhookMode::Hang),
        ) => Err(PushTargetError::SimulationOnly {
            url: url.to_string(),
            receiver: format!("{mode:?}"),
        }),
        _ => Ok(format!("http://{webhook_addr}{path}")),
    }
}

/// Why a `set-push` step cannot run live ([`push_target`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PushTargetError {
    /// Not an `http://host:port/path` URL.
    #[error("set-push url `{0}` is not an http://host:port/path URL")]
    NotHttp(String),
    /// A host other than the run's webhook.
    #[error("set-push url `{url}`: a live run delivers pushes only to its own webhook (host {})", PUSH_HOSTS.join(" or "))]
    Elsewhere { url: String },
    /// A receiver only the simulated webhook has (redirect, hang).
    #[error("set-push url `{url}`: the webhook's {receiver} receiver is simulation-only")]
    SimulationOnly { url: String, receiver: String },
}

/// `script` with every `set-push` target moved to the run's webhook at `webhook_addr`
/// ([`push_target`]; [`validate`] has refused the ones it cannot move).
pub fn with_real_push_targets(script: &Script, webhook_addr: &str) -> Script {
    fn walk(steps: &mut [Step], addr: &str) {
        for step in steps {
            match step {
                Step::Concurrent(inner) | Step::Sequence(inner) => walk(inner, addr),
                Step::SetPush(s) => {
                    if let Ok(url) = push_target(&s.url, addr) {
                        s.url = url;
                    }
                }
                _ => {}
            }
        }
    }
    let mut script = script.clone();
    walk(&mut script.steps, webhook_addr);
    script
}

/// Refuses steps a live run cannot perform, naming the first one. `set-push` runs only
/// with `allow_loopback_push` (`live --allow-loopback-push`) and a target on the webhook.
pub fn validate(
    script: &Script,
    origin: &str,
    allow_loopback_push: bool,
) -> Result<(), InputError> {
    fn walk(steps: &[Step], origin: &str, push: bool) -> Result<(), InputError> {
        for step in steps {
            match step {
                Step::Concurrent(inner) | Step::Sequence(inner) => walk(inner, origin, push)?,
                Step::SetPush(_) if !push => {
                    return Err(InputError::new(
                        origin,
                        "set-push needs --allow-loopback-push in live mode: the push target is this run's webhook on 127.0.0.1, a private address the models refuse to send to unless allowed",
                    ))
                }
                Step::SetPush(s) => {
                    push_target(&s.url, "127.0.0.1:0")
                        .map_err(|why| InputError::new(origin, why.to_string()))?;
                }
                Step::Authorize(_) => {
                    return Err(InputError::new(
                        origin,
                        "authorize is unsupported in live mode: the test peer never asks for authorisation",
                    ))
                }
                Step::Send(s) if s.needs_auth == Some(true) => {
                    return Err(InputError::new(
                        origin,
                        "needs_auth is unsupported in live mode: the test peer never asks for authorisation",
                    ))
                }
                Step::Fault(action) => {
                    action
                        .live()
                        .map_err(|why| InputError::new(origin, why.to_string()))?;
                }
                _ => {}
            }
        }
        Ok(())
    }
    if script.card_setup().is_some() {
        return Err(InputError::new(
            origin,
            "the agent-card simulation ([card], card steps) is unsupported in live mode: the real peer serves its own card",
        ));
    }
    walk(&script.steps, origin, allow_loopback_push)
}

/// The think time every preset peer uses unless told (`--think-ms`), ms: the midpoint of
/// the simulation's default 20-60 ms.
pub const THINK_MS_DEFAULT: u64 = 40;

/// The time every preset peer takes to compose its reply after the effect unless told
/// (`--compose-ms`), ms: the midpoint of the simulation's default 5-15 ms.
pub const COMPOSE_MS_DEFAULT: u64 = 10;

/// The think time a live run gives the peers for `script`: its `think-ms`, the midpoint of
/// a range (a preset takes one value; the simulation draws each turn's from the range).
pub(crate) fn think_ms(script: &Script) -> Option<u64> {
    script.file.think_ms.map(|[lo, hi]| (lo + hi.max(lo)) / 2)
}

/// Runs a scenario live and summarises it with the same checkers as a simulated run: a
/// [`Pool`] of the scenario's replicas that serves this one scenario.
pub fn run_scenario(
    script: &Script,
    profile: Profile,
    options: &LiveOptions,
) -> Result<(RunSummary, RunRecord), InputError> {
    let origin = format!("scenario `{}`", script.file.name);
    validate(script, &origin, options.allow_loopback_push)?;
    let options = LiveOptions {
        think_ms: think_ms(script),
        own_store: options.own_store || script.kills_store(),
        ..options.clone()
    };
    let mut pool = Pool::new(&profile, script.file.replicas, &options)?;
    pool.run(script)
}

/// What a live run's driver acts on: the processes, the router, the links and the store.
#[derive(Clone)]
pub(crate) struct Hands {
    pub fleet: Rc<RefCell<peer::Fleet>>,
    pub control: RouterControl,
    pub net: Rc<RealNet>,
    pub network: Rc<network::Network>,
    /// The run's own PostgreSQL server, when it may kill the store.
    pub store: Option<Rc<RefCell<postgres::Server>>>,
    /// The armed kill points, which the ledger reaches ([`kill_points`]).
    pub points: kill_points::SharedPoints,
    /// Restarts after point kills still to come: the run's final read waits for them.
    pub restarts_owed: Rc<std::cell::Cell<usize>>,
    pub trace: Trace,
    /// How long a restarted replica or store may take to be ready.
    pub timeout: Duration,
}

impl Hands {
    fn bad(&self, note: String) {
        self.trace
            .record(Host::Driver, Event::note(Tone::Bad, note));
    }

    fn set_ready(&self, i: usize, ready: bool) {
        if let Some(r) = self.control.ready.borrow_mut().get_mut(i) {
            *r = ready;
        }
    }

    /// Starts replica `i` again and routes the router's link to it.
    async fn restart(&self, i: usize) {
        let host = Host::Replica(i);
        let started = self.fleet.borrow_mut().start(i);
        let addr = match started {
            Ok(addr) => addr,
            Err(e) => return self.bad(format!("{host} did not restart: {e}")),
        };
        match self.network.carry(&Host::Router, &host, addr).await {
            Ok(via) => self.net.map(&host.to_string(), via),
            Err(e) => return self.bad(format!("{host}: no link from the router: {e}")),
        }
        match peer::wait_ready(&self.fleet, i, self.timeout).await {
            Ok(()) => self.set_ready(i, true),
            Err(e) => self.bad(format!("{host} did not restart: {e}")),
        }
    }

    /// Starts a killed store again and waits until it takes sessions.
    async fn restart_store(&self) {
        if let Some(store) = &self.store {
            if let Err(e) = restart_store(store, self.timeout).await {
                self.bad(e);
            }
        }
    }

    /// Ends every fault: links healed, paused replicas resumed, the store and every
    /// replica down started again.
    async fn heal_all(&self) {
        self.points.borrow_mut().disarm_all();
        let replicas = self.control.ready.borrow().len();
        let store = self.store.as_deref();
        if let Err(e) = lift_faults(&self.network, &self.fleet, replicas, store, self.timeout).await
        {
            self.bad(e);
        }
        for i in 0..replicas {
            drained(&self.fleet, i).await;
        }
        let dead: Vec<usize> = (0..replicas)
            .filter(|i| !self.fleet.borrow_mut().is_running(*i))
            .collect();
        for i in dead {
            self.restart(i).await;
        }
        self.control.drop_reply_rate.set(0.0);
    }
}

/// What kills a replica that reached an armed point ([`kill_points`]): SIGKILL at once,
/// recorded as the simulation records a point kill, and a restart `down` ms later.
pub(crate) fn point_killer(
    hands: &Hands,
    applied: &Rc<RefCell<Vec<(u64, Action)>>>,
) -> kill_points::Killer {
    let (hands, applied) = (hands.clone(), applied.clone());
    Rc::new(move |host: &Host, point, down| {
        let Some(i) = host.replica_index() else {
            return;
        };
        let now = crate::trace::now_ms();
        hands.trace.record_at(
            now,
            Host::Driver,
            Event::KillPointReached {
                host: host.clone(),
                point,
            },
        );
        let kill = Action::from(kill::Kill(host.clone()));
        hands
            .trace
            .record_at(now, Host::Driver, Event::Fault(kill.clone()));
        applied.borrow_mut().push((now, kill));
        hands.set_ready(i, false);
        hands.fleet.borrow_mut().kill(i);
        let (hands, applied, host) = (hands.clone(), applied.clone(), host.clone());
        hands.restarts_owed.set(hands.restarts_owed.get() + 1);
        tokio::task::spawn_local(async move {
            tokio::time::sleep(Duration::from_millis(down)).await;
            let restart = Action::from(kill::Restart(host));
            let now = crate::trace::now_ms();
            hands
                .trace
                .record_at(now, Host::Driver, Event::Fault(restart.clone()));
            applied.borrow_mut().push((now, restart));
            if !hands.fleet.borrow_mut().is_running(i) {
                hands.restart(i).await;
            }
            hands
                .restarts_owed
                .set(hands.restarts_owed.get().saturating_sub(1));
        });
    })
}

/// Ends what faults leave on real processes: every carried link healed, every paused
/// replica of the first `replicas` resumed, a killed `store` started again (and awaited).
/// `heal = "all"` does it, and a pool before each scenario.
pub(crate) async fn lift_faults(
    network: &network::Network,
    fleet: &RefCell<peer::Fleet>,
    replicas: usize,
    store: Option<&RefCell<postgres::Server>>,
    timeout: Duration,
) -> Result<(), String> {
    network.heal_all();
    for i in 0..replicas {
        fleet.borrow_mut().resume(i);
    }
    match store {
        Some(store) => restart_store(store, timeout).await,
        None => Ok(()),
    }
}

/// Starts `store` again if it was killed, and waits until it takes sessions.
async fn restart_store(store: &RefCell<postgres::Server>, timeout: Duration) -> Result<(), String> {
    if store.borrow().is_running() {
        return Ok(());
    }
    store
        .borrow_mut()
        .respawn()
        .map_err(|e| format!("the store did not restart: {e}"))?;
    let (bin, port) = store.borrow().probe();
    let deadline = std::time::Instant::now() + timeout;
    while !postgres::Server::accepting(bin.clone(), port).await {
        if std::time::Instant::now() > deadline {
            return Err(format!(
                "the store did not take sessions within {} s of its restart",
                timeout.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Makes `action` happen on the real processes and links ([`Pool::run`] refused, before
/// the run, what a live run cannot make).
async fn apply_fault(hands: &Hands, action: Action) {
    let index = Host::replica_index;
    if hands.network.apply(&action) {
        return;
    }
    match action {
        Action::Kill(kill::Kill(Host::Store)) => {
            if let Some(store) = &hands.store {
                store.borrow_mut().kill();
            }
        }
        Action::Restart(kill::Restart(Host::Store)) => hands.restart_store().await,
        Action::Kill(kill::Kill(h)) => {
            if let Some(i) = index(&h) {
                hands.set_ready(i, false);
                hands.fleet.borrow_mut().kill(i);
            }
        }
        Action::Drain(drain::Drain { host, grace_ms }) => {
            if let Some(i) = index(&host) {
                hands.set_ready(i, false);
                hands
                    .fleet
                    .borrow_mut()
                    .terminate(i, Duration::from_millis(grace_ms));
                // SIGKILL at the end of the grace period, unless it exited (or a restart
                // waited for it) before.
                let fleet = hands.fleet.clone();
                tokio::task::spawn_local(async move { drained(&fleet, i).await });
            }
        }
        Action::Restart(kill::Restart(h)) => {
            if let Some(i) = index(&h) {
                drained(&hands.fleet, i).await;
                if !hands.fleet.borrow_mut().is_running(i) {
                    hands.restart(i).await;
                }
            }
        }
        Action::Pause(pause::Pause(h)) => {
            if let Some(i) = index(&h) {
                hands.fleet.borrow_mut().pause(i);
            }
        }
        Action::Resume(pause::Resume(h)) => {
            if let Some(i) = index(&h) {
                hands.fleet.borrow_mut().resume(i);
            }
        }
        Action::KillAt(kill_point::KillAt(point, probability)) => {
            hands.points.borrow_mut().arm(point, probability)
        }
        Action::HealAll(_) => hands.heal_all().await,
        Action::DropNextReply(_) => hands.control.drop_next.set(true),
        // Refused by `validate` before the run.
        _ => {}
    }
}

/// How often a live run looks whether a draining replica has exited.
const DRAIN_POLL: Duration = Duration::from_millis(10);

/// Waits until replica `i`, if it was sent SIGTERM, has exited or been SIGKILLed at the end
/// of its grace period.
async fn drained(fleet: &Rc<RefCell<peer::Fleet>>, i: usize) {
    while !fleet.borrow_mut().drained(i) {
        tokio::time::sleep(DRAIN_POLL).await;
    }
}

/// GetTask on one replica, outside the history, with `authorization` when given: `Ok(None)`
/// when it does not know the task (or not for this caller).
async fn read_task(
    host: &str,
    id: &str,
    authorization: Option<&str>,
) -> Result<Option<a2a::Task>, String> {
    let body =
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "GetTask", "params": {"id": id}});
    let call = Call::post_json(
        host.to_string(),
        crate::replica::PORT,
        "/",
        serde_json::to_vec(&body).expect("requests serialise"),
        Duration::from_secs(10),
    )
    .header("a2a-version", "1.0");
    let call = match authorization {
        Some(a) => call.header("authorization", a),
        None => call,
    };
    let reply = net::send(&call).await.map_err(|e| e.to_string())?;
    let value: serde_json::Value =
        serde_json::from_slice(&reply.body).map_err(|e| format!("unreadable answer: {e}"))?;
    if value.get("error").is_some() {
        return Ok(None);
    }
    let result = &value["result"];
    let task = result.get("task").unwrap_or(result);
    serde_json::from_value(task.clone())
        .map(Some)
        .map_err(|e| format!("not a task: {e}"))
}

/// The tasks among `ids` that replica `host` holds, from `GET /__a2a_chaos/tasks?ids=...`
/// (`{"tasks": {id: task}}`, A2A 1.0 JSON): a read outside the server's A2A handlers, so it
/// saves nothing (the Mastra and a2a-js peers serve it; so may a user's server,
/// docs/PEERS.md). `Ok(None)` when the replica refuses the request (a 4xx status such as
/// 404): it does not serve the path.
async fn tasks_from(host: &str, ids: &[String]) -> Result<Option<Vec<a2a::Task>>, String> {
    let call = Call::get(
        host.to_string(),
        crate::replica::PORT,
        &format!("/__a2a_chaos/tasks?ids={}", ids.join(",")),
        Duration::from_secs(10),
    );
    let reply = net::send(&call)
        .await
        .map_err(|e| format!("{host} did not answer its tasks: {e}"))?;
    if reply.status.is_client_error() {
        return Ok(None);
    }
    let value: serde_json::Value = serde_json::from_slice(&reply.body)
        .map_err(|e| format!("{host}'s tasks are unreadable: {e}"))?;
    let Some(tasks) = value.get("tasks").and_then(|t| t.as_object()) else {
        return Err(format!("{host}'s tasks have no `tasks` object"));
    };
    tasks
        .values()
        .map(|t| {
            serde_json::from_value(t.clone()).map_err(|e| format!("{host} holds a non-task: {e}"))
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

/// The stored tasks among `ids`, read by replica `host` from the database underneath its
/// observer (`POST /a2a-chaos/dump`, the a2a-python preset): what `server.py --dump` prints.
async fn dump_from(host: &str, ids: &[String]) -> Result<Vec<a2a::Task>, String> {
    let body = serde_json::json!({ "ids": ids });
    let call = Call::post_json(
        host.to_string(),
        crate::replica::PORT,
        "/a2a-chaos/dump",
        serde_json::to_vec(&body).expect("requests serialise"),
        Duration::from_secs(10),
    );
    // A replica busy with late work of the run (a loaded machine, runs at once) may fail
    // one read of its database: the dump is outside the history, so it is tried again, a
    // bounded number of times.
    let mut last = String::new();
    for attempt in 0..DUMP_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        match net::send(&call).await {
            Ok(reply) if reply.status.is_success() => match peer::parse_dump(&reply.body) {
                Ok(tasks) => return Ok(tasks),
                Err(e) => last = e,
            },
            Ok(reply) => {
                last = format!(
                    "{host} answered the dump {}: {}",
                    reply.status,
                    String::from_utf8_lossy(&reply.body[..reply.body.len().min(200)])
                )
            }
            Err(e) => last = format!("{host} did not answer the dump: {e}"),
        }
    }
    Err(last)
}

/// How many times a live run asks a replica for the final dump.
const DUMP_ATTEMPTS: usize = 3;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_targets_move_to_the_webhook_and_nowhere_else() {
        assert_eq!(
            push_target("http://hooks.example:7200/ok/c1", "127.0.0.1:4100"),
            Ok("http://127.0.0.1:4100/ok/c1".to_string())
        );
        assert_eq!(
            push_target("http://webhook:7200/hook/t1", "127.0.0.1:4100"),
            Ok("http://127.0.0.1:4100/hook/t1".to_string())
        );
        for refused in [
            "http://10.0.0.1:7200/ok/c1",
            "http://rebind.example:7200/ok/c1",
            "http://hooks.example:7200/redirect/c1",
            "http://hooks.example:7200/hang/c1",
            "not a url",
        ] {
            assert!(push_target(refused, "127.0.0.1:4100").is_err(), "{refused}");
        }
    }

    #[test]
    fn set_push_needs_the_flag() {
        let text = "name = \"t\"\nmodel = \"reference\"\nreplicas = 1\n\
                    [[step]]\nsend = { conversation = \"c1\", turn = 1 }\n\
                    [[step]]\nset-push = { conversation = \"c1\", url = \"http://hooks.example:7200/ok/c1\" }\n";
        let script = Script::parse(text, "test").expect("a scenario");
        let refused = validate(&script, "t", false).expect_err("refused without the flag");
        assert!(
            refused.to_string().contains("--allow-loopback-push"),
            "{refused}"
        );
        validate(&script, "t", true).expect("allowed with it");
        let moved = with_real_push_targets(&script, "127.0.0.1:4100");
        let Step::SetPush(s) = &moved.steps[1] else {
            panic!("{:?}", moved.steps)
        };
        assert_eq!(s.url, "http://127.0.0.1:4100/ok/c1");
    }
}
