//! One simulated run: the turmoil world, its hosts, the driver loop and what it leaves behind.
//!
//! Hosts: `client` (workload drivers), `router`, `replica-0..N-1`, `store` (the shared task
//! store as a service, so latency and partitions apply between replicas and store), `ledger`
//! (the business-effect sink) and `webhook` (push receiver); in runs that simulate the agent
//! card, also the extra hosts its changes may name ([`crate::card`]). One u64 seed drives turmoil's
//! `rng_seed`, every host's tokio runtime (built with `tokio_unstable`), the fault plan, the
//! workload and every id; the epoch is fixed. The same seed gives the same trace hash in any
//! process.
//!
//! The driver steps the simulation one 1 ms tick at a time and applies faults between ticks:
//! the planned ones at their time, and the ones a scripted scenario asks for as it reaches
//! them. At the end it collects ground truth from the hosts that do not lie about
//! themselves: the store's tasks and save log (or each live pod's memory), the ledger, the
//! webhook.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::{Duration, UNIX_EPOCH};

use a2a::Task;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::buggify::{Chaos, SharedChaos};
use crate::client::history::{History, Op};
use crate::client::Client;
use crate::faults::{
    kill, Action, CardChange, FaultSpec, KillPoint, PlanInput, Point, Scheduled, Target,
};
use crate::ground::ledger::{self, Effect, LedgerState};
use crate::ground::push::{Egress, PushReport, SharedPush};
use crate::ground::webhook::{self, Delivery, WebhookMode, WebhookState};
use crate::model::{Placement, Profile};
use crate::replica::{self, Replica, Timing, Wiring};
use crate::router::{self, RouterControl};
use crate::store::{self, SaveRecord, SharedState, StoreState, TaskStore};
use crate::trace::{Event, Trace, TraceEvent};
use crate::workload::{self, WorkloadSpec};

/// The fixed simulated epoch: 2026-01-01T00:00:00Z.
pub const EPOCH_SECS: u64 = 1_767_225_600;

/// Simulated time one step advances.
pub const TICK: Duration = Duration::from_millis(1);

/// Pending connections a listener may queue (see [`run`]).
pub const TCP_CAPACITY: usize = 4096;

/// Network latency bounds per message (ms), outside latency faults.
pub const LATENCY_MS: (u64, u64) = (1, 4);

/// What the client host runs.
#[derive(Clone)]
pub enum Workload {
    /// Generated conversations.
    Generated(WorkloadSpec),
    /// A scripted scenario's steps.
    Scripted(Rc<crate::scenario::Script>),
}

/// Everything one run needs.
#[derive(Clone)]
pub struct RunSpec {
    pub seed: u64,
    pub profile: Rc<Profile>,
    pub routing: String,
    pub replicas: usize,
    pub workload: Workload,
    pub faults: FaultSpec,
    pub timing: Timing,
    pub webhook: WebhookMode,
    /// Keep every trace event (for replay), not only the hash.
    pub keep_trace: bool,
    /// Simulated time after which an unfinished run is reported as not terminating.
    pub budget: Duration,
}

/// What a run leaves behind for the checkers and the report.
#[derive(Debug, Clone)]
pub struct RunRecord {
    pub seed: u64,
    pub model: String,
    /// The model's profile (checkers read its knobs to know what it promises).
    pub profile: Profile,
    pub routing: String,
    pub replicas: usize,
    /// Every client operation.
    pub history: Vec<Op>,
    /// Every effect that reached the ledger.
    pub effects: Vec<Effect>,
    /// The authoritative copy of every task at the end (store, or live pods' memory).
    pub final_tasks: BTreeMap<String, Task>,
    /// Every accepted save, in time order: the shared store's, or every pod's memory store's
    /// (pods that died included: the simulator keeps their logs as an observer).
    pub saves: Vec<SaveRecord>,
    /// Every push delivery that reached the webhook.
    pub deliveries: Vec<Delivery>,
    /// What the replicas reported about their pushes (failures only when the model logs them).
    pub push_reports: Vec<PushReport>,
    /// Every connection a push opened, as the simulator saw it.
    pub push_egress: Vec<Egress>,
    /// Pushes still queued in the shared store's outbox at the end: owed, and recorded as
    /// owed, by a system that keeps them durably.
    pub push_pending: Vec<(String, a2a::TaskState)>,
    /// The fault rates this seed ran with.
    pub fault_rates: BTreeMap<String, f64>,
    /// The workload shape this seed drew (`swarm`), printed with the seed; `None` for a
    /// scripted run or a workload as written.
    pub workload_shape: Option<String>,
    /// How often each fault point fired (`buggify:conflict-on-save`, `kill-at:effect`): the
    /// counters that show a code fault was reached.
    pub points_fired: BTreeMap<String, u64>,
    /// When the last event poll slowed by a BUGGIFY point ended (0: none was).
    pub poll_slowed_until_ms: u64,
    /// Fault actions applied, with their time.
    pub faults: Vec<(u64, Action)>,
    /// Conversation → task id, as the client learned it.
    pub conversations: BTreeMap<String, String>,
    /// When the liveness phase began (everything healed), simulated ms.
    pub healed_at_ms: u64,
    pub trace_hash: String,
    pub trace: Vec<TraceEvent>,
    /// Simulated time the run took.
    pub sim_ms: u64,
    /// Steps the driver took.
    pub steps: u64,
    /// Why the run did not finish normally (a host error, the budget), if it did not.
    pub error: Option<String>,
    /// The agent card's versions and the client's card decisions (runs that simulate it).
    pub cards: crate::card::CardRecord,
    /// Every out-of-band authorisation the identity provider recorded, in order.
    pub grants: Vec<crate::auth::Grant>,
}

/// Applies a fault at once and resolves when it took effect (a live run's driver, where a
/// restart takes real time); see [`DriverLink::apply_now`].
pub type ApplyNow = Rc<dyn Fn(Action) -> Pin<Box<dyn Future<Output = ()>>>>;

/// Shared state between the driver and a scripted client.
#[derive(Clone, Default)]
pub struct DriverLink {
    /// Actions the client asks the driver to apply after the current tick.
    pub commands: Rc<RefCell<VecDeque<Action>>>,
    /// Conversation → task id, filled by the client as it learns them.
    pub tasks: Rc<RefCell<BTreeMap<String, String>>>,
    /// Outside a simulation (`a2a-chaos live`): fault steps are applied through this and
    /// awaited, instead of being queued for the next tick. `None` in every simulation.
    pub apply_now: Option<ApplyNow>,
    /// The ledger, for the script's effect steps (`hold-effect`, `await-effect`,
    /// `release-effect`): the simulated ledger host's state, or the live ledger's.
    pub ledger: Option<crate::ground::ledger::SharedLedger>,
}

/// Runs one seed to its end.
pub fn run(spec: &RunSpec) -> RunRecord {
    let seed = spec.seed;
    let trace = Trace::new(spec.keep_trace);
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed)
        .epoch(UNIX_EPOCH + Duration::from_secs(EPOCH_SECS))
        .tick_duration(TICK)
        .simulation_duration(spec.budget)
        .min_message_latency(Duration::from_millis(LATENCY_MS.0))
        .max_message_latency(Duration::from_millis(LATENCY_MS.1))
        // turmoil queues 64 pending connections per listener by default and panics past
        // that; a burst of conversations (or a wide `concurrent` step) can exceed it.
        .tcp_capacity(TCP_CAPACITY)
        .build();

    let store_state: SharedState = Rc::new(RefCell::new(StoreState::default()));
    let ledger_state = Rc::new(RefCell::new(LedgerState::default()));
    let webhook_state = Rc::new(RefCell::new(WebhookState::default()));
    let push_world: SharedPush = Rc::default();
    let chaos = Chaos::shared(seed);
    let control = RouterControl::new(spec.replicas);
    let history = History::default();
    let link = DriverLink {
        ledger: Some(ledger_state.clone()),
        ..DriverLink::default()
    };
    let grants = crate::auth::Grants::default();

    // The fault plan, drawn from its own stream of the seed (so drawing it first changes
    // nothing else): the card setup needs to know which hosts it names.
    let mut rng = ChaCha8Rng::seed_from_u64(crate::trace::derive_seed(seed, "faults", 0));
    let fault_rates = spec.faults.resolve(&mut rng);
    let plan = spec.faults.plan(
        &fault_rates,
        &PlanInput {
            replicas: spec.replicas,
            window_ms: spec.faults.window_ms,
        },
        &mut rng,
    );

    // The agent card, in runs that simulate it: the router serves it, the replicas answer
    // the streaming methods by it, and the extra hosts its planned changes name exist
    // (below). Other runs keep their hosts and their trace.
    let (cards, card_hosts) = match card_setup(&spec.workload, &spec.faults, &plan) {
        Some((setup, hosts)) => {
            let auth = &spec.profile.auth;
            let card_bearer = auth.card_bearer && auth.bearer == crate::model::BearerRule::Required;
            let authority = crate::card::CardAuthority::new(setup, card_bearer, trace.clone());
            (Some(authority), hosts)
        }
        None => (None, BTreeSet::new()),
    };

    {
        let (state, trace, chaos) = (store_state.clone(), trace.clone(), chaos.clone());
        sim.host("store", move || {
            store::serve(state.clone(), trace.clone(), chaos.clone())
        });
    }
    {
        let (state, trace) = (ledger_state.clone(), trace.clone());
        sim.host("ledger", move || {
            ledger::serve(state.clone(), trace.clone())
        });
    }
    {
        let (state, trace, mode) = (webhook_state.clone(), trace.clone(), spec.webhook);
        sim.host("webhook", move || {
            webhook::serve(state.clone(), mode, trace.clone())
        });
    }
    let mut memory_slots: Vec<Rc<RefCell<Option<SharedState>>>> = Vec::new();
    for i in 0..spec.replicas {
        let slot: Rc<RefCell<Option<SharedState>>> = Rc::default();
        memory_slots.push(slot.clone());
        let boot = Rc::new(Cell::new(0u32));
        let profile = spec.profile.clone();
        let timing = spec.timing.clone();
        let trace = trace.clone();
        let push_world = push_world.clone();
        let chaos = chaos.clone();
        let (card, grants) = (cards.clone(), grants.clone());
        sim.host(format!("replica-{i}"), move || {
            let b = boot.get();
            boot.set(b + 1);
            let store = match profile.store.placement {
                Placement::Memory => {
                    let mem = replica::memory_store();
                    *slot.borrow_mut() = Some(mem.clone());
                    TaskStore::Local(mem)
                }
                Placement::Shared => TaskStore::Remote {
                    timeout: timing.store_timeout,
                },
            };
            let replica = Rc::new(Replica::new(
                i,
                b,
                seed,
                Wiring {
                    profile: profile.clone(),
                    timing: timing.clone(),
                    store,
                    push_world: push_world.clone(),
                    trace: trace.clone(),
                    chaos: chaos.clone(),
                    card: card.clone(),
                    grants: grants.clone(),
                },
            ));
            let trace = trace.clone();
            async move {
                trace.record(&replica.name, Event::Boot(b));
                replica.serve().await
            }
        });
    }
    {
        let (routing, control, trace) = (spec.routing.clone(), control.clone(), trace.clone());
        sim.host("router", move || {
            router::serve(routing.clone(), seed, control.clone(), trace.clone())
        });
    }

    if let Some(authority) = &cards {
        *control.cards.borrow_mut() = Some(authority.clone());
        for host in card_hosts {
            let (authority, trace, name) = (authority.clone(), trace.clone(), host.clone());
            sim.host(host, move || {
                crate::card::front_door::serve(name.clone(), authority.clone(), trace.clone())
            });
        }
    }

    let healed_at_ms = spec.faults.window_ms;

    // The workload shape this seed runs: as written, or drawn from it (swarm).
    let workload = match &spec.workload {
        Workload::Generated(w) => Workload::Generated(w.resolve(seed)),
        scripted => scripted.clone(),
    };
    let workload_shape = match (&spec.workload, &workload) {
        (Workload::Generated(w), Workload::Generated(drawn)) if w.swarm => Some(drawn.describe()),
        _ => None,
    };
    let client_future = client_future(
        spec,
        &workload,
        &history,
        &trace,
        &link,
        healed_at_ms,
        (&cards, &grants),
    );
    sim.client("client", client_future);

    let mut driver = Driver {
        control: control.clone(),
        memory_slots,
        dead_memory: Vec::new(),
        crashed: BTreeSet::new(),
        partitions: BTreeSet::new(),
        slowed: BTreeSet::new(),
        held: BTreeSet::new(),
        applied: Vec::new(),
        trace: trace.clone(),
        chaos: chaos.clone(),
        next_point_kill_ms: 0,
        heal_at_ms: healed_at_ms,
        cards: cards.clone(),
    };
    let mut pending: VecDeque<Scheduled> = plan.into();
    let mut steps = 0u64;
    let mut error = None;
    loop {
        let now = sim.elapsed().as_millis() as u64;
        // Kill points reached during the last tick: each becomes a kill a few ms from now
        // and a restart after the down time.
        for s in driver.point_kills(now) {
            let at = pending.partition_point(|p| p.at_ms <= s.at_ms);
            pending.insert(at, s);
        }
        while pending.front().is_some_and(|s| s.at_ms <= now) {
            let s = pending.pop_front().expect("checked");
            driver.apply(&mut sim, now, &s.action);
        }
        loop {
            let next = link.commands.borrow_mut().pop_front();
            match next {
                Some(action) => driver.apply(&mut sim, now, &action),
                None => break,
            }
        }
        steps += 1;
        match sim.step() {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => {
                error = Some(format!(
                    "the run did not finish: {e} (budget {} simulated s)",
                    spec.budget.as_secs()
                ));
                break;
            }
        }
    }
    let sim_ms = sim.elapsed().as_millis() as u64;

    let mut final_tasks = BTreeMap::new();
    let mut saves = Vec::new();
    match spec.profile.store.placement {
        Placement::Shared => {
            let s = store_state.borrow();
            for (id, (task, _)) in s.tasks() {
                final_tasks.insert(id.clone(), task.clone());
            }
            saves.extend_from_slice(s.saves());
        }
        Placement::Memory => {
            for dead in &driver.dead_memory {
                saves.extend_from_slice(dead.borrow().saves());
            }
            for slot in &driver.memory_slots {
                if let Some(mem) = slot.borrow().as_ref() {
                    let s = mem.borrow();
                    for (id, (task, _)) in s.tasks() {
                        final_tasks.insert(id.clone(), task.clone());
                    }
                    saves.extend_from_slice(s.saves());
                }
            }
            saves.sort_by_key(|s| s.at_ms);
        }
    }
    drop(sim);
    let conversations = link.tasks.borrow().clone();
    let effects = ledger_state.borrow().effects().to_vec();
    let deliveries = webhook_state.borrow().deliveries.clone();
    let push_pending = store_state.borrow().outbox_pending();
    let points_fired = chaos.borrow().fired.clone();
    let poll_slowed_until_ms = chaos.borrow().poll_slowed_until_ms;
    let (push_reports, push_egress) = {
        let w = push_world.borrow();
        (w.reports.clone(), w.egress.clone())
    };
    RunRecord {
        seed,
        model: spec.profile.name.clone(),
        profile: (*spec.profile).clone(),
        routing: spec.routing.clone(),
        replicas: spec.replicas,
        history: history.ops(),
        effects,
        final_tasks,
        saves,
        deliveries,
        push_reports,
        push_egress,
        push_pending,
        fault_rates,
        workload_shape,
        points_fired,
        poll_slowed_until_ms,
        faults: driver.applied,
        conversations,
        healed_at_ms,
        trace_hash: trace.hash_hex(),
        trace: trace.events(),
        sim_ms,
        steps,
        error,
        cards: cards.map(|a| a.record()).unwrap_or_default(),
        grants: grants.all(),
    }
}

/// Refuses a run that simulates the card with a model that has no `[card]` knobs (a
/// `--model` given on the command line).
pub fn check_card_profile(spec: &RunSpec) -> Result<(), crate::error::InputError> {
    match card_setup(&spec.workload, &spec.faults, &[]) {
        Some(_) => crate::card::check_profile(&spec.profile, "--model"),
        None => Ok(()),
    }
}

/// Whether a run simulates the card, its setup, and the extra hosts its changes name.
///
/// A scripted run's hosts are the ones its card steps name. A generated run simulates the
/// card when any card fault is configured, but only the hosts named by the card changes
/// this seed's `plan` actually schedules get a host: each host is one more runtime the
/// simulation steps every tick, and most seeds never name them.
pub fn card_setup(
    workload: &Workload,
    faults: &FaultSpec,
    plan: &[Scheduled],
) -> Option<(crate::card::CardSetup, BTreeSet<String>)> {
    match workload {
        Workload::Scripted(script) => {
            let setup = script.card_setup()?;
            Some((setup, script.card_hosts()))
        }
        Workload::Generated(_) => {
            if !crate::faults::any_card_fault(faults.rates.keys()) {
                return None;
            }
            let hosts = plan
                .iter()
                .filter_map(|s| match &s.action {
                    Action::Card(c) => c.0.names_host(),
                    _ => None,
                })
                .map(str::to_string)
                .collect();
            Some((crate::card::CardSetup::default(), hosts))
        }
    }
}

/// How long a script's world runs after its last step, at least.
const SCRIPT_TAIL_MS: u64 = 1000;

fn client_future(
    spec: &RunSpec,
    workload: &Workload,
    history: &History,
    trace: &Trace,
    link: &DriverLink,
    healed_at_ms: u64,
    (cards, grants): (&Option<crate::card::CardAuthority>, &crate::auth::Grants),
) -> Pin<Box<dyn Future<Output = turmoil::Result>>> {
    let seed = spec.seed;
    // A script ends once background work (non-blocking turns, pushes) has had a second, and
    // the model's own recovery (a sweep taking over an abandoned turn) has had its bound.
    let recovery = &spec.profile.recovery;
    let tail = Duration::from_millis(if recovery.sweep_ms > 0 {
        SCRIPT_TAIL_MS.max(recovery.runner_lease_ms + recovery.sweep_ms + 500)
    } else {
        SCRIPT_TAIL_MS
    });
    let timeout = match workload {
        Workload::Generated(w) => Duration::from_millis(w.request_timeout_ms),
        Workload::Scripted(s) => s.request_timeout,
    };
    let cards = cards.as_ref().map(|authority| {
        let knobs = spec.profile.card.clone().unwrap_or_else(|| {
            panic!(
                "model `{}` has no [card] knobs (checked when the file was read)",
                spec.profile.name
            )
        });
        crate::card::cache::CardClient::new(knobs, authority.clone(), timeout, trace.clone())
    });
    let client = Client::with_cards(
        history.clone(),
        trace.clone(),
        timeout,
        cards,
        grants.clone(),
    );
    let link = link.clone();
    let liveness_ms = spec.faults.liveness_ms;
    match workload.clone() {
        Workload::Generated(w) => Box::pin(async move {
            let tasks = workload::run(w, seed, client.clone()).await;
            *link.tasks.borrow_mut() = tasks.clone();
            // The liveness phase: everything is healed at `healed_at_ms`; give in-flight work
            // the liveness bound to settle, then read every task once more.
            let now = crate::trace::now_ms();
            let until = healed_at_ms.max(now) + liveness_ms;
            tokio::time::sleep(Duration::from_millis(until - now)).await;
            for (conversation, id) in tasks {
                let ctx = workload::context_id(seed, &conversation);
                client
                    .unary(
                        crate::client::history::OpKind::Get { conversation },
                        "GetTask",
                        serde_json::json!({ "id": id }),
                        Some(&ctx),
                        None,
                    )
                    .await;
            }
            Ok(())
        }),
        Workload::Scripted(script) => Box::pin(async move {
            crate::scenario::run_script(&script, seed, client, link, tail).await;
            Ok(())
        }),
    }
}

struct Driver {
    control: RouterControl,
    memory_slots: Vec<Rc<RefCell<Option<SharedState>>>>,
    /// Memory stores of pods that died: gone for the system, kept for the checkers.
    dead_memory: Vec<SharedState>,
    crashed: BTreeSet<String>,
    partitions: BTreeSet<(String, String)>,
    slowed: BTreeSet<(String, String)>,
    held: BTreeSet<(String, String)>,
    applied: Vec<(u64, Action)>,
    trace: Trace,
    chaos: SharedChaos,
    /// No kill-point kill lands before this time (the fault's stability window).
    next_point_kill_ms: u64,
    /// When the liveness phase begins: no point kill lands from then on.
    heal_at_ms: u64,
    cards: Option<crate::card::CardAuthority>,
}

fn replica_index(host: &str) -> Option<usize> {
    host.strip_prefix("replica-").and_then(|i| i.parse().ok())
}

impl Driver {
    /// The kills owed to armed kill points, as scheduled actions: the kill a few ms from
    /// now, the restart after the down time. A host already down, or a point reached inside
    /// the stability window of the last point kill, is spared.
    fn point_kills(&mut self, now: u64) -> Vec<Scheduled> {
        let owed = self.chaos.borrow_mut().take_kills();
        let mut out = Vec::new();
        for (host, point, delay) in owed {
            let at_ms = now + delay;
            if self.crashed.contains(&host)
                || now < self.next_point_kill_ms
                || at_ms >= self.heal_at_ms
            {
                continue;
            }
            let down = {
                let (lo, hi) = crate::faults::KILL_POINT_DOWN_MS;
                self.chaos.borrow_mut().draw_ms(lo, hi)
            };
            self.next_point_kill_ms = at_ms + crate::faults::KILL_POINT_STABILITY_MS;
            self.chaos.borrow_mut().count_kill(point);
            self.trace.record_at(
                now,
                "driver",
                Event::KillPointReached {
                    host: host.clone(),
                    point,
                },
            );
            out.push(Scheduled {
                at_ms,
                action: kill::Kill(host.clone()).into(),
            });
            out.push(Scheduled {
                at_ms: at_ms + down,
                action: kill::Restart(host).into(),
            });
        }
        out
    }

    fn apply(&mut self, sim: &mut turmoil::Sim<'_>, now: u64, action: &Action) {
        self.trace
            .record_at(now, "driver", Event::Fault(action.clone()));
        self.applied.push((now, action.clone()));
        action.apply(&mut Applying {
            driver: self,
            sim,
            now,
        });
    }
}

/// The driver applying one action to the turmoil world: what a fault may do to it.
struct Applying<'a, 'b> {
    driver: &'a mut Driver,
    sim: &'a mut turmoil::Sim<'b>,
    now: u64,
}

impl Applying<'_, '_> {
    fn set_ready(&self, host: &str, ready: bool) {
        if let Some(i) = replica_index(host) {
            if let Some(r) = self.driver.control.ready.borrow_mut().get_mut(i) {
                *r = ready;
            }
        }
    }
}

impl Target for Applying<'_, '_> {
    fn crash(&mut self, host: &str) {
        if self.driver.crashed.insert(host.to_string()) {
            self.set_ready(host, false);
            if let Some(i) = replica_index(host) {
                if let Some(slot) = self.driver.memory_slots.get(i) {
                    if let Some(dead) = slot.borrow_mut().take() {
                        self.driver.dead_memory.push(dead);
                    }
                }
            }
            self.sim.crash(host);
        }
    }

    fn restart(&mut self, host: &str) {
        if self.driver.crashed.remove(host) {
            self.sim.bounce(host);
            self.set_ready(host, true);
        }
    }

    fn partition(&mut self, from: &str, to: &str, oneway: bool) {
        if oneway {
            self.sim.partition_oneway(from, to);
        } else {
            self.sim.partition(from, to);
        }
        self.driver
            .partitions
            .insert((from.to_string(), to.to_string()));
    }

    fn repair(&mut self, a: &str, b: &str) {
        self.sim.repair(a, b);
        self.driver
            .partitions
            .remove(&(a.to_string(), b.to_string()));
        self.driver
            .partitions
            .remove(&(b.to_string(), a.to_string()));
    }

    fn hold(&mut self, a: &str, b: &str) {
        self.sim.hold(a, b);
        self.driver.held.insert((a.to_string(), b.to_string()));
    }

    fn release(&mut self, a: &str, b: &str) {
        self.sim.release(a, b);
        self.driver.held.remove(&(a.to_string(), b.to_string()));
        self.driver.held.remove(&(b.to_string(), a.to_string()));
    }

    fn link_latency(&mut self, a: &str, b: &str, max_ms: Option<u64>) {
        let max = Duration::from_millis(max_ms.unwrap_or(LATENCY_MS.1));
        self.sim.set_link_max_message_latency(a, b, max);
        if max_ms.is_some() {
            self.driver.slowed.insert((a.to_string(), b.to_string()));
        } else {
            self.driver.slowed.remove(&(a.to_string(), b.to_string()));
        }
    }

    fn heal_all(&mut self) {
        for (a, b) in std::mem::take(&mut self.driver.partitions) {
            self.sim.repair(a.as_str(), b.as_str());
        }
        for (a, b) in std::mem::take(&mut self.driver.held) {
            self.sim.release(a.as_str(), b.as_str());
        }
        self.driver.chaos.borrow_mut().clear();
        for (a, b) in std::mem::take(&mut self.driver.slowed) {
            self.sim.set_link_max_message_latency(
                a.as_str(),
                b.as_str(),
                Duration::from_millis(LATENCY_MS.1),
            );
        }
        for host in std::mem::take(&mut self.driver.crashed) {
            self.sim.bounce(host.as_str());
            self.set_ready(&host, true);
        }
        self.driver.control.drop_reply_rate.set(0.0);
    }

    fn lost_reply_rate(&mut self, probability: f64) {
        self.driver.control.drop_reply_rate.set(probability);
    }

    fn drop_next_reply(&mut self) {
        self.driver.control.drop_next.set(true);
    }

    fn buggify(&mut self, point: Point, probability: f64) {
        self.driver
            .chaos
            .borrow_mut()
            .set_buggify(point, probability);
    }

    fn kill_at(&mut self, point: KillPoint, probability: f64) {
        self.driver
            .chaos
            .borrow_mut()
            .set_kill_at(point, probability);
    }

    fn card(&mut self, change: &CardChange) {
        if let Some(authority) = &self.driver.cards {
            authority.apply(change, self.now);
        }
    }
}

/// The fault mix and, with a swarm workload, the drawn workload shape: what a seed resolved,
/// printed with it.
pub fn describe_resolved(record: &RunRecord) -> String {
    match &record.workload_shape {
        Some(shape) => format!("{}; {shape}", describe_rates(&record.fault_rates)),
        None => describe_rates(&record.fault_rates),
    }
}

/// Faults as a plain list, for printing with the seed.
pub fn describe_rates(rates: &BTreeMap<String, f64>) -> String {
    if rates.is_empty() {
        return "none".into();
    }
    rates
        .iter()
        .map(|(k, v)| format!("{k}={v:.3}"))
        .collect::<Vec<_>>()
        .join(" ")
}
