//! The REQUIRED fields of the A2A 1.0 JSON-RPC params, checked as a2a-sdk 1.3.0 checks them
//! (`utils/proto_utils.py` `validate_proto_required_fields`, run by the request handler's
//! `@validate_request_params` after the version check): each field the proto marks
//! `(google.api.field_behavior) = REQUIRED`, in the proto's field order, a missing message
//! or empty scalar `Field is required.`, an empty list `Field must contain at least one
//! element.`, then the same inside each present message field, named by its proto path
//! (`message.message_id`, `configuration.task_push_notification_config.url`). The SDK answers
//! `-32602 "Validation failed"` with the list as its `ErrorInfo` metadata `errors` and as a
//! `google.rpc.BadRequest`'s `fieldViolations` (`utils/error_handlers.py`
//! `build_error_details`); `wire.required_fields` says a model does ([`violations`]).

use serde_json::{json, Value};

/// A field the params lack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldViolation {
    /// The field's proto path (`message.parts`).
    pub field: String,
    /// What is wrong with it, in the SDK's words.
    pub message: &'static str,
}

const REQUIRED: &str = "Field is required.";
const NON_EMPTY: &str = "Field must contain at least one element.";

/// What a field must hold.
#[derive(Clone, Copy)]
enum Rule {
    /// A string, not empty.
    Text,
    /// An enum value other than its `..._UNSPECIFIED` zero.
    Enum,
    /// A message, present.
    Message,
    /// A list with at least one element.
    List,
}

/// `(json name, proto name, rule)` of the REQUIRED fields of a message, in field order.
type Fields = &'static [(&'static str, &'static str, Rule)];

const MESSAGE: Fields = &[
    ("messageId", "message_id", Rule::Text),
    ("role", "role", Rule::Enum),
    ("parts", "parts", Rule::List),
];
const PUSH_CONFIG: Fields = &[("url", "url", Rule::Text)];
const AUTHENTICATION: Fields = &[("scheme", "scheme", Rule::Text)];
const BY_ID: Fields = &[("id", "id", Rule::Text)];
const PUSH_BY_ID: Fields = &[("taskId", "task_id", Rule::Text), ("id", "id", Rule::Text)];
const PUSH_LIST: Fields = &[("taskId", "task_id", Rule::Text)];
const SEND: Fields = &[("message", "message", Rule::Message)];

/// The REQUIRED fields `params` of `method` lack, in the SDK's order; `None` when the method
/// is not a 1.0 method or its params are not an object (the params parse answers those).
pub fn violations(method: &str, params: &Value) -> Option<Vec<FieldViolation>> {
    use a2a::jsonrpc::methods as m;
    if !params.is_object() {
        return None;
    }
    let mut out = Vec::new();
    match method {
        m::SEND_MESSAGE | m::SEND_STREAMING_MESSAGE => {
            check(params, SEND, "", &mut out);
            if let Some(message) = present(params, "message") {
                check(message, MESSAGE, "message.", &mut out);
            }
            if let Some(cfg) = present(params, "configuration")
                .and_then(|c| present(c, "taskPushNotificationConfig"))
            {
                push_config(
                    cfg,
                    "configuration.task_push_notification_config.",
                    &mut out,
                );
            }
        }
        m::GET_TASK | m::CANCEL_TASK | m::SUBSCRIBE_TO_TASK => check(params, BY_ID, "", &mut out),
        m::CREATE_PUSH_CONFIG => push_config(params, "", &mut out),
        m::GET_PUSH_CONFIG | m::DELETE_PUSH_CONFIG => check(params, PUSH_BY_ID, "", &mut out),
        m::LIST_PUSH_CONFIGS => check(params, PUSH_LIST, "", &mut out),
        m::LIST_TASKS => {}
        _ => return None,
    }
    Some(out)
}

/// The `error.data` of a refusal for `found` (a2a-sdk 1.3.0 `build_error_details`): the
/// `ErrorInfo` with the list as `metadata.errors`, then the `google.rpc.BadRequest`.
pub fn error_details(found: &[FieldViolation]) -> Value {
    let errors: Vec<Value> = found
        .iter()
        .map(|v| json!({"field": v.field, "message": v.message}))
        .collect();
    let field_violations: Vec<Value> = found
        .iter()
        .map(|v| json!({"field": v.field, "description": v.message}))
        .collect();
    json!([
        {
            "@type": a2a::errordetails::ERROR_INFO_TYPE,
            "reason": a2a::errors::error_reason(a2a::errors::error_code::INVALID_PARAMS),
            "domain": a2a::errordetails::PROTOCOL_DOMAIN,
            "metadata": {"errors": errors}
        },
        {"@type": a2a::errordetails::BAD_REQUEST_TYPE, "fieldViolations": field_violations}
    ])
}

fn present<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

fn push_config(cfg: &Value, prefix: &str, out: &mut Vec<FieldViolation>) {
    check(cfg, PUSH_CONFIG, prefix, out);
    if let Some(auth) = present(cfg, "authentication") {
        check(
            auth,
            AUTHENTICATION,
            &format!("{prefix}authentication."),
            out,
        );
    }
}

fn check(v: &Value, fields: Fields, prefix: &str, out: &mut Vec<FieldViolation>) {
    for (json_name, proto_name, rule) in fields {
        let value = present(v, json_name);
        // A value of the wrong type is the params parse's to refuse (before the version
        // check, as `ParseDict` does), not a missing field.
        let message = match (rule, value) {
            (Rule::List, None) => Some(NON_EMPTY),
            (Rule::List, Some(Value::Array(a))) if a.is_empty() => Some(NON_EMPTY),
            (_, None) => Some(REQUIRED),
            (Rule::Text, Some(Value::String(s))) if s.is_empty() => Some(REQUIRED),
            (Rule::Enum, Some(Value::String(s))) if s.is_empty() || s.ends_with("_UNSPECIFIED") => {
                Some(REQUIRED)
            }
            (Rule::Enum, Some(Value::Number(n))) if n.as_u64() == Some(0) => Some(REQUIRED),
            _ => None,
        };
        if let Some(message) = message {
            out.push(FieldViolation {
                field: format!("{prefix}{proto_name}"),
                message,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(method: &str, params: Value) -> Vec<String> {
        violations(method, &params)
            .expect("a 1.0 method")
            .into_iter()
            .map(|v| format!("{} {}", v.field, v.message))
            .collect()
    }

    #[test]
    fn every_missing_field_is_named_in_the_sdks_order() {
        // Measured on a2a-sdk 1.3.0 (docs/CONFORMANCE.md, "Field violations").
        assert_eq!(
            fields(
                "SendMessage",
                json!({"message": {"role": "ROLE_UNSPECIFIED", "messageId": "", "parts": []},
                       "configuration": {"taskPushNotificationConfig": {"authentication": {}}}})
            ),
            [
                "message.message_id Field is required.",
                "message.role Field is required.",
                "message.parts Field must contain at least one element.",
                "configuration.task_push_notification_config.url Field is required.",
                "configuration.task_push_notification_config.authentication.scheme Field is required.",
            ]
        );
        assert_eq!(
            fields("SendMessage", json!({"message": null})),
            ["message Field is required."]
        );
        assert_eq!(fields("GetTask", json!({})), ["id Field is required."]);
        assert_eq!(
            fields(
                "CreateTaskPushNotificationConfig",
                json!({"authentication": {"credentials": "x"}})
            ),
            [
                "url Field is required.",
                "authentication.scheme Field is required."
            ]
        );
        assert_eq!(
            fields("GetTaskPushNotificationConfig", json!({"taskId": "t"})),
            ["id Field is required."]
        );
        assert_eq!(fields("ListTasks", json!({})), Vec::<String>::new());
    }

    #[test]
    fn a_complete_request_has_none_and_others_are_left_to_the_parse() {
        let ok =
            json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}});
        assert_eq!(fields("SendStreamingMessage", ok), Vec::<String>::new());
        assert_eq!(violations("GetTask", &json!([1])), None);
        // The wrong type is the parse's to refuse (a2a-sdk: `parseError`, before the version).
        assert_eq!(fields("GetTask", json!({"id": 5})), Vec::<String>::new());
        assert_eq!(
            fields(
                "SendMessage",
                json!({"message": {"messageId": "m", "role": 0, "parts": {}}})
            ),
            ["message.role Field is required."]
        );
        assert_eq!(violations("NoSuchMethod", &json!({})), None);
    }

    #[test]
    fn the_details_are_error_info_then_bad_request() {
        let found = violations("GetTask", &json!({})).unwrap();
        assert_eq!(
            error_details(&found),
            json!([
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "INVALID_PARAMS",
                 "domain": "a2a-protocol.org",
                 "metadata": {"errors": [{"field": "id", "message": "Field is required."}]}},
                {"@type": "type.googleapis.com/google.rpc.BadRequest",
                 "fieldViolations": [{"field": "id", "description": "Field is required."}]}
            ])
        );
    }
}
