//! A replica's state, grouped by concern: what it is connected to ([`Links`]), the ids and
//! draws it makes ([`Ids`]), what it keeps per task ([`TaskMemory`], with one [`ActiveTask`]
//! per task it works on), its push configs ([`PushState`]) and the run's fault hooks
//! ([`FaultHooks`]); [`Replica::new`] builds them from a [`Wiring`], and the per-task
//! lock ([`TaskLock`]) lives here too.
//!
//! Every other file of `replica/` is one more `impl Replica` that reads these groups; the
//! decisions those handlers make are pure functions in [`super::decide`].

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use a2a::Task;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{push, tap, DrainSignal, Refusal, Timing, Wiring};
use crate::buggify::SharedChaos;
use crate::ground::push::SharedPush;
use crate::host::Host;
use crate::model::Profile;
use crate::store::{SharedState, TaskStore};
use crate::trace::Trace;

/// One replica process.
pub struct Replica {
    /// Its host (`replica-N`): what it records as, in the trace, at its fault points and in
    /// the store.
    pub host: Host,
    /// Its behaviour model.
    pub(super) profile: Rc<Profile>,
    /// The simulated-time settings of the run.
    pub(super) timing: Timing,
    pub(super) links: Links,
    pub(super) ids: Ids,
    pub(super) tasks: TaskMemory,
    pub(super) pushes: PushState,
    pub(super) faults: FaultHooks,
    /// Most parts a message may carry (`a2a-chaos serve --max-parts`); `None`, as in every
    /// simulation, checks nothing.
    pub(super) parts_max: Cell<Option<usize>>,
}

/// What a replica is connected to: its task store, the run's trace, the card's publisher
/// and the identity provider (the ledger and push targets it reaches over the network).
pub(super) struct Links {
    /// Its task store (its own memory, or the `store` host).
    pub store: TaskStore,
    pub trace: Trace,
    /// The agent card's publisher, in runs that simulate the card.
    pub card: Option<crate::card::CardAuthority>,
    /// The identity provider's out-of-band grants (`auth.auth_required_resume = "grant"`).
    pub grants: crate::auth::Grants,
}

/// The ids a replica makes and its seeded generator: every id and draw is a function of the
/// run's seed, the replica's index and its boot.
pub(super) struct Ids {
    /// What makes this boot's ids its own (seed, index, boot).
    pub prefix: String,
    /// The number of the next id ([`Replica::new_id`]).
    pub next: Cell<u64>,
    /// Replies made here as status messages so far ([`Replica::reply_id`]).
    pub replies: Cell<u64>,
    /// The generator of its think and compose times.
    pub rng: RefCell<ChaCha8Rng>,
}

/// What a replica keeps per task.
pub(super) struct TaskMemory {
    /// The ActiveTask of each task it works on.
    pub active: RefCell<BTreeMap<String, Rc<ActiveTask>>>,
    /// Versions of tasks this replica saved itself (the local registry a subscriber on this
    /// replica can follow when the model has no shared event stream).
    pub events: RefCell<BTreeMap<String, Vec<(u64, Task)>>>,
    /// The turns each run of this process performed, by task and run: what a run's one text
    /// artifact holds ([`crate::model::Artifacts::RunText`]).
    pub run_text: RefCell<BTreeMap<(String, u32), Vec<u32>>>,
    /// Per-pod dedup table (profiles with `dedup.scope = "per-pod"`).
    pub dedup: SharedState,
}

/// A replica's push configs.
pub(super) struct PushState {
    /// The run's resolver and push logs.
    pub world: SharedPush,
    /// Per-pod push configs (models without `push.shared_configs`): task → URLs, each with
    /// the owner that registered it.
    pub configs: RefCell<BTreeMap<String, Vec<push::PodPush>>>,
    /// The push configs this replica took, whole (id, token, authentication), by task: what
    /// Get, List and Delete answer from.
    pub details: RefCell<BTreeMap<String, Vec<a2a::TaskPushNotificationConfig>>>,
    /// Push configs sent inline with a message (SendMessage's configuration), by message id,
    /// until the turn registers them for its task.
    pub inline: RefCell<BTreeMap<String, a2a::TaskPushNotificationConfig>>,
}

/// The run's hooks into a replica: its fault points and its slot's drain signal.
pub(super) struct FaultHooks {
    /// The run's fault points (BUGGIFY and kill points).
    pub chaos: SharedChaos,
    /// Its slot's graceful-shutdown state, shared with the driver (`replica/drain.rs`).
    pub drain: Rc<DrainSignal>,
}

/// What a replica draws from: its ids from the run's seed, its durations (think and
/// compose times) from the seed of the run's timing draw ([`crate::seed::timing_seed`]).
#[derive(Debug, Clone, Copy)]
pub struct Seeds {
    /// The run's seed: the replica's ids.
    pub ids: u64,
    /// The seed of the run's timing draw: the replica's drawn durations.
    pub timing: u64,
}

impl From<u64> for Seeds {
    /// Both from one seed (timing draw 0).
    fn from(seed: u64) -> Seeds {
        Seeds {
            ids: seed,
            timing: seed,
        }
    }
}

impl Replica {
    /// A replica process. `boot` counts its restarts, so ids never repeat across boots.
    pub fn new(index: usize, boot: u32, seeds: Seeds, wiring: Wiring) -> Self {
        let Seeds {
            ids: seed,
            timing: timing_seed,
        } = seeds;
        let Wiring {
            profile,
            timing,
            store,
            push_world,
            trace,
            chaos,
            card,
            grants,
            drain,
        } = wiring;
        drain.boot(boot);
        let stream = crate::trace::derive_seed(
            timing_seed,
            "replica",
            ((index as u64) << 32) | u64::from(boot),
        );
        Replica {
            host: Host::Replica(index),
            profile,
            timing,
            links: Links {
                store,
                trace,
                card,
                grants,
            },
            ids: Ids {
                prefix: format!("{:04x}-r{index}b{boot}", seed & 0xffff),
                next: Cell::new(1),
                replies: Cell::new(0),
                rng: RefCell::new(ChaCha8Rng::seed_from_u64(stream)),
            },
            tasks: TaskMemory {
                active: RefCell::default(),
                events: RefCell::default(),
                run_text: RefCell::default(),
                dedup: Rc::default(),
            },
            pushes: PushState {
                world: push_world,
                configs: RefCell::default(),
                details: RefCell::default(),
                inline: RefCell::default(),
            },
            faults: FaultHooks { chaos, drain },
            parts_max: Cell::new(None),
        }
    }

    /// Refuses a message with more than `max` parts (`-32602`), for a replica serving
    /// clients nobody scripted (`a2a-chaos serve`); a simulation never sets it.
    pub fn limit_parts(&self, max: usize) {
        self.parts_max.set(Some(max));
    }

    /// Forgets what this replica keeps per task for tasks its store evicted (a bounded
    /// `a2a-chaos serve`), except a task whose turn runs here; trims every task's local
    /// event log to its last `events_per_task` versions. A task parked here (waiting for
    /// input) is forgotten too: evicted means gone.
    pub fn forget(&self, task_ids: &[String], events_per_task: usize) {
        for id in task_ids {
            let busy = self
                .tasks
                .active
                .borrow()
                .get(id)
                .is_some_and(|a| a.running.get());
            if busy {
                continue;
            }
            self.tasks.active.borrow_mut().remove(id);
            self.tasks.events.borrow_mut().remove(id);
            self.pushes.configs.borrow_mut().remove(id);
            self.pushes.details.borrow_mut().remove(id);
            self.tasks
                .run_text
                .borrow_mut()
                .retain(|(task, _), _| task != id);
        }
        for log in self.tasks.events.borrow_mut().values_mut() {
            let cut = log.len().saturating_sub(events_per_task.max(1));
            log.drain(..cut);
        }
    }

    pub(super) fn new_id(&self, kind: &str) -> String {
        let n = self.ids.next.get();
        self.ids.next.set(n + 1);
        format!("{kind}-{}-{n}", self.ids.prefix)
    }

    /// Whether this replica holds `task_id`: a turn of it runs here, or the last one here
    /// left it waiting for input (a2a-sdk's `ActiveTask` is alive for it).
    pub(super) fn holds(&self, task_id: &str) -> bool {
        self.tasks
            .active
            .borrow()
            .get(task_id)
            .is_some_and(|a| a.running.get() || a.parked.get())
    }

    /// Whether a turn of the task is starting here ([`ActiveTask::starting`]).
    pub(super) fn starts(&self, task_id: &str) -> bool {
        self.tasks
            .active
            .borrow()
            .get(task_id)
            .is_some_and(|a| a.starting.get() > 0)
    }

    pub(super) fn active(&self, task_id: &str) -> Rc<ActiveTask> {
        self.tasks
            .active
            .borrow_mut()
            .entry(task_id.to_string())
            .or_default()
            .clone()
    }

    /// Takes the task's lock, when the model serialises requests per task; otherwise a
    /// guard of a fresh lock, which never waits.
    pub(super) async fn lock(&self, active: &Rc<ActiveTask>) -> TaskLock {
        let guard = if self.profile.handler.per_task_lock {
            active.lock.clone().lock_owned().await
        } else {
            Arc::new(tokio::sync::Mutex::new(())).lock_owned().await
        };
        TaskLock {
            guard: Some(guard),
            active: active.clone(),
        }
    }
}

/// A task's lock, held ([`Replica::lock`]). Letting it go wakes the sends waiting to join a
/// turn of the task, which look again: a turn that ended is answered, a lock let go with
/// no turn begun leaves nothing to join ([`super::queue`]).
pub(super) struct TaskLock {
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
    active: Rc<ActiveTask>,
}

impl Drop for TaskLock {
    fn drop(&mut self) {
        drop(self.guard.take());
        self.active.end_notify.notify_waiters();
    }
}

/// Per-task state a replica keeps while it works on a task.
#[derive(Default)]
pub(super) struct ActiveTask {
    /// Requests for one task on one replica run one at a time.
    pub(super) lock: Arc<tokio::sync::Mutex<()>>,
    /// The snapshot kept between requests (profiles with `cache_snapshot`).
    pub(super) cached: RefCell<Option<(Task, u64)>>,
    /// Set by a cancel; the executor stops at its next await.
    pub(super) canceled: Cell<bool>,
    /// True while the executor runs a turn of this task here.
    pub(super) running: Cell<bool>,
    /// True while that turn is a streaming run.
    pub(super) streaming: Cell<bool>,
    /// The turn running here was answered before it ended (`returnImmediately`): nobody
    /// waits on it. A cancel of it leaves no ActiveTask behind (`cancel.keeps_task`).
    pub(super) unwatched: Cell<bool>,
    /// Turns of this task that ended here, and how the last one ended: what a send that
    /// joined a running turn ([`crate::model::QueuedAnswer::RunningTurn`]) is answered with.
    pub(super) ended: Cell<u64>,
    pub(super) last_end: RefCell<Option<Result<Task, Refusal>>>,
    /// Wakes the sends waiting to join a turn here: a turn ended, or the task's lock was let
    /// go ([`TaskLock`]; a holder refused before any turn began leaves nothing to join).
    pub(super) end_notify: tokio::sync::Notify,
    /// The last turn here left the task waiting for input (input-required, auth-required),
    /// and no cancel was written here since: a2a-sdk keeps its `ActiveTask` alive, and a
    /// later message goes to it ([`crate::model::QueuedTerminal::Run`]).
    pub(super) parked: Cell<bool>,
    /// The ActiveTask is finished but still registered, holding its `cached` copy (a2a-sdk
    /// 1.1.5): with `cancel.keeps_task`, a cancel written here through an ActiveTask that
    /// was not parked (one the cancel registered, or one running a turn) left it so, its copy
    /// CANCELED (seen live, it is not cleaned up, and a later cancel here answers that copy);
    /// with `handler.failed_consumer_keeps_task`, a consumer that failed left it so, its copy
    /// FAILED, until the executor running on ends.
    pub(super) finished_kept: Cell<bool>,
    /// With `subscribe.registers_task`: a subscription here registered this ActiveTask,
    /// alive until a turn or a cancel of the task here ends it.
    pub(super) registered: Cell<bool>,
    /// Subscribers attached to this ActiveTask (its idle timer waits for none).
    pub(super) subscribers: Cell<usize>,
    /// The idle timer of `handler.parked_release_ms` last started (only that one releases).
    pub(super) release_timer: Cell<u64>,
    /// The taps of the subscriptions to the task here ([`super::tap`], `subscribe.stalled_tap`).
    pub(super) taps: RefCell<Vec<Rc<tap::Tap>>>,
    /// A blocking send closed the consumer of the task's events here
    /// ([`super::consumer`], `handler.blocking_stops_consumer`).
    pub(super) consumer_closed: Cell<bool>,
    /// The contextId of the task the last turn here ran: a send that would join a running
    /// turn is checked against it first, or against the stored task when no turn here has
    /// read it yet ([`super::queue`]).
    pub(super) context: RefCell<Option<String>>,
    /// The contextId the task's TaskManager here holds (a2a-sdk 1.x; read only with
    /// `handler.task_only_context = "generate"`): the request's when the ActiveTask
    /// started, then each run's, whose events carry the request's context
    /// ([`super::decide::send::manager_context_fails`]).
    pub(super) manager_context: RefCell<Option<String>>,
    /// Turns of this task starting here: their consumer saving the request's first events
    /// (the user message, the working status). What a cancel here waits out
    /// (`cancel.waits_for_consumer`, [`Starting`]).
    pub(super) starting: Cell<u32>,
    /// Wakes the cancels waiting for the turns starting here.
    pub(super) started: tokio::sync::Notify,
}

/// A turn of the task starting on its ActiveTask, from the request's first save until the
/// turn runs or ends ([`ActiveTask::starting`]).
pub(super) struct Starting(Rc<ActiveTask>);

impl Starting {
    pub(super) fn new(active: &Rc<ActiveTask>) -> Self {
        active.starting.set(active.starting.get() + 1);
        // A cancel that reaches the turn from here on stops it ([`super::cancel`]).
        active.canceled.set(false);
        Starting(active.clone())
    }
}

impl Drop for Starting {
    fn drop(&mut self) {
        self.0.starting.set(self.0.starting.get() - 1);
        self.0.started.notify_waiters();
    }
}

impl ActiveTask {
    /// Whether a2a-sdk's ActiveTaskRegistry still holds this ActiveTask here: parked,
    /// running a turn, registered by a subscription, or kept after a cancel. One that is
    /// none of these left the registry (`_maybe_cleanup`), and what it held with it.
    pub(super) fn in_registry(&self) -> bool {
        self.parked.get() || self.running.get() || self.registered.get() || self.finished_kept.get()
    }

    /// A turn of the task ended here as `ended`: the sends that joined it are answered
    /// with that ([`super::queue`]).
    pub(super) fn announce_end(&self, ended: Result<Task, Refusal>) {
        *self.last_end.borrow_mut() = Some(ended);
        self.ended.set(self.ended.get() + 1);
        self.end_notify.notify_waiters();
    }
}
