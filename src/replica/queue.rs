//! A request that reaches a replica while a turn of its task runs there.
//!
//! Where the model says so ([`QueuedAnswer::RunningTurn`], a2a-sdk 1.3: one `ActiveTask`
//! per task per process, every request subscribed to all of its events), the request joins
//! the running turn: it is answered with the task that turn ends in (on a stream: that
//! turn's end as an update, then its own turn's events, its stream ending with its own
//! turn), and its own turn is
//! queued behind it and runs in the background once that turn has ended, unless it failed
//! ([`Replica::finish`] tells the joined requests how the turn ended). Whether the queued turn still runs once the task is
//! terminal is [`crate::model::QueuedTerminal`], checked where the turn begins.

use std::rc::Rc;

use a2a::{Message, StreamResponse, Task};
use tokio::sync::mpsc;

use crate::replica::TurnInfo;

use super::decide::send::{context_refusal, foreign_context, Joined, TurnEnded};
use super::decide::subscribe::status_update;
use super::turn::{Begun, Turn};
use super::{decide, rpc, Refusal};
use super::{ActiveTask, Caller, Replica};

impl Replica {
    /// The answer of a request that joins its task's running turn here, or `None` when it
    /// runs as usual.
    pub(super) async fn join_running_turn(
        self: Rc<Self>,
        message: &Message,
        info: &TurnInfo,
        caller: &Caller,
        sink: Option<&mpsc::Sender<StreamResponse>>,
    ) -> Option<Result<Begun, Refusal>> {
        let task_id = message.task_id.as_ref()?;
        if !decide::send::joins_running_turns(&self.profile) {
            return None;
        }
        // Whether a turn of the task runs here, and so the send joins it (`None`: it does
        // not), its contextId checked first (`Some(true)`).
        let joins = |active: &ActiveTask| {
            decide::send::joins_running_turn(&self.profile, active.running.get(), || {
                active.lock.try_lock().is_err()
            })
        };
        if joins(&self.active(task_id)) == Some(true) {
            // The context check comes first, turn running or not: a2a-sdk 1.3.0 refused a
            // send with another conversation's contextId at once (-32602) while a turn of
            // its task ran on that replica (seen live: tests/scenarios/h10-context-mismatch-
            // joins-a-running-turn-a2a-python-1.3-memory.toml run with the peer thinking
            // 500 ms, 2026-12-04). Its handler checks the message against the stored task
            // before it looks for the ActiveTask (default_request_handler_v2.py
            // _setup_active_task), so a turn that has only begun here, whose task this
            // replica has not read yet, is no excuse: the store is read then.
            let known = self.active(task_id).context.borrow().clone();
            let task_context = match known {
                Some(c) => Some(c),
                // A message without a contextId has nothing to compare.
                None if message.context_id.is_none() => None,
                None => match self.load(task_id).await {
                    Ok(found) => found.map(|(task, _)| task.context_id),
                    // The handler's read failed: so does the request, as in `begin`.
                    Err(e) => return Some(Err(rpc(-32603, e))),
                },
            };
            if task_context.is_some_and(|c| foreign_context(message, &c)) {
                self.record(format!(
                    "{}#{}: {task_id} has a turn running here, but the contextId is another task's: refused",
                    info.conversation, info.turn
                ));
                return Some(Err(context_refusal()));
            }
        }
        {
            let active = self.active(task_id);
            if joins(&active).is_some() {
                // The request joins the running turn's events and is answered with the task
                // that turn ends in; its own turn queues behind it (a2a-sdk 1.3.0
                // active_task_registry.get_or_create, ActiveTask.subscribe).
                self.record(format!(
                    "{}#{}: {task_id} has a turn running here; answered by that turn, this one queued",
                    info.conversation, info.turn
                ));
                let seen = active.ended.get();
                if !self.ended_or_abandoned(&active, seen).await {
                    // Whatever held the task's lock here let it go having started no turn
                    // (refused: another contextId, a task not found, ...): there was nothing
                    // to join, and the request runs as usual.
                    self.record(format!(
                        "{}#{}: no turn began on {task_id} here after all; this one runs",
                        info.conversation, info.turn
                    ));
                    return None;
                }
                let Joined {
                    queued_runs,
                    answer,
                } = decide::send::joined(active.last_end.borrow().clone());
                // On a stream the request hears the running turn's events and then its own
                // turn's, and its stream ends with its own turn: a2a-sdk's
                // on_message_send_stream subscribes with the request and returns only at
                // that request's `_RequestCompleted` (1.1.5 and 1.3.0 ActiveTask.subscribe),
                // where a blocking send returns at the first interrupted or terminal task.
                // The running turn's end stands for its remaining events. Seen live:
                // generation 6's seeds 15 and 89 of a2a-python-1.3-versioned (a streaming
                // turn raced the next on one replica: the stream began with an update and
                // ended after its own turn's effect).
                let stream = match (queued_runs, sink, &answer) {
                    (true, Some(tx), Ok(task)) => {
                        let _ = tx.send(status_update(task)).await;
                        Some(tx.clone())
                    }
                    _ => None,
                };
                if queued_runs {
                    let me = self.clone();
                    let (queued_message, queued_caller) = (message.clone(), caller.clone());
                    let streamed = stream.is_some();
                    crate::activity::spawn(async move {
                        let sink = stream.as_ref();
                        let begun = me
                            .clone()
                            .begin(queued_message, true, sink, &queued_caller, true)
                            .await;
                        match (begun, sink) {
                            (Ok(Begun::Turn(turn)), _) => {
                                let _ = me.finish(turn, sink).await;
                            }
                            (Ok(Begun::Replay(task)), Some(tx)) => {
                                let _ = tx.send(StreamResponse::Task(*task)).await;
                            }
                            _ => {}
                        }
                    });
                    if streamed {
                        return Some(Ok(Begun::Streamed));
                    }
                } else {
                    // A turn that failed takes its queue with it (seen live: the queued turn
                    // of tests/fidelity/found/found-a2a-python-1.3-plain-23.toml never ran).
                    self.record(format!(
                        "{}#{}: the running turn failed; the queued turn is dropped",
                        info.conversation, info.turn
                    ));
                }
                return Some(answer.map(|task| Begun::Replay(Box::new(task))));
            }
        }
        None
    }

    /// Waits until a turn of the task ends here (`true`), or, with `handler.per_task_lock`,
    /// until the request that held the task's lock lets it go with no turn running and none
    /// ended (`false`): a request refused after it took the lock starts no turn to join. A
    /// lock is not a turn: a2a-sdk creates the ActiveTask a send joins only after the checks
    /// that refuse it (default_request_handler_v2.py `_setup_active_task`).
    async fn ended_or_abandoned(&self, active: &ActiveTask, seen: u64) -> bool {
        let lock = self.profile.handler.per_task_lock;
        loop {
            // Woken when a turn ends and when the task's lock is let go (`TaskLock`).
            let woken = active.end_notify.notified();
            if active.ended.get() != seen {
                return true;
            }
            if lock && !active.running.get() && active.lock.try_lock().is_ok() {
                return false;
            }
            woken.await;
        }
    }

    /// Runs a begun turn to its end, and tells the requests that joined it how it ended.
    pub(super) async fn finish(
        self: Rc<Self>,
        turn: Box<Turn>,
        sink: Option<&mpsc::Sender<StreamResponse>>,
    ) -> Result<Task, Refusal> {
        let active = turn.active.clone();
        let ended = self.clone().finish_turn(turn, sink).await;
        self.end_turn(&active, &ended);
        ended
    }

    /// A turn of the task ended here as `ended` ([`decide::send::turn_ended`]): its
    /// ActiveTask parks, or finishes and leaves the registry with what it cached, and the
    /// requests that joined the turn are told how it ended.
    pub(super) fn end_turn(
        self: &Rc<Self>,
        active: &Rc<ActiveTask>,
        ended: &Result<Task, Refusal>,
    ) {
        let TurnEnded {
            parked,
            forget_cache,
        } = decide::send::turn_ended(&self.profile, ended, active.finished_kept.get());
        active.parked.set(parked);
        // The turn ran on the ActiveTask a subscription may have registered: from now on
        // the turn's end says whether it stays.
        active.registered.set(false);
        if forget_cache {
            // The ActiveTask finished with the turn and leaves the registry (a2a-sdk 1.1.5
            // `_maybe_cleanup`; seen live, fidelity --generate seed 190 of a2a-python-1.1:
            // a turn after a failed one on the same replica ran on the stored task): the
            // next request here reads the store.
            *active.cached.borrow_mut() = None;
        }
        active.announce_end(ended.clone());
        if let (true, Ok(task)) = (parked, ended) {
            self.schedule_release(&task.id, active);
        }
    }
}
