//! Faults around a turn (generation 3, issue 38): the mission's own faults, drawn so that
//! a live run makes them on real processes with the same step names.
//!
//! Each draw puts one fault around one conversation's next turn, sent to one replica, and
//! undoes it after a window:
//! - a network fault on one of the replica's carried links (to the store, from the router,
//!   to the ledger): a partition both ways, one way out or in, a hold, or a latency spike,
//!   repaired, released or restored `window` ms after the turn was sent;
//! - a pause of the replica (SIGSTOP live), resumed `window` ms after the turn was sent;
//! - a kill at a point of the turn (`effect`, `after-effect`), disarmed once the turn is
//!   answered, and `heal = "all"` after it, so the replica runs again before the next step
//!   in both worlds (a real replica's restart takes seconds, a simulated one's none).
//!
//! The turn and its fault run at once (`concurrent`), so the window is measured from the
//! send in both worlds.

use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;

use crate::faults::{heal, hold, kill_point, latency, partition, pause, Action, KillPoint};
use crate::host::Host;
use crate::scenario::{SendStep, Step};

/// Which link of the replica a network fault cuts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Link {
    /// The replica and the store (a PostgreSQL server over TCP, live).
    Store,
    /// The router and the replica.
    Router,
    /// The replica and the ledger (its business effect).
    Ledger,
}

/// What a network fault does to the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cut {
    /// Nothing passes, either way.
    Partition,
    /// Nothing passes from the replica.
    OneWayOut,
    /// Nothing reaches the replica.
    OneWayIn,
    /// Everything waits until the release.
    Hold,
    /// Every message takes up to this long, ms.
    Latency(u64),
}

/// One fault around a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fault {
    /// A network fault on one link of the turn's replica, undone after `window` ms.
    Net { link: Link, cut: Cut, window: u64 },
    /// The replica frozen, resumed after `window` ms.
    Pause { window: u64 },
    /// The replica killed at a point of the turn.
    KillAt(KillPoint),
}

/// How long a fault lasts after the turn is sent, ms: inside a turn, about a turn, longer
/// than one.
fn window() -> BoxedStrategy<u64> {
    prop_oneof![Just(100u64), Just(300), Just(800)].boxed()
}

/// Draws one fault; a network fault on the replica's store link only if it has one
/// (`store_link`: a live run's replicas reach a database over TCP).
pub(super) fn faults(store_link: bool) -> BoxedStrategy<Fault> {
    let link = if store_link {
        prop_oneof![Just(Link::Store), Just(Link::Router), Just(Link::Ledger)].boxed()
    } else {
        prop_oneof![Just(Link::Router), Just(Link::Ledger)].boxed()
    };
    let cut = prop_oneof![
        2 => Just(Cut::Partition),
        1 => Just(Cut::OneWayOut),
        1 => Just(Cut::OneWayIn),
        2 => Just(Cut::Hold),
        1 => prop_oneof![Just(50u64), Just(200)].prop_map(Cut::Latency),
    ];
    prop_oneof![
        4 => (link, cut, window()).prop_map(|(link, cut, window)| Fault::Net { link, cut, window }),
        1 => window().prop_map(|window| Fault::Pause { window }),
        1 => prop_oneof![Just(KillPoint::Effect), Just(KillPoint::AfterEffect)]
            .prop_map(Fault::KillAt),
    ]
    .boxed()
}

/// The steps of `fault` around `turn`, sent to `replica`.
pub(super) fn steps(fault: Fault, replica: &Host, turn: SendStep) -> Vec<Step> {
    let turn = Step::Send(SendStep {
        to: Some(replica.clone()),
        ..turn
    });
    // One step: the fault, then the turn and, beside it, the undo after the window.
    let at_once = |on: Action, off: Action, window: u64| {
        vec![Step::Sequence(vec![
            Step::Fault(on),
            Step::Concurrent(vec![
                turn.clone(),
                Step::Sequence(vec![Step::WaitMs(window), Step::Fault(off)]),
            ]),
        ])]
    };
    match fault {
        Fault::Net { link, cut, window } => {
            let r = replica.clone();
            // The pair as the link's connecting host first, and the replica's peer.
            let (a, b, peer) = match link {
                Link::Store => (r.clone(), Host::Store, Host::Store),
                Link::Router => (Host::Router, r.clone(), Host::Router),
                Link::Ledger => (r.clone(), Host::Ledger, Host::Ledger),
            };
            let (on, off): (Action, Action) = match cut {
                Cut::Partition => (
                    partition::Partition(a.clone(), b.clone()).into(),
                    partition::Repair(a, b).into(),
                ),
                Cut::OneWayOut => (
                    partition::PartitionOneway(r.clone(), peer).into(),
                    partition::Repair(a, b).into(),
                ),
                Cut::OneWayIn => (
                    partition::PartitionOneway(peer, r.clone()).into(),
                    partition::Repair(a, b).into(),
                ),
                Cut::Hold => (
                    hold::Hold(a.clone(), b.clone()).into(),
                    hold::Release(a, b).into(),
                ),
                Cut::Latency(ms) => (
                    latency::LinkLatency(a.clone(), b.clone(), Some(ms)).into(),
                    latency::LinkLatency(a, b, None).into(),
                ),
            };
            at_once(on, off, window)
        }
        Fault::Pause { window } => at_once(
            pause::Pause(replica.clone()).into(),
            pause::Resume(replica.clone()).into(),
            window,
        ),
        Fault::KillAt(point) => vec![
            Step::Fault(kill_point::KillAt(point, 1.0).into()),
            turn,
            Step::Fault(kill_point::KillAt(point, 0.0).into()),
            Step::Fault(heal::HealAll.into()),
        ],
    }
}
