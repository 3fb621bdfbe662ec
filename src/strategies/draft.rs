//! Abstract steps ("the next turn of conversation 2", "kill replica #1"), the strategy
//! that draws them for a [`ScenarioConfig`], and [`build`], which turns them into a
//! script's steps: turns numbered in sending order, conversations named in order of first
//! appearance, replicas folded onto the scenario's count.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::strategy::{BoxedStrategy, Union};

use super::{fault, race, ScenarioConfig, StepKind, SETTLE_MS};
use crate::faults::{heal, kill, lost_reply, partition};
use crate::host::Host;
use crate::scenario::{EffectGate, Parts, SendStep, Step, TaskStep, TurnStep};

/// One abstract step: conversation and replica numbers, not names.
#[derive(Debug, Clone)]
pub(super) enum Draft {
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
    Race(u32, Vec<(race::Member, Option<Index>)>),
    Fault(u32, Index, fault::Fault),
    TaskOnly(u32, Option<Index>),
    /// A plain turn: `true` with a file.
    Plain(u32, Option<Index>, bool),
    Answers(u32, [Option<Index>; 2]),
    /// A turn of another agent shape: progress updates (0-3), whether it performs its
    /// effect (never both the default), and a cancel mid-think (which gap of the think it
    /// lands in, [`super::cancel_wait_ms`]; where to).
    Agent(
        u32,
        Option<Index>,
        u32,
        bool,
        Option<(Index, Option<Index>)>,
    ),
}

/// What races a held turn (see [`StepKind::Held`]); the turn itself goes to a named replica.
#[derive(Debug, Clone)]
pub(super) enum Racer {
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

pub(super) fn draft(config: &ScenarioConfig) -> BoxedStrategy<Draft> {
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
                StepKind::Race => (conv.clone(), race::members())
                    .prop_map(|(c, m)| Draft::Race(c, m))
                    .boxed(),
                StepKind::Fault => (
                    conv.clone(),
                    any::<Index>(),
                    fault::faults(config.store_link),
                )
                    .prop_map(|(c, r, f)| Draft::Fault(c, r, f))
                    .boxed(),
                StepKind::TaskOnly => target().prop_map(|(c, t)| Draft::TaskOnly(c, t)).boxed(),
                StepKind::Plain => (conv.clone(), to(), any::<bool>())
                    .prop_map(|(c, t, file)| Draft::Plain(c, t, file))
                    .boxed(),
                StepKind::Answers => (conv.clone(), to(), to())
                    .prop_map(|(c, a, b)| Draft::Answers(c, [a, b]))
                    .boxed(),
                StepKind::Agent => (
                    conv.clone(),
                    to(),
                    0u32..=3,
                    any::<bool>(),
                    proptest::option::of((any::<Index>(), to())),
                )
                    .prop_map(|(c, t, progress, effect, cancel)| {
                        Draft::Agent(c, t, progress, effect, cancel)
                    })
                    .boxed(),
            };
            (kind.weight(), s)
        })
        .collect();
    Union::new_weighted(options).boxed()
}

/// Turns drafts into steps: turns numbered in sending order, replicas folded onto `replicas`.
pub(super) fn build(drafts: &[Draft], replicas: usize) -> Vec<Step> {
    let last_turn: std::cell::RefCell<BTreeMap<u32, u32>> = Default::default();
    let replica = |i: &Index| Host::Replica(i.index(replicas));
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
            | Draft::Held(c, _, _)
            | Draft::Fault(c, _, _)
            | Draft::TaskOnly(c, _)
            | Draft::Plain(c, _, _)
            | Draft::Answers(c, _)
            | Draft::Agent(c, ..)
            | Draft::Race(c, _) => note(*c),
            Draft::Concurrent(list) => list.iter().for_each(|(c, _)| note(*c)),
            _ => {}
        }
    }
    let name = |c: u32| format!("c{}", order.get(&c).copied().unwrap_or(1));
    // The turn a send carries: the conversation's next, or (`again`) its last once more.
    let send = |c: u32, t: &Option<Index>, again: bool| {
        let mut last_turn = last_turn.borrow_mut();
        let last = last_turn.entry(c).or_insert(0);
        if !again || *last == 0 {
            *last += 1;
        }
        SendStep {
            to: to(t),
            ..SendStep::new(name(c), *last)
        }
    };
    let task = |c: u32, t: &Option<Index>| TaskStep {
        conversation: name(c),
        to: to(t),
        principal: None,
        task_id: None,
    };
    // A step that needs its conversation's task: the conversation's first turn goes first
    // when its task does not exist yet.
    let first_turn_if_new = |c: u32, steps: &mut Vec<Step>| {
        if last_turn.borrow().get(&c).is_none_or(|t| *t == 0) {
            steps.push(Step::Send(send(c, &None, false)));
        }
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
                Step::Fault(partition::Partition(replica(i), Host::Store).into())
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
            Draft::TaskOnly(c, t) => {
                let s = send(*c, t, false);
                Step::Send(SendStep {
                    omit_context_id: (s.turn > 1).then_some(true),
                    ..s
                })
            }
            Draft::Plain(c, t, file) => Step::Send(SendStep {
                parts: Some(if *file { Parts::File } else { Parts::Text }),
                ..send(*c, t, false)
            }),
            Draft::Answers(c, [a, b]) => {
                // Two answers need a wait to answer.
                first_turn_if_new(*c, &mut steps);
                let own = send(*c, a, false);
                let other = SendStep {
                    to: to(b),
                    reply: Some("another answer".into()),
                    ..own.clone()
                };
                Step::Concurrent(vec![Step::Send(own), Step::Send(other)])
            }
            Draft::Agent(c, t, progress, effect, cancel) => {
                // Never the default shape: a turn with its effect saves a progress update.
                let progress = if *effect {
                    (*progress).max(1)
                } else {
                    *progress
                };
                let shaped = SendStep {
                    effect: (!effect).then_some(false),
                    progress: (progress > 0).then_some(progress),
                    ..send(*c, t, false)
                };
                match cancel {
                    None => Step::Send(shaped),
                    Some((gap, ct)) => Step::Sequence(vec![
                        Step::Send(SendStep {
                            blocking: Some(false),
                            ..shaped
                        }),
                        Step::WaitMs(super::cancel_wait_ms(
                            progress,
                            gap.index(progress as usize + 1),
                        )),
                        Step::Cancel(task(*c, ct)),
                        Step::WaitMs(SETTLE_MS),
                    ]),
                }
            }
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
            Draft::Race(c, members) => {
                use race::Member;
                // A race needs its task: the conversation's first turn goes first.
                first_turn_if_new(*c, &mut steps);
                let mut first: Option<SendStep> = None;
                let mut calls = Vec::new();
                for (member, t) in members {
                    calls.push(match member {
                        Member::Next { streaming } => {
                            let s = SendStep {
                                streaming: streaming.then_some(true),
                                ..send(*c, t, false)
                            };
                            first.get_or_insert_with(|| s.clone());
                            Step::Send(s)
                        }
                        Member::Again => {
                            let base = first.clone().unwrap_or_else(|| send(*c, t, true));
                            Step::Send(SendStep { to: to(t), ..base })
                        }
                        Member::Cancel => Step::Cancel(task(*c, t)),
                        Member::Subscribe => Step::Subscribe(task(*c, t)),
                        Member::Get => Step::Get(task(*c, t)),
                    });
                }
                Step::Concurrent(calls)
            }
            Draft::Fault(c, r, f) => {
                let mut around = fault::steps(*f, &replica(r), send(*c, &None, false));
                let last = around.pop().expect("a fault has steps");
                steps.extend(around);
                last
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
