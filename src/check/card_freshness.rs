//! `card-freshness`: after a rotation or revocation deadline, no call uses the stale card.
//!
//! Every change the publisher makes to the agent card (an execution URL moved, a capability
//! turned off, a signing key revoked and the card re-signed) has a deadline: `max-age` after
//! it, when every client honouring the card's `Cache-Control` has fetched it again. A call
//! decided after that deadline with an older revision, or with a card signed by a key revoked
//! before the deadline, used a stale card (A2A-BEHAVIOURS.md §6.7: the remote changes its
//! execution URL or capabilities after the first call; the Mastra seed: a legitimate old
//! signature does not mean the permission still holds, and the revocation deadline must be
//! explicit). Ground truth is the card authority's version history; the card a call used is
//! the `ETag` in the client's log.
//!
//! Exercised: calls the client decided about after the first deadline. Unknown in a run
//! where the publisher changed nothing.

use crate::check::{Checker, Finding, Invariant, Violation, ViolationKind};
use crate::world::RunRecord;

impl Invariant {
    /// `card-freshness`.
    pub const CARD_FRESHNESS: Invariant = Invariant::new("card-freshness");
}

/// How `card-freshness` breaks.
impl ViolationKind {
    /// `stale-card`.
    pub const STALE_CARD: ViolationKind = ViolationKind::new("stale-card");
}

/// The card-freshness checker.
pub struct CardFreshness;

impl Checker for CardFreshness {
    fn name(&self) -> Invariant {
        Invariant::CARD_FRESHNESS
    }

    fn describe(&self) -> &'static str {
        "after a card change's deadline (rotation or revocation plus max-age), no call uses the older card"
    }

    fn check(&self, run: &RunRecord) -> Finding {
        let cards = &run.cards;
        let Some(first_deadline) = cards.first_deadline_ms() else {
            return Finding {
                invariant: Invariant::CARD_FRESHNESS,
                violations: Vec::new(),
                exercised: 0,
            };
        };
        let mut violations = Vec::new();
        let mut exercised = 0;
        for u in cards.uses.iter().filter(|u| u.invoke_ms >= first_deadline) {
            exercised += 1;
            // Only a call that went out used its card.
            if u.origin.is_none() {
                continue;
            }
            let Some(v) = u.etag.as_deref().and_then(|e| cards.version(e)) else {
                continue;
            };
            if let Some((why, stale_since)) = cards.stale_at(v, u.invoke_ms) {
                let fetched = cards
                    .fetches
                    .iter()
                    .filter(|f| f.etag.as_deref() == Some(&v.etag) && f.at_ms <= u.invoke_ms)
                    .map(|f| f.at_ms)
                    .next_back();
                let mut found = Violation::new(
                    ViolationKind::STALE_CARD,
                    format!(
                        "{} ({}) at {} ms used card revision {} ({}{}) although {why}",
                        u.label,
                        u.method,
                        u.invoke_ms,
                        v.revision,
                        crate::card::origin_of(&v.execution_url).unwrap_or_default(),
                        match fetched {
                            Some(at) => format!(", fetched at {at} ms"),
                            None => String::new(),
                        }
                    ),
                )
                .url(&v.execution_url)
                .at(u.invoke_ms);
                if let Some(at) = fetched {
                    found = found.at(at);
                }
                violations.push(found.at(stale_since));
            }
        }
        Finding {
            invariant: Invariant::CARD_FRESHNESS,
            violations,
            exercised,
        }
    }
}
