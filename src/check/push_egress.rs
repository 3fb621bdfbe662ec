//! `push-egress-safe`: no push connection goes to a private, loopback or link-local address.
//!
//! The spec asks senders to refuse such targets (§13.2; A2A-BEHAVIOURS.md §1). Read from
//! what the simulator saw leave each replica, not from what the replica says: a redirect
//! followed to an internal address (§6.5), or a name checked while it resolved public and
//! connected to after it resolved private (DNS rebinding, §6.6). Exercised: push
//! connections opened.

use crate::check::{Checker, Finding, Invariant, LiveNeeds, Violation, ViolationKind};
use crate::world::RunRecord;

impl Invariant {
    /// `push-egress-safe`.
    pub const PUSH_EGRESS_SAFE: Invariant = Invariant::new("push-egress-safe");
}

/// How `push-egress-safe` breaks.
impl ViolationKind {
    /// `private-egress`.
    pub const PRIVATE_EGRESS: ViolationKind = ViolationKind::new("private-egress");
}

/// The push-egress-safe checker.
pub struct PushEgressSafe;

impl Checker for PushEgressSafe {
    fn name(&self) -> Invariant {
        Invariant::PUSH_EGRESS_SAFE
    }

    /// A live run records no push connection: its pushes go to its own webhook on
    /// loopback, as `--allow-loopback-push` lets them.
    fn live(&self) -> LiveNeeds {
        LiveNeeds::Never
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
                    ViolationKind::PRIVATE_EGRESS,
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
            invariant: Invariant::PUSH_EGRESS_SAFE,
            violations,
            exercised: run.push_egress.len() as u64,
        }
    }
}
