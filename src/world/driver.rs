//! The driver: applies fault actions to the world (between turmoil's ticks, or when the
//! event engine wakes it), and turns kill points that fired, and drained pods that exit,
//! into kills. It implements [`Target`], so each action kind says itself what it does
//! ([`crate::faults`]); what it does to the hosts and the network goes through
//! [`WorldOps`], which both engines implement.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;
use std::time::Duration;

use crate::buggify::SharedChaos;
use crate::faults::{kill, Action, CardChange, KillPoint, Point, Scheduled, Target};
use crate::host::Host;
use crate::replica::DrainSignal;
use crate::router::RouterControl;
use crate::store::SharedState;
use crate::trace::{Event, Tone, Trace};

use super::LATENCY_MS;

pub(super) struct Driver {
    pub(super) control: RouterControl,
    pub(super) memory_slots: Vec<Rc<RefCell<Option<SharedState>>>>,
    /// Memory stores of pods that died: gone for the system, kept for the checkers.
    pub(super) dead_memory: Vec<SharedState>,
    pub(super) crashed: BTreeSet<Host>,
    /// Partitioned links, `(from, to)`, and whether only that way is cut (both ways, the
    /// link is held as TCP holds it: [`Target::partition`]).
    pub(super) partitions: BTreeMap<(Host, Host), bool>,
    pub(super) slowed: BTreeSet<(Host, Host)>,
    pub(super) held: BTreeSet<(Host, Host)>,
    /// Paused replicas: every link of theirs is held until they resume ([`Target::pause`]).
    pub(super) paused: BTreeSet<Host>,
    pub(super) applied: Vec<(u64, Action)>,
    pub(super) trace: Trace,
    pub(super) chaos: SharedChaos,
    /// No kill-point kill lands before this time (the fault's stability window).
    pub(super) next_point_kill_ms: u64,
    /// When the liveness phase begins: no point kill lands from then on.
    pub(super) heal_at_ms: u64,
    pub(super) cards: Option<crate::card::CardAuthority>,
    /// Each replica slot's graceful-shutdown state, shared with the replica.
    pub(super) drains: Vec<Rc<DrainSignal>>,
    /// Replicas draining (SIGTERM sent, not exited yet), by host.
    pub(super) draining: BTreeMap<Host, Draining>,
    /// Hosts killed while draining with a restart asked for: restarted right after.
    pub(super) owed_restarts: Vec<Host>,
    /// The planned fault actions not applied yet, in time order.
    pub(super) pending: VecDeque<Scheduled>,
    /// Actions a scripted scenario asked for, to apply at once.
    pub(super) commands: Rc<RefCell<VecDeque<Action>>>,
    /// How many actions the driver still has to apply (the client's settle check reads it).
    pub(super) faults_pending: Rc<Cell<usize>>,
}

/// What the driver does to the hosts and the network: turmoil's `Sim`, or the event
/// engine's [`crate::engine::Core`].
pub(super) trait WorldOps {
    fn crash(&mut self, host: &str);
    fn bounce(&mut self, host: &str);
    fn hold(&mut self, a: &str, b: &str);
    fn release(&mut self, a: &str, b: &str);
    fn set_link_max_latency(&mut self, a: &str, b: &str, max: Duration);
    /// Cuts one way of a link. turmoil cannot: there the calls keep the cut themselves
    /// ([`crate::net::oneway`]), and this does nothing.
    fn cut_oneway(&mut self, _from: &str, _to: &str) {}
    /// Repairs one way of a link (nothing on turmoil, as [`WorldOps::cut_oneway`]).
    fn repair_oneway(&mut self, _from: &str, _to: &str) {}
}

impl WorldOps for turmoil::Sim<'_> {
    fn crash(&mut self, host: &str) {
        turmoil::Sim::crash(self, host);
    }
    fn bounce(&mut self, host: &str) {
        turmoil::Sim::bounce(self, host);
    }
    fn hold(&mut self, a: &str, b: &str) {
        turmoil::Sim::hold(self, a, b);
    }
    fn release(&mut self, a: &str, b: &str) {
        turmoil::Sim::release(self, a, b);
    }
    fn set_link_max_latency(&mut self, a: &str, b: &str, max: Duration) {
        self.set_link_max_message_latency(a, b, max);
    }
}

impl WorldOps for Rc<crate::engine::Core> {
    fn crash(&mut self, host: &str) {
        crate::engine::Core::crash(self, host);
    }
    fn bounce(&mut self, host: &str) {
        crate::engine::Core::bounce(self, host);
    }
    fn hold(&mut self, a: &str, b: &str) {
        self.net.hold(a, b);
    }
    fn release(&mut self, a: &str, b: &str) {
        self.net.release(a, b);
    }
    fn set_link_max_latency(&mut self, a: &str, b: &str, max: Duration) {
        self.net.set_link_max_latency(a, b, Some(max));
    }
    fn cut_oneway(&mut self, from: &str, to: &str) {
        self.net.cut_oneway(from, to);
    }
    fn repair_oneway(&mut self, from: &str, to: &str) {
        self.net.repair_oneway(from, to);
    }
}

/// A replica between SIGTERM and its exit.
pub(super) struct Draining {
    /// When it is killed if it has not exited (the end of its grace period).
    deadline_ms: u64,
    /// A restart came while it drained: it restarts as soon as it exits.
    restart: bool,
}

impl Driver {
    /// The kills owed to armed kill points, as scheduled actions: the kill a few ms from
    /// now, the restart after the down time. A host already down, or a point reached inside
    /// the stability window of the last point kill, is spared.
    pub(super) fn point_kills(&mut self, now: u64) -> Vec<Scheduled> {
        let owed = self.chaos.borrow_mut().take_kills();
        let mut out = Vec::new();
        for (host, point, delay) in owed {
            let at_ms = now + delay;
            if self.crashed.contains(&host)
                || self.draining.contains_key(&host)
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
                Host::Driver,
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

    /// The exits of draining replicas due now, as actions to apply at once: a replica with
    /// no connection left exits, one whose grace period is over is killed; each exit is a
    /// kill of the host, followed by its restart when one was asked for meanwhile.
    pub(super) fn drain_exits(&mut self, now: u64) -> Vec<Action> {
        let mut out: Vec<Action> = std::mem::take(&mut self.owed_restarts)
            .into_iter()
            .map(|host| kill::Restart(host).into())
            .collect();
        for (host, d) in &self.draining {
            let Some(signal) = host.replica_index().and_then(|i| self.drains.get(i)) else {
                continue;
            };
            let why = if signal.connections() == 0 {
                "no connection left: it exits"
            } else if now >= d.deadline_ms {
                "its grace period is over: SIGKILL"
            } else {
                continue;
            };
            self.trace.record_at(
                now,
                Host::Driver,
                Event::note(Tone::Bad, format!("{host} drained, {why}")),
            );
            out.push(kill::Kill(host.clone()).into());
            if d.restart {
                out.push(kill::Restart(host.clone()).into());
            }
        }
        out
    }

    /// Everything due at `now`: the kills owed to kill points, the planned actions whose
    /// time came, the scenario's commands, the drained pods' exits. Then counts what is
    /// still to apply.
    pub(super) fn act(&mut self, world: &mut dyn WorldOps, now: u64) {
        // Kill points reached since the last call: each becomes a kill a few ms from now
        // and a restart after the down time.
        for s in self.point_kills(now) {
            let at = self.pending.partition_point(|p| p.at_ms <= s.at_ms);
            self.pending.insert(at, s);
        }
        while self.pending.front().is_some_and(|s| s.at_ms <= now) {
            let s = self.pending.pop_front().expect("checked");
            self.apply(world, now, &s.action);
        }
        loop {
            let next = self.commands.borrow_mut().pop_front();
            match next {
                Some(action) => self.apply(world, now, &action),
                None => break,
            }
        }
        for action in self.drain_exits(now) {
            self.apply(world, now, &action);
        }
        self.faults_pending
            .set(self.pending.len() + self.commands.borrow().len() + self.draining.len());
    }

    /// The next time something is due without being nudged: a planned action, or the end
    /// of a drain's grace period (a drain that ends sooner, by its last connection
    /// closing, nudges the driver itself).
    pub(super) fn next_due_ms(&self) -> Option<u64> {
        let planned = self.pending.front().map(|s| s.at_ms);
        let drained = self.draining.values().map(|d| d.deadline_ms).min();
        planned.into_iter().chain(drained).min()
    }

    pub(super) fn apply(&mut self, sim: &mut dyn WorldOps, now: u64, action: &Action) {
        self.trace
            .record_at(now, Host::Driver, Event::Fault(action.clone()));
        self.applied.push((now, action.clone()));
        action.apply(&mut Applying {
            driver: self,
            sim,
            now,
        });
    }
}

/// The driver applying one action to the turmoil world: what a fault may do to it.
struct Applying<'a> {
    driver: &'a mut Driver,
    sim: &'a mut dyn WorldOps,
    now: u64,
}

impl Applying<'_> {
    fn set_ready(&self, host: &Host, ready: bool) {
        if let Some(i) = host.replica_index() {
            if let Some(r) = self.driver.control.ready.borrow_mut().get_mut(i) {
                *r = ready;
            }
        }
    }
}

impl Applying<'_> {
    /// Every host a replica talks to or hears from: what a pause holds.
    /// Lets what waits on the link between `a` and `b` through, unless something still
    /// holds it: a `hold` step, a partition both ways, or a paused end.
    fn release_unless_held(&mut self, a: &Host, b: &Host) {
        let d = &self.driver;
        let held = d.held.contains(&(a.clone(), b.clone()))
            || d.held.contains(&(b.clone(), a.clone()))
            || d.partitions.get(&(a.clone(), b.clone())) == Some(&false)
            || d.partitions.get(&(b.clone(), a.clone())) == Some(&false)
            || d.paused.contains(a)
            || d.paused.contains(b);
        if !held {
            self.sim.release(&a.to_string(), &b.to_string());
        }
    }

    fn peers_of(&self, host: &Host) -> Vec<Host> {
        let replicas = self.driver.control.ready.borrow().len();
        [
            Host::Client,
            Host::Router,
            Host::Store,
            Host::Ledger,
            Host::Webhook,
        ]
        .into_iter()
        .chain((0..replicas).map(Host::Replica))
        .filter(|h| h != host)
        .collect()
    }
}

impl Target for Applying<'_> {
    fn crash(&mut self, host: &Host) {
        // A kill during a drain ends it; a restart asked for meanwhile still comes.
        if self.driver.draining.remove(host).is_some_and(|d| d.restart) {
            self.driver.owed_restarts.push(host.clone());
        }
        if self.driver.crashed.insert(host.clone()) {
            self.set_ready(host, false);
            if let Some(i) = host.replica_index() {
                if let Some(slot) = self.driver.memory_slots.get(i) {
                    if let Some(dead) = slot.borrow_mut().take() {
                        self.driver.dead_memory.push(dead);
                    }
                }
            }
            self.sim.crash(&host.to_string());
            crate::net::crashed::crashed(&host.to_string());
        }
    }

    fn restart(&mut self, host: &Host) {
        if let Some(d) = self.driver.draining.get_mut(host) {
            d.restart = true;
            return;
        }
        if self.driver.crashed.remove(host) {
            self.sim.bounce(&host.to_string());
            crate::net::crashed::restarted(&host.to_string());
            self.set_ready(host, true);
        }
    }

    fn stall_readers(&mut self, host: &Host) {
        if let Some(signal) = host.replica_index().and_then(|i| self.driver.drains.get(i)) {
            signal.stall_readers(self.now);
        }
    }

    fn drain(&mut self, host: &Host, grace_ms: u64) {
        let Some(signal) = host.replica_index().and_then(|i| self.driver.drains.get(i)) else {
            return;
        };
        if self.driver.crashed.contains(host) || self.driver.draining.contains_key(host) {
            return;
        }
        self.set_ready(host, false);
        signal.begin(self.now);
        self.driver.draining.insert(
            host.clone(),
            Draining {
                deadline_ms: self.now + grace_ms,
                restart: false,
            },
        );
    }

    /// A partition holds what is sent over it until the repair, as TCP's retransmits
    /// deliver what a partition shorter than the kernel's patience caught (`tcp_retries2`,
    /// about 15 minutes): it arrives late, and the applications' own timeouts decide what
    /// that means. turmoil's own partition drops the segments, and its TCP never sends them
    /// again, so a call caught by a short partition was lost where a real one is late (the
    /// live partition of the store, `tests/fidelity/faults/partition-replica-store-*`). Both
    /// ways, turmoil holds the link; one way, turmoil cannot, and the calls keep the cut
    /// themselves ([`crate::net::oneway`]).
    fn partition(&mut self, from: &Host, to: &Host, oneway: bool) {
        if oneway {
            crate::net::oneway::cut(&from.to_string(), &to.to_string());
            self.sim.cut_oneway(&from.to_string(), &to.to_string());
        } else {
            self.sim.hold(&from.to_string(), &to.to_string());
        }
        self.driver
            .partitions
            .insert((from.clone(), to.clone()), oneway);
    }

    fn repair(&mut self, a: &Host, b: &Host) {
        crate::net::oneway::repair(&a.to_string(), &b.to_string());
        self.sim.repair_oneway(&a.to_string(), &b.to_string());
        self.sim.repair_oneway(&b.to_string(), &a.to_string());
        let ab = self.driver.partitions.remove(&(a.clone(), b.clone()));
        let ba = self.driver.partitions.remove(&(b.clone(), a.clone()));
        if ab == Some(false) || ba == Some(false) {
            self.release_unless_held(a, b);
        }
    }

    fn hold(&mut self, a: &Host, b: &Host) {
        self.sim.hold(&a.to_string(), &b.to_string());
        self.driver.held.insert((a.clone(), b.clone()));
    }

    fn release(&mut self, a: &Host, b: &Host) {
        self.driver.held.remove(&(a.clone(), b.clone()));
        self.driver.held.remove(&(b.clone(), a.clone()));
        self.release_unless_held(a, b);
    }

    fn pause(&mut self, host: &Host) {
        if self.driver.crashed.contains(host) || !self.driver.paused.insert(host.clone()) {
            return;
        }
        for peer in self.peers_of(host) {
            self.sim.hold(&host.to_string(), &peer.to_string());
        }
    }

    fn resume(&mut self, host: &Host) {
        if !self.driver.paused.remove(host) {
            return;
        }
        for peer in self.peers_of(host) {
            // A link held by its own `hold` step stays held until its `release`.
            self.release_unless_held(host, &peer);
        }
    }

    fn link_latency(&mut self, a: &Host, b: &Host, max_ms: Option<u64>) {
        let max = Duration::from_millis(max_ms.unwrap_or(LATENCY_MS.1));
        self.sim
            .set_link_max_latency(&a.to_string(), &b.to_string(), max);
        if max_ms.is_some() {
            self.driver.slowed.insert((a.clone(), b.clone()));
        } else {
            self.driver.slowed.remove(&(a.clone(), b.clone()));
        }
    }

    fn heal_all(&mut self) {
        // Every set sorts its hosts by name, as it always has: the order of the repairs
        // and restarts below is part of the run.
        let partitions = std::mem::take(&mut self.driver.partitions);
        for (a, b) in partitions.keys() {
            crate::net::oneway::repair(&a.to_string(), &b.to_string());
            self.sim.repair_oneway(&a.to_string(), &b.to_string());
            self.sim.repair_oneway(&b.to_string(), &a.to_string());
        }
        for ((a, b), _) in partitions.iter().filter(|(_, oneway)| !**oneway) {
            self.sim.release(&a.to_string(), &b.to_string());
        }
        for (a, b) in std::mem::take(&mut self.driver.held) {
            self.sim.release(&a.to_string(), &b.to_string());
        }
        for host in std::mem::take(&mut self.driver.paused) {
            for peer in self.peers_of(&host) {
                self.sim.release(&host.to_string(), &peer.to_string());
            }
        }
        self.driver.chaos.borrow_mut().clear();
        for (a, b) in std::mem::take(&mut self.driver.slowed) {
            self.sim.set_link_max_latency(
                &a.to_string(),
                &b.to_string(),
                Duration::from_millis(LATENCY_MS.1),
            );
        }
        for host in std::mem::take(&mut self.driver.crashed) {
            self.sim.bounce(&host.to_string());
            crate::net::crashed::restarted(&host.to_string());
            self.set_ready(&host, true);
        }
        // A pod still draining restarts once it exits.
        for d in self.driver.draining.values_mut() {
            d.restart = true;
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
        if probability > 0.0 {
            // Armed anew: the stability window of an earlier point kill spares nobody
            // (a scenario's `kill-at` with probability 1 gets its kill, in both worlds:
            // `live::kill_points::Points::arm`).
            self.driver.next_point_kill_ms = 0;
        }
    }

    fn card(&mut self, change: &CardChange) {
        if let Some(authority) = &self.driver.cards {
            authority.apply(change, self.now);
        }
    }
}
