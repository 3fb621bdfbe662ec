//! The interpreter: a script's steps run on the client host.
//!
//! Steps run one after another; `concurrent` starts its steps at the same simulated
//! instant and `sequence` runs its steps in order. Fault steps are handed to the driver
//! (or, in a live run, applied and awaited), which applies them before the next tick.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use serde_json::json;

use crate::auth::DEFAULT_PRINCIPAL;
use crate::client::history::{OpKind, Outcome};
use crate::client::{Client, Parts};
use crate::faults::Action;
use crate::host::Host;
use crate::replica::{AgentShape, TurnInfo};
use crate::trace::Event;
use crate::workload;

use super::{EffectGate, Script, Step};

/// Applies a fault at once and resolves when it took effect (a live run's driver, where a
/// restart takes real time); see [`DriverLink::apply_now`].
pub type ApplyNow = Rc<dyn Fn(Action) -> Pin<Box<dyn Future<Output = ()>>>>;

/// Shared state between the driver and a scripted client.
#[derive(Clone, Default)]
pub struct DriverLink {
    /// Actions the client asks the driver to apply after the current tick.
    pub commands: Rc<RefCell<VecDeque<Action>>>,
    /// Conversation → task id, filled by the client as it learns them.
    pub tasks: Rc<RefCell<BTreeMap<String, String>>>,
    /// Outside a simulation (`a2a-chaos live`): fault steps are applied through this and
    /// awaited, instead of being queued for the next tick. `None` in every simulation.
    pub apply_now: Option<ApplyNow>,
    /// The ledger, for the script's effect steps (`hold-effect`, `await-effect`,
    /// `release-effect`): the simulated ledger host's state, or the live ledger's.
    pub ledger: Option<crate::ground::ledger::SharedLedger>,
}

/// The longest an `await-effect` step may wait before the script goes on without it (a
/// scenario's `await-effect-ms` lowers it).
pub const AWAIT_EFFECT_MAX: Duration = Duration::from_secs(10);

/// How often an `await-effect` step looks at the ledger.
const AWAIT_EFFECT_POLL: Duration = Duration::from_millis(1);

/// Runs the script on the client host; returns `tail` after every step is done, so that
/// background work (non-blocking turns, pushes, takeovers) can finish before the world stops.
pub async fn run_script(
    script: &Script,
    seed: u64,
    client: Rc<Client>,
    link: DriverLink,
    tail: Duration,
) {
    client.learn_tasks_into(link.tasks.clone());
    let run = Run {
        script,
        seed,
        client: &client,
        link: &link,
        replies: RefCell::default(),
    };
    for step in &script.steps {
        run_step(step, &run).await;
    }
    tokio::time::sleep(tail).await;
}

/// What every step of one script run shares.
struct Run<'a> {
    script: &'a Script,
    seed: u64,
    client: &'a Rc<Client>,
    link: &'a DriverLink,
    /// Replies sent so far per (conversation, turn): each reply's messageId is its own.
    replies: RefCell<BTreeMap<(String, u32), u32>>,
}

fn run_step<'a>(
    step: &'a Step,
    run: &'a Run<'a>,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + 'a>> {
    let (script, seed, client, link) = (run.script, run.seed, run.client, run.link);
    Box::pin(async move {
        let task_of = |c: &str| link.tasks.borrow().get(c).cloned();
        match step {
            Step::Send(s) => {
                let info = TurnInfo {
                    conversation: s.conversation.clone(),
                    turn: s.turn,
                    turns: script.turns.get(&s.conversation).copied().unwrap_or(s.turn),
                };
                let own_ctx = workload::context_id(seed, &s.conversation);
                let ctx = s.context_id.clone().unwrap_or_else(|| own_ctx.clone());
                let principal = s.principal.as_deref().unwrap_or(DEFAULT_PRINCIPAL);
                let own_mid = workload::message_id(seed, &s.conversation, s.turn);
                let mid = match (&s.message_id, &s.reply) {
                    (Some(m), _) => m.clone(),
                    (None, Some(_)) => {
                        let mut replies = run.replies.borrow_mut();
                        let n = replies.entry((s.conversation.clone(), s.turn)).or_insert(0);
                        *n += 1;
                        format!("{own_mid}-reply{n}")
                    }
                    (None, None) => own_mid,
                };
                let task_id = if s.task_id.is_some() {
                    s.task_id.clone()
                } else if s.turn > 1 || s.reply.is_some() {
                    task_of(&s.conversation)
                } else {
                    None
                };
                // Only a message that names a task can leave its context out; a follow-up
                // whose task the client never learned goes as usual.
                let omit_context = s.omit_context_id == Some(true) && task_id.is_some();
                let mut message = Client::turn_message(&info, &mid, &ctx, task_id.as_deref());
                if omit_context {
                    message.context_id = None;
                }
                if let Some(text) = &s.reply {
                    message.parts[0] = a2a::Part::text(text.clone());
                }
                let parts = s.parts.unwrap_or(Parts::Data);
                parts.apply(&mut message);
                if s.needs_auth == Some(true) {
                    crate::replica::ask_for_authorised_action(&mut message);
                }
                let shape = AgentShape {
                    effect: s.effect != Some(false),
                    progress: s.progress.unwrap_or(0),
                };
                shape.apply(&mut message);
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
                    foreign_context: ctx != own_ctx,
                    omitted_context: omit_context,
                    named_task: s.task_id.is_some(),
                    needs_auth: s.needs_auth == Some(true),
                    reply: s.reply.clone(),
                    parts,
                    shape,
                };
                let answer = if s.streaming.unwrap_or(false) {
                    client
                        .stream_as(
                            principal,
                            kind,
                            "SendStreamingMessage",
                            params,
                            Some(&ctx),
                            s.to.as_ref(),
                            Duration::from_secs(10),
                        )
                        .await
                } else {
                    client
                        .unary_as(
                            principal,
                            kind,
                            "SendMessage",
                            params,
                            Some(&ctx),
                            s.to.as_ref(),
                        )
                        .await
                };
                if let (Outcome::Ok, Some(task), false) =
                    (&answer.outcome, &answer.task, s.context_id.is_some())
                {
                    link.tasks
                        .borrow_mut()
                        .entry(s.conversation.clone())
                        .or_insert_with(|| task.id.clone());
                }
            }
            Step::Cancel(s) | Step::Get(s) | Step::Subscribe(s) => {
                let Some(id) = s.task_id.clone().or_else(|| task_of(&s.conversation)) else {
                    client.trace.record(
                        Host::Client,
                        Event::plain(format!("skip step on {}: no task yet", s.conversation)),
                    );
                    return;
                };
                let ctx = workload::context_id(seed, &s.conversation);
                let params = json!({ "id": id });
                let conversation = s.conversation.clone();
                let principal = s.principal.as_deref().unwrap_or(DEFAULT_PRINCIPAL);
                match step {
                    Step::Cancel(_) => {
                        client
                            .unary_as(
                                principal,
                                OpKind::Cancel { conversation },
                                "CancelTask",
                                params,
                                Some(&ctx),
                                s.to.as_ref(),
                            )
                            .await;
                    }
                    Step::Get(_) => {
                        client
                            .unary_as(
                                principal,
                                OpKind::Get { conversation },
                                "GetTask",
                                params,
                                Some(&ctx),
                                s.to.as_ref(),
                            )
                            .await;
                    }
                    _ => {
                        client
                            .stream_as(
                                principal,
                                OpKind::Subscribe { conversation },
                                "SubscribeToTask",
                                params,
                                Some(&ctx),
                                s.to.as_ref(),
                                Duration::from_secs(5),
                            )
                            .await;
                    }
                }
            }
            Step::Authorize(s) => {
                let Some(id) = task_of(&s.conversation) else {
                    client.trace.record(
                        Host::Client,
                        Event::plain(format!("skip authorize on {}: no task yet", s.conversation)),
                    );
                    return;
                };
                let principal = s.principal.as_deref().unwrap_or(DEFAULT_PRINCIPAL);
                client.authorize(principal, &s.conversation, &id);
            }
            Step::SetPush(s) => {
                let Some(id) = task_of(&s.conversation) else {
                    client.trace.record(
                        Host::Client,
                        Event::plain(format!("skip set-push on {}: no task yet", s.conversation)),
                    );
                    return;
                };
                let ctx = workload::context_id(seed, &s.conversation);
                client
                    .unary_as(
                        s.principal.as_deref().unwrap_or(DEFAULT_PRINCIPAL),
                        OpKind::SetPush {
                            conversation: s.conversation.clone(),
                        },
                        "CreateTaskPushNotificationConfig",
                        json!({ "taskId": id, "url": s.url }),
                        Some(&ctx),
                        s.to.as_ref(),
                    )
                    .await;
            }
            Step::Concurrent(steps) => {
                let futures: Vec<_> = steps.iter().map(|s| run_step(s, run)).collect();
                join_all(futures).await;
            }
            Step::Sequence(steps) => {
                for s in steps {
                    run_step(s, run).await;
                }
            }
            Step::Fault(action) => {
                if let Some(apply) = &link.apply_now {
                    apply(action.clone()).await;
                    return;
                }
                link.commands.borrow_mut().push_back(action.clone());
                crate::engine::nudge();
                // The driver applies it before the next tick.
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            Step::WaitMs(ms) => tokio::time::sleep(Duration::from_millis(*ms)).await,
            Step::Effect(gate, t) => {
                let Some(ledger) = &link.ledger else {
                    client.trace.record(
                        Host::Client,
                        Event::plain(format!("skip {}: no ledger", gate.key())),
                    );
                    return;
                };
                let what = format!("{} {}#{}", gate.key(), t.conversation, t.turn);
                match gate {
                    EffectGate::Hold => ledger.borrow_mut().hold(&t.conversation, t.turn),
                    EffectGate::Release => ledger.borrow_mut().release(&t.conversation, t.turn),
                    EffectGate::Await => {
                        let mut waited = Duration::ZERO;
                        while !ledger.borrow().arrived(&t.conversation, t.turn) {
                            if waited >= run.script.await_effect {
                                client.trace.record(
                                    Host::Client,
                                    Event::plain(format!(
                                        "{what}: gave up after {} ms",
                                        waited.as_millis()
                                    )),
                                );
                                return;
                            }
                            tokio::time::sleep(AWAIT_EFFECT_POLL).await;
                            waited += AWAIT_EFFECT_POLL;
                        }
                    }
                }
                client.trace.record(Host::Client, Event::plain(what));
            }
            Step::UntilMs(ms) => {
                let now = crate::trace::now_ms();
                if *ms > now {
                    tokio::time::sleep(Duration::from_millis(ms - now)).await;
                }
            }
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
