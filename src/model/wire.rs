//! The `[wire]` knob group: how a replica's JSON-RPC layer answers, where real servers
//! differ on details a client can see but no simulated workload depends on (the order of
//! the version check, which `A2A-Version` values are served, what an error carries, status
//! timestamps, the ids of history messages, proto field names in params, the card's ETag,
//! and whether the 0.3 wire is served beside 1.0).
//!
//! The group is optional: a profile without it answers as the replica did before the group
//! existed (version checked first, only `1.0` served, errors with code and message only).

use serde::{Deserialize, Serialize};

/// When the `A2A-Version` header is checked against the methods a replica serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VersionCheck {
    /// Before anything but the JSON-RPC envelope: an unknown method or bad params without
    /// the header get `-32009` (the default).
    First,
    /// After the method lookup (`-32601`) and the params parse (`-32602`), just before the
    /// handler runs (a2a-sdk 1.3.0 `jsonrpc_dispatcher.py`, `@validate_version`).
    AfterParams,
}

/// Which `A2A-Version` values a 1.0 server serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VersionMatch {
    /// Exactly `1.0` (the default; A2A 1.0 §3.6.2 "matching `Major.Minor`").
    Exact,
    /// Any `1.x` (a2a-sdk 1.3.0 `validate_version`: the same major version).
    SameMajor,
}

/// What a JSON-RPC error carries besides `code` and `message`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorData {
    /// Nothing (the default).
    None,
    /// `data: [google.rpc.ErrorInfo{reason, domain: "a2a-protocol.org", metadata}]` on
    /// every A2A and params error; none on `-32601` and `-32700` (a2a-sdk 1.3.0
    /// `utils/errors.py`, measured in docs/CONFORMANCE.md).
    ErrorInfo,
}

/// Whether, and how, a replica serves the A2A 0.3 JSON-RPC wire beside 1.0 (slash method
/// names, `kind`-tagged results; `protocol::v03` translates at the edge).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum V03Wire {
    /// Not served (the default): a slash method name is an unknown method, answered as the
    /// version check's order says (`-32601`, or `-32009` when the version comes first).
    Off,
    /// a2a-sdk 1.3.0's server option `enable_v0_3_compat=True` (`jsonrpc_dispatcher.py`,
    /// `compat/v0_3/jsonrpc_adapter.py`): a slash method goes to the 0.3 adapter before the
    /// 1.0 lookup, whatever the header; a request that is not valid 0.3 gets `-32600`; then
    /// `A2A-Version` must be absent, empty or `0.x`, else `-32009`, which a 0.3 answer
    /// carries as `-32603` (as every code 0.3 lacks); `final` on terminal states only.
    SdkCompat,
    /// Mastra (`@mastra/server` 1.69.0, natively 0.3): `A2A-Version` absent, empty or `0.3`
    /// means 0.3 (`resolveA2AProtocolVersion`); a 1.0 method name then gets `-32601`; bad
    /// 0.3 params `-32602`; `final` on terminal and interrupted states (where its stream
    /// ends). Not modelled: slash names under `A2A-Version: 1.0`, which Mastra answers in 1.0
    /// shapes (here `-32601`).
    Native,
}

/// JSON-RPC layer knobs.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireKnobs {
    /// When the version header is checked.
    pub version_check: VersionCheck,
    /// Which version values are served.
    pub versions: VersionMatch,
    /// What an error carries.
    pub error_data: ErrorData,
    /// Whether every status a replica saves carries `timestamp`, the simulated time of the
    /// save (the fixed epoch plus simulated ms; a2a-sdk's `TaskUpdater` stamps every status
    /// event). Unset: no timestamp, as before the knob.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_timestamp: Option<bool>,
    /// Whether the user message a turn appends to the history carries the task's `taskId`
    /// and `contextId` when the client left them out (a2a-sdk's `RequestContext` fills both
    /// in). Unset: the message is kept as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_ids: Option<bool>,
    /// Whether params may use the proto field names (`task_id`, `history_length`) beside
    /// the JSON names, as protobuf JSON parsers accept (`protocol::camel_case_fields`).
    /// Unset: only the JSON names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto_names: Option<bool>,
    /// Whether the replica's agent card carries a weak `ETag` (`protocol::card_etag`) and a
    /// matching `If-None-Match` gets `304`. Unset: neither.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card_etag: Option<bool>,
    /// Whether the 0.3 wire is served, and how ([`V03Wire`]). Unset: not served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v03: Option<V03Wire>,
    /// Whether params missing a field the proto marks REQUIRED are refused after the
    /// version check with `-32602 "Validation failed"`, naming every such field (and, with
    /// `error_data = "error-info"`, as `ErrorInfo` metadata and a `google.rpc.BadRequest`;
    /// `protocol::required`). Unset: the params parse refuses the first missing field it
    /// meets, before the version check, and an empty `parts` list is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_fields: Option<bool>,
}

impl Default for WireKnobs {
    /// What a profile without a `[wire]` group gets: the answers from before the group.
    fn default() -> Self {
        WireKnobs {
            version_check: VersionCheck::First,
            versions: VersionMatch::Exact,
            error_data: ErrorData::None,
            status_timestamp: None,
            history_ids: None,
            proto_names: None,
            card_etag: None,
            v03: None,
            required_fields: None,
        }
    }
}

impl WireKnobs {
    /// Whether saved statuses carry a timestamp (`status_timestamp`).
    pub fn stamps_status(&self) -> bool {
        self.status_timestamp == Some(true)
    }

    /// Whether missing REQUIRED fields are refused by name (`required_fields`).
    pub fn checks_required_fields(&self) -> bool {
        self.required_fields == Some(true)
    }

    /// Whether the card carries an `ETag` (`card_etag`).
    pub fn tags_card(&self) -> bool {
        self.card_etag == Some(true)
    }

    /// Whether params may use proto field names (`proto_names`).
    pub fn reads_proto_names(&self) -> bool {
        self.proto_names == Some(true)
    }

    /// Whether appended user messages get the task's ids (`history_ids`).
    pub fn fills_history_ids(&self) -> bool {
        self.history_ids == Some(true)
    }

    /// How the 0.3 wire is served (`v03`; unset: [`V03Wire::Off`]).
    pub fn v03(&self) -> V03Wire {
        self.v03.unwrap_or(V03Wire::Off)
    }

    /// Whether a request's `A2A-Version` value (trimmed; empty when absent) asks for 0.3
    /// as the model reads it: Mastra `""` or `0.3`; a2a-sdk `""` or any `0.x`.
    pub fn asks_v03(&self, version: &str) -> bool {
        match self.v03() {
            V03Wire::Off => false,
            V03Wire::Native => version.is_empty() || version == "0.3",
            V03Wire::SdkCompat => {
                version.is_empty()
                    || version
                        .split('.')
                        .next()
                        .and_then(|m| m.parse::<u64>().ok())
                        == Some(0)
            }
        }
    }

    /// Whether a request's `A2A-Version` value (trimmed; empty when absent) is served as 1.0.
    pub fn serves(&self, version: &str) -> bool {
        match self.versions {
            VersionMatch::Exact => version == "1.0",
            VersionMatch::SameMajor => {
                let mut parts = version.splitn(2, '.');
                let major = parts.next().unwrap_or("");
                let minor = parts.next().unwrap_or("0");
                major.parse::<u64>() == Ok(1) && minor.parse::<u64>().is_ok()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_major_serves_any_one_point_x_and_exact_only_one_point_zero() {
        let exact = WireKnobs::default();
        let major = WireKnobs {
            versions: VersionMatch::SameMajor,
            ..WireKnobs::default()
        };
        for (v, e, m) in [
            ("1.0", true, true),
            ("1.1", false, true),
            ("1", false, true),
            ("2.0", false, false),
            ("0.3", false, false),
            ("", false, false),
            ("1.x", false, false),
        ] {
            assert_eq!(exact.serves(v), e, "exact {v:?}");
            assert_eq!(major.serves(v), m, "same-major {v:?}");
        }
    }
}
