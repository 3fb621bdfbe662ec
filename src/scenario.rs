//! Scripted scenarios: a deterministic script of A2A calls and faults, in TOML.
//!
//! The format is the one in `../shared/CONTRACT.md`: a model, a replica count, a routing
//! strategy for steps that name no replica, a seed (latency and jitter only), a list of
//! `[[step]]` tables with one key each, and `[expect]`. A scenario may also carry a
//! `postmortem` line: what broke and why, for pinned regressions.
//!
//! Steps run one after another on the client host; `concurrent` starts its steps at the same
//! simulated instant. Fault steps (`kill`, `restart`, `partition`, `heal`, `drop-reply`) are
//! handed to the driver, which applies them before the next tick.

use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::client::Client;
use crate::cluster::DriverLink;
use crate::error::InputError;
use crate::faults::Action;
use crate::history::{OpKind, Outcome};
use crate::replica::TurnInfo;
use crate::workload;

/// A `send` step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendStep {
    pub conversation: String,
    pub turn: u32,
    #[serde(default)]
    pub to: Option<String>,
    /// Reuse this messageId (a retry or a duplicate); defaults to the turn's own id.
    #[serde(default)]
    pub message_id: Option<String>,
    /// `false` sends with `returnImmediately`.
    #[serde(default)]
    pub blocking: Option<bool>,
    /// Sends with the streaming method (SSE) instead of SendMessage.
    #[serde(default)]
    pub streaming: Option<bool>,
    #[serde(default)]
    pub principal: Option<String>,
}

/// A step aimed at a conversation's task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskStep {
    pub conversation: String,
    #[serde(default)]
    pub to: Option<String>,
    #[serde(default)]
    pub principal: Option<String>,
}

/// A `set-push` step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushStep {
    pub conversation: String,
    #[serde(default)]
    pub to: Option<String>,
    pub url: String,
}

/// One `[[step]]` table as written: exactly one key may be set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct StepTable {
    pub send: Option<SendStep>,
    pub cancel: Option<TaskStep>,
    pub get: Option<TaskStep>,
    pub subscribe: Option<TaskStep>,
    pub set_push: Option<PushStep>,
    pub concurrent: Option<Vec<StepTable>>,
    pub kill: Option<String>,
    pub restart: Option<String>,
    pub partition: Option<[String; 2]>,
    pub heal: Option<String>,
    pub wait_ms: Option<u64>,
    pub drop_reply: Option<bool>,
}

/// One step, resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Send(SendStep),
    Cancel(TaskStep),
    Get(TaskStep),
    Subscribe(TaskStep),
    SetPush(PushStep),
    Concurrent(Vec<Step>),
    Fault(Action),
    WaitMs(u64),
}

/// What a scenario expects.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Exactly these invariants must be violated; `[]` means every invariant must pass.
    #[serde(default)]
    pub violations: Vec<String>,
}

/// A scenario file as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ScenarioFile {
    pub name: String,
    pub model: String,
    #[serde(default = "two")]
    pub replicas: usize,
    #[serde(default = "round_robin")]
    pub routing: String,
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub description: Option<String>,
    /// What broke and why (pinned regressions).
    #[serde(default)]
    pub postmortem: Option<String>,
    /// Client timeout per request, simulated ms.
    #[serde(default = "default_timeout")]
    pub request_timeout_ms: u64,
    #[serde(default)]
    pub step: Vec<StepTable>,
    #[serde(default)]
    pub expect: Expect,
}

fn two() -> usize {
    2
}
fn round_robin() -> String {
    "round-robin".into()
}
fn default_timeout() -> u64 {
    1500
}

/// Most steps a scenario may have (nested steps included).
pub const STEPS_MAX: usize = 10_000;
/// Most replicas a run may have.
pub const REPLICAS_MAX: usize = 16;

/// A scenario ready to run.
#[derive(Debug, Clone)]
pub struct Script {
    pub file: ScenarioFile,
    pub steps: Vec<Step>,
    /// Turns per conversation (the highest turn the script sends).
    pub turns: BTreeMap<String, u32>,
    pub request_timeout: Duration,
}

impl Script {
    /// Parses and validates a scenario; `origin` names the file in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Script, InputError> {
        let file: ScenarioFile =
            toml::from_str(text).map_err(|e| InputError::toml(origin, text, &e))?;
        Script::from_file(file, origin)
    }

    /// Reads a scenario file.
    pub fn load(path: &Path) -> Result<Script, InputError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| InputError::new(&origin, format!("cannot read: {e}")))?;
        Script::parse(&text, &origin)
    }

    /// Validates a parsed file.
    pub fn from_file(file: ScenarioFile, origin: &str) -> Result<Script, InputError> {
        if file.replicas == 0 || file.replicas > REPLICAS_MAX {
            return Err(InputError::new(
                origin,
                format!("replicas = {} must be 1..={REPLICAS_MAX}", file.replicas),
            ));
        }
        if crate::router::strategy(&file.routing).is_none() {
            return Err(InputError::new(
                origin,
                format!(
                    "unknown routing `{}`; known: {}",
                    file.routing,
                    crate::router::names().join(", ")
                ),
            ));
        }
        crate::check::validate_names(&file.expect.violations, origin)?;
        let mut count = 0;
        let mut steps = Vec::new();
        for (i, table) in file.step.iter().enumerate() {
            steps.push(resolve(
                table,
                &format!("{origin}: step {}", i + 1),
                file.replicas,
                &mut count,
            )?);
        }
        let mut turns = BTreeMap::new();
        collect_turns(&steps, &mut turns);
        let request_timeout = Duration::from_millis(file.request_timeout_ms.max(1));
        Ok(Script {
            file,
            steps,
            turns,
            request_timeout,
        })
    }
}

fn collect_turns(steps: &[Step], turns: &mut BTreeMap<String, u32>) {
    for s in steps {
        match s {
            Step::Send(send) => {
                let t = turns.entry(send.conversation.clone()).or_insert(0);
                *t = (*t).max(send.turn);
            }
            Step::Concurrent(inner) => collect_turns(inner, turns),
            _ => {}
        }
    }
}

fn check_host(host: &str, replicas: usize, origin: &str) -> Result<(), InputError> {
    let ok = match host.strip_prefix("replica-") {
        Some(i) => i.parse::<usize>().is_ok_and(|i| i < replicas),
        None => matches!(host, "router" | "store" | "ledger" | "webhook" | "client"),
    };
    if ok {
        Ok(())
    } else {
        Err(InputError::new(
            origin,
            format!("unknown host `{host}`; hosts: router, replica-0..replica-{}, store, ledger, webhook, client", replicas - 1),
        ))
    }
}

fn check_to(to: &Option<String>, replicas: usize, origin: &str) -> Result<(), InputError> {
    match to {
        Some(t) if !t.starts_with("replica-") => Err(InputError::new(
            origin,
            format!("`to = \"{t}\"` must name a replica"),
        )),
        Some(t) => check_host(t, replicas, origin),
        None => Ok(()),
    }
}

fn resolve(
    table: &StepTable,
    origin: &str,
    replicas: usize,
    count: &mut usize,
) -> Result<Step, InputError> {
    *count += 1;
    if *count > STEPS_MAX {
        return Err(InputError::new(
            origin,
            format!("more than {STEPS_MAX} steps"),
        ));
    }
    let mut found: Vec<Step> = Vec::new();
    if let Some(s) = &table.send {
        check_to(&s.to, replicas, origin)?;
        if s.turn == 0 {
            return Err(InputError::new(origin, "send: turn starts at 1"));
        }
        found.push(Step::Send(s.clone()));
    }
    for (step, make) in [
        (&table.cancel, Step::Cancel as fn(TaskStep) -> Step),
        (&table.get, Step::Get),
        (&table.subscribe, Step::Subscribe),
    ] {
        if let Some(s) = step {
            check_to(&s.to, replicas, origin)?;
            found.push(make(s.clone()));
        }
    }
    if let Some(s) = &table.set_push {
        check_to(&s.to, replicas, origin)?;
        found.push(Step::SetPush(s.clone()));
    }
    if let Some(inner) = &table.concurrent {
        let mut steps = Vec::new();
        for t in inner {
            steps.push(resolve(t, origin, replicas, count)?);
        }
        found.push(Step::Concurrent(steps));
    }
    if let Some(h) = &table.kill {
        check_host(h, replicas, origin)?;
        if h == "client" {
            return Err(InputError::new(
                origin,
                "the client cannot be killed: it runs the script",
            ));
        }
        found.push(Step::Fault(Action::Kill(h.clone())));
    }
    if let Some(h) = &table.restart {
        check_host(h, replicas, origin)?;
        found.push(Step::Fault(Action::Restart(h.clone())));
    }
    if let Some([a, b]) = &table.partition {
        check_host(a, replicas, origin)?;
        check_host(b, replicas, origin)?;
        found.push(Step::Fault(Action::Partition(a.clone(), b.clone())));
    }
    if let Some(h) = &table.heal {
        if h != "all" {
            return Err(InputError::new(
                origin,
                format!("heal = \"{h}\": only \"all\" is supported"),
            ));
        }
        found.push(Step::Fault(Action::HealAll));
    }
    if let Some(ms) = table.wait_ms {
        found.push(Step::WaitMs(ms));
    }
    if let Some(drop) = table.drop_reply {
        if drop {
            found.push(Step::Fault(Action::DropNextReply));
        } else {
            found.push(Step::WaitMs(0));
        }
    }
    match found.len() {
        1 => Ok(found.pop().expect("one")),
        0 => Err(InputError::new(origin, "a step needs one key: send, cancel, get, subscribe, set-push, concurrent, kill, restart, partition, heal, wait-ms or drop-reply")),
        _ => Err(InputError::new(origin, "a step has more than one key; split it into several [[step]] tables")),
    }
}

/// Runs the script on the client host; returns when every step is done.
pub async fn run_script(script: &Script, seed: u64, client: Rc<Client>, link: DriverLink) {
    for step in &script.steps {
        run_step(step, script, seed, &client, &link).await;
    }
    // Let background work (non-blocking turns, pushes) finish before the world stops.
    tokio::time::sleep(Duration::from_millis(1000)).await;
}

fn run_step<'a>(
    step: &'a Step,
    script: &'a Script,
    seed: u64,
    client: &'a Rc<Client>,
    link: &'a DriverLink,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + 'a>> {
    Box::pin(async move {
        let task_of = |c: &str| link.tasks.borrow().get(c).cloned();
        match step {
            Step::Send(s) => {
                let info = TurnInfo {
                    conversation: s.conversation.clone(),
                    turn: s.turn,
                    turns: script.turns.get(&s.conversation).copied().unwrap_or(s.turn),
                };
                let ctx = workload::context_id(seed, &s.conversation);
                let mid = s
                    .message_id
                    .clone()
                    .unwrap_or_else(|| workload::message_id(seed, &s.conversation, s.turn));
                let task_id = if s.turn > 1 {
                    task_of(&s.conversation)
                } else {
                    None
                };
                let message = Client::turn_message(&info, &mid, &ctx, task_id.as_deref());
                let blocking = s.blocking.unwrap_or(true);
                let mut params = json!({ "message": message });
                if !blocking {
                    params["configuration"] = json!({ "returnImmediately": true });
                }
                let kind = OpKind::Send {
                    conversation: s.conversation.clone(),
                    turn: s.turn,
                    message_id: mid,
                    blocking,
                };
                let answer = if s.streaming.unwrap_or(false) {
                    client
                        .stream(
                            kind,
                            "SendStreamingMessage",
                            params,
                            Some(&ctx),
                            s.to.as_deref(),
                            Duration::from_secs(10),
                        )
                        .await
                } else {
                    client
                        .unary(kind, "SendMessage", params, Some(&ctx), s.to.as_deref())
                        .await
                };
                if let (Outcome::Ok, Some(task)) = (&answer.outcome, &answer.task) {
                    link.tasks
                        .borrow_mut()
                        .entry(s.conversation.clone())
                        .or_insert_with(|| task.id.clone());
                }
            }
            Step::Cancel(s) | Step::Get(s) | Step::Subscribe(s) => {
                let Some(id) = task_of(&s.conversation) else {
                    client.trace.record(
                        "client",
                        format!("skip step on {}: no task yet", s.conversation),
                    );
                    return;
                };
                let ctx = workload::context_id(seed, &s.conversation);
                let params = json!({ "id": id });
                let conversation = s.conversation.clone();
                match step {
                    Step::Cancel(_) => {
                        client
                            .unary(
                                OpKind::Cancel { conversation },
                                "CancelTask",
                                params,
                                Some(&ctx),
                                s.to.as_deref(),
                            )
                            .await;
                    }
                    Step::Get(_) => {
                        client
                            .unary(
                                OpKind::Get { conversation },
                                "GetTask",
                                params,
                                Some(&ctx),
                                s.to.as_deref(),
                            )
                            .await;
                    }
                    _ => {
                        client
                            .stream(
                                OpKind::Subscribe { conversation },
                                "SubscribeToTask",
                                params,
                                Some(&ctx),
                                s.to.as_deref(),
                                Duration::from_secs(5),
                            )
                            .await;
                    }
                }
            }
            Step::SetPush(s) => {
                let Some(id) = task_of(&s.conversation) else {
                    client.trace.record(
                        "client",
                        format!("skip set-push on {}: no task yet", s.conversation),
                    );
                    return;
                };
                let ctx = workload::context_id(seed, &s.conversation);
                client
                    .unary(
                        OpKind::SetPush {
                            conversation: s.conversation.clone(),
                        },
                        "CreateTaskPushNotificationConfig",
                        json!({ "taskId": id, "url": s.url }),
                        Some(&ctx),
                        s.to.as_deref(),
                    )
                    .await;
            }
            Step::Concurrent(steps) => {
                let futures: Vec<_> = steps
                    .iter()
                    .map(|s| run_step(s, script, seed, client, link))
                    .collect();
                join_all(futures).await;
            }
            Step::Fault(action) => {
                link.commands.borrow_mut().push_back(action.clone());
                // The driver applies it before the next tick.
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            Step::WaitMs(ms) => tokio::time::sleep(Duration::from_millis(*ms)).await,
        }
    })
}

/// Polls every future to completion, all started at once.
async fn join_all(futures: Vec<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + '_>>>) {
    let mut futures: Vec<Option<_>> = futures.into_iter().map(Some).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for slot in futures.iter_mut() {
            if let Some(f) = slot {
                if f.as_mut().poll(cx).is_ready() {
                    *slot = None;
                } else {
                    pending = true;
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    const ABA: &str = r#"
name = "aba"
model = "a2a-python-1.1"
replicas = 2
[[step]]
send = { conversation = "c1", turn = 1, to = "replica-0" }
[[step]]
send = { conversation = "c1", turn = 2, to = "replica-1" }
[expect]
violations = ["no-lost-writes"]
"#;

    #[test]
    fn the_contract_example_parses() {
        let s = Script::parse(ABA, "aba.toml").unwrap();
        assert_eq!(s.steps.len(), 2);
        assert_eq!(s.turns["c1"], 2);
    }

    #[test]
    fn an_unknown_key_names_the_line() {
        let bad = ABA.replace("replicas = 2", "replicas = 2\nreplics = 3");
        let err = Script::parse(&bad, "aba.toml").unwrap_err().to_string();
        assert!(err.starts_with("aba.toml:5:"), "{err}");
        assert!(err.contains("replics"), "{err}");
    }

    #[test]
    fn a_step_with_two_keys_is_refused() {
        let bad = format!("{ABA}\n[[step]]\nkill = \"replica-0\"\nwait-ms = 5\n");
        assert!(Script::parse(&bad, "x")
            .unwrap_err()
            .message
            .contains("more than one key"));
    }

    #[test]
    fn an_unknown_replica_is_refused() {
        let bad = ABA.replace("to = \"replica-1\"", "to = \"replica-7\"");
        assert!(Script::parse(&bad, "x")
            .unwrap_err()
            .message
            .contains("replica-7"));
    }
}
