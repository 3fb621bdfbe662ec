//! `foreign-reader`: a conversation's task id reaches a second principal
//! ([`FOREIGN_PRINCIPAL`], or an anonymous caller one time in four), who tries it once after
//! the first turn: a GetTask, a SubscribeToTask, a push config or a CancelTask. A server
//! must refuse every one (the `owner-isolation` invariant).
//!
//! Turned on by `foreign-reader-rate` (the probability per conversation).
//!
//! Draws, when the conversation is drawn: `random_bool(foreign-reader-rate)` (only when the
//! rate is above 0), then what to call (`random_range(0..4)`), then whether the caller is
//! anonymous (`random_bool(0.25)`).

use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::{Behaviour, Conversation, Hook, Knob, Plan, Swarm, WorkloadSpec};
use crate::client::history::OpKind;

/// The second principal of a workload: every conversation belongs to
/// [`crate::auth::DEFAULT_PRINCIPAL`], and this one tries task ids it should not have.
pub const FOREIGN_PRINCIPAL: &str = "bob";

/// The `foreign-reader` behaviour.
pub struct ForeignReader;

/// The knobs it reads.
const KNOBS: &[Knob] = &[Knob::rate(
    "foreign-reader-rate",
    0.0,
    Swarm::Drawn {
        name: "foreign-reader",
        always: true,
    },
    "Probability that a conversation's task id reaches a second principal, who tries it once after the first turn: a GetTask, SubscribeToTask, push config or CancelTask, drawn at random, as `FOREIGN_PRINCIPAL` (or with no token at all, one time in four).",
)];

impl Behaviour for ForeignReader {
    fn name(&self) -> &'static str {
        "foreign-reader"
    }

    fn knobs(&self) -> &'static [Knob] {
        KNOBS
    }

    fn draw(&self, spec: &WorkloadSpec, rng: &mut ChaCha8Rng) -> Option<Box<dyn Plan>> {
        let rate = spec.rate("foreign-reader-rate");
        let (what, anonymous) = (rate > 0.0 && rng.random_bool(rate))
            .then(|| (rng.random_range(0..4u32), rng.random_bool(0.25)))?;
        Some(Box::new(ForeignTry { what, anonymous }))
    }
}

/// What the second principal calls (0 get, 1 subscribe, 2 push config, 3 cancel), and
/// whether it calls with no token at all.
struct ForeignTry {
    what: u32,
    anonymous: bool,
}

impl Plan for ForeignTry {
    fn after_first_turn<'a>(&'a self, conv: &'a mut Conversation) -> Option<Hook<'a>> {
        let id = conv.task_id.clone()?;
        let who = if self.anonymous {
            crate::auth::ANONYMOUS
        } else {
            FOREIGN_PRINCIPAL
        };
        Some(Box::pin(foreign_try(conv, who, self.what, id)))
    }
}

/// A second principal `who` tries the task id it learned: call `what`.
async fn foreign_try(conv: &Conversation, who: &str, what: u32, task_id: String) {
    let (client, ctx) = (&conv.client, Some(conv.ctx.as_str()));
    let conversation = conv.name.clone();
    let id = json!({ "id": task_id });
    match what {
        0 => {
            client
                .unary_as(who, OpKind::Get { conversation }, "GetTask", id, ctx, None)
                .await;
        }
        1 => {
            client
                .stream_as(
                    who,
                    OpKind::Subscribe { conversation },
                    "SubscribeToTask",
                    id,
                    ctx,
                    None,
                    Duration::from_millis(conv.spec.request_timeout_ms),
                )
                .await;
        }
        2 => {
            let url = format!("http://hooks.example:7200/ok/{who}");
            client
                .unary_as(
                    who,
                    OpKind::SetPush { conversation },
                    "CreateTaskPushNotificationConfig",
                    json!({ "taskId": task_id, "url": url }),
                    ctx,
                    None,
                )
                .await;
        }
        _ => {
            client
                .unary_as(
                    who,
                    OpKind::Cancel { conversation },
                    "CancelTask",
                    id,
                    ctx,
                    None,
                )
                .await;
        }
    }
}
