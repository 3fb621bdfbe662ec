//! proptest strategies that generate scripted scenarios and fault schedules, for your own
//! tests.
//!
//! ```no_run
//! use a2a_chaos::strategies::{scenarios, ScenarioConfig};
//! use proptest::prelude::*;
//!
//! proptest! {
//!     #![proptest_config(ProptestConfig::with_cases(16))]
//!     #[test]
//!     fn my_store_holds(s in scenarios(ScenarioConfig::new("models/my-store.toml").max_steps(10))) {
//!         let summary = a2a_chaos::sim::Sim::from_scenario(&s).unwrap().check().summary;
//!         prop_assert!(summary.violated().is_empty(), "{:?} violated in\n{:?}", summary.violated(), s);
//!     }
//! }
//! ```
//!
//! A generated scenario is drawn as abstract steps ("the next turn of conversation 2", "kill
//! replica #1") and only then turned into a [`Script`]: turns are numbered in the order the
//! script sends them, conversations are named `c1, c2, ...` in order of first appearance, and
//! replica indices are taken modulo the replica count. So every value
//! proptest shrinks to is a valid scenario: removing a step renumbers the turns after it,
//! lowering the replica count folds the replicas, and a step kind shrinks towards a plain
//! send (the kinds are listed in that order), which removes faults. A failing case prints as
//! the scenario file that reproduces it (`a2a-chaos check` it after pasting).
//!
//! [`fault_schedules`] draws a timeline of faults on its own, and [`with_faults`] runs one
//! beside a hand-written script.

mod draft;
mod fault;
mod race;

use draft::{build, draft, Draft};

use std::ops::{Deref, RangeInclusive};

use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;

use crate::error::InputError;
use crate::scenario::{Expect, ScenarioFile, Script, Step, REPLICAS_MAX};

/// The kinds of step a generated scenario may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StepKind {
    /// The next turn of a conversation (the first creates its task).
    Send,
    /// GetTask of a conversation's task.
    Get,
    /// The last turn of a conversation again, with the same messageId (a client retry).
    Retry,
    /// Two sends at the same simulated instant.
    Concurrent,
    /// A pause of 1 to 500 simulated ms.
    Wait,
    /// The router loses the next reply.
    DropReply,
    /// CancelTask of a conversation's task.
    Cancel,
    /// A replica dies (memory gone, in-flight requests lost).
    Kill,
    /// A killed replica starts again.
    Restart,
    /// A replica loses the store, both ways.
    Partition,
    /// Every link restored, every host restarted.
    Heal,
    /// The next turn of a conversation with `returnImmediately` (non-blocking), then a
    /// pause of [`SETTLE_MS`] so that the turn it started has ended before the next step (in
    /// real time as in the simulation).
    NonBlocking,
    /// The next turn of a conversation over the streaming method (SSE).
    Streaming,
    /// The next turn of a conversation twice at the same instant, with the same messageId
    /// (a duplicate delivery), each to its own replica or to the router.
    Duplicate,
    /// SubscribeToTask of a conversation's task (again: a resubscribe).
    Subscribe,
    /// CancelTask of a conversation's task twice in a row, each to its own replica.
    CancelTwice,
    /// The next turn held inside its effect step while another call races it: `hold-effect`,
    /// then the send beside `await-effect`, the racing call, `release-effect`. The racer is a
    /// cancel, a get, a subscribe, the same message again, the conversation's next turn, or
    /// a kill of the replica doing the turn, so the interleaving is the same in the
    /// simulation and against a real peer.
    Held,
    /// Two or three calls on one conversation's task at the same instant, with no hold: its
    /// next turn, the same message again, a second follow-up, a cancel, a subscription or a
    /// read, each to its own replica, the same one or the router (a race; the
    /// conversation's first turn goes before it when its task does not exist yet).
    Race,
    /// A fault around a conversation's next turn on one replica, undone after a window:
    /// a partition, hold or latency of one of its links, a pause of it, or a kill at a
    /// point of the turn (`src/strategies/fault.rs`).
    Fault,
    /// The next turn of a conversation with its taskId and no contextId, as the official
    /// clients send follow-ups (A2A 1.0 §3.4.3: the server infers the context); a first
    /// turn, or one whose task the client does not know, is sent as usual.
    TaskOnly,
    /// The next turn of a conversation as clients that know nothing of a2a-chaos send it:
    /// its text alone or with a small file, no scripted data part, so the agent counts the
    /// turn from the task's history (and completes from it).
    Plain,
    /// Two different answers of one wait at the same instant: the conversation's next turn
    /// and a `reply` to the same wait with text and a messageId of its own, each to its own
    /// replica or the router (the seeds' "A and B continue the same task at once"; the
    /// conversation's first turn goes before them when its task does not exist yet).
    Answers,
    /// The next turn of a conversation from an agent of another shape
    /// ([`crate::replica::AgentShape`]): one that saves 1 to 3 progress updates while it
    /// thinks, performs no effect, or both; half of them sent non-blocking and canceled
    /// mid-think, in the middle of one of the gaps its progress updates leave
    /// ([`cancel_wait_ms`]), on a replica of their own or through the router, then a pause
    /// of [`SETTLE_MS`].
    Agent,
}

impl StepKind {
    /// Every kind, in shrinking order (a step shrinks towards the kinds before it).
    pub const ALL: &'static [StepKind] = &[
        StepKind::Send,
        StepKind::Get,
        StepKind::Retry,
        StepKind::Concurrent,
        StepKind::Wait,
        StepKind::DropReply,
        StepKind::Cancel,
        StepKind::Kill,
        StepKind::Restart,
        StepKind::Partition,
        StepKind::Heal,
        StepKind::NonBlocking,
        StepKind::Streaming,
        StepKind::Duplicate,
        StepKind::Subscribe,
        StepKind::CancelTwice,
        StepKind::Held,
        StepKind::Race,
        StepKind::Fault,
        StepKind::TaskOnly,
    ];

    /// The kinds of [`ScenarioConfig::default`]: every kind of the first release but
    /// `Cancel` (so generated scenarios stay what they were as kinds are added).
    pub const CLASSIC: &'static [StepKind] = &[
        StepKind::Send,
        StepKind::Get,
        StepKind::Retry,
        StepKind::Concurrent,
        StepKind::Wait,
        StepKind::DropReply,
        StepKind::Kill,
        StepKind::Restart,
        StepKind::Partition,
        StepKind::Heal,
    ];

    /// What a live run can do (`a2a-chaos live`, `fidelity --generate`) in an order both
    /// worlds share: every kind but `Partition`, which loopback cannot make, and the two
    /// whose requests race in real time, `Concurrent` and `Duplicate` (two requests of one
    /// conversation at the same instant: the real server and the simulation may serve them
    /// in either order, and the first-come order a live run shows is not the simulation's
    /// lockstep). `Held` races a turn with its duplicate, its next turn, a cancel, a read or
    /// a kill in a fixed order instead.
    pub const LIVE: &'static [StepKind] = &[
        StepKind::Send,
        StepKind::Get,
        StepKind::Retry,
        StepKind::Wait,
        StepKind::DropReply,
        StepKind::Cancel,
        StepKind::Kill,
        StepKind::Restart,
        StepKind::Heal,
        StepKind::NonBlocking,
        StepKind::Streaming,
        StepKind::Subscribe,
        StepKind::CancelTwice,
        StepKind::Held,
    ];

    /// The fault kinds.
    pub const FAULTS: &'static [StepKind] = &[
        StepKind::DropReply,
        StepKind::Kill,
        StepKind::Restart,
        StepKind::Partition,
        StepKind::Heal,
    ];

    /// How often a kind is drawn, relative to the others.
    fn weight(self) -> u32 {
        match self {
            StepKind::Send => 8,
            StepKind::Race | StepKind::Fault => 3,
            // Generation 4 is about this shape: most of its follow-ups take it.
            StepKind::TaskOnly => 6,
            StepKind::Plain | StepKind::Answers => 3,
            // Generation 6 is about this shape.
            StepKind::Agent => 8,
            StepKind::Get | StepKind::Retry | StepKind::Concurrent | StepKind::Held => 2,
            _ => 1,
        }
    }
}

/// Which envelope `fidelity --generate` draws from: each generation keeps the scenarios
/// of the ones before reproducible (a seed names a scenario only with its generation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Generation {
    /// [`StepKind::LIVE`] (2026-12-01 to -03: `results/fidelity-generated/`).
    Classic = 1,
    /// Generation 1 and races ([`StepKind::Race`]): what multi-replica users do at once,
    /// in real time as in the simulation (`results/fidelity-concurrent/`).
    Concurrent = 2,
    /// Generation 2 and faults around turns ([`StepKind::Fault`]): the mission's faults on
    /// real processes (`results/fidelity-faults/`).
    Faults = 3,
    /// Generation 3 and the request shapes the official clients send
    /// ([`StepKind::TaskOnly`]: a follow-up that names its task and no contextId).
    Shapes = 4,
    /// Generation 4 and what clients that know nothing of a2a-chaos send: messages with no
    /// scripted data part ([`StepKind::Plain`]) and two different answers of one wait at
    /// once ([`StepKind::Answers`]).
    Clients = 5,
    /// Generation 5 and agents of other shapes ([`StepKind::Agent`]: progress updates, no
    /// effect, a cancel mid-think), every turn thinking [`AGENT_THINK_MS`] as a model call
    /// does, so that a cancel and a progress update fall inside it in both worlds.
    Agents = 6,
}

/// The think of every turn of generation 6 ([`Generation::Agents`]), ms: long enough for a
/// cancel drawn 50-150 ms after a non-blocking answer to land inside it, and for three
/// progress updates to be 50 ms apart.
pub const AGENT_THINK_MS: u64 = 200;

/// How long after a non-blocking answer a generation-6 cancel is sent: from a request
/// reaching the executor, its answer and then the cancel's own way to its save take about
/// this long in both worlds (a live PostgreSQL save, a simulated store round trip), so a
/// cancel sent `w` ms after the answer lands about `w +` this after the think began.
pub const CANCEL_LANDS_AFTER_MS: u64 = 25;

/// The wait, after a non-blocking answer, of a cancel meant for gap `gap` (0 to
/// `progress`) of a generation-6 turn's think: the think ([`AGENT_THINK_MS`]) is cut by its
/// `progress` updates, evenly spread, into `progress + 1` gaps, and the cancel is aimed at
/// the middle of one. A cancel drawn anywhere would often land within a few ms of an
/// update or of the effect, where which comes first is decided by each world's own
/// timing, not by the model: aimed at a gap, it lands 25 ms or more from either.
pub fn cancel_wait_ms(progress: u32, gap: usize) -> u64 {
    let gaps = u64::from(progress) + 1;
    let middle = AGENT_THINK_MS * (2 * gap as u64 + 1) / (2 * gaps);
    middle.saturating_sub(CANCEL_LANDS_AFTER_MS).max(1)
}

impl Generation {
    /// The newest generation: what `fidelity --generate` draws by default.
    pub const LATEST: Generation = Generation::Concurrent;

    /// The generation numbered `n`.
    pub fn from_number(n: u32) -> Option<Generation> {
        match n {
            1 => Some(Generation::Classic),
            2 => Some(Generation::Concurrent),
            3 => Some(Generation::Faults),
            4 => Some(Generation::Shapes),
            5 => Some(Generation::Clients),
            6 => Some(Generation::Agents),
            _ => None,
        }
    }

    /// Its number (`--generator N`).
    pub fn number(self) -> u32 {
        self as u32
    }

    /// The step kinds it draws: [`StepKind::LIVE`] and what each generation since added.
    /// (The draw sorts the kinds, so their order here changes no scenario.)
    pub fn kinds(self) -> Vec<StepKind> {
        let added: &[StepKind] = match self {
            Generation::Classic => &[],
            Generation::Concurrent => &[StepKind::Race],
            Generation::Faults => &[StepKind::Race, StepKind::Fault],
            Generation::Shapes => &[StepKind::Race, StepKind::Fault, StepKind::TaskOnly],
            Generation::Clients => &[
                StepKind::Race,
                StepKind::Fault,
                StepKind::TaskOnly,
                StepKind::Plain,
                StepKind::Answers,
            ],
            Generation::Agents => &[
                StepKind::Race,
                StepKind::Fault,
                StepKind::TaskOnly,
                StepKind::Plain,
                StepKind::Answers,
                StepKind::Agent,
            ],
        };
        StepKind::LIVE.iter().chain(added).copied().collect()
    }
}

/// How long a generated non-blocking send waits for the turn it started (a turn takes
/// about 100 ms in the simulation and 150 ms against the a2a-python peer).
pub const SETTLE_MS: u64 = 600;

/// What [`scenarios`] generates.
///
/// Build one with [`ScenarioConfig::new`] and the setters, or with struct syntax over
/// [`Default`] (model `reference`). A `&str` or `String` converts to the default
/// configuration for that model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioConfig {
    /// A built-in model name or a path to a profile (`models/my-store.toml`).
    pub model: String,
    /// Replica counts to draw from; shrinking goes to the low end. Default `1..=3`.
    pub replicas: RangeInclusive<usize>,
    /// Routing for requests that are not pinned to a replica. Default `round-robin`.
    pub routing: String,
    /// Conversations to spread the turns over. Default 2.
    pub conversations: u32,
    /// Most steps a scenario has (a `concurrent` pair counts as one). Default 12.
    pub max_steps: usize,
    /// Step kinds to draw from. Default [`StepKind::CLASSIC`]; [`ScenarioConfig::live`] takes
    /// [`StepKind::LIVE`].
    pub kinds: Vec<StepKind>,
    /// Scenario seeds (latency and jitter) to draw from. Default `0..=0`.
    pub seeds: RangeInclusive<u64>,
    /// Client timeout per request, simulated ms. Default 1500.
    pub request_timeout_ms: u64,
    /// The longest an `await-effect` step waits, simulated ms. Default 10000.
    pub await_effect_ms: u64,
    /// Whether the replicas reach their store over a link a fault can cut (a live run's
    /// PostgreSQL): generation 3's network faults are drawn on that link only then.
    /// Default `true`.
    pub store_link: bool,
    /// Every turn's think, ms (the scenario's `think-ms`), instead of the model's own draws.
    /// Default `None`; generation 6 sets [`AGENT_THINK_MS`].
    pub think_ms: Option<u64>,
}

impl Default for ScenarioConfig {
    fn default() -> Self {
        ScenarioConfig {
            model: "reference".into(),
            replicas: 1..=3,
            routing: "round-robin".into(),
            conversations: 2,
            max_steps: 12,
            kinds: StepKind::CLASSIC.to_vec(),
            seeds: 0..=0,
            request_timeout_ms: 1500,
            await_effect_ms: crate::scenario::default_await_effect(),
            store_link: true,
            think_ms: None,
        }
    }
}

impl ScenarioConfig {
    /// The default configuration for `model`.
    pub fn new(model: impl Into<String>) -> Self {
        ScenarioConfig {
            model: model.into(),
            ..ScenarioConfig::default()
        }
    }

    /// What a live run can do, on 2 or 3 replicas: [`StepKind::LIVE`] over 2
    /// conversations, at most 10 steps, and an `await-effect` that gives up after 2 s (a
    /// held turn that never reaches its effect, because its task is already final, costs
    /// little real time). `a2a-chaos fidelity --generate` draws from it.
    pub fn live(model: impl Into<String>) -> Self {
        ScenarioConfig::live_generation(model, Generation::Classic)
    }

    /// [`ScenarioConfig::live`] with the step kinds of `generation`.
    pub fn live_generation(model: impl Into<String>, generation: Generation) -> Self {
        ScenarioConfig {
            model: model.into(),
            replicas: 2..=3,
            max_steps: 10,
            kinds: generation.kinds(),
            await_effect_ms: 2000,
            think_ms: (generation >= Generation::Agents).then_some(AGENT_THINK_MS),
            ..ScenarioConfig::default()
        }
    }

    /// Replica counts to draw from.
    pub fn replicas(mut self, replicas: RangeInclusive<usize>) -> Self {
        self.replicas = replicas;
        self
    }

    /// The routing strategy.
    pub fn routing(mut self, routing: impl Into<String>) -> Self {
        self.routing = routing.into();
        self
    }

    /// How many conversations.
    pub fn conversations(mut self, conversations: u32) -> Self {
        self.conversations = conversations;
        self
    }

    /// The most steps a scenario has.
    pub fn max_steps(mut self, max_steps: usize) -> Self {
        self.max_steps = max_steps;
        self
    }

    /// The step kinds to draw from.
    pub fn kinds(mut self, kinds: &[StepKind]) -> Self {
        self.kinds = kinds.to_vec();
        self
    }

    /// The scenario seeds to draw from.
    pub fn seeds(mut self, seeds: RangeInclusive<u64>) -> Self {
        self.seeds = seeds;
        self
    }

    /// Refuses a configuration no scenario can satisfy.
    pub fn validate(&self) -> Result<(), InputError> {
        let origin = "ScenarioConfig";
        crate::model::Profile::load(&self.model)?;
        if crate::router::strategy(&self.routing).is_none() {
            return Err(InputError::new(
                origin,
                format!(
                    "unknown routing `{}`; known: {}",
                    self.routing,
                    crate::router::names().join(", ")
                ),
            ));
        }
        let (lo, hi) = (*self.replicas.start(), *self.replicas.end());
        if lo == 0 || lo > hi || hi > REPLICAS_MAX {
            return Err(InputError::new(
                origin,
                format!("replicas {lo}..={hi} must be within 1..={REPLICAS_MAX}"),
            ));
        }
        if self.conversations == 0 || self.max_steps == 0 || self.kinds.is_empty() {
            return Err(InputError::new(
                origin,
                "conversations, max_steps and kinds must not be empty",
            ));
        }
        if self.seeds.start() > self.seeds.end() {
            return Err(InputError::new(origin, "seeds is an empty range"));
        }
        Ok(())
    }
}

impl From<&str> for ScenarioConfig {
    fn from(model: &str) -> Self {
        ScenarioConfig::new(model)
    }
}

impl From<String> for ScenarioConfig {
    fn from(model: String) -> Self {
        ScenarioConfig::new(model)
    }
}

/// A generated scenario: a [`Script`] (it dereferences to one, so
/// `a2a_chaos::sim::Sim::from_scenario(&s)` works) that prints as its scenario file.
#[derive(Clone)]
pub struct GeneratedScenario(pub Script);

impl Deref for GeneratedScenario {
    type Target = Script;
    fn deref(&self) -> &Script {
        &self.0
    }
}

impl std::fmt::Debug for GeneratedScenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "\n{}", self.0.to_toml())
    }
}

fn base(config: &ScenarioConfig, replicas: usize, seed: u64) -> ScenarioFile {
    ScenarioFile {
        name: "generated".into(),
        model: config.model.clone(),
        replicas,
        routing: config.routing.clone(),
        seed,
        description: Some("generated by a2a_chaos::strategies::scenarios".into()),
        postmortem: None,
        request_timeout_ms: config.request_timeout_ms,
        await_effect_ms: config.await_effect_ms,
        tick_ms: crate::scenario::default_tick_ms(),
        think_ms: config.think_ms.map(|ms| [ms, ms]),
        card: None,
        client_wire: None,
        step: Vec::new(),
        expect: Expect::default(),
        fault_draw: 0,
        timing_draw: 0,
    }
}

/// Scenarios for `config` (a [`ScenarioConfig`], or just a model name), each expecting no
/// violation.
///
/// # Panics
/// When the configuration is unusable (unknown model or routing, empty ranges): the message
/// names the problem.
pub fn scenarios(config: impl Into<ScenarioConfig>) -> BoxedStrategy<GeneratedScenario> {
    let config: ScenarioConfig = config.into();
    if let Err(e) = config.validate() {
        panic!("a2a_chaos::strategies::scenarios: {e}");
    }
    let steps = proptest::collection::vec(draft(&config), 1..=config.max_steps);
    (config.replicas.clone(), config.seeds.clone(), steps)
        .prop_map(move |(replicas, seed, drafts)| {
            let steps = build(&drafts, replicas);
            let script = Script::from_steps(&base(&config, replicas, seed), &steps)
                .expect("generated scenarios are valid");
            GeneratedScenario(script)
        })
        .boxed()
}

/// The scenario `config` gives for `seed`, drawn from a random stream of that seed alone
/// (with the scenario's own seed set to it): the same seed, the same scenario, so scenario
/// `k` of a batch is reproduced by its seed without the others. `a2a-chaos fidelity
/// --generate` draws its scenarios so.
///
/// # Panics
/// When the configuration is unusable (see [`scenarios`]).
pub fn draw(config: &ScenarioConfig, seed: u64) -> GeneratedScenario {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let config = ScenarioConfig {
        seeds: seed..=seed,
        ..config.clone()
    };
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(b"scenario");
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &key);
    let runner_config = Config {
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(runner_config, rng);
    scenarios(config)
        .new_tree(&mut runner)
        .expect("a scenario strategy never rejects")
        .current()
}

/// Fault schedules on `replicas` replicas: up to `max_faults` faults of the config's fault
/// kinds, each after a pause of 0 to 500 simulated ms (`wait-ms`, then the fault).
///
/// # Panics
/// When `replicas` is 0 or more than [`REPLICAS_MAX`].
pub fn fault_schedules(
    replicas: usize,
    max_faults: usize,
    kinds: &[StepKind],
) -> BoxedStrategy<Vec<Step>> {
    assert!(
        (1..=REPLICAS_MAX).contains(&replicas),
        "a2a_chaos::strategies::fault_schedules: replicas = {replicas} must be 1..={REPLICAS_MAX}"
    );
    let kinds: Vec<StepKind> = kinds
        .iter()
        .copied()
        .filter(|k| StepKind::FAULTS.contains(k))
        .collect();
    if kinds.is_empty() || max_faults == 0 {
        return Just(Vec::new()).boxed();
    }
    let config = ScenarioConfig {
        kinds,
        ..ScenarioConfig::default()
    };
    proptest::collection::vec((0u64..=500, draft(&config)), 0..=max_faults)
        .prop_map(move |timed| {
            let drafts: Vec<Draft> = timed.iter().map(|(_, d)| d.clone()).collect();
            let faults = build(&drafts, replicas);
            timed
                .iter()
                .zip(faults)
                .flat_map(|((ms, _), f)| [Step::WaitMs(*ms), f])
                .collect()
        })
        .boxed()
}

/// `script` with `schedule` running beside it: one `concurrent` step holding the script's
/// steps and the schedule, each as a `sequence`.
pub fn with_faults(script: &Script, schedule: &[Step]) -> Result<Script, InputError> {
    if schedule.is_empty() {
        return Ok(script.clone());
    }
    let steps = vec![Step::Concurrent(vec![
        Step::Sequence(script.steps.clone()),
        Step::Sequence(schedule.to_vec()),
    ])];
    Script::from_steps(&script.file, &steps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::{kill, Action};
    use proptest::sample::Index;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, TestRng, TestRunner};

    fn runner() -> TestRunner {
        let config = Config {
            cases: 64,
            failure_persistence: None,
            ..Config::default()
        };
        TestRunner::new_with_rng(
            config.clone(),
            TestRng::deterministic_rng(config.rng_algorithm),
        )
    }

    #[test]
    fn every_generated_scenario_parses_back_from_its_file() {
        runner()
            .run(&scenarios("reference"), |s| {
                let back = Script::parse(&s.to_toml(), "generated.toml").unwrap();
                prop_assert_eq!(&back.steps, &s.steps);
                prop_assert!(s.file.replicas >= 1 && s.file.replicas <= 3);
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn turns_follow_the_order_of_sends() {
        let i = any::<Index>().new_tree(&mut runner()).unwrap().current();
        let steps = build(
            &[
                Draft::Retry(0, None),
                Draft::Send(0, Some(i)),
                Draft::Retry(0, None),
                Draft::Send(5, None),
                Draft::Kill(i),
            ],
            2,
        );
        let turns: Vec<(String, u32)> = steps
            .iter()
            .filter_map(|s| match s {
                Step::Send(s) => Some((s.conversation.clone(), s.turn)),
                _ => None,
            })
            .collect();
        let want = [("c1", 1), ("c1", 2), ("c1", 2), ("c2", 1)];
        assert_eq!(
            turns,
            want.map(|(c, t)| (c.to_string(), t)).to_vec(),
            "{steps:?}"
        );
        assert!(matches!(&steps[4], Step::Fault(Action::Kill(kill::Kill(h))) if h.is_replica()));
    }

    #[test]
    #[should_panic(expected = "unknown model `nope`")]
    fn an_unknown_model_is_refused_when_the_strategy_is_made() {
        let _ = scenarios("nope");
    }

    #[test]
    fn a_schedule_runs_beside_a_script() {
        let mut r = runner();
        let tree = fault_schedules(2, 3, StepKind::FAULTS)
            .new_tree(&mut r)
            .unwrap();
        let schedule = tree.current();
        let script = Script::parse(
            "name = \"x\"\nmodel = \"reference\"\n[[step]]\nsend = { conversation = \"c1\", turn = 1 }\n",
            "x.toml",
        )
        .unwrap();
        let both = with_faults(&script, &schedule).unwrap();
        assert_eq!(both.step_count(), 1 + schedule.len());
    }
}
