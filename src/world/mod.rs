//! One simulated run: its hosts, the driver, the engine that runs them and what it leaves
//! behind.
//!
//! Hosts: `client` (workload drivers), `router`, `replica-0..N-1`, `store` (the shared task
//! store as a service, so latency and partitions apply between replicas and store), `ledger`
//! (the business-effect sink) and `webhook` (push receiver); in runs that simulate the agent
//! card, also the extra hosts its changes may name ([`crate::card`]). One u64 seed drives the
//! engine (the event engine's runtime and network, or turmoil's `rng_seed` and every host's
//! runtime, built with `tokio_unstable`), the fault plan, the workload and every id; the
//! epoch is fixed. The same seed on the same engine gives the same trace hash in any process.
//!
//! The driver applies faults at their time (the planned ones) and as a scripted scenario
//! reaches them: between turmoil's 1 ms ticks, or when the event engine wakes it
//! (`engines`). At the end it collects ground truth from the hosts that do not lie about
//! themselves: the store's tasks and save log (or each live pod's memory), the ledger, the
//! webhook.

mod cards;
mod client;
mod driver;
mod engines;
mod record;
mod settle;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::{Duration, UNIX_EPOCH};

use crate::buggify::Chaos;
use crate::client::history::History;
use crate::engine::Engine;
use crate::faults::PlanInput;
use crate::ground::ledger::{self, LedgerState};
use crate::ground::push::SharedPush;
use crate::ground::webhook::{self, WebhookState};
use crate::host::Host;
use crate::model::Placement;
use crate::replica::{Replica, Wiring};
use crate::router::{self, RouterControl};
use crate::scenario::DriverLink;
use crate::store::{self, SharedState, TaskStore};
use crate::trace::{Event, Trace};

pub use cards::{card_setup, check_card_profile};
pub use record::{RunRecord, RunSpec, Workload};

use client::client_future;
use driver::Driver;

pub use crate::trace::EPOCH_SECS;

/// Simulated time one step advances, by default (`tick-ms` sets another).
pub const TICK: Duration = Duration::from_millis(1);

/// Pending connections a listener may queue (see [`run`]).
pub const TCP_CAPACITY: usize = 4096;

/// Network latency bounds per message (ms), outside latency faults.
pub const LATENCY_MS: (u64, u64) = (1, 4);

/// A turmoil builder configured as every run of this simulator is: the seed, the fixed
/// epoch, the 1 ms tick, the simulated-time budget, message latency and listener capacity.
/// [`run`] builds its world from it; so do the benchmark's baselines and the fuzz tests'
/// worlds, so that what they measure or exercise is the world a run steps.
pub fn turmoil_builder(seed: u64, budget: Duration) -> turmoil::Builder {
    let mut b = turmoil::Builder::new();
    b.rng_seed(seed)
        .epoch(UNIX_EPOCH + Duration::from_secs(EPOCH_SECS))
        .tick_duration(TICK)
        .simulation_duration(budget)
        .min_message_latency(Duration::from_millis(LATENCY_MS.0))
        .max_message_latency(Duration::from_millis(LATENCY_MS.1))
        // turmoil queues 64 pending connections per listener by default and panics past
        // that; a burst of conversations (or a wide `concurrent` step) can exceed it.
        .tcp_capacity(TCP_CAPACITY);
    b
}

/// Configures an event-engine network as every run of this simulator has it: the message
/// latency bounds [`LATENCY_MS`] (turmoil's are set by [`turmoil_builder`]).
pub fn configure_event_net(core: &crate::engine::Core) {
    core.net.set_latency(
        Duration::from_millis(LATENCY_MS.0),
        Duration::from_millis(LATENCY_MS.1),
    );
}

/// Runs one seed to its end.
pub fn run(spec: &RunSpec) -> RunRecord {
    let seed = spec.seed;
    let trace = Trace::new(spec.keep_trace);
    // Work in flight is counted from here to the end of the run (`settle`).
    let activity = crate::activity::Activity::install();
    crate::net::crashed::reset();
    crate::net::oneway::reset();
    let mut hosts = engines::Hosts::default();

    let store_state: SharedState = store::shared(spec.table.as_ref());
    let ledger_state = Rc::new(RefCell::new(LedgerState::default()));
    let webhook_state = Rc::new(RefCell::new(WebhookState::default()));
    let push_world: SharedPush = Rc::default();
    let chaos = Chaos::shared(seed);
    chaos.borrow_mut().redraw_delays(seed, spec.fault_draw);
    let control = RouterControl::new(spec.replicas);
    let history = History::default();
    let link = DriverLink {
        ledger: Some(ledger_state.clone()),
        ..DriverLink::default()
    };
    let grants = crate::auth::Grants::default();

    // The fault plan, drawn from its own stream of the seed (so drawing it first changes
    // nothing else): the card setup needs to know which hosts it names.
    let fault_rates = spec.faults.resolve(seed);
    let plan = spec.faults.plan(
        &fault_rates,
        &PlanInput {
            replicas: spec.replicas,
            window_ms: spec.faults.window_ms,
        },
        seed,
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
        hosts.add("store", move || {
            Box::pin(store::serve(state.clone(), trace.clone(), chaos.clone()))
        });
    }
    {
        let (state, trace) = (ledger_state.clone(), trace.clone());
        hosts.add("ledger", move || {
            Box::pin(ledger::serve(state.clone(), trace.clone()))
        });
    }
    {
        let (state, trace, mode) = (webhook_state.clone(), trace.clone(), spec.webhook);
        hosts.add("webhook", move || {
            Box::pin(webhook::serve(state.clone(), mode, trace.clone()))
        });
    }
    let mut memory_slots: Vec<Rc<RefCell<Option<SharedState>>>> = Vec::new();
    let mut drains = Vec::new();
    let timing_seed = spec.timing_seed();
    for i in 0..spec.replicas {
        let slot: Rc<RefCell<Option<SharedState>>> = Rc::default();
        memory_slots.push(slot.clone());
        let drain = crate::replica::DrainSignal::new();
        drains.push(drain.clone());
        let boot = Rc::new(Cell::new(0u32));
        let profile = spec.profile.clone();
        let timing = spec.timing.clone();
        let trace = trace.clone();
        let push_world = push_world.clone();
        let chaos = chaos.clone();
        let (card, grants) = (cards.clone(), grants.clone());
        let table = spec.table.clone();
        hosts.add(Host::Replica(i).to_string(), move || {
            let b = boot.get();
            boot.set(b + 1);
            let store = match profile.store.placement {
                Placement::Memory => {
                    let mem = store::shared(table.as_ref());
                    *slot.borrow_mut() = Some(mem.clone());
                    TaskStore::Local(mem)
                }
                Placement::Shared => TaskStore::remote(&profile.store, timing.store_timeout),
            };
            let replica = Rc::new(Replica::new(
                i,
                b,
                crate::replica::Seeds {
                    ids: seed,
                    timing: timing_seed,
                },
                Wiring {
                    profile: profile.clone(),
                    timing: timing.clone(),
                    store,
                    push_world: push_world.clone(),
                    trace: trace.clone(),
                    chaos: chaos.clone(),
                    card: card.clone(),
                    grants: grants.clone(),
                    drain: drain.clone(),
                },
            ));
            let trace = trace.clone();
            Box::pin(async move {
                trace.record(Host::Replica(i), Event::Boot(b));
                replica.serve().await
            })
        });
    }
    {
        let (make, control, trace) = (spec.strategy, control.clone(), trace.clone());
        hosts.add("router", move || {
            Box::pin(router::serve(make, seed, control.clone(), trace.clone()))
        });
    }

    if let Some(authority) = &cards {
        *control.cards.borrow_mut() = Some(authority.clone());
        for host in card_hosts {
            let (authority, trace, name) = (authority.clone(), trace.clone(), host.clone());
            hosts.add(host.to_string(), move || {
                Box::pin(crate::card::front_door::serve(
                    name.clone(),
                    authority.clone(),
                    trace.clone(),
                ))
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
    let faults_pending = Rc::new(Cell::new(0usize));
    let settled_at: Rc<Cell<Option<u64>>> = Rc::default();
    let settle = settle::Settle {
        enabled: spec.settle && cards.is_none(),
        healed_at_ms,
        takeover: spec.profile.recovery.sweep_ms > 0,
        activity: activity.activity(),
        store: store_state.clone(),
        memory: memory_slots.clone(),
        faults_pending: faults_pending.clone(),
        settled_at: settled_at.clone(),
    };
    let client_future = client_future(
        spec,
        &workload,
        &history,
        &trace,
        &link,
        (&cards, &grants),
        settle,
    );
    let mut driver = Driver {
        control: control.clone(),
        memory_slots,
        dead_memory: Vec::new(),
        crashed: BTreeSet::new(),
        partitions: BTreeMap::new(),
        slowed: BTreeSet::new(),
        held: BTreeSet::new(),
        paused: BTreeSet::new(),
        applied: Vec::new(),
        trace: trace.clone(),
        chaos: chaos.clone(),
        next_point_kill_ms: 0,
        // A scripted run has no liveness phase: a point its `kill-at` step armed fires
        // until a step disarms it (with the window, 0 ms, no point kill could ever land).
        heal_at_ms: match &spec.workload {
            Workload::Scripted(_) => u64::MAX,
            _ => healed_at_ms,
        },
        cards: cards.clone(),
        drains,
        draining: BTreeMap::new(),
        owed_restarts: Vec::new(),
        pending: plan.into(),
        commands: link.commands.clone(),
        faults_pending,
    };
    let ended = match spec.engine {
        Engine::Turmoil => engines::run_turmoil(spec, hosts, client_future, &mut driver),
        Engine::Events => engines::run_events(spec, hosts, client_future, &mut driver),
    };
    let engines::Ended {
        sim_ms,
        steps,
        error,
    } = ended;
    drop(activity);

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
    let conversations = link.tasks.borrow().clone();
    let effects = ledger_state.borrow().effects().to_vec();
    let deliveries = webhook_state.borrow().deliveries.clone();
    let push_pending = store_state.borrow().outbox_pending();
    let points_fired = chaos.borrow().fired.clone();
    let point_firings = chaos.borrow().firings.clone();
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
        point_firings,
        poll_slowed_until_ms,
        faults: driver.applied,
        conversations,
        healed_at_ms,
        settled_at_ms: settled_at.get(),
        trace_hash: trace.hash_hex(),
        trace: trace.events(),
        sim_ms,
        steps,
        error,
        cards: cards.map(|a| a.record()).unwrap_or_default(),
        grants: grants.all(),
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
