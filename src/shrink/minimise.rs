//! Minimising a scenario that reproduces: the [`Oracle`] that runs (and caches) candidates,
//! and the [`Minimiser`]'s passes: slice and ddmin over timed steps, fewer replicas,
//! removing leaves, and simplifying (shift, unpin, renumber, simpler leaves).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};

use super::{ddmin, render, tree, Layout, Timed, RUNS_MAX};
use crate::check::Invariant;
use crate::host::Host;
use crate::model::Profile;
use crate::scenario::{ScenarioFile, Script, SendStep, Step, TaskStep};
use crate::sim::{RunSummary, Sim};

/// Runs candidate scenarios: does this one still violate the target invariant?
pub struct Oracle {
    base: ScenarioFile,
    profile: Profile,
    invariant: Invariant,
    runs: Cell<usize>,
    cache: RefCell<BTreeMap<String, bool>>,
}

impl Oracle {
    /// An oracle for scenarios built on `base` (its steps are ignored) with `profile`.
    pub fn new(base: ScenarioFile, profile: Profile, invariant: Invariant) -> Oracle {
        Oracle {
            base,
            profile,
            invariant,
            runs: Cell::new(0),
            cache: RefCell::default(),
        }
    }

    /// Scenario runs so far.
    pub fn runs(&self) -> usize {
        self.runs.get()
    }

    /// The scenario of `steps` on `replicas` replicas, if it is valid.
    pub fn script(&self, replicas: usize, steps: &[Step]) -> Option<Script> {
        let mut base = self.base.clone();
        base.replicas = replicas;
        Script::from_steps(&base, steps).ok()
    }

    /// Runs a scenario once; `None` when the run panicked.
    pub fn run(&self, script: &Script) -> Option<RunSummary> {
        self.runs.set(self.runs.get() + 1);
        let checked = Sim::scenario_builder(script)
            .model(self.profile.clone())
            .build()
            .ok()?
            .check();
        checked.record.is_some().then_some(checked.summary)
    }

    /// Whether `steps` on `replicas` replicas still violate the target invariant.
    pub fn fails(&self, replicas: usize, steps: &[Step]) -> bool {
        let Some(script) = self.script(replicas, steps) else {
            return false;
        };
        let key = script.to_toml();
        if let Some(v) = self.cache.borrow().get(&key) {
            return *v;
        }
        if self.runs.get() >= RUNS_MAX {
            return false;
        }
        let v = self
            .run(&script)
            .is_some_and(|s| s.error.is_none() && s.violated().contains(&self.invariant));
        self.cache.borrow_mut().insert(key, v);
        v
    }
}

/// Replicas named by a step (`to`, fault hosts).
fn replicas_named(step: &Step, out: &mut BTreeSet<usize>) {
    let mut add = |h: &Host| {
        if let Some(i) = h.replica_index() {
            out.insert(i);
        }
    };
    match step {
        Step::Send(s) => s.to.iter().for_each(&mut add),
        Step::Cancel(s) | Step::Get(s) | Step::Subscribe(s) => s.to.iter().for_each(&mut add),
        Step::SetPush(s) => s.to.iter().for_each(&mut add),
        Step::Authorize(_) => {}
        Step::Fault(a) => a.hosts().into_iter().for_each(add),
        Step::Concurrent(v) | Step::Sequence(v) => v.iter().for_each(|s| replicas_named(s, out)),
        Step::WaitMs(_) | Step::UntilMs(_) | Step::Effect(..) => {}
    }
}

/// A copy of a step with every replica renamed by `map`.
fn rename_replicas(step: &Step, map: &BTreeMap<usize, usize>) -> Step {
    let host = |h: &Host| match h.replica_index().and_then(|i| map.get(&i)) {
        Some(j) => Host::Replica(*j),
        None => h.clone(),
    };
    let to = |t: &Option<Host>| t.as_ref().map(host);
    match step {
        Step::Send(s) => Step::Send(SendStep {
            to: to(&s.to),
            ..s.clone()
        }),
        Step::Cancel(s) => Step::Cancel(TaskStep {
            to: to(&s.to),
            ..s.clone()
        }),
        Step::Get(s) => Step::Get(TaskStep {
            to: to(&s.to),
            ..s.clone()
        }),
        Step::Subscribe(s) => Step::Subscribe(TaskStep {
            to: to(&s.to),
            ..s.clone()
        }),
        Step::Fault(a) => Step::Fault(a.renamed(&host)),
        Step::Concurrent(v) => {
            Step::Concurrent(v.iter().map(|s| rename_replicas(s, map)).collect())
        }
        Step::Sequence(v) => Step::Sequence(v.iter().map(|s| rename_replicas(s, map)).collect()),
        other => other.clone(),
    }
}

/// Conversations renamed `c1, c2, ...` in order of appearance (`rename`), turns renumbered
/// `1, 2, ...` per conversation in their order (`renumber`).
fn renumbered(steps: &[Step], rename: bool, renumber: bool) -> Vec<Step> {
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    let mut turns: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    for p in tree::leaves(steps) {
        let (c, t) = match tree::get(steps, &p) {
            Step::Send(s) => (&s.conversation, Some(s.turn)),
            Step::Cancel(s) | Step::Get(s) | Step::Subscribe(s) | Step::Authorize(s) => {
                (&s.conversation, None)
            }
            Step::SetPush(s) => (&s.conversation, None),
            _ => continue,
        };
        let next = format!("c{}", names.len() + 1);
        names.entry(c.clone()).or_insert(next);
        turns.entry(c.clone()).or_default().extend(t);
    }
    let conv = |c: &String| {
        if rename {
            names.get(c).cloned().unwrap_or_else(|| c.clone())
        } else {
            c.clone()
        }
    };
    let turn = |c: &String, t: u32| {
        if renumber {
            turns
                .get(c)
                .and_then(|set| set.iter().position(|x| *x == t))
                .map_or(t, |i| i as u32 + 1)
        } else {
            t
        }
    };
    tree::map(steps, &mut |s| match s {
        Step::Send(x) => Step::Send(SendStep {
            conversation: conv(&x.conversation),
            turn: turn(&x.conversation, x.turn),
            ..x.clone()
        }),
        Step::Cancel(x) => Step::Cancel(TaskStep {
            conversation: conv(&x.conversation),
            ..x.clone()
        }),
        Step::Get(x) => Step::Get(TaskStep {
            conversation: conv(&x.conversation),
            ..x.clone()
        }),
        Step::Subscribe(x) => Step::Subscribe(TaskStep {
            conversation: conv(&x.conversation),
            ..x.clone()
        }),
        Step::Authorize(x) => Step::Authorize(TaskStep {
            conversation: conv(&x.conversation),
            ..x.clone()
        }),
        other => other.clone(),
    })
}

/// Simpler versions of one leaf: without `message_id`, blocking, a shorter wait.
fn simpler(step: &Step) -> Vec<Step> {
    let mut out = Vec::new();
    match step {
        Step::Send(s) => {
            if s.message_id.is_some() {
                out.push(Step::Send(SendStep {
                    message_id: None,
                    ..s.clone()
                }));
            }
            if s.blocking.is_some() || s.streaming.is_some() {
                out.push(Step::Send(SendStep {
                    blocking: None,
                    streaming: None,
                    ..s.clone()
                }));
            }
        }
        Step::WaitMs(ms) if *ms > 1 => out.push(Step::WaitMs(ms / 2)),
        _ => {}
    }
    out
}

/// Every request routed by the scenario's routing instead of pinned with `to`.
fn unpinned(steps: &[Step]) -> Vec<Step> {
    tree::map(steps, &mut |s| match s {
        Step::Send(x) => Step::Send(SendStep {
            to: None,
            ..x.clone()
        }),
        Step::Cancel(x) => Step::Cancel(TaskStep {
            to: None,
            ..x.clone()
        }),
        Step::Get(x) => Step::Get(TaskStep {
            to: None,
            ..x.clone()
        }),
        Step::Subscribe(x) => Step::Subscribe(TaskStep {
            to: None,
            ..x.clone()
        }),
        other => other.clone(),
    })
}

/// Every `until-ms` moved earlier by the smallest one (the scenario starts at its first
/// timed step); `until-ms = 0` steps are dropped.
fn shifted(steps: &[Step]) -> Vec<Step> {
    let first = tree::leaves(steps)
        .iter()
        .filter_map(|p| match tree::get(steps, p) {
            Step::UntilMs(ms) => Some(*ms),
            _ => None,
        })
        .min()
        .unwrap_or(0);
    if first == 0 {
        return steps.to_vec();
    }
    tree::normalise(tree::map(steps, &mut |s| match s {
        Step::UntilMs(ms) if *ms == first => Step::Sequence(Vec::new()),
        Step::UntilMs(ms) => Step::UntilMs(ms - first),
        other => other.clone(),
    }))
}

/// The minimisation after a reproducing conversion.
pub(super) struct Minimiser<'a> {
    pub(super) oracle: &'a Oracle,
    pub(super) replicas: usize,
    pub(super) notes: Vec<String>,
}

impl Minimiser<'_> {
    fn fails(&self, steps: &[Step]) -> bool {
        self.oracle.fails(self.replicas, steps)
    }

    /// Slice and ddmin over events; then the simplest layout that still fails.
    pub(super) fn events(
        &mut self,
        events: Vec<Timed>,
        layout: Layout,
        named: &BTreeSet<String>,
    ) -> (Vec<Timed>, Layout) {
        let mut events = events;
        if !named.is_empty() {
            let slice: Vec<Timed> = events
                .iter()
                .filter(|e| e.conversation.as_ref().is_none_or(|c| named.contains(c)))
                .cloned()
                .collect();
            if slice.len() < events.len() && self.fails(&render(&slice, layout)) {
                self.notes.push(format!(
                    "kept only {} (the conversations the violation names) and the faults: {} -> {} events",
                    named.iter().cloned().collect::<Vec<_>>().join(", "),
                    events.len(),
                    slice.len()
                ));
                events = slice;
            }
        }
        let oracle = self.oracle;
        let replicas = self.replicas;
        events = ddmin(events, &mut |sub| {
            oracle.fails(replicas, &render(sub, layout))
        });
        let mut layout = layout;
        for simpler in [Layout::Sequential, Layout::Timed] {
            if simpler < layout && self.fails(&render(&events, simpler)) {
                self.notes.push(format!(
                    "the {} layout still fails, so the file uses it",
                    simpler.word()
                ));
                layout = simpler;
                events = ddmin(events, &mut |sub| {
                    oracle.fails(replicas, &render(sub, layout))
                });
                break;
            }
        }
        (events, layout)
    }

    /// Fewer replicas: renumber the ones used from 0, then try merging them.
    pub(super) fn replicas(&mut self, steps: Vec<Step>) -> Vec<Step> {
        let mut steps = steps;
        let before = self.replicas;
        let mut used = BTreeSet::new();
        for s in &steps {
            replicas_named(s, &mut used);
        }
        let dense: BTreeMap<usize, usize> = used.iter().enumerate().map(|(j, i)| (*i, j)).collect();
        let renamed: Vec<Step> = steps.iter().map(|s| rename_replicas(s, &dense)).collect();
        let needed = used.len().max(1);
        if needed < self.replicas || renamed != steps {
            let r0 = self.replicas;
            self.replicas = needed;
            if self.fails(&renamed) {
                steps = renamed;
            } else {
                self.replicas = r0;
            }
        }
        // Merge: replica-i becomes replica-(i % r) on fewer replicas.
        for r in 1..self.replicas {
            let map: BTreeMap<usize, usize> = (0..self.replicas).map(|i| (i, i % r)).collect();
            let merged: Vec<Step> = steps.iter().map(|s| rename_replicas(s, &map)).collect();
            let r0 = self.replicas;
            self.replicas = r;
            if self.fails(&merged) {
                steps = merged;
                break;
            }
            self.replicas = r0;
        }
        if self.replicas < before {
            self.notes
                .push(format!("replicas: {before} -> {}", self.replicas));
        }
        steps
    }

    /// Removes single leaves chosen by `pick`, until none can go.
    pub(super) fn remove_leaves(
        &mut self,
        steps: Vec<Step>,
        pick: &dyn Fn(&Step) -> bool,
    ) -> Vec<Step> {
        let mut steps = steps;
        let mut i = 0;
        loop {
            let leaves = tree::leaves(&steps);
            let Some(path) = leaves.get(i) else {
                break;
            };
            if pick(tree::get(&steps, path)) {
                let candidate = tree::replace(&steps, path, None);
                if self.fails(&candidate) {
                    steps = candidate;
                    continue;
                }
            }
            i += 1;
        }
        steps
    }

    /// Renumbered conversations and turns, simpler leaves, and no `to` when no request
    /// needs one (pins are kept all together otherwise: they tell the story, and they do
    /// not depend on how the routing strategy draws).
    pub(super) fn simplify(&mut self, steps: Vec<Step>) -> Vec<Step> {
        let mut steps = steps;
        let early = shifted(&steps);
        if early != steps && self.fails(&early) {
            self.notes
                .push("the timed steps still fail when started at 0 ms".into());
            steps = early;
        }
        let free = unpinned(&steps);
        if free != steps && self.fails(&free) {
            self.notes
                .push("no request needs `to`: the routing strategy places them".into());
            steps = free;
        }
        for (rename, renumber) in [(true, true), (false, true), (true, false)] {
            let candidate = renumbered(&steps, rename, renumber);
            if candidate != steps && self.fails(&candidate) {
                steps = candidate;
                break;
            }
        }
        let mut i = 0;
        loop {
            let leaves = tree::leaves(&steps);
            let Some(path) = leaves.get(i) else {
                break;
            };
            let mut changed = false;
            for s in simpler(tree::get(&steps, path)) {
                let candidate = tree::replace(&steps, path, Some(s));
                if self.fails(&candidate) {
                    steps = candidate;
                    changed = true;
                    break;
                }
            }
            if !changed {
                i += 1;
            }
        }
        steps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renumbering_starts_conversations_and_turns_at_one() {
        let send = |c: &str, t: u32| Step::Send(SendStep::new(c, t));
        let out = renumbered(&[send("c7", 3), send("c2", 2), send("c7", 4)], true, true);
        assert_eq!(out, vec![send("c1", 1), send("c2", 1), send("c1", 2)]);
    }
}
