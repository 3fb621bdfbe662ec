//! The A2A wire: what crosses a socket between a client, the router and a replica.
//!
//! - the ports and headers every host of a run agrees on;
//! - [`agent_card`]: the agent card document a replica (and the card publisher) serves;
//! - [`parse_http_url`]: the `http://host:port/path` URLs of cards and push targets;
//! - [`at_rest`]: the task states a turn ends in (terminal, or waiting for the client);
//! - [`sse`]: the server-sent-events framing of the streaming methods.

pub mod sse;

use serde_json::{json, Value};

/// Port the router serves A2A on.
pub const ROUTER_PORT: u16 = 8080;

/// Port every replica serves on.
pub const REPLICA_PORT: u16 = 9000;

/// Header carrying the routing key for calls whose body has no contextId.
pub const CONTEXT_HEADER: &str = "x-a2a-context-id";

/// Header pinning a request to one replica (`replica-1`), used by scripted steps.
pub const TARGET_HEADER: &str = "x-a2a-chaos-target";

/// Response header naming the replica that answered (read by the client's history).
pub const REPLICA_HEADER: &str = "x-a2a-chaos-replica";

/// Whether a task in `state` is at rest: terminal, or interrupted waiting for the client
/// (`input-required`, `auth-required`). The states a turn ends in, where a stream closes, a
/// push is sent and the liveness phase expects every task to be.
pub fn at_rest(state: &a2a::TaskState) -> bool {
    state.is_terminal()
        || matches!(
            state,
            a2a::TaskState::InputRequired | a2a::TaskState::AuthRequired
        )
}

/// The scripted agent's card: one JSON-RPC 1.0 interface at `url` and one skill.
pub fn agent_card(
    description: &str,
    version: &str,
    url: &str,
    streaming: bool,
    push: bool,
) -> Value {
    json!({
        "name": "a2a-chaos scripted agent",
        "description": description,
        "version": version,
        "supportedInterfaces": [{
            "url": url,
            "protocolBinding": "JSONRPC",
            "protocolVersion": "1.0"
        }],
        "capabilities": { "streaming": streaming, "pushNotifications": push },
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{
            "id": "scripted-turn",
            "name": "Scripted turn",
            "description": "Performs one business effect per turn and writes artifact turn-N.",
            "tags": ["simulation"]
        }]
    })
}

/// Splits `http://host:port/path` into its parts.
pub fn parse_http_url(url: &str) -> Option<(String, u16, String)> {
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, p.parse().ok()?),
        None => (authority, 80),
    };
    (!host.is_empty()).then(|| (host.to_string(), port, path))
}
