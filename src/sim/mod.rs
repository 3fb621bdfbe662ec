//! The front door: build one run with setters, validate it, run it, check it.
//!
//! In the style of turmoil's `Builder`/`Sim`: [`Sim::builder`] gives a [`Builder`] with
//! `&mut self` setters; [`Builder::build`] validates everything (the model, the routing
//! strategy, the replica count, the workload or script, the faults, the `[expect]` names)
//! and returns an error, never a panic later; the [`Sim`] it returns runs one seed.
//!
//! ```no_run
//! use a2a_chaos::sim::Sim;
//! use a2a_chaos::scenario::Script;
//!
//! let script = Script::load("tests/scenarios/h01-aba-continuation-a2a-python-1.1.toml".as_ref())?;
//! let sim = Sim::builder()
//!     .model("a2a-python-1.1")
//!     .routing("round-robin")
//!     .script(script)
//!     .seed(0)
//!     .build()?;
//! let checked = sim.check();
//! println!("{:?}", checked.summary.violated());   // ["no-lost-writes", "versions-monotonic"]
//! # Ok::<(), a2a_chaos::error::InputError>(())
//! ```
//!
//! Defaults: the model `reference`, routing `round-robin`, 3 replicas (a script's own count
//! when a script is given), the embedded default experiment's workload and swarm faults for
//! a generated run, no faults for a scripted one, seed 0, every built-in checker.
//!
//! [`Sim::run`] gives the [`RunRecord`]; [`Sim::check`] runs it contained (a panicking run
//! is a failed check with its first panic message, not a crash) and judges it with every
//! checker; [`Sim::assert_holds`] panics with the seed, the first violation and the command
//! that reproduces it. [`Sim::from_scenario`] and [`Sim::from_experiment`] build the run a
//! scenario file or one (model, routing, seed) of an experiment describes. [`judge`] and
//! [`judge_sweep`] hold runs against a file's `[expect]`, and say why when they fail.

mod availability;
mod calls;
mod expect;
mod summary;

use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use crate::check::{self, Checker, Finding};
use crate::engine::Engine;
use crate::error::InputError;
use crate::experiment::Experiment;
use crate::faults::FaultSpec;
use crate::ground::webhook::WebhookMode;
use crate::model::Profile;
use crate::replica::Timing;
use crate::scenario::Script;
use crate::store::{TableFactory, TaskTable};
use crate::workload::WorkloadSpec;
use crate::world::{self, RunRecord, RunSpec, Workload};

pub use availability::Availability;
pub use expect::{judge, judge_sweep, ComboOutcome, ExpectOutcome, Problem};
pub use summary::{contain, summarise, InvariantResult, Panicked, RunSummary};

/// Replicas of a generated run unless set.
pub const REPLICAS_DEFAULT: usize = 3;

/// Simulated-time budget of a scripted run beyond the waits it scripts
/// ([`crate::scenario::Script::waits_ms`]): a script that runs longer is cut and reported.
pub const SCRIPT_BUDGET: Duration = Duration::from_secs(600);

/// Which model a run uses: a built-in name, a profile file, or a profile value.
#[derive(Debug, Clone)]
pub enum Model {
    /// A built-in model (`a2a-python-1.3-versioned`) or a path ending in `.toml`.
    Named(String),
    /// A profile file.
    File(PathBuf),
    /// A profile value, built or edited in code.
    Profile(Box<Profile>),
}

impl From<&str> for Model {
    fn from(name: &str) -> Model {
        Model::Named(name.to_string())
    }
}

impl From<String> for Model {
    fn from(name: String) -> Model {
        Model::Named(name)
    }
}

impl From<PathBuf> for Model {
    fn from(path: PathBuf) -> Model {
        Model::File(path)
    }
}

impl From<Profile> for Model {
    fn from(profile: Profile) -> Model {
        Model::Profile(Box::new(profile))
    }
}

impl Model {
    fn load(&self) -> Result<Profile, InputError> {
        match self {
            Model::Named(name) => Profile::load(name),
            Model::File(path) => Profile::load(&path.display().to_string()),
            Model::Profile(p) => Ok((**p).clone()),
        }
    }
}

/// What the client host runs, as given to the builder.
#[derive(Debug, Clone)]
enum Drive {
    Script(Box<Script>),
    Workload(WorkloadSpec),
}

/// Builds a [`Sim`]. See the module documentation for the defaults.
#[derive(Clone)]
pub struct Builder {
    model: Model,
    routing: String,
    /// A strategy of the user's ([`Builder::routing_strategy`]); `None`: the built-in one
    /// `routing` names.
    strategy: Option<crate::router::MakeStrategy>,
    replicas: Option<usize>,
    drive: Option<Drive>,
    faults: Option<FaultSpec>,
    seed: u64,
    keep_trace: bool,
    budget: Option<Duration>,
    tick: Option<Duration>,
    engine: Engine,
    settle: bool,
    fault_draw: u64,
    timing_draw: u64,
    timing: Timing,
    webhook: WebhookMode,
    checkers: Vec<Arc<dyn Checker + Send>>,
    table: Option<TableFactory>,
    reproduce: Option<String>,
}

impl Default for Builder {
    fn default() -> Builder {
        Builder {
            model: Model::Named("reference".into()),
            routing: "round-robin".into(),
            strategy: None,
            replicas: None,
            drive: None,
            faults: None,
            seed: 0,
            keep_trace: false,
            budget: None,
            tick: None,
            engine: Engine::default(),
            settle: true,
            fault_draw: 0,
            timing_draw: 0,
            timing: Timing::default(),
            webhook: WebhookMode::Ok,
            checkers: Vec::new(),
            table: None,
            reproduce: None,
        }
    }
}

impl Builder {
    /// The model: a built-in name, a path to a profile, or a [`Profile`].
    pub fn model(&mut self, model: impl Into<Model>) -> &mut Self {
        self.model = model.into();
        self
    }

    /// The routing strategy for requests that name no replica (`a2a-chaos list`).
    pub fn routing(&mut self, routing: &str) -> &mut Self {
        self.routing = routing.to_string();
        self.strategy = None;
        self
    }

    /// A routing strategy of your own, named `name` in the run's record and report, made
    /// fresh by `make` for each router (each restart of it too): see
    /// `examples/sticky_routing.rs`.
    pub fn routing_strategy(&mut self, name: &str, make: crate::router::MakeStrategy) -> &mut Self {
        self.routing = name.to_string();
        self.strategy = Some(make);
        self
    }

    /// How many replicas (`replica-0..N-1`).
    pub fn replicas(&mut self, replicas: usize) -> &mut Self {
        self.replicas = Some(replicas);
        self
    }

    /// Run a scripted scenario (its replica count unless [`Builder::replicas`] is set).
    pub fn script(&mut self, script: Script) -> &mut Self {
        self.drive = Some(Drive::Script(Box::new(script)));
        self
    }

    /// Run generated conversations.
    pub fn workload(&mut self, workload: WorkloadSpec) -> &mut Self {
        self.drive = Some(Drive::Workload(workload));
        self
    }

    /// The faults (default: the embedded experiment's swarm for a generated run, none for a
    /// script).
    pub fn faults(&mut self, faults: FaultSpec) -> &mut Self {
        self.faults = Some(faults);
        self
    }

    /// The seed: everything random in the run derives from it.
    pub fn seed(&mut self, seed: u64) -> &mut Self {
        self.seed = seed;
        self
    }

    /// Keep every trace event (for replay, shrink and the timeline), not only the hash.
    pub fn keep_trace(&mut self, keep: bool) -> &mut Self {
        self.keep_trace = keep;
        self
    }

    /// Simulated time after which an unfinished run is cut and reported.
    pub fn budget(&mut self, budget: Duration) -> &mut Self {
        self.budget = Some(budget);
        self
    }

    /// Simulated time one step of a turmoil world advances (the event engine has no step;
    /// default: the scenario's `tick-ms`, else [`world::TICK`]); at most
    /// [`crate::scenario::TICK_MS_MAX`] ms.
    pub fn tick(&mut self, tick: Duration) -> &mut Self {
        self.tick = Some(tick);
        self
    }

    /// Which engine runs the world (default: the event engine).
    pub fn engine(&mut self, engine: Engine) -> &mut Self {
        self.engine = engine;
        self
    }

    /// Whether a generated run ends as soon as the world has settled after the heal (the
    /// default), or steps out its whole liveness bound (`false`: slower, the same
    /// verdicts; the tests compare the two).
    pub fn settle(&mut self, settle: bool) -> &mut Self {
        self.settle = settle;
        self
    }

    /// Which draw of its faults' timing the run takes (default 0, the seed's own): another
    /// draw delays the segments of a slowed link differently (the event engine only) and
    /// lands a kill point's crash after another delay, and leaves everything else the seed
    /// draws as it was.
    pub fn fault_draw(&mut self, draw: u64) -> &mut Self {
        self.fault_draw = draw;
        self
    }

    /// Which draw of its timing the run takes (default 0, the seed's own): another draw
    /// gives the event engine's scheduler and network latencies and the replicas' drawn
    /// think and compose times a generator of their own ([`crate::seed::timing_seed`]), and
    /// leaves the ids, the fault plan and the routing as the seed draws them. It is how the
    /// fidelity comparison asks whether a real run's order of calls that arrived together
    /// is one the model takes ([`crate::fidelity::patterns::order_variants`]). On turmoil
    /// only the replicas' durations are redrawn.
    pub fn timing_draw(&mut self, draw: u64) -> &mut Self {
        self.timing_draw = draw;
        self
    }

    /// The replicas' timing (think and compose times, store and effect timeouts).
    pub fn timing(&mut self, timing: Timing) -> &mut Self {
        self.timing = timing;
        self
    }

    /// An invariant of your own, checked after the built-in ones.
    pub fn checker(&mut self, checker: impl Checker + Send + 'static) -> &mut Self {
        self.checkers.push(Arc::new(checker));
        self
    }

    /// A store design of your own: every store in the run (the shared store, each pod's
    /// memory at each start) gets a fresh table from `make`. The save log the checkers
    /// read is kept around the table, so the design cannot hide what it stored.
    pub fn store<T: TaskTable + 'static>(
        &mut self,
        make: impl Fn() -> T + Send + Sync + 'static,
    ) -> &mut Self {
        self.table = Some(Arc::new(move || Box::new(make()) as Box<dyn TaskTable>));
        self
    }

    /// The command that reproduces this run, printed with a failure (default: `a2a-chaos
    /// replay` of the scenario, or a description of the run).
    pub fn reproduce(&mut self, command: impl Into<String>) -> &mut Self {
        self.reproduce = Some(command.into());
        self
    }

    /// Validates everything and returns the run.
    pub fn build(&self) -> Result<Sim, InputError> {
        let profile = self.model.load()?;
        let Some(strategy) = self
            .strategy
            .or_else(|| crate::router::maker(&self.routing))
        else {
            return Err(InputError::new(
                "routing",
                format!(
                    "unknown routing `{}`; known: {}",
                    self.routing,
                    crate::router::names().join(", ")
                ),
            ));
        };
        let extra: Vec<check::Invariant> = self.checkers.iter().map(|c| c.name()).collect();
        for (i, name) in extra.iter().enumerate() {
            if check::names().contains(name) || extra[..i].contains(name) {
                return Err(InputError::new(
                    "checker",
                    format!("an invariant named `{name}` is registered twice"),
                ));
            }
        }
        let (workload, default_replicas, faults, budget) = match &self.drive {
            Some(Drive::Script(script)) => {
                let mut known: Vec<check::Invariant> = check::names();
                known.extend(&extra);
                let origin = format!("scenario `{}`: [expect]", script.file.name);
                check::validate_names_in(&script.file.expect.names(), &known, &origin)?;
                (
                    Workload::Scripted(Rc::new((**script).clone())),
                    script.file.replicas,
                    self.faults.clone().unwrap_or_else(FaultSpec::none),
                    SCRIPT_BUDGET + Duration::from_millis(script.waits_ms()),
                )
            }
            Some(Drive::Workload(w)) => {
                w.validate("workload")?;
                let faults = self.faults.clone().unwrap_or_else(default_faults);
                let budget = crate::experiment::budget_for(w, &faults);
                (
                    Workload::Generated(w.clone()),
                    REPLICAS_DEFAULT,
                    faults,
                    budget,
                )
            }
            None => {
                let exp = Experiment::default_experiment();
                let faults = self
                    .faults
                    .clone()
                    .unwrap_or_else(|| exp.file.faults.clone());
                let w = exp.file.workload.clone();
                let budget = crate::experiment::budget_for(&w, &faults);
                (Workload::Generated(w), REPLICAS_DEFAULT, faults, budget)
            }
        };
        faults.validate("faults")?;
        let tick = self.tick.unwrap_or(match &self.drive {
            Some(Drive::Script(script)) => Duration::from_millis(script.file.tick_ms),
            _ => world::TICK,
        });
        crate::scenario::check_tick_ms(tick.as_millis() as u64)
            .map_err(|m| InputError::new("tick", m.to_string()))?;
        let replicas = self.replicas.unwrap_or(default_replicas);
        if replicas == 0 || replicas > crate::scenario::REPLICAS_MAX {
            return Err(InputError::new(
                "replicas",
                format!(
                    "replicas = {replicas} must be 1..={}",
                    crate::scenario::REPLICAS_MAX
                ),
            ));
        }
        let spec = RunSpec {
            seed: self.seed,
            profile: Rc::new(profile),
            routing: self.routing.clone(),
            strategy,
            replicas,
            workload,
            faults,
            timing: self.timing.clone(),
            webhook: self.webhook,
            keep_trace: self.keep_trace,
            budget: self.budget.unwrap_or(budget),
            tick,
            engine: self.engine,
            settle: self.settle,
            fault_draw: self.fault_draw,
            timing_draw: self.timing_draw,
            table: self.table.clone(),
        };
        world::check_card_profile(&spec)?;
        let drains = match &spec.workload {
            Workload::Scripted(script) => script.drains(),
            Workload::Generated(_) => spec.faults.draws("drain"),
        };
        if drains {
            spec.profile.check_drain("--model")?;
        }
        let reproduce = self.reproduce.clone().unwrap_or_else(|| {
            format!(
                "seed {} of model {} with routing {} on {} replicas",
                spec.seed, spec.profile.name, spec.routing, spec.replicas
            )
        });
        Ok(Sim {
            spec,
            checkers: self.checkers.clone(),
            reproduce,
        })
    }
}

/// The faults of a generated run that names none: the embedded default experiment's swarm.
fn default_faults() -> FaultSpec {
    Experiment::default_experiment().file.faults.clone()
}

/// One validated run, ready to go.
#[derive(Clone)]
pub struct Sim {
    spec: RunSpec,
    checkers: Vec<Arc<dyn Checker + Send>>,
    reproduce: String,
}

/// A checked run: its record (`None` when it panicked), what every checker found, and the
/// summary sweeps and reports use.
pub struct Checked {
    pub record: Option<RunRecord>,
    pub findings: Vec<Finding>,
    pub summary: RunSummary,
}

impl Sim {
    /// A builder with the defaults.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The run a scenario file describes: its model, routing, replicas and seed.
    pub fn from_scenario(script: &Script) -> Result<Sim, InputError> {
        Sim::scenario_builder(script).build()
    }

    /// A builder preset with a scenario file's model, routing, replicas and seed, and its
    /// reproduce command (`--model` and `--routing` can still be changed).
    pub fn scenario_builder(script: &Script) -> Builder {
        let mut b = Sim::builder();
        b.model(script.file.model.as_str())
            .routing(&script.file.routing)
            .seed(script.file.seed)
            .fault_draw(script.file.fault_draw)
            .timing_draw(script.file.timing_draw)
            .script(script.clone());
        if let Some([lo, hi]) = script.file.think_ms {
            b.timing(Timing {
                think_ms: (lo, hi.max(lo)),
                ..Timing::default()
            });
        }
        b
    }

    /// One seed of one (model, routing) combination of an experiment.
    pub fn from_experiment(
        exp: &Experiment,
        profile: &Profile,
        routing: &str,
        seed: u64,
    ) -> Result<Sim, InputError> {
        Sim::experiment_builder(exp, profile, routing, seed).build()
    }

    /// A builder preset with one run of an experiment.
    pub fn experiment_builder(
        exp: &Experiment,
        profile: &Profile,
        routing: &str,
        seed: u64,
    ) -> Builder {
        let mut b = Sim::builder();
        b.model(profile.clone())
            .routing(routing)
            .replicas(exp.file.replicas)
            .workload(exp.file.workload.clone())
            .faults(exp.file.faults.clone())
            .budget(exp.budget)
            .tick(Duration::from_millis(exp.file.tick_ms))
            .engine(exp.file.engine)
            .seed(seed)
            .reproduce(exp.reproduce(seed, &profile.name, routing));
        b
    }

    /// What the run is made of.
    pub fn spec(&self) -> &RunSpec {
        &self.spec
    }

    /// The command (or words) that reproduce this run.
    pub fn reproduce_command(&self) -> &str {
        &self.reproduce
    }

    /// Runs the seed to its end.
    pub fn run(&self) -> RunRecord {
        world::run(&self.spec)
    }

    /// Every checker on one record: the built-in ones, then this run's own.
    pub fn findings(&self, record: &RunRecord) -> Vec<Finding> {
        let mut findings = check::check_all(record);
        for c in &self.checkers {
            findings.push(check::run_checker(c.name(), c.as_ref(), record));
        }
        findings
    }

    /// Runs the seed contained and checks it: a run (or a checker) that panics is
    /// summarised with its first panic message as its error.
    pub fn check(&self) -> Checked {
        let start = std::time::Instant::now();
        // The checkers run contained too: a checker of the user's that panics is a failed
        // check, not a crash.
        match contain(|| {
            let record = world::run(&self.spec);
            let findings = self.findings(&record);
            (record, findings)
        }) {
            Ok((record, findings)) => {
                let summary = summarise(&record, &findings, start.elapsed().as_millis() as u64);
                Checked {
                    record: Some(record),
                    findings,
                    summary,
                }
            }
            Err(why) => Checked {
                record: None,
                findings: Vec::new(),
                summary: RunSummary::panicked(&self.spec, why.message(), start.elapsed()),
            },
        }
    }

    /// Checks the run and panics unless every invariant held, with the seed, the first
    /// violation and the command that reproduces it.
    pub fn assert_holds(&self) {
        let checked = self.check();
        let s = &checked.summary;
        if let Some(e) = &s.error {
            panic!(
                "seed {}: the run did not finish: {e}\n  reproduce: {}",
                s.seed, self.reproduce
            );
        }
        if let Some(i) = s.invariants.iter().find(|i| i.violations > 0) {
            panic!(
                "seed {}: {} violated: {}\n  reproduce: {}",
                s.seed,
                i.name,
                i.first.as_deref().unwrap_or(""),
                self.reproduce
            );
        }
    }
}
