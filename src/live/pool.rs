//! A pool of real replicas that serves one scenario after another.
//!
//! Starting the a2a-python peer's replicas takes about three seconds, most of a live run;
//! thousands of generated scenarios (`fidelity --generate`) cannot pay it each time. A
//! [`Pool`] starts the project's hosts (ledger, webhook) and the replica processes once, on
//! one database, and runs each scenario on them:
//! - before a scenario, every replica that a kill left down is started again, the clock
//!   restarts at 0 ms, and the router is a fresh one (its own round-robin position, every
//!   replica ready, no reply to drop);
//! - the ledger and the save log begin empty and keep only the scenario's own contexts
//!   (`ctx-<conversation>-<seed>`), and the effects on its own tasks: late work of an
//!   earlier scenario is answered and forgotten ([`super::observer::Ground::begin`]);
//! - the final tasks are read for the task ids this scenario named.
//!
//! Scenarios on one pool are isolated by their seed-derived ids, so a pool must not serve
//! two scenarios with the same seed: the second would find the first's tasks in its
//! contexts. `fidelity --generate` runs each scenario's two live runs on two pools.
//! [`super::run_scenario`] is a pool of one scenario.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;
use tokio::task::LocalSet;

use crate::check::Invariant;
use crate::client::history::History;
use crate::client::Client;
use crate::error::InputError;
use crate::faults::Action;
use crate::ground::webhook::{self, WebhookMode, WebhookState};
use crate::host::Host;
use crate::model::{Placement, Profile};
use crate::net::{self, RealNet};
use crate::router::{self, RouterControl};
use crate::scenario::{ApplyNow, DriverLink, Script};
use crate::sim::{summarise, RunSummary};
use crate::trace::{Event, Trace};
use crate::world::RunRecord;

use super::network::{self, Network};
use super::{apply_fault, observer, peer, postgres, read_task, Hands, LiveOptions};

/// Real replicas of one model, reused across scenarios (see the module docs).
pub struct Pool {
    runtime: Runtime,
    local: LocalSet,
    net: Rc<RealNet>,
    profile: Profile,
    options: LiveOptions,
    ground: observer::Ground,
    webhook: Rc<RefCell<WebhookState>>,
    fleet: Rc<RefCell<peer::Fleet>>,
    /// The links the run carries through its own proxies ([`super::network`]).
    network: Rc<Network>,
    /// The pool's own PostgreSQL server, when its runs may kill the store
    /// ([`LiveOptions::own_store`]); dropped last.
    store: Option<Rc<RefCell<postgres::Server>>>,
    /// The database of a PostgreSQL preset run, dropped with the pool (after the fleet).
    run_db: Option<peer::RunDatabase>,
    replicas: usize,
    /// Seeds served so far: a seed served twice would share its ids.
    served: BTreeSet<u64>,
}

/// `--db sqlite`: a fresh SQLite file in the run's directory instead of PostgreSQL.
pub const SQLITE: &str = "sqlite";

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

fn io(what: &str, e: std::io::Error) -> InputError {
    InputError::new("live", format!("{what}: {e}"))
}

impl Pool {
    /// Starts `replicas` replicas of `profile` and the project's hosts.
    pub fn new(
        profile: &Profile,
        replicas: usize,
        options: &LiveOptions,
    ) -> Result<Pool, InputError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| InputError::new("live", format!("cannot start a runtime: {e}")))?;
        let local = LocalSet::new();
        let net = RealNet::new();
        let ledger_addr = net
            .bind("ledger", crate::ground::ledger::PORT, loopback())
            .map_err(|e| io("cannot bind the ledger", e))?;
        net.bind("webhook", webhook::PORT, loopback())
            .map_err(|e| io("cannot bind the webhook", e))?;
        let run_dir = peer::fresh_dir(&options.work_dir).map_err(|e| io("work directory", e))?;
        // With the preset, a PostgreSQL URL names the server: the pool gets a database of
        // its own there, dropped at the end.
        let mut run_db = None;
        let mut store = None;
        let preset = options.peer_for(profile).is_a2a_python();
        let sqlite = || format!("sqlite+aiosqlite:///{}", run_dir.join("tasks.db").display());
        let db = match options.db.clone() {
            Some(word) if word == SQLITE => sqlite(),
            // The default: with the preset, the command's own PostgreSQL server
            // ([`super::postgres`]); other peers keep a SQLite file unless --db names a URL.
            None if !preset => sqlite(),
            None => {
                // A pool whose runs kill the store has a server of its own: the kill must
                // not reach another run's database.
                let server = if options.own_store {
                    let own = postgres::Server::start(&options.work_dir)
                        .map_err(|e| InputError::new("live", e.to_string()))?;
                    let url = own.url();
                    store = Some(Rc::new(RefCell::new(own)));
                    url
                } else {
                    postgres::shared_url(&options.work_dir)
                        .map_err(|e| InputError::new("live", e.to_string()))?
                };
                let sdk = profile.fidelity.clone().unwrap_or_default().sdk;
                let created =
                    peer::RunDatabase::create(&sdk, &server, &peer::database_name(&run_dir))
                        .map_err(|e| InputError::new("live", e.to_string()))?;
                let url = created.url.clone();
                run_db = Some(created);
                url
            }
            Some(url) if preset && peer::is_postgres(&url) => {
                let sdk = profile.fidelity.clone().unwrap_or_default().sdk;
                let created = peer::RunDatabase::create(&sdk, &url, &peer::database_name(&run_dir))
                    .map_err(|e| InputError::new("live", e.to_string()))?;
                let url = created.url.clone();
                run_db = Some(created);
                url
            }
            Some(url) => url,
        };
        let fleet = Rc::new(RefCell::new(
            peer::Fleet::new(
                options.peer_for(profile),
                profile,
                format!("http://{ledger_addr}"),
                db,
                run_dir,
                replicas,
                options.user_store.clone(),
            )
            .with_push(options.allow_loopback_push)
            .with_think_ms(options.think_ms),
        ));
        let pool = Pool {
            runtime,
            local,
            net,
            profile: profile.clone(),
            options: options.clone(),
            ground: observer::Ground::default(),
            webhook: Rc::default(),
            fleet,
            network: Rc::default(),
            store,
            run_db,
            replicas,
            served: BTreeSet::new(),
        };
        net::install_real(pool.net.clone());
        let started = pool.local.block_on(&pool.runtime, async {
            let quiet = Trace::new(false);
            let (g, t) = (pool.ground.clone(), quiet.clone());
            tokio::task::spawn_local(async move { observer::serve(g, t).await });
            let (w, t) = (pool.webhook.clone(), quiet);
            tokio::task::spawn_local(async move { webhook::serve(w, WebhookMode::Ok, t).await });
            let webhook_addr = pool
                .net
                .addr("webhook")
                .ok_or_else(|| InputError::new("live", "the webhook has no address"))?;
            pool.route_replicas(ledger_addr, webhook_addr).await?;
            pool.start_replicas().await
        });
        net::uninstall_real();
        started?;
        Ok(pool)
    }

    /// Undoes what the last scenario's faults left: links healed, paused replicas
    /// resumed, a killed store started again (replicas down start in
    /// [`Pool::start_replicas`]).
    async fn restore(&self) -> Result<(), InputError> {
        let store = self.store.as_deref();
        super::lift_faults(
            &self.network,
            &self.fleet,
            self.replicas,
            store,
            self.options.ready_timeout,
        )
        .await
        .map_err(|e| InputError::new("live", e.to_string()))?;
        // The last final read went around the links: the router goes through them again.
        for i in 0..self.replicas {
            let addr = self.fleet.borrow().addr(i);
            if let Some(addr) = addr {
                let host = Host::Replica(i);
                let via = self
                    .network
                    .carry(&Host::Router, &host, addr)
                    .await
                    .map_err(|e| io("cannot start a link from the router", e))?;
                self.net.map(&host.to_string(), via);
            }
        }
        Ok(())
    }

    /// Gives every replica its own links to the ledger, the webhook and, over TCP, the
    /// database.
    async fn route_replicas(
        &self,
        ledger: SocketAddr,
        webhook: SocketAddr,
    ) -> Result<(), InputError> {
        let db = self.fleet.borrow().urls().1.to_string();
        let db_addr = network::authority_addr(&db);
        for i in 0..self.replicas {
            let host = Host::Replica(i);
            let ledger = self
                .network
                .carry(&host, &Host::Ledger, ledger)
                .await
                .map_err(|e| io("cannot start a link to the ledger", e))?;
            let webhook = self
                .network
                .carry(&host, &Host::Webhook, webhook)
                .await
                .map_err(|e| io("cannot start a link to the webhook", e))?;
            let db = match db_addr {
                Some(addr) => {
                    let via = self
                        .network
                        .carry(&host, &Host::Store, addr)
                        .await
                        .map_err(|e| io("cannot start a link to the database", e))?;
                    network::with_authority(&db, via)
                }
                None => None,
            };
            self.fleet.borrow_mut().set_route(
                i,
                peer::Route {
                    ledger: format!("http://{ledger}"),
                    webhook: webhook.to_string(),
                    db,
                },
            );
        }
        Ok(())
    }

    /// Starts every replica that does not run; the first alone, since it creates the
    /// schema.
    async fn start_replicas(&self) -> Result<(), InputError> {
        let mut started = Vec::new();
        for i in 0..self.replicas {
            // One that an earlier scenario drained runs until it exits.
            super::drained(&self.fleet, i).await;
            if self.fleet.borrow_mut().is_running(i) {
                continue;
            }
            let addr = self
                .fleet
                .borrow_mut()
                .start(i)
                .map_err(|e| InputError::new("live", e.to_string()))?;
            let host = Host::Replica(i);
            let via = self
                .network
                .carry(&Host::Router, &host, addr)
                .await
                .map_err(|e| io("cannot start a link from the router", e))?;
            self.net.map(&host.to_string(), via);
            if i == 0 {
                peer::wait_ready(&self.fleet, 0, self.options.ready_timeout)
                    .await
                    .map_err(|e| InputError::new("live", e.to_string()))?;
            } else {
                started.push(i);
            }
        }
        for i in started {
            peer::wait_ready(&self.fleet, i, self.options.ready_timeout)
                .await
                .map_err(|e| InputError::new("live", e.to_string()))?;
        }
        Ok(())
    }

    /// Runs `script` on the pool and summarises it with the same checkers as a simulated
    /// run.
    pub fn run(&mut self, script: &Script) -> Result<(RunSummary, RunRecord), InputError> {
        let origin = format!("scenario `{}`", script.file.name);
        super::validate(script, &origin, self.options.allow_loopback_push)?;
        if script.file.replicas > self.replicas {
            return Err(InputError::new(
                &origin,
                format!(
                    "the scenario has {} replicas; the pool runs {}",
                    script.file.replicas, self.replicas
                ),
            ));
        }
        let default = super::THINK_MS_DEFAULT;
        if super::think_ms(script).unwrap_or(default) != self.options.think_ms.unwrap_or(default) {
            return Err(InputError::new(
                &origin,
                "the scenario's think-ms is not the think time this pool's replicas were started with: run it with `live`",
            ));
        }
        self.can_make(script, &origin)?;
        if !self.served.insert(script.file.seed) {
            return Err(InputError::new(
                &origin,
                format!(
                    "this pool already served a scenario with seed {}: its ids would meet that run's tasks",
                    script.file.seed
                ),
            ));
        }
        let started = Instant::now();
        net::install_real(self.net.clone());
        let result = self.local.block_on(&self.runtime, self.run_world(script));
        net::uninstall_real();
        let mut record = result?;
        // The repository's peers name their artifacts `turn-N` by design: a run of theirs
        // whose tasks hold none (a canceled turn never saved) is judged as it is, never by
        // its messages; a user's agent may name them its own way.
        let preset = self.fleet.borrow().command().is_preset();
        let by_message = !preset && super::shown::by_message(&mut record);
        let mut findings = crate::check::check_all(&record);
        let mut notes = super::reports::apply(self.options.reports, preset, &record, &mut findings);
        if by_message {
            let note = notes.entry(Invariant::NO_LOST_WRITES).or_default();
            if !note.is_empty() {
                note.push_str("; ");
            }
            note.push_str(super::shown::NOTE);
        }
        let mut summary = summarise(&record, &findings, started.elapsed().as_millis() as u64);
        for i in &mut summary.invariants {
            i.note = notes.get(&i.name).cloned();
        }
        Ok((summary, record))
    }

    /// Refuses a script whose faults this pool cannot make: a network fault on a link it
    /// does not carry, a store kill without a server of its own.
    fn can_make(&self, script: &Script, origin: &str) -> Result<(), InputError> {
        for action in script.faults() {
            if let Some((a, b)) = action.link() {
                // client-router is carried from the first run on.
                let client = (*a == Host::Client && *b == Host::Router)
                    || (*a == Host::Router && *b == Host::Client);
                if !client && !self.network.carries(a, b) {
                    return Err(InputError::new(
                        origin,
                        format!(
                            "`{action}`: this live run does not carry the link {a}-{b} (a replica-store link needs a PostgreSQL database reached over TCP: the default, or --db postgresql://...)"
                        ),
                    ));
                }
            }
            if matches!(action, Action::Kill(k) if k.0 == Host::Store) && self.store.is_none() {
                return Err(InputError::new(
                    origin,
                    format!(
                        "`{action}` needs a PostgreSQL server of the run's own (the default database, no --db); `live` starts one when the scenario kills the store, and `fidelity` for a suite that does"
                    ),
                ));
            }
        }
        Ok(())
    }

    async fn run_world(&self, script: &Script) -> Result<RunRecord, InputError> {
        let seed = script.file.seed;
        let replicas = script.file.replicas;
        self.restore().await?;
        self.start_replicas().await?;
        self.net.restart_clock();
        // Pushes go to this run's webhook, on its real address; a pool's earlier runs'
        // deliveries are not this run's.
        self.webhook.borrow_mut().deliveries.clear();
        let webhook = self.net.addr("webhook").map(|a| a.to_string());
        let script = &super::with_real_push_targets(script, webhook.as_deref().unwrap_or(""));
        let trace = Trace::new(true);
        if let Some(db) = &self.run_db {
            trace.record(
                Host::Driver,
                Event::plain(format!("PostgreSQL database {}", db.name())),
            );
        }
        let contexts = script
            .turns
            .keys()
            .map(|c| crate::workload::context_id(seed, c))
            .collect();
        self.ground.begin(contexts, trace.clone());
        let router_addr = self
            .net
            .bind("router", router::PORT, loopback())
            .map_err(|e| io("cannot bind the router", e))?;
        // The client reaches the router through a link of its own.
        let via = self
            .network
            .carry(&Host::Client, &Host::Router, router_addr)
            .await
            .map_err(|e| io("cannot start a link to the router", e))?;
        self.net.map("router", via);
        let control = RouterControl::new(replicas);
        let router_task = {
            let make = router::maker(&script.file.routing).expect("the routing was validated");
            let (c, t) = (control.clone(), trace.clone());
            tokio::task::spawn_local(async move { router::serve(make, seed, c, t).await })
        };
        trace.record_at(
            crate::trace::now_ms(),
            Host::Driver,
            Event::plain(format!("{replicas} replicas ready")),
        );

        // The script, with faults applied on the real processes and links.
        let history = History::default();
        let applied: Rc<RefCell<Vec<(u64, Action)>>> = Rc::default();
        let hands = Hands {
            fleet: self.fleet.clone(),
            control: control.clone(),
            net: self.net.clone(),
            network: self.network.clone(),
            store: self.store.clone(),
            points: self.ground.points.clone(),
            restarts_owed: Rc::default(),
            trace: trace.clone(),
            timeout: self.options.ready_timeout,
        };
        self.ground
            .points
            .borrow_mut()
            .begin(seed, super::point_killer(&hands, &applied));
        let apply: ApplyNow = {
            let (hands, applied) = (hands.clone(), applied.clone());
            Rc::new(move |action: Action| {
                let (hands, applied) = (hands.clone(), applied.clone());
                Box::pin(async move {
                    // A simulated fault step lands on the next tick, after whatever the step
                    // before it finished in this one; live, it waits for the next millisecond,
                    // so that the record keeps that order (an ack and a restart in the same
                    // millisecond would read as simultaneous).
                    let issued = crate::trace::now_ms();
                    while crate::trace::now_ms() <= issued {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    let now = crate::trace::now_ms();
                    hands
                        .trace
                        .record_at(now, Host::Driver, Event::Fault(action.clone()));
                    applied.borrow_mut().push((now, action.clone()));
                    apply_fault(&hands, action).await;
                })
            })
        };
        let link = DriverLink {
            apply_now: Some(apply),
            ledger: Some(self.ground.ledger.clone()),
            ..DriverLink::default()
        };
        let client = Client::new(history.clone(), trace.clone(), script.request_timeout);
        client.set_turn_in(self.profile.handler.turn_in.unwrap_or_default());
        crate::scenario::run_script(script, seed, client, link.clone(), Duration::from_secs(1))
            .await;
        router_task.abort();

        // Ground truth: every task any answer, effect or save named, read from the shared
        // database (or, for a peer that cannot dump it, from the live replicas), outside
        // the history.
        let mut ids: Vec<String> = link.tasks.borrow().values().cloned().collect();
        for op in history.ops() {
            if let Some(view) = &op.task {
                ids.push(view.id.clone());
            }
        }
        for e in self.ground.ledger.borrow().effects() {
            ids.push(e.request.task_id.clone());
        }
        for s in self.ground.saves() {
            ids.push(s.task_id);
        }
        ids.sort();
        ids.dedup();
        // As a simulated run settles only once its drains are over: a draining replica
        // (its listener closed) exits, or is SIGKILLed at its grace period, first.
        for i in 0..self.replicas {
            super::drained(&self.fleet, i).await;
        }
        // As a simulated run restarts a replica a point killed at its down time, a live one
        // is read once those restarts are done (a restarting replica refuses the read).
        let deadline = Instant::now() + self.options.ready_timeout;
        while hands.restarts_owed.get() > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The final read goes around the links (a partition may still be on: the script's
        // faults end only when it heals them), as the simulation reads its store directly.
        for i in 0..self.replicas {
            if let Some(addr) = self.fleet.borrow().addr(i) {
                self.net.map(&Host::Replica(i).to_string(), addr);
            }
        }
        // Whose credentials a replica's own read may need (a server that scopes tasks to
        // their owner answers only the owner): every principal that called, the default first.
        let mut principals = vec![crate::auth::DEFAULT_PRINCIPAL.to_string()];
        for op in history.ops() {
            if !principals.contains(&op.principal) {
                principals.push(op.principal.clone());
            }
        }
        let (final_tasks, error) = self.final_tasks(&ids, &principals).await;
        let sim_ms = crate::trace::now_ms();
        let effects = self.ground.ledger.borrow().effects().to_vec();
        let saves = self.ground.saves();
        let deliveries = self.webhook.borrow().deliveries.clone();
        // The webhook serves every run of the pool under a quiet trace; this run's
        // deliveries join its trace here, at the times they arrived.
        for d in &deliveries {
            trace.record_at(
                d.at_ms,
                Host::Webhook,
                Event::Delivery {
                    path: d.path.clone(),
                    status: d.status,
                },
            );
        }
        let conversations = link.tasks.borrow().clone();
        let faults = applied.borrow().clone();
        let profile = self.profile.clone();
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
            settled_at_ms: None,
            trace_hash: "live".into(),
            trace: trace.events(),
            sim_ms,
            steps: 0,
            error,
            workload_shape: None,
            points_fired: self.ground.points.borrow().fired(),
            point_firings: Vec::new(),
            poll_slowed_until_ms: 0,
            // The card simulation (issue 10) is refused in live mode by `validate`.
            cards: Default::default(),
            // Scenarios that ask for authorisation are refused in live mode by `validate`.
            grants: Vec::new(),
        })
    }

    /// The stored tasks among `ids`: dumped from the shared database by the preset, or
    /// read from a live replica with GetTask.
    async fn final_tasks(
        &self,
        ids: &[String],
        principals: &[String],
    ) -> (BTreeMap<String, a2a::Task>, Option<String>) {
        let mut final_tasks = BTreeMap::new();
        let mut error = None;
        // A running replica reads the database for us; `--dump` starts Python only when
        // none runs.
        let reader = {
            let mut fleet = self.fleet.borrow_mut();
            fleet.can_dump().then(|| fleet.live_index())
        };
        let dumped = match reader {
            Some(Some(i)) => Some(super::dump_from(&Host::Replica(i).to_string(), ids).await),
            Some(None) => self
                .fleet
                .borrow()
                .dump(ids)
                .map(|r| r.map_err(|e| e.to_string())),
            None => None,
        };
        match dumped {
            Some(Ok(tasks)) => {
                for task in tasks {
                    final_tasks.insert(task.id.clone(), task);
                }
            }
            Some(Err(e)) => error = Some(format!("cannot read the final tasks: {e}")),
            None => {
                // Nothing to dump: ask the replicas. With per-process tasks every running
                // one, in index order, a later copy over an earlier one (as the simulation
                // reads its pods' memories); with a shared store the first that runs.
                let running: Vec<usize> = (0..self.replicas)
                    .filter(|i| self.fleet.borrow_mut().is_running(*i))
                    .collect();
                // A paused replica answers nothing: its memory is read once it goes on.
                for i in &running {
                    self.fleet.borrow_mut().resume(*i);
                }
                let readers = if self.options.placement_for(&self.profile) == Placement::Memory {
                    running
                } else {
                    running.into_iter().take(1).collect()
                };
                if readers.is_empty() {
                    error = Some("no replica was alive at the end to read the final tasks".into());
                }
                for i in readers {
                    let host = Host::Replica(i).to_string();
                    match self.read_replica(&host, ids, principals).await {
                        Ok(tasks) => {
                            final_tasks.extend(tasks.into_iter().map(|t| (t.id.clone(), t)))
                        }
                        Err(e) => error = Some(format!("cannot read the final tasks: {e}")),
                    }
                }
            }
        }
        (final_tasks, error)
    }

    /// The tasks among `ids` that replica `host` holds: from `GET /__a2a_chaos/tasks` in one
    /// read outside its handlers when it serves that path (the Mastra and a2a-js presets
    /// do; a user's server is asked too), else with a GetTask per id, as each of
    /// `principals` in turn until one is answered the task.
    async fn read_replica(
        &self,
        host: &str,
        ids: &[String],
        principals: &[String],
    ) -> Result<Vec<a2a::Task>, String> {
        let command = self.fleet.borrow().command().clone();
        // The a2a-python peer serves no such path (its database is dumped instead).
        if !command.is_a2a_python() {
            match (super::tasks_from(host, ids).await?, command.serves_tasks()) {
                (Some(tasks), _) => return Ok(tasks),
                (None, true) => return Err(format!("{host} does not serve /__a2a_chaos/tasks")),
                // A user's server without the path: read with GetTask.
                (None, false) => {}
            }
        }
        let mut tasks = Vec::new();
        for id in ids {
            for principal in principals {
                let authorization = crate::auth::authorization_for(principal);
                match read_task(host, id, authorization.as_deref()).await {
                    Ok(Some(task)) => {
                        tasks.push(task);
                        break;
                    }
                    Ok(None) => {}
                    Err(e) => return Err(format!("task {id} from {host} at the end: {e}")),
                }
            }
        }
        Ok(tasks)
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.fleet.borrow_mut().stop_all();
        // The database goes after the fleet that used it.
        drop(self.run_db.take());
    }
}
