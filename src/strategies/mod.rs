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

use std::collections::BTreeMap;
use std::ops::{Deref, RangeInclusive};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::strategy::{BoxedStrategy, Union};

use crate::error::InputError;
use crate::faults::{heal, kill, lost_reply, partition};
use crate::scenario::{
    EffectGate, Expect, ScenarioFile, Script, SendStep, Step, TaskStep, TurnStep, REPLICAS_MAX,
};

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
            StepKind::Get | StepKind::Retry | StepKind::Concurrent | StepKind::Held => 2,
            _ => 1,
        }
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
        ScenarioConfig {
            model: model.into(),
            replicas: 2..=3,
            max_steps: 10,
            kinds: StepKind::LIVE.to_vec(),
            await_effect_ms: 2000,
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

/// One abstract step: conversation and replica numbers, not names.
#[derive(Debug, Clone)]
enum Draft {
    Send(u32, Option<Index>),
    Get(u32, Option<Index>),
    Retry(u32, Option<Index>),
    Concurrent(Vec<(u32, Option<Index>)>),
    Wait(u64),
    DropReply,
    Cancel(u32, Option<Index>),
    Kill(Index),
    Restart(Index),
    Partition(Index),
    Heal,
    NonBlocking(u32, Option<Index>),
    Streaming(u32, Option<Index>),
    Duplicate(u32, [Option<Index>; 2]),
    Subscribe(u32, Option<Index>),
    CancelTwice(u32, [Option<Index>; 2]),
    Held(u32, Index, Racer),
}

/// What races a held turn (see [`StepKind::Held`]); the turn itself goes to a named replica.
#[derive(Debug, Clone)]
enum Racer {
    Cancel(Option<Index>),
    Get(Option<Index>),
    Subscribe(Option<Index>),
    Duplicate(Option<Index>),
    /// The conversation's next turn.
    NextTurn(Option<Index>),
    /// The replica doing the turn dies.
    KillOwner,
}

fn racer() -> BoxedStrategy<Racer> {
    let to = || proptest::option::of(any::<Index>());
    prop_oneof![
        to().prop_map(Racer::Cancel),
        to().prop_map(Racer::Get),
        to().prop_map(Racer::Subscribe),
        to().prop_map(Racer::Duplicate),
        to().prop_map(Racer::NextTurn),
        Just(Racer::KillOwner),
    ]
    .boxed()
}

fn draft(config: &ScenarioConfig) -> BoxedStrategy<Draft> {
    let conv = 0..config.conversations;
    let to = || proptest::option::of(any::<Index>());
    let target = || (conv.clone(), to());
    let mut kinds = config.kinds.clone();
    kinds.sort();
    kinds.dedup();
    let options: Vec<(u32, BoxedStrategy<Draft>)> = kinds
        .iter()
        .map(|kind| {
            let s = match kind {
                StepKind::Send => target().prop_map(|(c, t)| Draft::Send(c, t)).boxed(),
                StepKind::Get => target().prop_map(|(c, t)| Draft::Get(c, t)).boxed(),
                StepKind::Retry => target().prop_map(|(c, t)| Draft::Retry(c, t)).boxed(),
                StepKind::Concurrent => proptest::collection::vec(target(), 2..=2)
                    .prop_map(Draft::Concurrent)
                    .boxed(),
                StepKind::Wait => (1u64..=500).prop_map(Draft::Wait).boxed(),
                StepKind::DropReply => Just(Draft::DropReply).boxed(),
                StepKind::Cancel => target().prop_map(|(c, t)| Draft::Cancel(c, t)).boxed(),
                StepKind::Kill => any::<Index>().prop_map(Draft::Kill).boxed(),
                StepKind::Restart => any::<Index>().prop_map(Draft::Restart).boxed(),
                StepKind::Partition => any::<Index>().prop_map(Draft::Partition).boxed(),
                StepKind::Heal => Just(Draft::Heal).boxed(),
                StepKind::NonBlocking => {
                    target().prop_map(|(c, t)| Draft::NonBlocking(c, t)).boxed()
                }
                StepKind::Streaming => target().prop_map(|(c, t)| Draft::Streaming(c, t)).boxed(),
                StepKind::Duplicate => (conv.clone(), to(), to())
                    .prop_map(|(c, a, b)| Draft::Duplicate(c, [a, b]))
                    .boxed(),
                StepKind::Subscribe => target().prop_map(|(c, t)| Draft::Subscribe(c, t)).boxed(),
                StepKind::CancelTwice => (conv.clone(), to(), to())
                    .prop_map(|(c, a, b)| Draft::CancelTwice(c, [a, b]))
                    .boxed(),
                StepKind::Held => (conv.clone(), any::<Index>(), racer())
                    .prop_map(|(c, owner, r)| Draft::Held(c, owner, r))
                    .boxed(),
            };
            (kind.weight(), s)
        })
        .collect();
    Union::new_weighted(options).boxed()
}

/// Turns drafts into steps: turns numbered in sending order, replicas folded onto `replicas`.
fn build(drafts: &[Draft], replicas: usize) -> Vec<Step> {
    let mut last_turn: BTreeMap<u32, u32> = BTreeMap::new();
    let replica = |i: &Index| format!("replica-{}", i.index(replicas));
    let to = |t: &Option<Index>| t.as_ref().map(replica);
    // Conversations are named in order of first appearance, so a shrunk case reads c1, c2.
    let mut order: BTreeMap<u32, usize> = BTreeMap::new();
    for d in drafts {
        let mut note = |c: u32| {
            let next = order.len() + 1;
            order.entry(c).or_insert(next);
        };
        match d {
            Draft::Send(c, _)
            | Draft::Get(c, _)
            | Draft::Retry(c, _)
            | Draft::Cancel(c, _)
            | Draft::NonBlocking(c, _)
            | Draft::Streaming(c, _)
            | Draft::Duplicate(c, _)
            | Draft::Subscribe(c, _)
            | Draft::CancelTwice(c, _)
            | Draft::Held(c, _, _) => note(*c),
            Draft::Concurrent(list) => list.iter().for_each(|(c, _)| note(*c)),
            _ => {}
        }
    }
    let name = |c: u32| format!("c{}", order.get(&c).copied().unwrap_or(1));
    // The turn a send carries: the conversation's next, or (`again`) its last once more.
    let mut send = |c: u32, t: &Option<Index>, again: bool| {
        let last = last_turn.entry(c).or_insert(0);
        if !again || *last == 0 {
            *last += 1;
        }
        SendStep {
            conversation: name(c),
            turn: *last,
            to: to(t),
            message_id: None,
            blocking: None,
            streaming: None,
            principal: None,
            context_id: None,
            needs_auth: None,
            reply: None,
        }
    };
    let task = |c: u32, t: &Option<Index>| TaskStep {
        conversation: name(c),
        to: to(t),
        principal: None,
    };
    let mut steps = Vec::new();
    for d in drafts {
        let step = match d {
            Draft::Send(c, t) => Step::Send(send(*c, t, false)),
            Draft::Retry(c, t) => Step::Send(send(*c, t, true)),
            Draft::Concurrent(list) => Step::Concurrent(
                list.iter()
                    .map(|(c, t)| Step::Send(send(*c, t, false)))
                    .collect(),
            ),
            Draft::Get(c, t) => Step::Get(task(*c, t)),
            Draft::Cancel(c, t) => Step::Cancel(task(*c, t)),
            Draft::Wait(ms) => Step::WaitMs(*ms),
            Draft::DropReply => Step::Fault(lost_reply::DropNextReply.into()),
            Draft::Kill(i) => Step::Fault(kill::Kill(replica(i)).into()),
            Draft::Restart(i) => Step::Fault(kill::Restart(replica(i)).into()),
            Draft::Partition(i) => {
                Step::Fault(partition::Partition(replica(i), "store".into()).into())
            }
            Draft::Heal => Step::Fault(heal::HealAll.into()),
            Draft::NonBlocking(c, t) => Step::Sequence(vec![
                Step::Send(SendStep {
                    blocking: Some(false),
                    ..send(*c, t, false)
                }),
                Step::WaitMs(SETTLE_MS),
            ]),
            Draft::Streaming(c, t) => Step::Send(SendStep {
                streaming: Some(true),
                ..send(*c, t, false)
            }),
            Draft::Duplicate(c, [a, b]) => {
                let first = send(*c, a, false);
                let second = SendStep {
                    to: to(b),
                    ..first.clone()
                };
                Step::Concurrent(vec![Step::Send(first), Step::Send(second)])
            }
            Draft::Subscribe(c, t) => Step::Subscribe(task(*c, t)),
            Draft::CancelTwice(c, [a, b]) => {
                Step::Sequence(vec![Step::Cancel(task(*c, a)), Step::Cancel(task(*c, b))])
            }
            Draft::Held(c, owner, r) => {
                let owner = Some(*owner);
                let turn = send(*c, &owner, false);
                let gate = TurnStep {
                    conversation: turn.conversation.clone(),
                    turn: turn.turn,
                };
                let racing = match r {
                    Racer::Cancel(t) => Step::Cancel(task(*c, t)),
                    Racer::Get(t) => Step::Get(task(*c, t)),
                    Racer::Subscribe(t) => Step::Subscribe(task(*c, t)),
                    Racer::Duplicate(t) => Step::Send(SendStep {
                        to: to(t),
                        ..turn.clone()
                    }),
                    Racer::NextTurn(t) => Step::Send(send(*c, t, false)),
                    Racer::KillOwner => Step::Fault(
                        kill::Kill(replica(owner.as_ref().expect("the held turn is pinned")))
                            .into(),
                    ),
                };
                steps.push(Step::Effect(EffectGate::Hold, gate.clone()));
                Step::Concurrent(vec![
                    Step::Send(turn),
                    Step::Sequence(vec![
                        Step::Effect(EffectGate::Await, gate.clone()),
                        racing,
                        Step::Effect(EffectGate::Release, gate),
                    ]),
                ])
            }
        };
        steps.push(step);
    }
    steps
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
        think_ms: None,
        card: None,
        client_wire: None,
        step: Vec::new(),
        expect: Expect::default(),
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
    use crate::faults::Action;
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
        assert!(
            matches!(&steps[4], Step::Fault(Action::Kill(kill::Kill(h))) if h.starts_with("replica-"))
        );
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
