//! The 0.3 edge of a replica's JSON-RPC face: a 0.3 request (a slash method name, as
//! `wire.v03` says the model serves it) is translated to 1.0 (`protocol::v03`), run by the
//! same dispatch as any 1.0 call, and its answer (a JSON body, or each server-sent event)
//! translated back to 0.3 on its way out. There is no second handler: only the edges know
//! 0.3.
//!
//! Knobs read: `wire.v03` (which requests are 0.3, the code for a request that is not valid
//! 0.3, the version check, the error codes a 0.3 answer may carry, `final` on status
//! updates).

use std::rc::Rc;

use bytes::Bytes;
use http::Response;
use http_body::Frame;
use http_body_util::BodyExt;
use serde_json::{json, Value};

use super::rpc::{rpc, Call};
use super::{Caller, Replica};
use crate::model::V03Wire;
use crate::net::{self, BoxBody};
use crate::protocol::v03::{self, Final};

/// What the model does with a request's method and version before the 1.0 checks.
pub(super) enum Route03 {
    /// Not a 0.3 request for this model: the 1.0 dispatch answers it as before.
    V1,
    /// A 0.3 request, served by the 1.0 method named.
    V03(&'static str),
    /// Refused outright (Mastra: a 1.0 method name asked for as 0.3 is `-32601`).
    Refuse(i32, String),
}

impl Replica {
    /// How `method` under `A2A-Version: version` is served (`wire.v03`).
    pub(super) fn route03(&self, method: &str, version: &str) -> Route03 {
        let wire = self.profile.wire();
        let slash = v03::v1_method(method);
        match (wire.v03(), slash) {
            (V03Wire::Off, _) => Route03::V1,
            // a2a-sdk: the 0.3 adapter takes every slash method, whatever the header.
            (V03Wire::SdkCompat, Some(v1)) => Route03::V03(v1),
            (V03Wire::SdkCompat, None) => Route03::V1,
            (V03Wire::Native, Some(v1)) if wire.asks_v03(version) => Route03::V03(v1),
            // Mastra: under 0.3 every other name is unknown, 1.0 names included.
            (V03Wire::Native, None) if wire.asks_v03(version) => {
                Route03::Refuse(-32601, format!("method `{method}` not found"))
            }
            (V03Wire::Native, _) => Route03::V1,
        }
    }

    /// Serves one 0.3 request as the 1.0 call `v1`, answering in 0.3.
    pub(super) async fn dispatch_v03(
        self: Rc<Self>,
        id: Value,
        v1: &'static str,
        version: &str,
        params: Value,
        caller: &Caller,
    ) -> Response<BoxBody> {
        let mode = self.profile.wire().v03();
        let invalid = match mode {
            // a2a-sdk validates the whole 0.3 request with pydantic: `-32600`.
            V03Wire::SdkCompat => a2a::errors::error_code::INVALID_REQUEST,
            _ => a2a::errors::error_code::INVALID_PARAMS,
        };
        let checked = v03::params_to_v1(v1, &params)
            .map_err(|e| rpc(invalid, format!("invalid 0.3 request: {e}")))
            .and_then(|p| {
                if mode == V03Wire::SdkCompat && !self.profile.wire().asks_v03(version) {
                    // `@validate_version('0.3')`: -32009, which 0.3 carries as -32603.
                    return Err(rpc(
                        a2a::errors::error_code::VERSION_NOT_SUPPORTED,
                        format!("A2A version '{version}' is not supported by this handler. Expected version '0.3'."),
                    ));
                }
                self.check_streaming(v1)?;
                Call::parse(v1, p)
            });
        let resp = match checked {
            Ok(call) => self.clone().run(id, call, caller).await,
            Err(r) => self.rpc_error(id, r),
        };
        let fin = match mode {
            V03Wire::Native => Final::AtRest,
            _ => Final::Terminal,
        };
        answer_v03(resp, v1, fin, mode).await
    }
}

/// A 1.0 JSON-RPC answer line (`{jsonrpc, id, result | error}`) in its 0.3 form.
fn line_to_v03(line: &mut Value, v1: &str, fin: Final, mode: V03Wire) {
    if let Some(result) = line.get("result") {
        line["result"] = v03::result_to_v03(v1, result, fin);
    }
    if let Some(error) = line.get_mut("error").and_then(Value::as_object_mut) {
        // 0.3 errors carry no google.rpc details; a2a-sdk maps codes 0.3 lacks to -32603.
        error.remove("data");
        let code = error.get("code").and_then(Value::as_i64).unwrap_or(-32603);
        if mode == V03Wire::SdkCompat && !v03::known_code(code) {
            error.insert("code".into(), json!(-32603));
        }
    }
}

/// One server-sent event (`data: {...}` lines) in its 0.3 form.
fn event_to_v03(event: &str, v1: &str, fin: Final, mode: V03Wire) -> String {
    let data: Vec<&str> = event
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim_start)
        .collect();
    match serde_json::from_str::<Value>(&data.join("\n")) {
        Ok(mut line) => {
            line_to_v03(&mut line, v1, fin, mode);
            format!("data: {line}\n\n")
        }
        Err(_) => format!("{event}\n\n"),
    }
}

/// The 1.0 answer `resp` to a 0.3 request, translated: a JSON body whole, a stream event by
/// event (the replica writes each event as one chunk; a chunk is buffered until its blank
/// line all the same).
async fn answer_v03(
    resp: Response<BoxBody>,
    v1: &'static str,
    fin: Final,
    mode: V03Wire,
) -> Response<BoxBody> {
    let (parts, body) = resp.into_parts();
    let sse = parts
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if sse {
        let mut pending = String::new();
        let body = body
            .map_frame(move |frame: Frame<Bytes>| match frame.into_data() {
                Ok(data) => {
                    pending.push_str(&String::from_utf8_lossy(&data));
                    let mut out = String::new();
                    while let Some(end) = pending.find("\n\n") {
                        let event: String = pending.drain(..end + 2).collect();
                        out.push_str(&event_to_v03(event.trim_end(), v1, fin, mode));
                    }
                    Frame::data(Bytes::from(out))
                }
                Err(frame) => frame,
            })
            .boxed_unsync();
        return Response::from_parts(parts, body);
    }
    let bytes = match body.collect().await {
        Ok(c) => c.to_bytes(),
        Err(_) => return Response::from_parts(parts, net::full(Bytes::new())),
    };
    let Ok(mut line) = serde_json::from_slice::<Value>(&bytes) else {
        return Response::from_parts(parts, net::full(bytes));
    };
    line_to_v03(&mut line, v1, fin, mode);
    let mut parts = parts;
    parts.headers.remove(http::header::CONTENT_LENGTH);
    let body = serde_json::to_vec(&line).expect("JSON values serialise");
    Response::from_parts(parts, net::full(body))
}
