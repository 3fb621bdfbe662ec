//! `credential-audience`: a credential is sent only to an origin allowed to receive it.
//!
//! A bearer token is minted for an audience (`http://router:8080`, the origin the agent's
//! card is served from; [`crate::auth`]). The seeds on Mastra and Cognigy warn that a card
//! that verified is not a URL entitled to that token: a client that takes the execution URL
//! from a moved, foreign or tampered card sends the caller's token wherever the card says.
//! Read from the client's card log (the origin each call was sent to and the audience of the
//! token it carried), with what each extra host received as the corroborating ground truth.
//!
//! Exercised: calls the client decided about after the card first changed, or that went to
//! an origin other than the card's own (refused calls count: the client faced the case and
//! kept the token). Unknown in a run without card changes.

use crate::card::CARD_ORIGIN;
use crate::check::{Checker, Finding, Invariant, Violation, ViolationKind};
use crate::world::RunRecord;

impl Invariant {
    /// `credential-audience`.
    pub const CREDENTIAL_AUDIENCE: Invariant = Invariant::new("credential-audience");
}

/// How `credential-audience` breaks.
impl ViolationKind {
    /// `token-to-foreign-origin`.
    pub const TOKEN_TO_FOREIGN_ORIGIN: ViolationKind =
        ViolationKind::new("token-to-foreign-origin");
}

/// The credential-audience checker.
pub struct CredentialAudience;

impl Checker for CredentialAudience {
    fn name(&self) -> Invariant {
        Invariant::CREDENTIAL_AUDIENCE
    }

    fn describe(&self) -> &'static str {
        "a credential is sent only to an origin allowed to receive it (its audience)"
    }

    fn check(&self, run: &RunRecord) -> Finding {
        let cards = &run.cards;
        let changed_at = cards.first_change_ms();
        let mut violations = Vec::new();
        let mut exercised = 0;
        for u in &cards.uses {
            let after_change = changed_at.is_some_and(|t| u.invoke_ms >= t);
            let elsewhere = u.origin.as_deref().is_some_and(|o| o != CARD_ORIGIN);
            if !(after_change || elsewhere) {
                continue;
            }
            exercised += 1;
            let (Some(origin), Some(audience)) = (&u.origin, &u.credential_audience) else {
                continue;
            };
            if origin == audience {
                continue;
            }
            let card = u
                .etag
                .as_deref()
                .and_then(|e| cards.version(e))
                .map(|v| {
                    format!(
                        "card revision {}{} ({})",
                        v.revision,
                        if v.legit { "" } else { ", a tampered copy" },
                        match &v.kid {
                            Some(k) => format!("signed by {k}"),
                            None => "unsigned".into(),
                        }
                    )
                })
                .unwrap_or_else(|| "an unknown card".into());
            let host = crate::replica::parse_http_url(origin).map(|(h, _, _)| h);
            let received = cards
                .ingress
                .iter()
                .filter(|i| Some(&i.host) == host.as_ref() && i.at_ms >= u.invoke_ms)
                .find(|i| i.credential_audience.as_deref() == Some(audience));
            let mut v = Violation::new(
                ViolationKind::TOKEN_TO_FOREIGN_ORIGIN,
                format!(
                    "{} at {} ms carried {}'s bearer token (audience {audience}) to {origin}, the execution origin named by {card}{}",
                    u.label,
                    u.invoke_ms,
                    u.principal,
                    match received {
                        Some(i) => format!("; {} received it at {} ms", i.host, i.at_ms),
                        None => String::new(),
                    }
                ),
            )
            .url(origin)
            .at(u.invoke_ms);
            if let Some(i) = received {
                v = v.host(&i.host).at(i.at_ms);
            }
            violations.push(v);
        }
        Finding {
            invariant: Invariant::CREDENTIAL_AUDIENCE,
            violations,
            exercised,
        }
    }
}
