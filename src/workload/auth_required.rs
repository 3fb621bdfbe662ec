//! `auth-required`: at one blocking turn, a conversation asks for an action that needs the
//! user's authorisation. While the task waits in `auth-required`, the client answers "yes"
//! (a message, not a credential: the seed on Cognigy, where the parent may call the tool
//! again); only if the task still waits does the user authorise it out of band
//! ([`crate::client::Client::authorize`]) and the client answer once more. The `auth-grant`
//! invariant checks what the server made of it.
//!
//! Turned on by `auth-required-rate` (the probability per conversation). A non-blocking
//! turn (canceled, subscribed or polled) does not ask.
//!
//! Draws, when the conversation is drawn: `random_bool(auth-required-rate)` (only when the
//! rate is above 0), then the turn in `1..=turns`. Each send (the turn and its answers)
//! draws as [`Turn::send`] does.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{
    Answered, Behaviour, Conversation, Hook, Knob, Plan, Shape, Swarm, Turn, WorkloadSpec,
};

/// The `auth-required` behaviour.
pub struct AuthRequired;

/// The knobs it reads.
const KNOBS: &[Knob] = &[Knob::rate(
    "auth-required-rate",
    0.0,
    // Printed with the drawn shape only when drawn: shapes without it print as
    // they did before it.
    Swarm::Drawn {
        name: "auth-required",
        always: false,
    },
    "Probability that a conversation, at one blocking turn, asks for an action that needs the user's authorisation. When the agent answers `auth-required`, the client calls again with a message saying \"yes\" (the seed on Cognigy: the parent may call the tool again); only if the task still waits does the user authorise it out of band (`Client::authorize`), and the client answers once more.",
)];

impl Behaviour for AuthRequired {
    fn name(&self) -> &'static str {
        "auth-required"
    }

    fn knobs(&self) -> &'static [Knob] {
        KNOBS
    }

    fn draw(&self, spec: &WorkloadSpec, rng: &mut ChaCha8Rng) -> Option<Box<dyn Plan>> {
        let rate = spec.rate("auth-required-rate");
        let at = (rate > 0.0 && rng.random_bool(rate))
            .then(|| rng.random_range(1..=spec.turns))?;
        Some(Box::new(AuthAt(at)))
    }
}

/// Asks for an authorised action at the turn with this number.
struct AuthAt(u32);

impl Plan for AuthAt {
    fn send<'a>(
        &'a self,
        conv: &'a mut Conversation,
        turn: u32,
        shape: Shape,
        req: &'a mut Turn,
    ) -> Option<Hook<'a, Answered>> {
        if turn != self.0 || !shape.blocking() {
            return None;
        }
        req.needs_auth();
        Some(Box::pin(authorised_turn(conv, req)))
    }
}

/// A turn that asks for an authorised action: sent, then, while the task waits in
/// `auth-required`, answered "yes" (a message, not a credential); if it still waits, the user
/// authorises it out of band and the client answers again. `Some(task id)` as
/// [`Turn::send`] gives it; `None` when the user gives up.
async fn authorised_turn(conv: &mut Conversation, req: &Turn) -> Answered {
    let (spec, client) = (&conv.spec, &conv.client);
    let mut task = req.send_for_task(spec, client, &mut conv.rng).await?;
    let waits = |t: &Option<a2a::Task>| {
        t.as_ref()
            .is_some_and(|t| t.status.state == a2a::TaskState::AuthRequired)
    };
    for (n, text) in [(1, "yes"), (2, "authorised")] {
        if !waits(&task) {
            break;
        }
        let id = task.as_ref().map(|t| t.id.clone()).unwrap_or_default();
        if n == 2 {
            client.authorize(crate::auth::DEFAULT_PRINCIPAL, &conv.name, &id);
        }
        let answer = req.reply(&id, text, n);
        task = answer
            .send_for_task(spec, client, &mut conv.rng)
            .await?
            .or(task);
    }
    Some(task.map(|t| t.id))
}
