//! What a run needs ([`RunSpec`]) and what it leaves behind ([`RunRecord`]).

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use a2a::Task;

use crate::client::history::Op;
use crate::faults::{Action, FaultSpec};
use crate::ground::ledger::Effect;
use crate::ground::push::{Egress, PushReport};
use crate::ground::webhook::{Delivery, WebhookMode};
use crate::model::Profile;
use crate::replica::Timing;
use crate::store::{SaveRecord, TableFactory};
use crate::trace::TraceEvent;
use crate::workload::WorkloadSpec;

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
    /// The routing strategy's name, as records and reports print it.
    pub routing: String,
    /// Its constructor: a built-in one ([`crate::router::STRATEGIES`]) or the user's
    /// ([`crate::sim::Builder::routing_strategy`]).
    pub strategy: crate::router::MakeStrategy,
    pub replicas: usize,
    pub workload: Workload,
    pub faults: FaultSpec,
    pub timing: Timing,
    pub webhook: WebhookMode,
    /// Keep every trace event (for replay), not only the hash.
    pub keep_trace: bool,
    /// Simulated time after which an unfinished run is reported as not terminating.
    pub budget: Duration,
    /// Simulated time one step advances (`tick-ms`; [`crate::world::TICK`] by default), on
    /// turmoil; the event engine has no tick.
    pub tick: Duration,
    /// Which engine runs the world.
    pub engine: crate::engine::Engine,
    /// End a generated run's liveness phase once the world has settled (the default; see
    /// `world::settle`), or step out the whole bound.
    pub settle: bool,
    /// Which draw of its faults' timing the run takes (0: the seed's own; see
    /// [`crate::sim::Builder::fault_draw`]).
    pub fault_draw: u64,
    /// Which draw of its timing the run takes (0: the seed's own; see
    /// [`crate::sim::Builder::timing_draw`]).
    pub timing_draw: u64,
    /// The task table of every store in the run (the shared one, each pod's memory);
    /// `None`: the built-in [`crate::store::VersionedTable`].
    pub table: Option<TableFactory>,
}

impl RunSpec {
    /// The seed of this run's timing: the engine's scheduler and network, the replicas'
    /// drawn durations ([`crate::seed::timing_seed`] of the seed and the timing draw).
    pub fn timing_seed(&self) -> u64 {
        crate::seed::timing_seed(self.seed, self.timing_draw)
    }
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
    /// Every firing of those points in order, with its simulated ms (the timeline marks them).
    pub point_firings: Vec<(u64, String)>,
    /// When the last event poll slowed by a BUGGIFY point ended (0: none was).
    pub poll_slowed_until_ms: u64,
    /// Fault actions applied, with their time.
    pub faults: Vec<(u64, Action)>,
    /// Conversation → task id, as the client learned it.
    pub conversations: BTreeMap<String, String>,
    /// When the liveness phase began (everything healed), simulated ms.
    pub healed_at_ms: u64,
    /// When the world was found settled, so the run ended before its liveness bound
    /// (`None`: it stepped the bound out, or it is a script).
    pub settled_at_ms: Option<u64>,
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
