//! The A2A wire: what crosses a socket between a client, the router and a replica.
//!
//! - the ports and headers every host of a run agrees on;
//! - [`agent_card`]: the agent card document a replica (and the card publisher) serves;
//! - [`parse_http_url`]: the `http://host:port/path` URLs of cards and push targets;
//! - [`card_etag`]: the weak `ETag` a2a-sdk puts on its agent card;
//! - [`camel_case_fields`]: params written with the proto field names (`task_id`) read as
//!   their JSON names (`taskId`);
//! - [`at_rest`]: the task states a turn ends in (terminal, or waiting for the client);
//! - [`sse`]: the server-sent-events framing of the streaming methods;
//! - [`required`]: the REQUIRED fields of the params, checked as a2a-sdk checks them;
//! - [`v03`]: the A2A 0.3 wire, translated to and from 1.0 at the edge;
//! - [`probe`]: a request's part count and id, read without building the request.

pub mod probe;
pub mod required;
pub mod sha256;
pub mod sse;
pub mod v03;

pub use probe::{count_message_parts, RequestId};

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

/// `input-required` for [`a2a::TaskState::InputRequired`]: the state names of save reports,
/// `[expect]` and the outputs.
pub fn state_word(state: &a2a::TaskState) -> String {
    use a2a::TaskState::*;
    match state {
        Submitted => "submitted",
        Working => "working",
        InputRequired => "input-required",
        AuthRequired => "auth-required",
        Completed => "completed",
        Canceled => "canceled",
        Failed => "failed",
        Rejected => "rejected",
        Unspecified => "unspecified",
    }
    .into()
}

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

/// The weak `ETag` of an agent card as a2a-sdk 1.3.0 computes it
/// (`server/routes/agent_card_routes.py` `_etag_for`): `W/"<sha256>"` of the card without
/// `signatures`, as Python's `json.dumps(card, sort_keys=True, separators=(',', ':'))`
/// writes it (keys sorted at every depth, no spaces, non-ASCII as `\uXXXX`).
pub fn card_etag(card: &Value) -> String {
    // serde_json's maps are ordered by key (its `preserve_order` feature is off), so it
    // writes keys sorted at every depth, as `sort_keys=True` does (the test below holds it).
    let mut unsigned = card.clone();
    if let Value::Object(map) = &mut unsigned {
        map.remove("signatures");
    }
    let text = serde_json::to_string(&unsigned).expect("a card serialises");
    let mut ascii = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            ascii.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                ascii.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    format!("W/\"{}\"", sha256::hex(ascii.as_bytes()))
}

/// Whether an `If-None-Match` header selects the entity tagged `etag` (RFC 9110 §13.1.2,
/// the weak comparison: `W/"x"` and `"x"` match; `*` matches anything).
pub fn if_none_match_hits(header: &str, etag: &str) -> bool {
    let bare = etag.trim_start_matches("W/");
    header
        .split(',')
        .map(str::trim)
        .any(|c| c == "*" || c.trim_start_matches("W/") == bare)
}

/// Renames the proto field names of JSON-RPC params (`task_id`, `history_length`) to their
/// JSON names (`taskId`, `historyLength`), at every depth, as a protobuf JSON parser accepts
/// both (a2a-sdk 1.3.0 parses params with `json_format.ParseDict`, which looks a key up by
/// its JSON name and then by its proto name). A key already given in camelCase wins. The
/// free-form values of `data` (a data part) and `metadata` (a `Struct`) keep their keys.
pub fn camel_case_fields(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let snake: Vec<String> = map.keys().filter(|k| k.contains('_')).cloned().collect();
            for key in snake {
                let camel = camel_case(&key);
                if !map.contains_key(&camel) {
                    if let Some(v) = map.remove(&key) {
                        map.insert(camel, v);
                    }
                }
            }
            for (key, v) in map.iter_mut() {
                if key != "data" && key != "metadata" {
                    camel_case_fields(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(camel_case_fields),
        _ => {}
    }
}

/// `history_length` → `historyLength` (protobuf's `ToJsonName`).
fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn card_etag_is_the_sdks() {
        // What a2a-sdk 1.3.0's _etag_for gives for this dict (python3: hashlib.sha256(
        // json.dumps(d, sort_keys=True, separators=(',', ':')).encode()).hexdigest()).
        let card = json!({"name": "é", "b": [1, {"z": 1, "a": 2}], "signatures": [{"x": 1}]});
        assert_eq!(
            card_etag(&card),
            "W/\"e0b6c2d415d5958bc3668e51a5adc65c00af12ad73626ce7e21c736d75d0ce00\""
        );
        assert!(if_none_match_hits("W/\"abc\"", "W/\"abc\""));
        assert!(if_none_match_hits("\"x\", \"abc\"", "W/\"abc\""));
        assert!(if_none_match_hits("*", "W/\"abc\""));
        assert!(!if_none_match_hits("W/\"abd\"", "W/\"abc\""));
    }

    #[test]
    fn proto_names_become_json_names_outside_data_and_metadata() {
        let mut params = json!({
            "task_id": "t1", "history_length": 1, "historyLength": 2,
            "message": {"message_id": "m", "parts": [{"data": {"turn_no": 1}}],
                        "metadata": {"a_b": 1}},
            "configuration": {"task_push_notification_config": {"task_id": "t1"}}
        });
        camel_case_fields(&mut params);
        assert_eq!(
            params,
            json!({
                "taskId": "t1", "history_length": 1, "historyLength": 2,
                "message": {"messageId": "m", "parts": [{"data": {"turn_no": 1}}],
                            "metadata": {"a_b": 1}},
                "configuration": {"taskPushNotificationConfig": {"taskId": "t1"}}
            })
        );
    }
}
