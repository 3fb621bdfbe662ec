//! Faults: what the driver does to the cluster, when, drawn from the seed.
//!
//! Two registries, one in each direction:
//!
//! - [`Action`]s are what the driver applies at a simulated time: kill a host, partition a
//!   link, hold messages, arm a fault point, change the agent card. Each kind of action is a
//!   type in this folder that implements [`ActionKind`]: its scenario step (`kill =
//!   "replica-1"`), how it acts on a world (through [`Target`], which the simulated driver
//!   implements; the live driver, `live::apply_fault`, matches on the few actions a live
//!   run can make), the hosts it names, what it shades on a timeline and whether a live run
//!   can do it. The `actions!` invocation below is their registry.
//! - [`FaultKind`]s are what an experiment's `[faults]` table names (`kill = 0.5`): each
//!   plans [`Scheduled`] actions inside the fault window from its rate and the run's
//!   generator. [`FAULTS`] is their registry.
//!
//! With swarm testing on (the default), each seed first draws its own fault mix: every fault
//! is kept with probability 3/4 and its rate scaled by a factor in [0.25, 1.75], so some
//! seeds run with no kills and many partitions, others the reverse (TigerBeetle's VOPR does
//! the same). The resolved mix is printed with the seed.
//!
//! Each fault has a probability or rate and a stability window (how long what it breaks
//! stays broken); its file says both. After the window the driver heals everything, turns
//! every rate and fault point off, and restarts what is down (the liveness phase,
//! [`heal_all`]).
//!
//! Adding a fault kind that plans existing actions is one file in this folder plus one line
//! in [`FAULTS`]; adding an action is one file plus one line in the `actions!` registry.

pub mod buggify;
pub mod card;
pub mod drain;
pub mod heal;
pub mod hold;
pub mod kill;
pub mod kill_point;
mod kill_router;
mod kill_store;
pub mod latency;
mod link_partition;
pub mod lost_reply;
pub mod partition;
pub mod pause;
mod rolling_restart;
pub mod stall;
pub mod step;

use std::collections::BTreeMap;
use std::fmt;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::InputError;
use crate::host::Host;

pub use self::buggify::Point;
pub use self::card::CardChange;
pub use self::kill_point::{
    KillPoint, DOWN_MS as KILL_POINT_DOWN_MS, STABILITY_MS as KILL_POINT_STABILITY_MS,
};

/// What a fault action may do to a world: the simulated driver (turmoil) implements it.
/// The live driver (real processes on loopback, `live::apply_fault`) does not: it matches
/// on the actions that [`ActionKind::live`] allows. Each method is one primitive; an action
/// is a call of one or more of them.
pub trait Target {
    /// Crash a host: its software stops and its memory is gone.
    fn crash(&mut self, host: &Host);
    /// Start a crashed host again, from scratch (a host still draining: once it exits).
    fn restart(&mut self, host: &Host);
    /// SIGTERM a replica: it drains, exits, and is killed `grace_ms` later if it has not.
    fn drain(&mut self, host: &Host, grace_ms: u64);
    /// Drop traffic between two hosts: both ways, or from `from` to `to` only.
    fn partition(&mut self, from: &Host, to: &Host, oneway: bool);
    /// Restore traffic between two hosts, both ways.
    fn repair(&mut self, a: &Host, b: &Host);
    /// Hold every message between two hosts until released.
    fn hold(&mut self, a: &Host, b: &Host);
    /// Deliver what was held between two hosts, and stop holding.
    fn release(&mut self, a: &Host, b: &Host);
    /// Set a link's maximum latency (`None`: back to normal).
    fn link_latency(&mut self, a: &Host, b: &Host, max_ms: Option<u64>);
    /// Freeze a replica, its memory kept ([`pause`]).
    fn pause(&mut self, host: &Host);
    /// Let a paused replica go on.
    fn resume(&mut self, host: &Host);
    /// Undo every fault: links back, holds released, points off, crashed hosts restarted.
    fn heal_all(&mut self);
    /// Set the probability that the router loses a reply.
    fn lost_reply_rate(&mut self, probability: f64);
    /// Lose the next reply the router forwards.
    fn drop_next_reply(&mut self);
    /// Set how often a BUGGIFY point fires (0 turns it off).
    fn buggify(&mut self, point: Point, probability: f64);
    /// Arm a kill point (0 disarms it).
    fn kill_at(&mut self, point: KillPoint, probability: f64);
    /// Change the agent card the router serves.
    fn card(&mut self, change: &CardChange);
    /// The readers of a replica's open subscriptions stop reading (simulated only:
    /// `stall-readers` is refused live).
    fn stall_readers(&mut self, _host: &Host) {}
}

/// What an action does to the fault periods a timeline shades on a host's lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeriodChange {
    /// A period of `kind` (`down`, `partition`, `latency`, `lost-reply`) begins on `lane`;
    /// `link` tells periods of one kind on one lane apart (`replica-0|store`).
    Open {
        lane: Host,
        kind: &'static str,
        link: String,
    },
    /// The period of `kind` on `lane` for `link` ends.
    Close {
        lane: Host,
        kind: &'static str,
        link: String,
    },
    /// Every open period ends.
    CloseAll,
}

/// One kind of fault action. See the module documentation.
pub trait ActionKind: Clone + PartialEq + fmt::Debug + fmt::Display + Sized {
    /// The scenario step key that writes it (`kill`); `None` when no step writes it.
    const STEP: Option<&'static str>;
    /// Reads the step's value (`"replica-1"`, `["replica-0", "store"]`, `{ point = ... }`).
    fn from_step(value: &toml::Value) -> Result<Self, ActionError>;
    /// The step's value (the inverse of [`ActionKind::from_step`]).
    fn to_step(&self) -> toml::Value;
    /// Makes it happen.
    fn apply(&self, target: &mut dyn Target);
    /// The hosts it names.
    fn hosts(&self) -> Vec<&Host> {
        Vec::new()
    }
    /// A copy with every host it names renamed.
    fn renamed(&self, _rename: &dyn Fn(&Host) -> Host) -> Self {
        self.clone()
    }
    /// What it does to a timeline's fault periods.
    fn periods(&self) -> Vec<PeriodChange> {
        Vec::new()
    }
    /// Checks its values beyond the hosts it names (probabilities, bounds).
    fn validate(&self) -> Result<(), ActionError> {
        Ok(())
    }
    /// The link it acts on, when it is a network fault (its two hosts, in step order).
    fn link(&self) -> Option<(&Host, &Host)> {
        None
    }
    /// Whether a live run (real processes on loopback) can make it: a network fault on a
    /// link a live run carries ([`live_link`]); otherwise why not.
    fn live(&self) -> Result<(), ActionError> {
        match self.link() {
            Some((a, b)) => live_link(&self.to_string(), a, b),
            None => Err(ActionError::NotLive(format!(
                "`{self}` is unsupported in live mode: see the table of faults in docs/FAULTS.md for what a live run can make"
            ))),
        }
    }
}

/// Whether a live run carries the link between `a` and `b` through a proxy of its own
/// (`live::network`), so that `partition`, `partition-oneway`, `repair`, `hold`, `release`
/// and `latency` can act on it: client↔router, router↔replica, replica↔store (a PostgreSQL
/// server over TCP), replica↔ledger and replica↔webhook (each replica sends its pushes
/// through its own link, whatever URL its client set).
pub fn live_link(what: &str, a: &Host, b: &Host) -> Result<(), ActionError> {
    let carried = |x: &Host, y: &Host| {
        (*x == Host::Client && *y == Host::Router)
            || (y.is_replica()
                && matches!(x, Host::Router | Host::Store | Host::Ledger | Host::Webhook))
    };
    if carried(a, b) || carried(b, a) {
        Ok(())
    } else {
        Err(ActionError::NotLive(format!(
            "`{what}` is unsupported in live mode: a live run carries only the links client-router, router-replica, replica-store, replica-ledger and replica-webhook through its own proxies"
        )))
    }
}

/// Why a step's value is no action, or why an action cannot be made. Each prints the
/// sentence a user reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActionError {
    /// The value has the wrong shape for its step (`expected a host name, found 5`).
    #[error("{0}")]
    Malformed(String),
    /// A value out of range, or a host the action cannot act on.
    #[error("{0}")]
    Invalid(String),
    /// A live run (real processes on loopback) cannot make it.
    #[error("{0}")]
    NotLive(String),
}

/// Declares the registry of action kinds: one line per kind, `Variant(module::Type)`.
macro_rules! actions {
    ($( $(#[$doc:meta])* $variant:ident($ty:ty), )*) => {
        /// One thing the driver does to the cluster (see the module documentation).
        #[derive(Debug, Clone, PartialEq)]
        pub enum Action {
            $( $(#[$doc])* $variant($ty), )*
        }

        impl Action {
            /// The step keys of every action a step can write, in registry order.
            pub fn step_keys() -> Vec<&'static str> {
                [$( <$ty as ActionKind>::STEP, )*].into_iter().flatten().collect()
            }

            /// The action a scenario step `key = value` writes; `None` when `key` is not an
            /// action's step.
            pub fn from_step(key: &str, value: &toml::Value) -> Option<Result<Action, ActionError>> {
                $(
                    if <$ty as ActionKind>::STEP == Some(key) {
                        return Some(<$ty as ActionKind>::from_step(value).map(Action::$variant));
                    }
                )*
                None
            }

            /// The scenario step that writes this action, as key and value.
            pub fn to_step(&self) -> Option<(&'static str, toml::Value)> {
                match self {
                    $( Action::$variant(a) => <$ty as ActionKind>::STEP.map(|k| (k, a.to_step())), )*
                }
            }

            /// Makes it happen.
            pub fn apply(&self, target: &mut dyn Target) {
                match self { $( Action::$variant(a) => a.apply(target), )* }
            }

            /// The hosts it names.
            pub fn hosts(&self) -> Vec<&Host> {
                match self { $( Action::$variant(a) => a.hosts(), )* }
            }

            /// A copy with every host renamed.
            pub fn renamed(&self, rename: &dyn Fn(&Host) -> Host) -> Action {
                match self { $( Action::$variant(a) => Action::$variant(a.renamed(rename)), )* }
            }

            /// What it does to a timeline's fault periods.
            pub fn periods(&self) -> Vec<PeriodChange> {
                match self { $( Action::$variant(a) => a.periods(), )* }
            }

            /// Checks its values beyond the hosts it names.
            pub fn validate(&self) -> Result<(), ActionError> {
                match self { $( Action::$variant(a) => a.validate(), )* }
            }

            /// Whether a live run can make it.
            pub fn live(&self) -> Result<(), ActionError> {
                match self { $( Action::$variant(a) => a.live(), )* }
            }

            /// The link it acts on, when it is a network fault.
            pub fn link(&self) -> Option<(&Host, &Host)> {
                match self { $( Action::$variant(a) => a.link(), )* }
            }
        }

        impl fmt::Display for Action {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self { $( Action::$variant(a) => fmt::Display::fmt(a, f), )* }
            }
        }

        $(
            impl From<$ty> for Action {
                fn from(a: $ty) -> Action {
                    Action::$variant(a)
                }
            }
        )*
    };
}

actions! {
    /// Crash a host (`replica-1`, `store`, `router`, ...).
    Kill(kill::Kill),
    /// Restart a crashed host (its software starts again from scratch).
    Restart(kill::Restart),
    /// Shut a replica down gracefully (SIGTERM), then kill it at its grace period.
    Drain(drain::Drain),
    /// Drop all traffic between two hosts, both ways.
    Partition(partition::Partition),
    /// Drop traffic from the first host to the second only.
    PartitionOneway(partition::PartitionOneway),
    /// Restore traffic between two hosts.
    Repair(partition::Repair),
    /// Restore every link and restart every crashed host.
    HealAll(heal::HealAll),
    /// Set the probability that the router loses a reply.
    LostReplyRate(lost_reply::LostReplyRate),
    /// Lose the next reply the router forwards.
    DropNextReply(lost_reply::DropNextReply),
    /// Set the maximum latency between two hosts (`None` restores the default).
    LinkLatency(latency::LinkLatency),
    /// Hold every message between two hosts until released.
    Hold(hold::Hold),
    /// Deliver the messages held between two hosts, and stop holding.
    Release(hold::Release),
    /// Set how often a BUGGIFY point fires (0 turns it off).
    Buggify(buggify::Buggify),
    /// Arm a kill point with a probability (0 disarms it).
    KillAt(kill_point::KillAt),
    /// Change the agent card the router serves (runs that simulate the card).
    Card(card::Card),
    /// The readers of a replica's open subscriptions stop reading.
    StallReaders(stall::StallReaders),
    /// Freeze a replica (SIGSTOP live), its memory kept.
    Pause(pause::Pause),
    /// Let a paused replica go on (SIGCONT live).
    Resume(pause::Resume),
}

/// An action at a simulated time.
#[derive(Debug, Clone, PartialEq)]
pub struct Scheduled {
    pub at_ms: u64,
    pub action: Action,
}

/// What a fault may know when it plans.
pub struct PlanInput {
    pub replicas: usize,
    pub window_ms: u64,
}

/// What a fault's number in `[faults]` means, and so which values it may take
/// ([`FaultSpec::validate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rate {
    /// A probability: in [0, 1].
    Probability,
    /// Arrivals per simulated second over the fault window ([`arrivals`]): at most as many
    /// as the planner can place ([`ARRIVALS_MAX`]).
    PerSecond,
}

/// Most arrivals [`arrivals`] plans for one fault in one run.
pub const ARRIVALS_MAX: usize = 1000;

/// How much a swarm draw may scale a rate up ([`FaultSpec::resolve`]).
pub const SWARM_SCALE_MAX: f64 = 1.75;

/// Most arrivals per simulated second, whatever the window: one a millisecond.
pub const PER_SECOND_MAX: f64 = 1000.0;

impl Rate {
    /// The largest value that still means what it says: 1 for a probability; for a rate,
    /// one whose expected arrivals in the window (scaled by the swarm's largest draw) are
    /// half of [`ARRIVALS_MAX`], so the cap never cuts a run's arrivals short (a rate past it
    /// would plan a thousand faults all near t = 0, which is close to none at all), and at
    /// most [`PER_SECOND_MAX`].
    pub fn max(self, window_ms: u64, swarm: bool) -> f64 {
        match self {
            Rate::Probability => 1.0,
            Rate::PerSecond => {
                let scale = if swarm { SWARM_SCALE_MAX } else { 1.0 };
                let seconds = window_ms as f64 / 1000.0 * scale;
                if seconds <= 0.0 {
                    PER_SECOND_MAX
                } else {
                    (ARRIVALS_MAX as f64 / 2.0 / seconds).min(PER_SECOND_MAX)
                }
            }
        }
    }
}

/// A kind of fault an experiment's `[faults]` table names.
pub trait FaultKind {
    /// What the rate means, for `a2a-chaos list`.
    fn describe(&self) -> &'static str;
    /// Whether the number is a probability or a rate per second (most faults: a rate).
    fn rate(&self) -> Rate {
        Rate::PerSecond
    }
    /// Plans this fault's actions for one run.
    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled>;
    /// Whether it changes the agent card, so that a run naming it simulates the card
    /// (the card faults, `card.rs`).
    fn changes_card(&self) -> bool {
        false
    }
}

/// The faults, by the name used in experiment files.
#[rustfmt::skip]
pub const FAULTS: &[(&str, &dyn FaultKind)] = &[
    ("kill", &kill::KillReplicas),
    ("drain", &drain::DrainReplicas),
    ("partition", &partition::ReplicaStorePartition),
    ("lost-reply", &lost_reply::LostReply),
    ("latency", &latency::Latency),
    ("kill-store", &kill_store::KillStore),
    ("kill-router", &kill_router::KillRouter),
    ("link-partition", &link_partition::LinkPartition),
    ("hold", &hold::HoldLinks),
    ("kill-at-point", &kill_point::KillAtPoint),
    ("buggify", &buggify::BuggifyPoints),
    ("card-move", &card::CardMove),
    ("card-no-streaming", &card::CardNoStreaming),
    ("card-key-revoked", &card::CardKeyRevoked),
    ("card-tampered", &card::CardTampered),
    ("card-foreign-origin", &card::CardForeignOrigin),
    ("rolling-restart", &rolling_restart::RollingRestart),
    ("stall-readers", &stall::StallReadersFault),
];

/// Whether any of these fault names is a fault that changes the agent card
/// ([`FaultKind::changes_card`]; the run then simulates the card).
pub fn any_card_fault<'a>(names: impl IntoIterator<Item = &'a String>) -> bool {
    names
        .into_iter()
        .any(|n| fault(n).is_some_and(|f| f.changes_card()))
}

/// The fault kind of a name.
pub fn fault(name: &str) -> Option<&'static dyn FaultKind> {
    FAULTS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// Names of the faults.
pub fn names() -> Vec<&'static str> {
    FAULTS.iter().map(|(n, _)| *n).collect()
}

/// Longest fault window or liveness phase, in simulated ms (one hour).
pub const PHASE_MS_MAX: u64 = 3_600_000;

/// The `[faults]` table of an experiment.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub struct FaultSpec {
    /// `none = true`: no faults, said explicitly (a `[faults]` table that names no rate is
    /// refused otherwise). The windows keep their values; every rate must be 0 or absent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub none: bool,
    /// Each seed draws its own mix of the faults below.
    #[serde(default = "yes")]
    pub swarm: bool,
    /// Faults are injected from 0 to this many simulated ms.
    #[serde(default = "default_window")]
    pub window_ms: u64,
    /// After the window everything is healed; every task that is not waiting for input must
    /// settle within this many simulated ms.
    #[serde(default = "default_liveness")]
    pub liveness_ms: u64,
    /// Rates by fault name (see [`FAULTS`]).
    #[serde(flatten)]
    pub rates: BTreeMap<String, f64>,
}

fn yes() -> bool {
    true
}
fn default_window() -> u64 {
    3000
}
fn default_liveness() -> u64 {
    4000
}

impl Default for FaultSpec {
    fn default() -> Self {
        FaultSpec {
            none: false,
            swarm: true,
            window_ms: default_window(),
            liveness_ms: default_liveness(),
            rates: BTreeMap::new(),
        }
    }
}

impl FaultSpec {
    /// No faults at all, and no fault window or liveness phase (a scripted run).
    pub fn none() -> FaultSpec {
        FaultSpec {
            none: true,
            swarm: false,
            window_ms: 0,
            liveness_ms: 0,
            rates: BTreeMap::new(),
        }
    }

    /// Refuses unknown fault names, rates that are not finite and non-negative, a rate
    /// beside `none = true`, and windows longer than [`PHASE_MS_MAX`].
    pub fn validate(&self, origin: &str) -> Result<(), InputError> {
        for (key, ms) in [
            ("window-ms", self.window_ms),
            ("liveness-ms", self.liveness_ms),
        ] {
            if ms > PHASE_MS_MAX {
                return Err(InputError::new(
                    origin,
                    format!(
                        "[faults] {key} = {ms} must be at most {PHASE_MS_MAX} (one simulated hour)"
                    ),
                ));
            }
        }
        for (name, rate) in &self.rates {
            if !FAULTS.iter().any(|(n, _)| n == name) {
                return Err(InputError::new(
                    origin,
                    format!(
                        "[faults] has unknown key `{name}`; faults: {}",
                        names().join(", ")
                    ),
                ));
            }
            if !rate.is_finite() || *rate < 0.0 {
                return Err(InputError::new(
                    origin,
                    format!("[faults] {name} = {rate} must be a number >= 0"),
                ));
            }
            let kind = fault(name).expect("checked above");
            let max = kind.rate().max(self.window_ms, self.swarm);
            if *rate > max {
                let why = match kind.rate() {
                    Rate::Probability => "a probability".to_string(),
                    Rate::PerSecond => format!(
                        "{}; the planner places at most {ARRIVALS_MAX} per run, so with window-ms = {} and swarm {}{} the rate may be at most {max:.3} per simulated second",
                        kind.describe(),
                        self.window_ms,
                        if self.swarm { "on" } else { "off" },
                        if self.swarm {
                            format!(" (rates drawn up to {SWARM_SCALE_MAX}x)")
                        } else {
                            String::new()
                        }
                    ),
                };
                return Err(InputError::new(
                    origin,
                    format!(
                        "[faults] {name} = {} is out of range: it is {why}; the range is [0, {}]",
                        if *rate >= 1e6 {
                            format!("{rate:e}")
                        } else {
                            rate.to_string()
                        },
                        if kind.rate() == Rate::Probability {
                            "1".to_string()
                        } else {
                            format!("{max:.3}")
                        }
                    ),
                ));
            }
            if self.none && *rate != 0.0 {
                return Err(InputError::new(
                    origin,
                    format!("[faults] says `none = true` but {name} = {rate}: drop one of them"),
                ));
            }
        }
        Ok(())
    }

    /// Whether fault `name` has a rate above 0 (before any swarm draw).
    pub fn draws(&self, name: &str) -> bool {
        self.rates.get(name).is_some_and(|r| *r > 0.0)
    }

    /// The rates this seed runs with: swarm-drawn, or as written. Each fault draws from a
    /// stream of its own (`faults/swarm/<name>`), so adding a fault to a file leaves the
    /// others' draws alone.
    pub fn resolve(&self, seed: u64) -> BTreeMap<String, f64> {
        self.rates
            .iter()
            .map(|(name, rate)| {
                let rate = if self.swarm {
                    let mut rng = stream(seed, &format!("faults/swarm/{name}"));
                    let keep = rng.random_bool(0.75);
                    let scale: f64 = rng.random_range(0.25..=1.75);
                    if keep {
                        rate * scale
                    } else {
                        0.0
                    }
                } else {
                    *rate
                };
                (name.clone(), rate)
            })
            .collect()
    }

    /// Plans every fault for one run, in time order. Each fault plans from a stream of its
    /// own (`faults/<name>`).
    pub fn plan(
        &self,
        rates: &BTreeMap<String, f64>,
        input: &PlanInput,
        seed: u64,
    ) -> Vec<Scheduled> {
        let mut out = Vec::new();
        for (name, fault) in FAULTS {
            if let Some(rate) = rates.get(*name).filter(|r| **r > 0.0) {
                let mut rng = stream(seed, &format!("faults/{name}"));
                out.extend(fault.plan(*rate, input, &mut rng));
            }
        }
        out.push(heal_all(self.window_ms));
        out.sort_by_key(|s| s.at_ms);
        out
    }
}

/// The generator of one named consumer of a run's randomness.
fn stream(seed: u64, name: &str) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(crate::seed::derive_seed(seed, name, 0))
}

/// The start of the liveness phase.
pub fn heal_all(at_ms: u64) -> Scheduled {
    Scheduled {
        at_ms,
        action: heal::HealAll.into(),
    }
}

/// Every host of a run with `replicas` replicas, in a fixed order ([`Host::all`]).
pub fn hosts(replicas: usize) -> Vec<Host> {
    Host::all(replicas)
}

/// Two distinct hosts drawn uniformly from `hosts` (at least two of them).
pub fn pick_pair(hosts: &[Host], rng: &mut ChaCha8Rng) -> (Host, Host) {
    let a = rng.random_range(0..hosts.len());
    let mut b = rng.random_range(0..hosts.len() - 1);
    if b >= a {
        b += 1;
    }
    (hosts[a].clone(), hosts[b].clone())
}

/// Kills of one host at `rate` per second, each followed by a restart after a down time
/// drawn from `down_ms` (inclusive).
pub fn kill_and_restart(
    host: &Host,
    rate: f64,
    input: &PlanInput,
    rng: &mut ChaCha8Rng,
    down_ms: (u64, u64),
) -> Vec<Scheduled> {
    let mut out = Vec::new();
    for at_ms in arrivals(rate, input.window_ms, rng) {
        let down = rng.random_range(down_ms.0..=down_ms.1);
        out.push(Scheduled {
            at_ms,
            action: kill::Kill(host.clone()).into(),
        });
        out.push(Scheduled {
            at_ms: at_ms + down,
            action: kill::Restart(host.clone()).into(),
        });
    }
    out
}

/// Start times of a Poisson process with `rate_per_s` events per second inside the window.
pub fn arrivals(rate_per_s: f64, window_ms: u64, rng: &mut ChaCha8Rng) -> Vec<u64> {
    let mut out = Vec::new();
    if rate_per_s <= 0.0 {
        return out;
    }
    let mut t = 0.0f64;
    loop {
        let u: f64 = rng.random_range(f64::EPSILON..1.0);
        t += -u.ln() / rate_per_s * 1000.0;
        if t >= window_ms as f64 || out.len() >= ARRIVALS_MAX {
            return out;
        }
        out.push(t as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_kind() -> Vec<Action> {
        let h = Host::parse;
        vec![
            kill::Kill(h("replica-1")).into(),
            kill::Restart(h("replica-1")).into(),
            drain::Drain {
                host: h("replica-0"),
                grace_ms: 2500,
            }
            .into(),
            drain::Drain {
                host: h("replica-1"),
                grace_ms: drain::GRACE_MS_DEFAULT,
            }
            .into(),
            partition::Partition(h("replica-0"), h("store")).into(),
            partition::PartitionOneway(h("replica-0"), h("store")).into(),
            partition::Repair(h("replica-0"), h("store")).into(),
            heal::HealAll.into(),
            lost_reply::LostReplyRate(0.125).into(),
            lost_reply::DropNextReply.into(),
            latency::LinkLatency(h("replica-2"), h("store"), Some(120)).into(),
            latency::LinkLatency(h("replica-2"), h("store"), None).into(),
            hold::Hold(h("client"), h("router")).into(),
            hold::Release(h("client"), h("router")).into(),
            buggify::Buggify(Point::ConflictOnSave, 0.25).into(),
            kill_point::KillAt(KillPoint::AfterEffect, 0.5).into(),
            card::Card(CardChange::MoveTo(h("agent-v2.example"))).into(),
            card::Card(CardChange::RevokeKey).into(),
        ]
    }

    #[test]
    fn every_action_with_a_step_reads_back_from_it() {
        for a in every_kind() {
            match a.to_step() {
                Some((key, value)) => {
                    let back = Action::from_step(key, &value)
                        .unwrap_or_else(|| panic!("`{key}` is not a step key"));
                    assert_eq!(back, Ok(a.clone()), "{a}: {key} = {value}");
                }
                None => assert!(matches!(a, Action::LostReplyRate(_)), "{a} has no step"),
            }
        }
        assert!(Action::from_step("juggle", &toml::Value::from("replica-0")).is_none());
    }

    #[test]
    fn every_action_prints_the_words_the_trace_has_always_had() {
        let words: Vec<String> = every_kind().iter().map(Action::to_string).collect();
        assert_eq!(
            words,
            [
                "kill replica-1",
                "restart replica-1",
                "drain replica-0 (grace 2500 ms)",
                "drain replica-1 (grace 30000 ms)",
                "partition replica-0 <-> store",
                "partition replica-0 -> store",
                "repair replica-0 <-> store",
                "heal all",
                "lost-reply rate 0.125",
                "drop next reply",
                "latency replica-2 <-> store up to 120 ms",
                "latency replica-2 <-> store back to normal",
                "hold client <-> router",
                "release client <-> router",
                "buggify conflict-on-save 0.250",
                "kill-at after-effect 0.500",
                "card move-to agent-v2.example",
                "card revoke-key",
            ]
        );
    }

    #[test]
    fn the_card_faults_are_the_ones_that_change_the_card() {
        for (name, kind) in FAULTS {
            assert_eq!(kind.changes_card(), name.starts_with("card-"), "{name}");
        }
        assert!(any_card_fault(&[
            "kill".to_string(),
            "card-move".to_string()
        ]));
        assert!(!any_card_fault(&[
            "kill".to_string(),
            "card-unknown".to_string()
        ]));
    }

    #[test]
    fn renaming_reaches_every_host_an_action_names() {
        for a in every_kind() {
            let renamed = a.renamed(&|h| Host::parse(&format!("{h}-x")));
            let want: Vec<Host> = a
                .hosts()
                .iter()
                .map(|h| Host::parse(&format!("{h}-x")))
                .collect();
            assert_eq!(renamed.hosts(), want.iter().collect::<Vec<_>>(), "{a}");
        }
    }
}
