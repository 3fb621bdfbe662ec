//! Bearer credentials and principals: who is calling, and where a credential may go.
//!
//! The simulation has no identity provider. A credential is a token shaped like a JWT's
//! claims: issuer, audience, subject, and a keyed checksum standing in for the signature.
//! The simulator models the *checks* a server makes (A2A-BEHAVIOURS.md §4: Rasa verifies a
//! Bearer JWT on the card and on RPC, with issuer and audience) and the places a client sends
//! its token (the seeds on Mastra and Cognigy: a card names the execution URL the token goes
//! to), not cryptography: the checksum is FNV-1a, deterministic and good enough to tell a
//! token the issuer minted from one a test forged or altered.
//!
//! A principal is the end user a workload acts for (`alice`, `bob`). The subject of a
//! principal's token is the principal's name, so a server that scopes tasks to their owner
//! can read the owner from the token. Rasa keeps the end user in message metadata instead
//! (§4); [`USER_METADATA_KEY`] is that field.
//!
//! A task in `auth-required` waits for an authorisation that happens out of band (the Cognigy
//! seed, 缓存、AUTH_REQUIRED与可执行验收: a second call with a message is not the out-of-band
//! authorisation, and a message saying "yes" is not a credential). [`Grants`] is where that
//! authorisation is recorded: the identity provider's consent records. The user grants the
//! pending action of one task there (a scenario's `authorize` step, or the workload's
//! client after its answer was not enough); a server that checks reads the record, as a
//! token-introspection or consent lookup would. It is host-independent state, like the
//! ledger's ground truth, and the `auth-grant` checker reads it too.

use std::cell::RefCell;
use std::rc::Rc;

use crate::trace::Fnv;

/// The issuer every simulated token names, and every checking server expects.
pub const ISSUER: &str = "https://idp.example";

/// The audience of the agent's tokens: the origin the agent's card is served from, and the
/// only origin a client may send them to.
pub const AGENT_AUDIENCE: &str = "http://router:8080";

/// The principal a step or workload acts for when it names none.
pub const DEFAULT_PRINCIPAL: &str = "alice";

/// The principal that presents no token at all.
pub const ANONYMOUS: &str = "anonymous";

/// The message metadata key carrying the end user's claimed identity (Rasa's style: the
/// token names the calling service, the metadata names the user, and nobody verifies it).
pub const USER_METADATA_KEY: &str = "a2aChaosUser";

/// The key the simulated issuer signs with.
const ISSUER_KEY: &str = "idp.example signing key 1";

const PREFIX: &str = "simjwt:";

/// What a verified token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    pub issuer: String,
    pub audience: String,
    pub subject: String,
}

/// Why a credential was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// No `Authorization: Bearer` header.
    Missing,
    /// Not a token this issuer could have minted.
    Malformed,
    /// The checksum does not match the claims: altered or forged.
    BadSignature,
    /// Minted by another issuer.
    WrongIssuer(String),
    /// Minted for another audience.
    WrongAudience(String),
}

impl std::fmt::Display for AuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthError::Missing => write!(f, "no bearer token"),
            AuthError::Malformed => write!(f, "malformed bearer token"),
            AuthError::BadSignature => write!(f, "bearer token signature does not verify"),
            AuthError::WrongIssuer(i) => write!(f, "bearer token issued by `{i}`, not `{ISSUER}`"),
            AuthError::WrongAudience(a) => write!(f, "bearer token is for `{a}`"),
        }
    }
}

fn signature(issuer: &str, audience: &str, subject: &str) -> u64 {
    let mut h = Fnv::default();
    for part in [ISSUER_KEY, issuer, audience, subject] {
        h.write(part.as_bytes());
        h.write(b"\0");
    }
    h.0
}

/// A token minted by the simulated issuer.
pub fn token(issuer: &str, audience: &str, subject: &str) -> String {
    let sig = signature(issuer, audience, subject);
    format!("{PREFIX}{issuer}|{audience}|{subject}|{sig:016x}")
}

/// The token a principal presents to the agent.
pub fn bearer_for(principal: &str) -> String {
    token(ISSUER, AGENT_AUDIENCE, principal)
}

/// The `Authorization` header a principal's calls carry: none for [`ANONYMOUS`].
pub fn authorization_for(principal: &str) -> Option<String> {
    (principal != ANONYMOUS).then(|| format!("Bearer {}", bearer_for(principal)))
}

/// The claims a token states, without checking its signature (what a client knows of its
/// own credential: which audience it was minted for).
pub fn claims_unverified(token: &str) -> Option<Claims> {
    let rest = token.strip_prefix(PREFIX)?;
    let mut parts = rest.split('|');
    let (Some(issuer), Some(audience), Some(subject), Some(_sig), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return None;
    };
    Some(Claims {
        issuer: issuer.to_string(),
        audience: audience.to_string(),
        subject: subject.to_string(),
    })
}

/// Checks an `Authorization` header value as a server configured with `issuer` and
/// `audience` does.
pub fn verify(header: Option<&str>, issuer: &str, audience: &str) -> Result<Claims, AuthError> {
    let value = header.ok_or(AuthError::Missing)?;
    let token = value
        .strip_prefix("Bearer ")
        .ok_or(AuthError::Malformed)?
        .trim();
    let claims = claims_unverified(token).ok_or(AuthError::Malformed)?;
    let sig = token.rsplit('|').next().unwrap_or_default();
    if u64::from_str_radix(sig, 16).ok()
        != Some(signature(&claims.issuer, &claims.audience, &claims.subject))
    {
        return Err(AuthError::BadSignature);
    }
    if claims.issuer != issuer {
        return Err(AuthError::WrongIssuer(claims.issuer));
    }
    if claims.audience != audience {
        return Err(AuthError::WrongAudience(claims.audience));
    }
    Ok(claims)
}

/// One out-of-band authorisation: `subject` authorised the pending action of `task_id` at
/// the identity provider at `at_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub task_id: String,
    pub subject: String,
    pub at_ms: u64,
}

/// The identity provider's consent records for one run. Cloning shares them.
#[derive(Debug, Clone, Default)]
pub struct Grants(Rc<RefCell<Vec<Grant>>>);

impl Grants {
    /// Records that `subject` authorised task `task_id` at `at_ms`.
    pub fn grant(&self, task_id: &str, subject: &str, at_ms: u64) {
        self.0.borrow_mut().push(Grant {
            task_id: task_id.to_string(),
            subject: subject.to_string(),
            at_ms,
        });
    }

    /// Whether task `task_id` has a grant; by `subject` when one is named (a server that
    /// scopes tasks to their owner accepts only the owner's).
    pub fn granted(&self, task_id: &str, subject: Option<&str>) -> bool {
        self.0
            .borrow()
            .iter()
            .any(|g| g.task_id == task_id && subject.is_none_or(|s| g.subject == s))
    }

    /// Every grant, in the order they were made.
    pub fn all(&self) -> Vec<Grant> {
        self.0.borrow().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(t: &str) -> String {
        format!("Bearer {t}")
    }

    #[test]
    fn a_grant_is_for_one_task_and_one_subject() {
        let g = Grants::default();
        assert!(!g.granted("t1", None));
        g.grant("t1", "alice", 10);
        assert!(g.granted("t1", None) && g.granted("t1", Some("alice")));
        assert!(!g.granted("t1", Some("bob")) && !g.granted("t2", None));
        assert_eq!(g.all().len(), 1);
    }

    #[test]
    fn a_minted_token_verifies_and_names_its_principal() {
        let t = bearer_for("bob");
        let c = verify(Some(&header(&t)), ISSUER, AGENT_AUDIENCE).unwrap();
        assert_eq!(c.subject, "bob");
        assert_eq!(c.audience, AGENT_AUDIENCE);
    }

    #[test]
    fn missing_altered_foreign_and_misdirected_tokens_are_refused() {
        assert_eq!(
            verify(None, ISSUER, AGENT_AUDIENCE),
            Err(AuthError::Missing)
        );
        assert_eq!(
            verify(Some("Basic x"), ISSUER, AGENT_AUDIENCE),
            Err(AuthError::Malformed)
        );
        let altered = bearer_for("bob").replace("|bob|", "|alice|");
        assert_eq!(
            verify(Some(&header(&altered)), ISSUER, AGENT_AUDIENCE),
            Err(AuthError::BadSignature)
        );
        let foreign = token("https://evil.example", AGENT_AUDIENCE, "bob");
        assert!(matches!(
            verify(Some(&header(&foreign)), ISSUER, AGENT_AUDIENCE),
            Err(AuthError::WrongIssuer(_))
        ));
        let elsewhere = token(ISSUER, "http://other:8080", "bob");
        assert!(matches!(
            verify(Some(&header(&elsewhere)), ISSUER, AGENT_AUDIENCE),
            Err(AuthError::WrongAudience(_))
        ));
    }
}
