//! Runs held against a file's `[expect]`: what `check` (and `live`) decide, and why.
//!
//! A check must be able to fail, so besides "exactly the expected violations" it asks:
//!
//! - did the runs exercise anything at all? A run (in a sweep: a model × routing
//!   combination) in which every invariant is `unknown` proves nothing, and fails unless the
//!   file sets `allow-unexercised = true`;
//! - were the invariants `[expect] exercised = [...]` names exercised at least once (in a
//!   sweep: in every combination)?
//! - an expected violation that did not happen is told apart by whether its invariant was
//!   exercised: `held` (exercised, never violated) or `unexercised` (never reached).
//!
//! Each reason is a [`Problem`]; no problem means the expectation is met. In a sweep, the
//! expected violations are per model, as before (a model's expected violation must show in
//! at least one of its routings); a missing one is a problem of each of the model's
//! combinations, so every report that lists combinations shows it.

use std::fmt;

use crate::check::Verdict;
use crate::experiment::Experiment;
use crate::scenario::Expect;
use crate::world::RunRecord;

use super::RunSummary;

/// One reason an expectation does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// A run did not finish (a panic, a refused combination, the time budget).
    Error { seed: u64, error: String },
    /// An invariant was violated that `[expect]` does not list.
    Unexpected {
        invariant: crate::check::Invariant,
        runs_violated: u64,
        runs: u64,
        seed: u64,
        detail: String,
    },
    /// An expected violation did not happen although the invariant was exercised.
    Held {
        invariant: String,
        runs_exercised: u64,
    },
    /// An expected violation did not happen because nothing exercised the invariant.
    Unexercised { invariant: String },
    /// An invariant `[expect] exercised` names was never exercised.
    NotExercised { invariant: String },
    /// No invariant at all was exercised, and `allow-unexercised` is not set.
    Vacuous { runs: u64 },
    /// A call did not answer as `[[expect.call]]` says, or a task did not end as
    /// `[[expect.task]]` says.
    Call {
        /// `send c1#2 (attempt 2)`, `the task of c1`.
        call: String,
        /// What happened instead.
        why: String,
    },
    /// A run's client could not get more turns done than `[expect]` allows
    /// (`max-refused-continuations`, `max-failed-turns`).
    Unavailable {
        /// `refused continuations` or `failed turns`.
        what: &'static str,
        most: u64,
        got: u64,
        seed: u64,
    },
}

impl Problem {
    /// The seed of a run that shows the problem, for a reproduce command.
    pub fn seed(&self) -> Option<u64> {
        match self {
            Problem::Error { seed, .. }
            | Problem::Unexpected { seed, .. }
            | Problem::Unavailable { seed, .. } => Some(*seed),
            _ => None,
        }
    }

    /// A short word for the kind of problem (`unexpected`, `unexercised`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Problem::Error { .. } => "error",
            Problem::Unexpected { .. } => "unexpected",
            Problem::Held { .. } => "held",
            Problem::Unexercised { .. } => "unexercised",
            Problem::NotExercised { .. } => "not-exercised",
            Problem::Vacuous { .. } => "vacuous",
            Problem::Unavailable { .. } => "unavailable",
            Problem::Call { .. } => "call",
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Error { seed, error } => write!(f, "seed {seed} did not finish: {error}"),
            Problem::Unexpected {
                invariant,
                runs_violated,
                runs,
                seed,
                detail,
            } => {
                if *runs == 1 {
                    write!(f, "{invariant} violated, not expected: {detail}")
                } else {
                    write!(
                        f,
                        "{invariant} violated in {runs_violated}/{runs} runs, not expected; seed {seed}: {detail}"
                    )
                }
            }
            Problem::Held {
                invariant,
                runs_exercised,
            } => write!(
                f,
                "{invariant} was expected to be violated, but held in the {runs_exercised} run{} that exercised it",
                if *runs_exercised == 1 { "" } else { "s" }
            ),
            Problem::Unexercised { invariant } => write!(
                f,
                "{invariant} was expected to be violated, but was never exercised (unknown): the expectation cannot be checked"
            ),
            Problem::NotExercised { invariant } => write!(
                f,
                "{invariant} must be exercised ([expect] exercised), but no run exercised it"
            ),
            Problem::Call { call, why } => write!(f, "{call} {why}"),
            Problem::Unavailable {
                what,
                most,
                got,
                seed,
            } => write!(
                f,
                "{got} {what} in seed {seed}, more than the {most} [expect] allows"
            ),
            Problem::Vacuous { runs } => write!(
                f,
                "{} exercised no invariant at all (every verdict unknown), so it proves nothing; set [expect] allow-unexercised = true if that is intended",
                if *runs == 1 {
                    "the run".to_string()
                } else {
                    format!("none of the {runs} runs")
                }
            ),
        }
    }
}

/// One run held against a file's `[expect]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectOutcome {
    /// The invariants `[expect]` names as violated, sorted.
    pub expected: Vec<String>,
    /// The invariants the run violated, sorted.
    pub got: Vec<String>,
    /// No problem: exactly the expected violations, each required invariant exercised,
    /// something exercised at all (or allowed not to be), and the run finished.
    pub met: bool,
    /// Why not, when not met.
    pub problems: Vec<Problem>,
}

/// Holds one run's summary against a file's expectations; `record` (the run's history) is
/// what `[[expect.call]]` and `[[expect.task]]` are judged on, when the run finished.
pub fn judge(expect: &Expect, summary: &RunSummary, record: Option<&RunRecord>) -> ExpectOutcome {
    let runs = [summary];
    let mut problems = problems(expect, &runs, &runs);
    if let Some(record) = record {
        problems.extend(super::calls::problems(expect, record));
    }
    let mut expected = expect.violations.clone();
    expected.sort();
    expected.dedup();
    ExpectOutcome {
        expected,
        got: violated(&runs),
        met: problems.is_empty(),
        problems,
    }
}

/// One model × routing combination of a sweep, held against the experiment's `[expect]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComboOutcome {
    pub model: String,
    pub routing: String,
    /// Runs of the combination.
    pub runs: u64,
    /// The model's expected violations, sorted.
    pub expected: Vec<String>,
    /// The invariants the combination violated, sorted.
    pub got: Vec<String>,
    /// Why the combination fails its expectation (none: it holds).
    pub problems: Vec<Problem>,
}

impl ComboOutcome {
    /// Whether the combination meets its expectation.
    pub fn met(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Holds every combination of a sweep against the experiment's `[expect]` (none: every
/// invariant must hold, and something must be exercised). `runs` as a sweep returns them.
pub fn judge_sweep(exp: &Experiment, runs: &[RunSummary]) -> Vec<ComboOutcome> {
    let mut combos: Vec<(&str, &str, Vec<&RunSummary>)> = Vec::new();
    for r in runs {
        match combos
            .iter_mut()
            .find(|(m, x, _)| *m == r.model && *x == r.routing)
        {
            Some((_, _, v)) => v.push(r),
            None => combos.push((&r.model, &r.routing, vec![r])),
        }
    }
    combos
        .iter()
        .map(|(model, routing, combo)| {
            let expect = exp.expect_for(model).unwrap_or_default();
            let model_runs: Vec<&RunSummary> = runs.iter().filter(|r| r.model == *model).collect();
            let mut expected = expect.violations.clone();
            expected.sort();
            expected.dedup();
            ComboOutcome {
                model: model.to_string(),
                routing: routing.to_string(),
                runs: combo.len() as u64,
                expected,
                got: violated(combo),
                problems: problems(&expect, combo, &model_runs),
            }
        })
        .collect()
}

/// Invariants violated in any of `runs`, sorted.
fn violated(runs: &[&RunSummary]) -> Vec<String> {
    let mut got: Vec<String> = runs
        .iter()
        .flat_map(|r| r.violated())
        .map(|i| i.to_string())
        .collect();
    got.sort();
    got.dedup();
    got
}

/// (runs violating, runs exercising) `invariant` among `runs`.
fn tally(runs: &[&RunSummary], invariant: &str) -> (u64, u64) {
    let mut violated = 0;
    let mut exercised = 0;
    for r in runs {
        if let Some(i) = r.invariants.iter().find(|i| i.name == invariant) {
            violated += u64::from(i.verdict == Verdict::Fail);
            exercised += u64::from(i.verdict != Verdict::Unknown);
        }
    }
    (violated, exercised)
}

/// Why `combo` does not meet `expect`; expected violations are looked for in `scope` (the
/// combination itself for a scenario, every run of the model in a sweep).
fn problems(expect: &Expect, combo: &[&RunSummary], scope: &[&RunSummary]) -> Vec<Problem> {
    let mut out = Vec::new();
    for r in combo {
        if let Some(error) = &r.error {
            out.push(Problem::Error {
                seed: r.seed,
                error: error.clone(),
            });
        }
    }
    let mut names: Vec<crate::check::Invariant> = Vec::new();
    for r in combo {
        for i in &r.invariants {
            if !names.contains(&i.name) {
                names.push(i.name);
            }
        }
    }
    for name in &names {
        if expect.violations.iter().any(|e| name == e) {
            continue;
        }
        let Some((r, detail)) = combo.iter().find_map(|r| {
            r.invariants
                .iter()
                .find(|i| i.name == *name && i.verdict == Verdict::Fail)
                .map(|i| (r, i.first.clone().unwrap_or_default()))
        }) else {
            continue;
        };
        out.push(Problem::Unexpected {
            invariant: *name,
            runs_violated: tally(combo, name.as_str()).0,
            runs: combo.len() as u64,
            seed: r.seed,
            detail,
        });
    }
    let mut seen: Vec<&str> = Vec::new();
    for name in &expect.violations {
        if seen.contains(&name.as_str()) {
            continue;
        }
        seen.push(name);
        let (violated, exercised) = tally(scope, name);
        if violated > 0 {
            continue;
        }
        out.push(if exercised == 0 {
            Problem::Unexercised {
                invariant: name.clone(),
            }
        } else {
            Problem::Held {
                invariant: name.clone(),
                runs_exercised: exercised,
            }
        });
    }
    for r in combo {
        let a = r.availability;
        for (what, most, got) in [
            (
                "refused continuations",
                expect.max_refused_continuations,
                a.refused_continuations,
            ),
            ("failed turns", expect.max_failed_turns, a.failed_turns),
        ] {
            if let Some(most) = most.filter(|m| got > *m) {
                out.push(Problem::Unavailable {
                    what,
                    most,
                    got,
                    seed: r.seed,
                });
            }
        }
    }
    for name in &expect.exercised {
        if tally(combo, name).1 == 0 {
            out.push(Problem::NotExercised {
                invariant: name.clone(),
            });
        }
    }
    let anything = combo
        .iter()
        .any(|r| r.invariants.iter().any(|i| i.verdict != Verdict::Unknown));
    let finished = combo.iter().any(|r| r.error.is_none());
    if !anything && finished && !expect.allow_unexercised {
        out.push(Problem::Vacuous {
            runs: combo.len() as u64,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::InputError;
    use crate::sim::InvariantResult;

    fn run(seed: u64, verdicts: &[(&'static str, Verdict)]) -> RunSummary {
        let mut r = RunSummary::refused("m", "round-robin", seed, &InputError::new("t", "t"));
        r.error = None;
        r.invariants = verdicts
            .iter()
            .map(|(name, v)| InvariantResult {
                name: crate::check::Invariant::new(name),
                verdict: *v,
                violations: u64::from(*v == Verdict::Fail),
                exercised: u64::from(*v != Verdict::Unknown),
                first: (*v == Verdict::Fail).then(|| format!("{name} broke")),
                note: None,
            })
            .collect();
        r
    }

    fn expect(violations: &[&str]) -> Expect {
        Expect {
            violations: violations.iter().map(|s| s.to_string()).collect(),
            ..Expect::default()
        }
    }

    #[test]
    fn a_run_that_exercised_nothing_fails_unless_allowed() {
        let r = run(
            0,
            &[
                ("no-lost-writes", Verdict::Unknown),
                ("liveness", Verdict::Unknown),
            ],
        );
        let j = judge(&expect(&[]), &r, None);
        assert!(!j.met);
        assert!(matches!(j.problems[..], [Problem::Vacuous { runs: 1 }]));
        assert!(j.problems[0].to_string().contains("exercised no invariant"));
        let allowed = Expect {
            allow_unexercised: true,
            ..Expect::default()
        };
        assert!(judge(&allowed, &r, None).met);
    }

    #[test]
    fn an_expected_violation_never_exercised_is_unexercised_not_missing() {
        let r = run(
            0,
            &[
                ("no-lost-writes", Verdict::Unknown),
                ("liveness", Verdict::Pass),
            ],
        );
        let j = judge(&expect(&["no-lost-writes"]), &r, None);
        assert_eq!(
            j.problems,
            vec![Problem::Unexercised {
                invariant: "no-lost-writes".into()
            }]
        );
        let r = run(0, &[("no-lost-writes", Verdict::Pass)]);
        let j = judge(&expect(&["no-lost-writes"]), &r, None);
        assert!(matches!(j.problems[..], [Problem::Held { .. }]), "{j:?}");
    }

    #[test]
    fn exercised_names_invariants_that_must_be_reached() {
        let r = run(
            0,
            &[
                ("no-lost-writes", Verdict::Pass),
                ("liveness", Verdict::Unknown),
            ],
        );
        let e = Expect {
            exercised: vec!["liveness".into(), "no-lost-writes".into()],
            ..Expect::default()
        };
        let j = judge(&e, &r, None);
        assert_eq!(
            j.problems,
            vec![Problem::NotExercised {
                invariant: "liveness".into()
            }]
        );
    }

    fn sweep_run(model: &str, routing: &str, seed: u64, v: Verdict) -> RunSummary {
        let mut r = run(
            seed,
            &[("no-lost-writes", v), ("liveness", Verdict::Unknown)],
        );
        r.model = model.into();
        r.routing = routing.into();
        r
    }

    #[test]
    fn a_sweep_is_judged_per_combination() {
        let exp = Experiment::parse(
            "name = \"s\"\nmodels = [\"reference\", \"a2a-python-1.1\"]\n\
             routing = [\"round-robin\", \"random\"]\nseeds = { start = 0, count = 2 }\n\
             [expect.\"a2a-python-1.1\"]\nviolations = [\"no-lost-writes\"]\n",
            "s.toml",
            None,
        )
        .unwrap();
        let (u, p, f) = (Verdict::Unknown, Verdict::Pass, Verdict::Fail);
        let mut runs = vec![
            // Every run unknown: `violations = []` must not pass.
            sweep_run("reference", "round-robin", 0, u),
            sweep_run("reference", "round-robin", 1, u),
            sweep_run("reference", "random", 0, p),
            sweep_run("reference", "random", 1, u),
            // The model's expected violation shows under one routing: enough.
            sweep_run("a2a-python-1.1", "round-robin", 0, f),
            sweep_run("a2a-python-1.1", "round-robin", 1, p),
            sweep_run("a2a-python-1.1", "random", 0, p),
            sweep_run("a2a-python-1.1", "random", 1, p),
        ];
        let combos = judge_sweep(&exp, &runs);
        let problems: Vec<&[Problem]> = combos.iter().map(|c| &c.problems[..]).collect();
        assert!(
            matches!(problems[0], [Problem::Vacuous { runs: 2 }]),
            "{problems:?}"
        );
        assert!(problems[1..].iter().all(|p| p.is_empty()), "{problems:?}");
        // Without it, each of the model's combinations says it held.
        runs[4] = sweep_run("a2a-python-1.1", "round-robin", 0, p);
        let combos = judge_sweep(&exp, &runs);
        for c in &combos[2..] {
            assert!(
                matches!(
                    &c.problems[..],
                    [Problem::Held {
                        runs_exercised: 4,
                        ..
                    }]
                ),
                "{c:?}"
            );
        }
    }

    #[test]
    fn exactly_the_expected_violations_meet_the_expectation() {
        let r = run(
            3,
            &[
                ("no-lost-writes", Verdict::Fail),
                ("liveness", Verdict::Fail),
            ],
        );
        assert!(judge(&expect(&["liveness", "no-lost-writes"]), &r, None).met);
        let j = judge(&expect(&["no-lost-writes"]), &r, None);
        assert!(
            matches!(
                &j.problems[..],
                [Problem::Unexpected {
                    invariant: crate::check::Invariant::LIVENESS,
                    seed: 3,
                    ..
                }]
            ),
            "{j:?}"
        );
    }
}
