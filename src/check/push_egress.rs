//! `push-egress-safe`: no push connection goes to a private, loopback or link-local address.
//!
//! The spec asks senders to refuse such targets (§13.2; A2A-BEHAVIOURS.md §1). Read from
//! what the simulator saw leave each replica, not from what the replica says: a redirect
//! followed to an internal address (§6.5), or a name checked while it resolved public and
//! connected to after it resolved private (DNS rebinding, §6.6). Exercised: push
//! connections opened.

use crate::check::{Checker, Finding, Violation};
use crate::world::RunRecord;

/// The push-egress-safe checker.
pub struct PushEgressSafe;

impl Checker for PushEgressSafe {
    fn name(&self) -> &'static str {
        "push-egress-safe"
    }

    fn describe(&self) -> &'static str {
        "no push connection goes to a private, loopback or link-local address"
    }

    fn check(&self, run: &RunRecord) -> Finding {
        let violations = run
            .push_egress
            .iter()
            .filter(|e| e.address.private)
            .map(|e| {
                Violation::new(
                    "private-egress",
                    format!(
                        "{} opened a push connection for task {} to private address {} (URL {}) at {} ms",
                        e.replica, e.task_id, e.address.ip, e.url, e.at_ms
                    ),
                )
                .task(&e.task_id)
                .host(&e.replica)
                .url(&e.url)
                .at(e.at_ms)
            })
            .collect();
        Finding {
            invariant: "push-egress-safe",
            violations,
            exercised: run.push_egress.len() as u64,
        }
    }
}
