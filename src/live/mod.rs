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
//!   answers; `drop-reply` is the router losing the next reply, as in the simulation.
//!   Partitions and latency cannot be made on loopback: a scenario with them is refused
//!   (exit 2) before anything starts.
//!
//! Time is real: [`crate::trace::now_ms`] counts milliseconds since the run began. A live
//! run is not deterministic, so it has no trace hash to compare; its verdicts are what
//! `a2a-chaos fidelity` compares with the simulation's.

pub mod observer;
pub mod peer;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::client::history::History;
use crate::client::Client;
use crate::error::InputError;
use crate::faults::{kill, Action};
use crate::ground::webhook::{self, WebhookMode, WebhookState};
use crate::model::Profile;
use crate::net::{self, Call, RealNet};
use crate::router::{self, RouterControl};
use crate::scenario::{ApplyNow, DriverLink};
use crate::scenario::{Script, Step};
use crate::sim::summarise;
use crate::sim::RunSummary;
use crate::trace::{Event, Tone, Trace};
use crate::world::RunRecord;

pub use peer::PeerCommand;

/// Everything a live run needs besides the script.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// How to start replica `i`.
    pub peer: PeerCommand,
    /// The database every replica shares (SQLAlchemy URL); default: a fresh SQLite file in
    /// the run's work directory. With the preset, a PostgreSQL URL names the server and its
    /// role: each run creates a database of its own there and drops it at the end.
    pub db: Option<String>,
    /// Where peer logs and the SQLite file go (a fresh directory under it per run).
    pub work_dir: PathBuf,
    /// How long a started replica may take to answer its card.
    pub ready_timeout: Duration,
}

/// Refuses steps a live run cannot perform, naming the first one.
pub fn validate(script: &Script, origin: &str) -> Result<(), InputError> {
    fn walk(steps: &[Step], origin: &str) -> Result<(), InputError> {
        for step in steps {
            match step {
                Step::Concurrent(inner) | Step::Sequence(inner) => walk(inner, origin)?,
                Step::SetPush(_) => {
                    return Err(InputError::new(
                        origin,
                        "set-push is unsupported in live mode: the test peer has no push",
                    ))
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
                    action.live().map_err(|why| InputError::new(origin, why))?;
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
    walk(&script.steps, origin)
}

/// Runs a scenario live and summarises it with the same checkers as a simulated run.
pub fn run_scenario(
    script: &Script,
    profile: Profile,
    options: &LiveOptions,
) -> Result<(RunSummary, RunRecord), InputError> {
    let origin = format!("scenario `{}`", script.file.name);
    validate(script, &origin)?;
    let started = Instant::now();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| InputError::new("live", format!("cannot start a runtime: {e}")))?;
    let local = tokio::task::LocalSet::new();
    let net = RealNet::new();
    net::install_real(net.clone());
    let result = local.block_on(&runtime, run_world(script, profile, options, net));
    net::uninstall_real();
    let record = result?;
    let findings = crate::check::check_all(&record);
    let summary = summarise(&record, &findings, started.elapsed().as_millis() as u64);
    Ok((summary, record))
}

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

async fn run_world(
    script: &Script,
    profile: Profile,
    options: &LiveOptions,
    net: Rc<RealNet>,
) -> Result<RunRecord, InputError> {
    let io = |what: &str, e: std::io::Error| InputError::new("live", format!("{what}: {e}"));
    let trace = Trace::new(true);
    let seed = script.file.seed;
    let replicas = script.file.replicas;

    // The project's hosts on loopback.
    let ledger_addr = net
        .bind("ledger", crate::ground::ledger::PORT, loopback())
        .map_err(|e| io("cannot bind the ledger", e))?;
    net.bind("webhook", webhook::PORT, loopback())
        .map_err(|e| io("cannot bind the webhook", e))?;
    net.bind("router", router::PORT, loopback())
        .map_err(|e| io("cannot bind the router", e))?;
    let ground = observer::Ground::default();
    let webhook_state = Rc::new(RefCell::new(WebhookState::default()));
    let control = RouterControl::new(replicas);
    {
        let (g, t) = (ground.clone(), trace.clone());
        tokio::task::spawn_local(async move { observer::serve(g, t).await });
        let (w, t) = (webhook_state.clone(), trace.clone());
        tokio::task::spawn_local(async move { webhook::serve(w, WebhookMode::Ok, t).await });
        let (routing, c, t) = (script.file.routing.clone(), control.clone(), trace.clone());
        tokio::task::spawn_local(async move { router::serve(routing, seed, c, t).await });
    }

    // The replicas.
    let run_dir = peer::fresh_dir(&options.work_dir).map_err(|e| io("work directory", e))?;
    // With the preset, a PostgreSQL URL names the server: the run gets a database of its own
    // there, dropped at the end (after the fleet, declared later, is dropped).
    let mut run_db = None;
    let db = match options.db.clone() {
        None => format!("sqlite+aiosqlite:///{}", run_dir.join("tasks.db").display()),
        Some(url) if options.peer.is_preset() && peer::is_postgres(&url) => {
            let sdk = profile.fidelity.clone().unwrap_or_default().sdk;
            let created = peer::RunDatabase::create(&sdk, &url, &peer::database_name(&run_dir))
                .map_err(|e| InputError::new("live", e))?;
            trace.record(
                "driver",
                Event::plain(format!("PostgreSQL database {}", created.name())),
            );
            let url = created.url.clone();
            run_db = Some(created);
            url
        }
        Some(url) => url,
    };
    let fleet = Rc::new(RefCell::new(peer::Fleet::new(
        options.peer.clone(),
        &profile,
        format!("http://{ledger_addr}"),
        db,
        run_dir.clone(),
        replicas,
    )));
    // The first replica creates the schema; the others start once it answers.
    for i in 0..replicas {
        let addr = fleet
            .borrow_mut()
            .start(i)
            .map_err(|e| InputError::new("live", e))?;
        net.map(&format!("replica-{i}"), addr);
        if i == 0 {
            peer::wait_ready(&fleet, 0, options.ready_timeout)
                .await
                .map_err(|e| InputError::new("live", e))?;
        }
    }
    for i in 1..replicas {
        peer::wait_ready(&fleet, i, options.ready_timeout)
            .await
            .map_err(|e| InputError::new("live", e))?;
    }
    let started_ms = crate::trace::now_ms();
    trace.record_at(
        started_ms,
        "driver",
        Event::plain(format!("{replicas} replicas ready")),
    );

    // The script, with faults applied on the real processes.
    let history = History::default();
    let applied: Rc<RefCell<Vec<(u64, Action)>>> = Rc::default();
    let apply: ApplyNow = {
        let (fleet, control, trace, applied, net) = (
            fleet.clone(),
            control.clone(),
            trace.clone(),
            applied.clone(),
            net.clone(),
        );
        let timeout = options.ready_timeout;
        Rc::new(move |action: Action| {
            let (fleet, control, trace, applied, net) = (
                fleet.clone(),
                control.clone(),
                trace.clone(),
                applied.clone(),
                net.clone(),
            );
            Box::pin(async move {
                let now = crate::trace::now_ms();
                trace.record_at(now, "driver", Event::Fault(action.clone()));
                applied.borrow_mut().push((now, action.clone()));
                apply_fault(&fleet, &control, &net, &trace, action, timeout).await;
            })
        })
    };
    let link = DriverLink {
        apply_now: Some(apply),
        ledger: Some(ground.ledger.clone()),
        ..DriverLink::default()
    };
    let client = Client::new(history.clone(), trace.clone(), script.request_timeout);
    crate::scenario::run_script(script, seed, client, link.clone(), Duration::from_secs(1)).await;

    // Ground truth: every task any answer, effect or save named, read from the shared
    // database (or, for a peer that cannot dump it, from a live replica), outside the
    // history.
    let mut ids: Vec<String> = link.tasks.borrow().values().cloned().collect();
    for op in history.ops() {
        if let Some(view) = &op.task {
            ids.push(view.id.clone());
        }
    }
    for e in ground.ledger.borrow().effects() {
        ids.push(e.request.task_id.clone());
    }
    for s in ground.saves() {
        ids.push(s.task_id);
    }
    ids.sort();
    ids.dedup();
    let mut final_tasks = BTreeMap::new();
    let mut error = None;
    let dumped = fleet.borrow().dump(&ids);
    match dumped {
        Some(Ok(tasks)) => {
            for task in tasks {
                final_tasks.insert(task.id.clone(), task);
            }
        }
        Some(Err(e)) => error = Some(format!("cannot read the final tasks: {e}")),
        None => {
            // Another peer: ask a live replica (which may answer from its own memory).
            let reader = fleet.borrow_mut().live_index();
            match reader {
                Some(i) => {
                    for id in ids {
                        match read_task(&format!("replica-{i}"), &id).await {
                            Ok(Some(task)) => {
                                final_tasks.insert(id, task);
                            }
                            Ok(None) => {}
                            Err(e) => {
                                error = Some(format!("cannot read task {id} at the end: {e}"))
                            }
                        }
                    }
                }
                None => {
                    error = Some("no replica was alive at the end to read the final tasks".into())
                }
            }
        }
    }
    let sim_ms = crate::trace::now_ms();
    fleet.borrow_mut().stop_all();
    drop(run_db);

    let effects = ground.ledger.borrow().effects().to_vec();
    let saves = ground.saves();
    let deliveries = webhook_state.borrow().deliveries.clone();
    let conversations = link.tasks.borrow().clone();
    let faults = applied.borrow().clone();
    Ok(RunRecord {
        seed,
        model: profile.name.clone(),
        profile,
        routing: script.file.routing.clone(),
        replicas,
        history: history.ops(),
        effects,
        final_tasks,
        saves,
        deliveries,
        push_reports: Vec::new(),
        push_egress: Vec::new(),
        push_pending: Vec::new(),
        fault_rates: BTreeMap::new(),
        faults,
        conversations,
        healed_at_ms: 0,
        trace_hash: "live".into(),
        trace: trace.events(),
        sim_ms,
        steps: 0,
        error,
        workload_shape: None,
        points_fired: BTreeMap::new(),
        poll_slowed_until_ms: 0,
        // The card simulation (issue 10) is refused in live mode by `validate`.
        cards: Default::default(),
        // Scenarios that ask for authorisation are refused in live mode by `validate`.
        grants: Vec::new(),
    })
}

async fn apply_fault(
    fleet: &Rc<RefCell<peer::Fleet>>,
    control: &RouterControl,
    net: &RealNet,
    trace: &Trace,
    action: Action,
    timeout: Duration,
) {
    let index = |h: &str| {
        h.strip_prefix("replica-")
            .and_then(|i| i.parse::<usize>().ok())
    };
    let restart = |i: usize| async move {
        let started = fleet.borrow_mut().start(i);
        match started {
            Ok(addr) => {
                net.map(&format!("replica-{i}"), addr);
                match peer::wait_ready(fleet, i, timeout).await {
                    Ok(()) => {
                        if let Some(r) = control.ready.borrow_mut().get_mut(i) {
                            *r = true;
                        }
                    }
                    Err(e) => trace.record(
                        "driver",
                        Event::note(Tone::Bad, format!("replica-{i} did not restart: {e}")),
                    ),
                }
            }
            Err(e) => trace.record(
                "driver",
                Event::note(Tone::Bad, format!("replica-{i} did not restart: {e}")),
            ),
        }
    };
    match action {
        Action::Kill(kill::Kill(h)) => {
            if let Some(i) = index(&h) {
                if let Some(r) = control.ready.borrow_mut().get_mut(i) {
                    *r = false;
                }
                fleet.borrow_mut().kill(i);
            }
        }
        Action::Restart(kill::Restart(h)) => {
            if let Some(i) = index(&h) {
                if !fleet.borrow_mut().is_running(i) {
                    restart(i).await;
                }
            }
        }
        Action::HealAll(_) => {
            let dead: Vec<usize> = (0..control.ready.borrow().len())
                .filter(|i| !fleet.borrow_mut().is_running(*i))
                .collect();
            for i in dead {
                restart(i).await;
            }
            control.drop_reply_rate.set(0.0);
        }
        Action::DropNextReply(_) => control.drop_next.set(true),
        // Refused by `validate` before the run.
        _ => {}
    }
}

/// GetTask on one replica, outside the history: `Ok(None)` when it does not know the task.
async fn read_task(host: &str, id: &str) -> Result<Option<a2a::Task>, String> {
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
