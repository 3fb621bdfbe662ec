//! `[[expect.call]]` and `[[expect.task]]` held against a run's history
//! ([`crate::scenario::calls`] says what they mean): each one that does not hold is a
//! [`Problem::Call`] saying what the call answered instead.

use crate::client::history::{Op, OpKind, Outcome};
use crate::protocol::state_word;
use crate::scenario::{CallExpect, CallMethod, CallOutcome, Expect};
use crate::world::RunRecord;

use super::Problem;

/// Whether `op` is a call of the kind `c` names (any attempt).
fn matches(c: &CallExpect, op: &Op) -> bool {
    let kind_matches = match (&op.kind, c.method) {
        (OpKind::Send { turn, .. }, CallMethod::Send) => c.turn.is_none_or(|t| t == *turn),
        (OpKind::Get { .. }, CallMethod::Get)
        | (OpKind::Cancel { .. }, CallMethod::Cancel)
        | (OpKind::Subscribe { .. }, CallMethod::Subscribe)
        | (OpKind::SetPush { .. }, CallMethod::SetPush) => true,
        _ => false,
    };
    kind_matches && op.kind.conversation() == c.conversation
}

/// The outcome in `[expect]`'s words, with a refusal's code.
fn outcome_words(o: &Outcome) -> String {
    match o {
        Outcome::Ok => "ok".into(),
        Outcome::Fail { code, message } => format!("fail {code} ({message})"),
        Outcome::Info { why } => format!("info ({why})"),
    }
}

/// Why `op` does not answer as `c` expects, if it does not.
fn mismatch(c: &CallExpect, op: &Op) -> Option<String> {
    let got = match &op.outcome {
        Outcome::Ok => CallOutcome::Ok,
        Outcome::Fail { .. } => CallOutcome::Fail,
        Outcome::Info { .. } => CallOutcome::Info,
    };
    let want = c.outcome.or(c.code.map(|_| CallOutcome::Fail));
    let other_code = matches!(
        (c.code, &op.outcome),
        (Some(code), Outcome::Fail { code: sent, .. }) if code != *sent
    );
    if want.is_some_and(|w| w != got) || other_code {
        return Some(format!("answered {}", outcome_words(&op.outcome)));
    }
    if let Some(state) = &c.state {
        let shown = op.acknowledged().map(|t| state_word(&t.state));
        if shown.as_deref() != Some(state.as_str()) {
            return Some(match shown {
                Some(s) => format!("showed the task {s}"),
                None => format!("showed no task ({})", outcome_words(&op.outcome)),
            });
        }
    }
    if let Some(states) = &c.stream_states {
        let seen: Vec<String> = op.stream_states.iter().map(state_word).collect();
        if &seen != states {
            return Some(format!("streamed [{}]", seen.join(", ")));
        }
    }
    None
}

/// Every `[[expect.call]]` and `[[expect.task]]` of `expect` that `record` does not meet.
pub fn problems(expect: &Expect, record: &RunRecord) -> Vec<Problem> {
    let mut out = Vec::new();
    for c in &expect.call {
        let mut calls: Vec<&Op> = record.history.iter().filter(|o| matches(c, o)).collect();
        calls.sort_by_key(|o| (o.invoke_ms, o.id));
        let n = c.attempt.unwrap_or(1) as usize;
        let why = match calls.get(n - 1) {
            None => Some(format!(
                "was never made ({} matching call{})",
                calls.len(),
                if calls.len() == 1 { "" } else { "s" }
            )),
            Some(op) => mismatch(c, op).map(|w| format!("{w} at {} ms", op.complete_ms)),
        };
        if let Some(why) = why {
            out.push(Problem::Call {
                call: c.label(),
                why,
            });
        }
    }
    for t in &expect.task {
        let task = record
            .conversations
            .get(&t.conversation)
            .and_then(|id| record.final_tasks.get(id));
        let got = task.map_or("lost".to_string(), |task| state_word(&task.status.state));
        if got != t.state {
            out.push(Problem::Call {
                call: format!("the task of {}", t.conversation),
                why: format!("ended {got}, not {}", t.state),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::scenario::Script;
    use crate::sim::{judge, Sim};

    fn scenario(calls: &str) -> Script {
        let text = format!(
            r#"name = "continuation-on-the-other-pod"
model = "a2a-python-1.3-memory"
replicas = 2
routing = "round-robin"

[[step]]
send = {{ conversation = "c1", turn = 1, to = "replica-0" }}
[[step]]
send = {{ conversation = "c1", turn = 2, to = "replica-1" }}
[[step]]
send = {{ conversation = "c1", turn = 2, to = "replica-0" }}

[expect]
allow-unexercised = true
{calls}"#
        );
        Script::parse(&text, "inline.toml").unwrap()
    }

    fn problems(script: &Script) -> Vec<String> {
        let checked = Sim::from_scenario(script).unwrap().check();
        judge(
            &script.file.expect,
            &checked.summary,
            checked.record.as_ref(),
        )
        .problems
        .iter()
        .filter(|p| p.kind() == "call")
        .map(|p| p.to_string())
        .collect()
    }

    /// The other pod's memory refuses the continuation `-32001`; its retry on the pod that
    /// holds the task is answered, and the task ends waiting for input.
    #[test]
    fn what_each_call_answered_is_held_to_its_expectation() {
        let right = scenario(
            r#"call = [
  { conversation = "c1", turn = 2, outcome = "fail", code = -32001 },
  { conversation = "c1", turn = 2, attempt = 2, outcome = "ok", state = "completed" },
]
task = [{ conversation = "c1", state = "completed" }]
"#,
        );
        assert_eq!(problems(&right), Vec::<String>::new());
        // It writes back out and parses to the same expectations.
        let again = Script::parse(&right.to_toml(), "again.toml").unwrap();
        assert_eq!(again.file.expect, right.file.expect);

        let wrong = scenario(
            r#"call = [
  { conversation = "c1", turn = 2, outcome = "ok" },
  { conversation = "c1", turn = 2, attempt = 3 },
  { conversation = "c1", method = "cancel" },
]
task = [{ conversation = "c1", state = "canceled" }]
"#,
        );
        let got = problems(&wrong);
        assert_eq!(got.len(), 4, "{got:#?}");
        assert!(
            got[0].starts_with("send c1#2 answered fail -32001"),
            "{got:#?}"
        );
        assert!(
            got[1].contains("was never made (2 matching calls)"),
            "{got:#?}"
        );
        assert!(got[2].starts_with("cancel c1 was never made"), "{got:#?}");
        assert_eq!(got[3], "the task of c1 ended completed, not canceled");
    }

    #[test]
    fn expectations_that_cannot_match_are_refused_when_read() {
        for (bad, says) in [
            (
                r#"call = [{ conversation = "c1", attempt = 0 }]"#,
                "attempt counts from 1",
            ),
            (
                r#"call = [{ conversation = "c1", method = "get", turn = 2 }]"#,
                "only a send",
            ),
            (
                r#"call = [{ conversation = "c1", outcome = "ok", code = -32001 }]"#,
                "outcome = \"fail\"",
            ),
            (
                r#"call = [{ conversation = "c1", state = "done" }]"#,
                "unknown state `done`",
            ),
            (
                r#"task = [{ conversation = "c1", state = "gone" }]"#,
                "unknown state `gone`",
            ),
        ] {
            let text = scenario("")
                .to_toml()
                .replace("[expect]", &format!("[expect]\n{bad}"));
            let e = Script::parse(&text, "bad.toml").expect_err(bad).to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
