//! What a scenario does, named for the agreement tables, and the orders its races can take.
//!
//! [`kinds`] names each top-level step by what it is (`send`, `retry`, `streaming`,
//! `non-blocking`, `cancel-twice`, `held`, `race`, a fault's step key, ...), and
//! [`patterns`] names each group of calls in flight at once on one task: a race
//! (`race:cancel+next@2`: its calls sorted, then how many replicas they were pinned to, `r`
//! when one went through the router) or a held turn and what raced it (`held:cancel`). Both are
//! read from the scenario itself, so a found scenario or a hand-written one is named as a
//! generated one is. `fidelity --generate` reports agreement per kind and per pattern.
//!
//! [`order_variants`] is how a race is compared: nothing fixes the order in which a real
//! server serves calls sent at the same instant, so the simulation runs the scenario as
//! drawn and in the orders small staggers give its races (each call of a race delayed by
//! its position times 2, 5, 10, 20 or 40 ms, in the drawn order and reversed; each race on
//! its own, up to [`ORDERS_MAX`] orders), each once more **settled**: with a wait after
//! every race for the turns its calls queued to finish. A live run agrees when its
//! observables are those of one of these orders ([`crate::fidelity::run_case`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::host::Host;
use crate::scenario::{EffectGate, Parts, Script, Step};

/// The stagger steps of [`order_variants`], in simulated ms.
pub const STAGGERS_MS: [u64; 5] = [2, 5, 10, 20, 40];

/// The kind of every top-level step of `script`, in order (`hold-effect` steps, part of a
/// held turn, are not listed).
pub fn kinds(script: &Script) -> Vec<String> {
    let mut sent: BTreeSet<(String, u32)> = BTreeSet::new();
    let mut out = Vec::new();
    for step in &script.steps {
        let kind = match step {
            Step::Effect(EffectGate::Hold, _) => continue,
            Step::Send(s) => {
                let again = !sent.insert((s.conversation.clone(), s.turn));
                if again {
                    "retry"
                } else if s.streaming == Some(true) {
                    "streaming"
                } else if s.omit_context_id == Some(true) {
                    "task-only"
                } else if s.parts == Some(Parts::Text) {
                    "plain"
                } else if s.parts == Some(Parts::File) {
                    "file"
                } else if s.progress.is_some_and(|n| n > 0) {
                    "progress"
                } else if s.effect == Some(false) {
                    "no-effect"
                } else {
                    "send"
                }
                .to_string()
            }
            Step::Sequence(v) => match v.as_slice() {
                [Step::Send(s), Step::WaitMs(_)] if s.blocking == Some(false) => {
                    sent.insert((s.conversation.clone(), s.turn));
                    "non-blocking".to_string()
                }
                [Step::Cancel(_), Step::Cancel(_)] => "cancel-twice".to_string(),
                // A turn of another agent shape, canceled mid-think (generation 6).
                [Step::Send(s), Step::WaitMs(_), Step::Cancel(_), Step::WaitMs(_)]
                    if s.blocking == Some(false) =>
                {
                    sent.insert((s.conversation.clone(), s.turn));
                    "cancel-mid-think".to_string()
                }
                // A fault around a turn (generation 3): the fault's step key.
                [fault @ Step::Fault(_), Step::Concurrent(inner)] => {
                    note_sends(inner, &mut sent);
                    word(fault)
                }
                _ => "sequence".to_string(),
            },
            Step::Concurrent(v) => {
                note_sends(v, &mut sent);
                if held(v) {
                    "held".to_string()
                } else if v
                    .iter()
                    .any(|c| matches!(c, Step::Send(s) if s.reply.is_some()))
                {
                    "answers".to_string()
                } else {
                    "race".to_string()
                }
            }
            other => word(other),
        };
        out.push(kind);
    }
    out
}

/// The concurrency pattern of every group of calls in flight at once in `script`, in order.
pub fn patterns(script: &Script) -> Vec<String> {
    let mut sent: BTreeSet<(String, u32)> = BTreeSet::new();
    let mut out = Vec::new();
    for step in &script.steps {
        match step {
            Step::Send(s) => {
                sent.insert((s.conversation.clone(), s.turn));
            }
            Step::Sequence(v) => note_sends(v, &mut sent),
            Step::Concurrent(v) if held(v) => {
                let racer = v
                    .iter()
                    .find_map(|s| match s {
                        Step::Sequence(inner) => inner
                            .iter()
                            .find(|s| !matches!(s, Step::Effect(..)))
                            .map(|racing| call_word(racing, &sent)),
                        _ => None,
                    })
                    .unwrap_or_else(|| "nothing".into());
                note_sends(v, &mut sent);
                out.push(format!("held:{racer}"));
            }
            Step::Concurrent(v) => {
                let before = sent.clone();
                let mut words: Vec<String> = Vec::new();
                let mut seen_here: BTreeSet<(String, u32)> = BTreeSet::new();
                for s in v {
                    let word = match s {
                        Step::Send(send)
                            if !before.contains(&(send.conversation.clone(), send.turn))
                                && !seen_here.insert((send.conversation.clone(), send.turn)) =>
                        {
                            "again".to_string()
                        }
                        _ => call_word(s, &before),
                    };
                    words.push(word);
                }
                words.sort();
                let pinned: BTreeSet<&Host> = v.iter().filter_map(target).collect();
                let unpinned = v.iter().any(|s| is_call(s) && target(s).is_none());
                let place = if unpinned {
                    "r".to_string()
                } else {
                    pinned.len().to_string()
                };
                note_sends(v, &mut sent);
                out.push(format!("race:{}@{place}", words.join("+")));
            }
            _ => {}
        }
    }
    out
}

/// The most orders of its races one scenario gets ([`order_variants`]), each simulated
/// twice (as ordered and settled).
pub const ORDERS_MAX: usize = 150;

/// The scenario as drawn, then every combination of the orders of its races: each race as
/// drawn, or staggered by one of [`STAGGERS_MS`] per position, forward or reversed, each
/// race on its own (independent races in one scenario may each go either way). When that
/// is more than [`ORDERS_MAX`], each race takes fewer staggers (the smallest and the
/// largest, then the largest only), and past that every race takes the same stagger.
/// Just the scenario when it has no race. Held turns are left alone: their holds fix the
/// order.
///
/// Each of these orders comes twice: first as above, then **settled**, with a wait of
/// [`settle_ms`] after every race. A race's calls are answered while the turns they queued
/// on one replica still run (a2a-sdk answers a joined call with the running turn's end and
/// runs its own executor after it), and whether that background turn ends before the next
/// step's call arrives is a matter of a few ms that neither world fixes (generation 4's seed
/// 47: the real replica finished the queued turn 9 ms before the next call, the simulated
/// one 6 ms after it, and a kill armed for the next turn's effect then fired only live).
/// A settled order is the one where the background work finished first. The first half of
/// the list keeps the indices the orders had before settled orders existed.
///
/// A scenario with a `latency` or a `kill-at` step is then simulated under [`FAULT_DRAWS`]
/// other draws of its faults' timing (as drawn, and settled when it has races; appended
/// last), since each world draws it on its own:
/// - a latency fault delays each segment on a curve, and which segments the long delays
///   fall on is each world's draw (generation 4's seed 20: the simulated request waited
///   70 ms and its answer little, the live request little and its answer 100 ms, so only
///   the simulated turn was still running when the fault ended, and `liveness` was
///   exercised only there);
/// - a simulated kill point's crash lands 0-12 ms after the point, drawn, so an effect's
///   request may reach the ledger first; live the ledger kills the replica as the request
///   arrives, before applying it (seed 65: the simulated effect applied, the real one not).
///
/// A scenario with a race is also simulated under [`TIMING_DRAWS`] other draws of its
/// timing (as drawn and settled; appended after the fault draws). A stagger fixes when each
/// call is sent, not what happens to calls sent together: which of two reads of one task
/// returns first, whose save the store takes first. Those are the engine's network
/// latencies and scheduling and the replicas' drawn durations, which another draw of the
/// timing redraws ([`crate::sim::Builder::timing_draw`]) while the calls, ids and faults
/// stay as they are. 1.3-versioned seed 240: a streaming follow-up, a cancel (both on
/// replica-1) and a follow-up on replica-0 sent together. Live the streaming turn took its
/// saves first, the cancel waited for them, and replica-0's follow-up met a second conflict
/// (`-32603`) after its effect; the scenario as drawn wrote the cancel first, and no stagger
/// moved the reads apart enough, yet 48 of 300 draws of its timing took the real order, to
/// the same answers, effects and final tasks.
pub fn order_variants(script: &Script) -> Vec<Script> {
    let (drawn, settled) = race_orders(script);
    // Each other draw of the faults' timing is for the scenario as drawn and, with races,
    // its settled order.
    let firsts: Vec<Script> = drawn
        .first()
        .into_iter()
        .chain(settled.first())
        .cloned()
        .collect();
    let races = !settled.is_empty();
    let mut variants = drawn;
    variants.extend(settled);
    // Draws 1..=n of one part of the timing, each for every script of `firsts`.
    let mut redraw = |n: u64, set: fn(&mut Script, u64)| {
        for draw in 1..=n {
            for first in &firsts {
                let mut redrawn = first.clone();
                set(&mut redrawn, draw);
                variants.push(redrawn);
            }
        }
    };
    if draws_faults(&script.steps) {
        redraw(FAULT_DRAWS, |s, d| s.file.fault_draw = d);
    }
    if races {
        redraw(TIMING_DRAWS, |s, d| s.file.timing_draw = d);
    }
    variants
}

/// How many other draws of its timing a scenario with a race is simulated under
/// ([`order_variants`]).
pub const TIMING_DRAWS: u64 = 16;

/// How many other draws of its faults' timing a scenario with a `latency` or `kill-at`
/// step is simulated under ([`order_variants`]).
pub const FAULT_DRAWS: u64 = 8;

/// Whether a `latency` or `kill-at` step is among `steps`, nested ones included.
fn draws_faults(steps: &[Step]) -> bool {
    use crate::faults::Action;
    steps.iter().any(|s| match s {
        Step::Concurrent(v) | Step::Sequence(v) => draws_faults(v),
        Step::Fault(action) => matches!(action, Action::LinkLatency(_) | Action::KillAt(_)),
        _ => false,
    })
}

/// The orders of `script`'s races (see [`order_variants`]): as drawn, then each of them
/// settled, in the same order (none when it has no races).
fn race_orders(script: &Script) -> (Vec<Script>, Vec<Script>) {
    let races: Vec<usize> = script
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s, Step::Concurrent(v) if !held(v)))
        .map(|(i, _)| i)
        .collect();
    if races.is_empty() {
        return (vec![script.clone()], Vec::new());
    }
    let per_race = |staggers: &[u64]| -> Vec<Option<(u64, bool)>> {
        let mut orders = vec![None];
        for &ms in staggers {
            orders.push(Some((ms, false)));
            orders.push(Some((ms, true)));
        }
        orders
    };
    let choices = [
        per_race(&STAGGERS_MS),
        per_race(&[STAGGERS_MS[1], STAGGERS_MS[4]]),
        per_race(&[STAGGERS_MS[4]]),
    ];
    let fits = |n: usize| {
        n.checked_pow(races.len() as u32)
            .is_some_and(|total| total <= ORDERS_MAX)
    };
    let combos: Vec<Vec<Option<(u64, bool)>>> = match choices.iter().find(|c| fits(c.len())) {
        Some(orders) => {
            // Every combination, the first race's order varying slowest.
            let mut combos = vec![Vec::new()];
            for _ in &races {
                combos = combos
                    .into_iter()
                    .flat_map(|prefix| {
                        orders.iter().map(move |o| {
                            let mut next = prefix.clone();
                            next.push(*o);
                            next
                        })
                    })
                    .collect();
            }
            combos
        }
        // Too many races to combine: one order for all of them at once.
        None => choices[0].iter().map(|o| vec![*o; races.len()]).collect(),
    };
    let settle = settle_ms(script);
    let ordered = |combo: &Vec<Option<(u64, bool)>>, settled: bool| {
        let mut steps = script.steps.clone();
        // From the last race back, so that an inserted wait moves no race still to come.
        for (&at, order) in races.iter().zip(combo).rev() {
            if let (Some((ms, reverse)), Step::Concurrent(v)) = (order, &steps[at]) {
                steps[at] = Step::Concurrent(stagger(v, *ms, *reverse));
            }
            if settled {
                steps.insert(at + 1, Step::WaitMs(settle));
            }
        }
        Script::from_steps(&script.file, &steps).expect("a staggered race is as valid as the race")
    };
    (
        combos.iter().map(|c| ordered(c, false)).collect(),
        combos.iter().map(|c| ordered(c, true)).collect(),
    )
}

/// How long a settled order ([`order_variants`]) waits after each race, simulated ms: two
/// turns of the scenario's agent (its longest think, then its compose and saves, taken as
/// 50 ms), what the calls of a three-call race can leave queued behind their answers.
pub fn settle_ms(script: &Script) -> u64 {
    let think_max = script.file.think_ms.map_or(60, |[lo, hi]| hi.max(lo));
    2 * (think_max + 50)
}

/// Counts of every distinct name in `names` (a scenario counts once per name).
pub fn tally<'a>(names: impl IntoIterator<Item = &'a String>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for n in names.into_iter().collect::<BTreeSet<_>>() {
        *out.entry(n.clone()).or_insert(0) += 1;
    }
    out
}

fn stagger(calls: &[Step], ms: u64, reverse: bool) -> Vec<Step> {
    let n = calls.len();
    calls
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let position = if reverse { n - 1 - i } else { i } as u64;
            if position == 0 {
                s.clone()
            } else {
                Step::Sequence(vec![Step::WaitMs(position * ms), s.clone()])
            }
        })
        .collect()
}

/// A held turn: a `concurrent` whose racing side awaits the turn's effect.
fn held(calls: &[Step]) -> bool {
    calls.iter().any(|s| match s {
        Step::Sequence(inner) => inner
            .iter()
            .any(|s| matches!(s, Step::Effect(EffectGate::Await, _))),
        _ => false,
    })
}

fn note_sends(steps: &[Step], sent: &mut BTreeSet<(String, u32)>) {
    for s in steps {
        match s {
            Step::Send(send) => {
                sent.insert((send.conversation.clone(), send.turn));
            }
            Step::Sequence(v) | Step::Concurrent(v) => note_sends(v, sent),
            _ => {}
        }
    }
}

fn is_call(step: &Step) -> bool {
    matches!(
        step,
        Step::Send(_) | Step::Cancel(_) | Step::Get(_) | Step::Subscribe(_) | Step::SetPush(_)
    )
}

fn target(step: &Step) -> Option<&Host> {
    match step {
        Step::Send(s) => s.to.as_ref(),
        Step::Cancel(t) | Step::Get(t) | Step::Subscribe(t) => t.to.as_ref(),
        Step::SetPush(p) => p.to.as_ref(),
        _ => None,
    }
}

/// A call named for a pattern: `next`, `next-stream`, `again` (a message sent before),
/// `cancel`, `subscribe`, `get`, or the step's kind.
fn call_word(step: &Step, sent: &BTreeSet<(String, u32)>) -> String {
    match step {
        Step::Send(s) if sent.contains(&(s.conversation.clone(), s.turn)) => "again".into(),
        Step::Send(s) if s.streaming == Some(true) => "next-stream".into(),
        Step::Send(_) => "next".into(),
        other => word(other),
    }
}

fn word(step: &Step) -> String {
    match step {
        Step::Send(_) => "send".into(),
        Step::Cancel(_) => "cancel".into(),
        Step::Get(_) => "get".into(),
        Step::Subscribe(_) => "subscribe".into(),
        Step::SetPush(_) => "set-push".into(),
        Step::Authorize(_) => "authorize".into(),
        Step::Concurrent(_) => "concurrent".into(),
        Step::Sequence(_) => "sequence".into(),
        Step::Fault(a) => a.to_step().map_or("fault".into(), |(k, _)| k.to_string()),
        Step::WaitMs(_) => "wait".into(),
        Step::UntilMs(_) => "until".into(),
        Step::Effect(gate, _) => gate.key().into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(steps: &str) -> Script {
        Script::parse(
            &format!("name = \"x\"\nmodel = \"reference\"\nreplicas = 2\n{steps}"),
            "x.toml",
        )
        .unwrap()
    }

    #[test]
    fn a_race_is_named_by_its_calls_and_replicas() {
        let s = script(
            r#"
[[step]]
send = { conversation = "c1", turn = 1 }
[[step]]
concurrent = [
  { send = { conversation = "c1", turn = 2, to = "replica-0" } },
  { send = { conversation = "c1", turn = 2, to = "replica-1" } },
  { cancel = { conversation = "c1", to = "replica-1" } },
]
[[step]]
concurrent = [
  { send = { conversation = "c1", turn = 2 } },
  { subscribe = { conversation = "c1", to = "replica-0" } },
]
"#,
        );
        assert_eq!(kinds(&s), ["send", "race", "race"]);
        assert_eq!(
            patterns(&s),
            ["race:again+cancel+next@2", "race:again+subscribe@r"]
        );
        // Each race as drawn or staggered both ways at every step, on its own: 11 x 11,
        // then the same orders settled.
        let variants = order_variants(&s);
        let per_race = 1 + 2 * STAGGERS_MS.len();
        let orders = 2 * per_race * per_race;
        assert_eq!(variants.len(), orders + 2 * TIMING_DRAWS as usize);
        // Then other draws of the timing of the scenario as drawn and settled, alternately:
        // the same calls, the same faults.
        let timing = &variants[orders..];
        assert!(timing.iter().all(|v| v.file.fault_draw == 0));
        assert_eq!(timing[0].steps, s.steps);
        assert_eq!(timing[1].steps, variants[orders / 2].steps);
        assert_eq!(
            timing
                .iter()
                .map(|v| v.file.timing_draw)
                .collect::<Vec<_>>(),
            (1..=TIMING_DRAWS).flat_map(|d| [d, d]).collect::<Vec<_>>()
        );
        assert_eq!(variants[0].steps, s.steps);
        // A settled order waits after each race; its calls are the ordered one's.
        let settle = Step::WaitMs(settle_ms(&s));
        let settled = &variants[per_race * per_race + 2 * per_race].steps;
        assert_eq!(settled.len(), s.steps.len() + 2);
        assert_eq!(settled[1], variants[2 * per_race].steps[1]);
        assert_eq!((&settled[2], &settled[4]), (&settle, &settle));
        assert_eq!(settled[3], s.steps[2]);
        // The first race varies slowest: variant 2 * 11 is its 2 ms stagger reversed, the
        // second race as drawn.
        assert_eq!(variants[2 * per_race].steps[2], s.steps[2]);
        match &variants[2 * per_race].steps[1] {
            Step::Concurrent(v) => {
                assert!(matches!(&v[0], Step::Sequence(w) if w[0] == Step::WaitMs(4)));
                assert!(matches!(&v[2], Step::Cancel(_)));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_held_turn_is_named_by_its_racer_and_never_staggered() {
        let s = script(
            r#"
[[step]]
send = { conversation = "c1", turn = 1 }
[[step]]
hold-effect = { conversation = "c1", turn = 2 }
[[step]]
concurrent = [
  { send = { conversation = "c1", turn = 2, to = "replica-0" } },
  { sequence = [
    { await-effect = { conversation = "c1", turn = 2 } },
    { cancel = { conversation = "c1" } },
    { release-effect = { conversation = "c1", turn = 2 } },
  ] },
]
"#,
        );
        assert_eq!(kinds(&s), ["send", "held"]);
        assert_eq!(patterns(&s), ["held:cancel"]);
        assert_eq!(order_variants(&s).len(), 1);
    }

    #[test]
    fn a_race_is_simulated_under_other_draws_of_its_timing() {
        let s = script(
            r#"
[[step]]
send = { conversation = "c1", turn = 1 }
[[step]]
concurrent = [
  { send = { conversation = "c1", turn = 2, to = "replica-0" } },
  { send = { conversation = "c1", turn = 2, to = "replica-1" } },
]
"#,
        );
        let run = |s: &Script| crate::sim::Sim::from_scenario(s).unwrap().run();
        let drawn = run(&s);
        let mut again = s.clone();
        again.file.timing_draw = 0;
        assert_eq!(run(&again).trace_hash, drawn.trace_hash);
        // Other draws take other timings of the same calls: the same tasks, another trace.
        let redrawn: Vec<_> = (1..=TIMING_DRAWS)
            .map(|d| {
                let mut v = s.clone();
                v.file.timing_draw = d;
                run(&v)
            })
            .collect();
        assert!(redrawn.iter().any(|r| r.trace_hash != drawn.trace_hash));
        let tasks = |r: &crate::world::RunRecord| r.final_tasks.keys().cloned().collect::<Vec<_>>();
        assert!(redrawn.iter().all(|r| tasks(r) == tasks(&drawn)));
    }

    #[test]
    fn a_latency_fault_is_simulated_under_other_draws_of_its_delays() {
        let s = script(
            r#"
[[step]]
latency = { between = ["router", "replica-0"], max-ms = 200 }
[[step]]
send = { conversation = "c1", turn = 1, to = "replica-0" }
[[step]]
send = { conversation = "c1", turn = 2, to = "replica-0" }
"#,
        );
        let variants = order_variants(&s);
        assert_eq!(variants.len(), 1 + FAULT_DRAWS as usize);
        let draws: Vec<u64> = variants.iter().map(|v| v.file.fault_draw).collect();
        assert_eq!(draws, (0..=FAULT_DRAWS).collect::<Vec<_>>());
        // Another draw delays the slowed link's segments otherwise, and only them: the
        // same scenario without the fault runs the same under every draw.
        let hash = |s: &Script| crate::sim::Sim::from_scenario(s).unwrap().run().trace_hash;
        let hashes: BTreeSet<String> = variants.iter().map(hash).collect();
        assert!(hashes.len() > 1, "every draw ran alike");
        let calm = Script::from_steps(&s.file, &s.steps[1..]).unwrap();
        let mut redrawn = calm.clone();
        redrawn.file.fault_draw = 5;
        assert_eq!(hash(&calm), hash(&redrawn));
    }
}
