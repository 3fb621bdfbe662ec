//! The `client` host's program: a generated workload and its liveness read, or a script.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::client::history::History;
use crate::client::Client;
use crate::trace::Trace;
use crate::workload;

use crate::scenario::DriverLink;

use super::settle::Settle;
use super::{RunSpec, Workload};

/// How long a script's world runs after its last step, at least.
const SCRIPT_TAIL_MS: u64 = 1000;

pub(super) fn client_future(
    spec: &RunSpec,
    workload: &Workload,
    history: &History,
    trace: &Trace,
    link: &DriverLink,
    (cards, grants): (&Option<crate::card::CardAuthority>, &crate::auth::Grants),
    settle: Settle,
) -> Pin<Box<dyn Future<Output = turmoil::Result>>> {
    let seed = spec.seed;
    // A script ends once background work (non-blocking turns, pushes) has had a second, and
    // the model's own recovery (a sweep taking over an abandoned turn) has had its bound.
    let recovery = &spec.profile.recovery;
    let tail = Duration::from_millis(if recovery.sweep_ms > 0 {
        SCRIPT_TAIL_MS.max(recovery.runner_lease_ms + recovery.sweep_ms + 500)
    } else {
        SCRIPT_TAIL_MS
    });
    let timeout = match workload {
        Workload::Generated(w) => Duration::from_millis(w.request_timeout_ms),
        Workload::Scripted(s) => s.request_timeout,
    };
    let cards = cards.as_ref().map(|authority| {
        let knobs = spec.profile.card.clone().unwrap_or_else(|| {
            panic!(
                "model `{}` has no [card] knobs (checked when the file was read)",
                spec.profile.name
            )
        });
        crate::card::cache::CardClient::new(knobs, authority.clone(), timeout, trace.clone())
    });
    let client = Client::with_cards(
        history.clone(),
        trace.clone(),
        timeout,
        cards,
        grants.clone(),
    );
    client.set_turn_in(spec.profile.handler.turn_in.unwrap_or_default());
    if let Workload::Scripted(script) = workload {
        client.set_dialect(script.file.client_wire.unwrap_or_default());
    }
    let link = link.clone();
    let liveness_ms = spec.faults.liveness_ms;
    match workload.clone() {
        Workload::Generated(w) => Box::pin(async move {
            let tasks = workload::run(w, seed, client.clone()).await;
            *link.tasks.borrow_mut() = tasks.clone();
            // The liveness phase: everything is healed at `healed_at_ms`; give in-flight work
            // the liveness bound to settle (or stop as soon as the world has: see
            // `settle`), then read every task once more.
            let now = crate::trace::now_ms();
            let until = settle.healed_at_ms.max(now) + liveness_ms;
            settle.wait(until).await;
            for (conversation, id) in tasks {
                let ctx = workload::context_id(seed, &conversation);
                client
                    .unary(
                        crate::client::history::OpKind::Get { conversation },
                        "GetTask",
                        serde_json::json!({ "id": id }),
                        Some(&ctx),
                        None,
                    )
                    .await;
            }
            Ok(())
        }),
        Workload::Scripted(script) => Box::pin(async move {
            crate::scenario::run_script(&script, seed, client, link, tail).await;
            Ok(())
        }),
    }
}
