//! The JSON-RPC face of a replica: the checks of a request in the model's order (the
//! envelope, the method and its params, `A2A-Version`, the card's streaming flag), dispatch
//! of the A2A methods to their handlers, error and result responses ([`Refusal`], with
//! `google.rpc.ErrorInfo` data where the model sends it), the 401 ([`UNAUTHENTICATED`]) and
//! 413 answers, the response headers, the agent card ([`agent_card`], declaring the Bearer
//! scheme the replica enforces; a model serving 0.3 adds its 0.3 interface or serves a 0.3
//! card, as its real system does), `historyLength` on answers, and the server-sent-events response of the
//! streaming methods. A 0.3 request goes to the 0.3 edge (`wire03.rs`) first.
//!
//! Knobs read: `[wire]` (`v03`, `version_check`, `versions`, `error_data`, `proto_names`,
//! `card_etag`), `push.supported` (the
//! card's capability), `auth.bearer` (the card's security scheme); in runs that
//! simulate the card, the publisher's latest card decides whether the streaming methods are
//! served.

use std::rc::Rc;

use a2a::{SendMessageRequest, StreamResponse, Task};
use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::wire03::Route03;
use super::{Caller, Replica, REPLICA_HEADER};
use crate::model::{BearerRule, ErrorData, VersionCheck};
use crate::net::{self, BoxBody, ChannelBody};
use crate::trace::{Event, Tone};

/// An A2A error answer: a JSON-RPC error, or an HTTP status (Rasa's 409 for a duplicate in
/// flight).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Rpc(i32, String),
    Http(u16, String),
    /// Params missing REQUIRED fields (`wire.required_fields`): `-32602 "Validation failed"`.
    Fields(Vec<crate::protocol::required::FieldViolation>),
}

pub(super) fn rpc(code: i32, message: impl Into<String>) -> Refusal {
    Refusal::Rpc(code, message.into())
}

/// The JSON-RPC code of an authentication failure: the first of JSON-RPC 2.0's
/// implementation-defined server errors (`-32000` to `-32099`), which A2A leaves unused
/// (its own codes are `-32001` to `-32009`).
pub(crate) const UNAUTHENTICATED: i32 = -32000;
/// The `google.rpc.ErrorInfo` domain of the simulator's own errors (an A2A error's is
/// `a2a-protocol.org`; an authentication failure is not one).
pub(crate) const ERROR_DOMAIN: &str = "a2a-chaos";

/// The JSON-RPC error of a call without a valid token (see [`Replica::unauthorized`]).
pub(crate) fn unauthenticated(why: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": null, "error": {
        "code": UNAUTHENTICATED,
        "message": format!("unauthorized: {why}"),
        "data": [{
            "@type": a2a::errordetails::ERROR_INFO_TYPE,
            "reason": "UNAUTHENTICATED",
            "domain": ERROR_DOMAIN,
            "metadata": {"scheme": "Bearer"}
        }]
    }})
}

impl Replica {
    /// Whether the agent streams: what its card says (the publisher's latest revision, in
    /// runs that simulate the card), and always otherwise.
    fn streams(&self) -> bool {
        self.links.card.as_ref().is_none_or(|c| c.streams())
    }

    pub(super) fn with_headers(&self, mut resp: Response<BoxBody>) -> Response<BoxBody> {
        let h = resp.headers_mut();
        h.insert("a2a-version", http::HeaderValue::from_static("1.0"));
        h.insert(
            REPLICA_HEADER,
            http::HeaderValue::from_str(&self.host.name()).expect("replica names are ASCII"),
        );
        resp
    }

    pub(super) fn card(&self) -> Value {
        // On a real socket (`a2a-chaos serve`) the card names the address it answers on.
        let url = net::real()
            .and_then(|n| n.addr(&self.host.name()))
            .map_or_else(
                || "http://router:8080/".to_string(),
                |a| format!("http://{a}/"),
            );
        let mut card = crate::protocol::agent_card(
            &format!(
                "Scripted agent on {} (model {})",
                self.host, self.profile.name
            ),
            env!("CARGO_PKG_VERSION"),
            &url,
            self.streams(),
            self.profile.push.supported,
        );
        if self.profile.auth.bearer == BearerRule::Required {
            // The card declares what the replica enforces, so a client that follows the
            // card (the SDKs' auth helpers) sends the token (A2A 1.0 §7.3); in a2a-sdk
            // 1.3.0's JSON form of an HTTP Bearer scheme.
            card["securitySchemes"] = json!({"bearer": {"httpAuthSecurityScheme": {
                "scheme": "Bearer", "bearerFormat": "simjwt"
            }}});
            card["securityRequirements"] = json!([{"schemes": {"bearer": {}}}]);
        }
        // A model that serves 0.3 says so in its card, in its real system's shape, so a 0.3
        // client's card resolver finds the agent (`protocol::v03`).
        match self.profile.wire().v03() {
            crate::model::V03Wire::Off => card,
            crate::model::V03Wire::SdkCompat => {
                crate::protocol::v03::card_with_v03_interface(&mut card);
                card
            }
            crate::model::V03Wire::Native => crate::protocol::v03::card_native(&card),
        }
    }

    /// The card's answer: with a weak `ETag` when the model sends one (`wire.card_etag`),
    /// and `304` with no body to an `If-None-Match` that names it (a2a-sdk 1.3.0
    /// `agent_card_routes.py`).
    pub(super) fn card_response(&self, headers: &http::HeaderMap) -> Response<BoxBody> {
        let card = self.card();
        if !self.profile.wire().tags_card() {
            return net::json_response(StatusCode::OK, &card);
        }
        let etag = crate::protocol::card_etag(&card);
        let hit = headers
            .get("if-none-match")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|h| crate::protocol::if_none_match_hits(h, &etag));
        let mut resp = if hit {
            Response::builder()
                .status(StatusCode::NOT_MODIFIED)
                .body(net::full(Bytes::new()))
                .expect("static response parts are valid")
        } else {
            net::json_response(StatusCode::OK, &card)
        };
        if let Ok(value) = http::HeaderValue::from_str(&etag) {
            resp.headers_mut().insert("etag", value);
        }
        resp
    }

    pub(super) fn rpc_error(&self, id: Value, refusal: Refusal) -> Response<BoxBody> {
        match refusal {
            Refusal::Rpc(code, message) => {
                let mut error = json!({"code": code, "message": message});
                if let Some(data) = self.error_data(code) {
                    error["data"] = data;
                }
                net::json_response(
                    StatusCode::OK,
                    &json!({"jsonrpc": "2.0", "id": id, "error": error}),
                )
            }
            Refusal::Fields(found) => {
                let mut error = json!({
                    "code": a2a::errors::error_code::INVALID_PARAMS,
                    "message": "Validation failed"
                });
                if self.profile.wire().error_data == ErrorData::ErrorInfo {
                    error["data"] = crate::protocol::required::error_details(&found);
                }
                net::json_response(
                    StatusCode::OK,
                    &json!({"jsonrpc": "2.0", "id": id, "error": error}),
                )
            }
            Refusal::Http(status, message) => net::json_response(
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32600, "message": message}}),
            ),
        }
    }

    /// An error's `data` (`wire.error_data`): a2a-sdk 1.3.0 gives every A2A and params
    /// error a `google.rpc.ErrorInfo`, and its dispatcher's own `-32601` and `-32700` none.
    fn error_data(&self, code: i32) -> Option<Value> {
        let known = (-32009..=-32001).contains(&code) || (-32603..=-32600).contains(&code);
        (self.profile.wire().error_data == ErrorData::ErrorInfo
            && known
            && code != a2a::errors::error_code::METHOD_NOT_FOUND)
            .then(|| {
                json!([{
                    "@type": a2a::errordetails::ERROR_INFO_TYPE,
                    "reason": a2a::errors::error_reason(code),
                    "domain": a2a::errordetails::PROTOCOL_DOMAIN,
                    "metadata": {}
                }])
            })
    }

    /// The answer to a call without a valid token: HTTP 401 with a `Bearer` challenge, its
    /// body a JSON-RPC error (A2A 1.0 §3.3.2: an authentication error is "HTTP `401
    /// Unauthorized`, gRPC `UNAUTHENTICATED`, JSON-RPC custom error", with the challenge
    /// and the scheme). The code is [`UNAUTHENTICATED`], outside both the JSON-RPC
    /// standard codes and A2A's own, so no client reads it as a malformed request
    /// (@a2a-js/sdk 1.3.0 maps `-32600` to `RequestMalformedError`), and the `data` is a
    /// `google.rpc.ErrorInfo` (§9.5) whose reason says what happened. The request's body
    /// is not read yet, so its id is null.
    pub(super) fn unauthorized(&self, why: &str) -> Response<BoxBody> {
        let mut resp = net::json_response(StatusCode::UNAUTHORIZED, &unauthenticated(why));
        resp.headers_mut().insert(
            http::header::WWW_AUTHENTICATE,
            http::HeaderValue::from_static("Bearer realm=\"a2a\""),
        );
        resp
    }

    /// The answer to a body over the limit, read to its end first: HTTP 413 and a JSON-RPC
    /// `-32600` (a2a-sdk 1.3.0 `jsonrpc_dispatcher.py` maps a 413 to "Payload too large").
    pub(super) fn too_large(&self, limit: usize) -> Response<BoxBody> {
        let mut resp = self.rpc_error(
            Value::Null,
            rpc(
                a2a::errors::error_code::INVALID_REQUEST,
                format!("payload too large: body over {limit} bytes"),
            ),
        );
        *resp.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
        resp
    }

    pub(super) fn rpc_ok(&self, id: Value, result: Value) -> Response<BoxBody> {
        net::json_response(
            StatusCode::OK,
            &json!({"jsonrpc": "2.0", "id": id, "result": result}),
        )
    }

    /// The `A2A-Version` check (`wire.versions`); `version` is the trimmed header, empty
    /// when absent (which means 0.3, A2A-BEHAVIOURS.md §1).
    fn check_version(&self, version: &str) -> Result<(), Refusal> {
        if self.profile.wire().serves(version) {
            return Ok(());
        }
        // 1.0-only servers refuse 1.0 methods without it (a2a-python 1.3, seen run).
        Err(rpc(
            a2a::errors::error_code::VERSION_NOT_SUPPORTED,
            format!("A2A-Version `{version}` is not supported; send 1.0"),
        ))
    }

    /// Refuses a streaming method once the card turned streaming off: a client still
    /// holding the older card is told so, and nothing runs (A2A-BEHAVIOURS.md §1: -32004).
    pub(super) fn check_streaming(&self, method: &str) -> Result<(), Refusal> {
        if !a2a::jsonrpc::methods::is_streaming(method) || self.streams() {
            return Ok(());
        }
        self.record_as(
            Tone::Bad,
            format!("refused {method}: the agent card says the agent does not stream"),
        );
        Err(rpc(
            a2a::errors::error_code::UNSUPPORTED_OPERATION,
            format!(
                "{method} is not supported: the agent card says capabilities.streaming = false"
            ),
        ))
    }

    pub(super) async fn dispatch(
        self: Rc<Self>,
        version: &str,
        body: &Bytes,
        caller: &Caller,
    ) -> Response<BoxBody> {
        if let Some(max) = self.parts_max.get() {
            // A bounded server's own limit (`serve --max-parts`), on either wire, counted
            // before the request becomes a tree of values (85,000 empty parts would take
            // tens of MB as one).
            if let Some(parts) = crate::protocol::count_message_parts(body).filter(|n| *n > max) {
                let id = serde_json::from_slice::<crate::protocol::RequestId>(body)
                    .map(|r| r.id)
                    .unwrap_or(Value::Null);
                return self.rpc_error(
                    id,
                    rpc(
                        a2a::errors::error_code::INVALID_PARAMS,
                        format!("invalid params: the message has {parts} parts; at most {max} are accepted"),
                    ),
                );
            }
        }
        let request: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => return self.rpc_error(Value::Null, rpc(-32700, format!("parse error: {e}"))),
        };
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        if !matches!(id, Value::String(_) | Value::Number(_) | Value::Null) {
            return self.rpc_error(Value::Null, rpc(-32600, "invalid request: bad id"));
        }
        let (Some(method), Some("2.0")) = (
            request.get("method").and_then(Value::as_str),
            request.get("jsonrpc").and_then(Value::as_str),
        ) else {
            return self.rpc_error(
                id,
                rpc(-32600, "invalid request: jsonrpc 2.0 and method required"),
            );
        };
        let mut params = request.get("params").cloned().unwrap_or(Value::Null);
        // The 0.3 wire, where the model serves it, is translated at the edge (wire03.rs).
        match self.route03(method, version) {
            Route03::V1 => {}
            Route03::V03(v1) => {
                return self.dispatch_v03(id, v1, version, params, caller).await;
            }
            Route03::Refuse(code, message) => return self.rpc_error(id, rpc(code, message)),
        }
        if self.profile.wire().reads_proto_names() {
            crate::protocol::camel_case_fields(&mut params);
        }
        // Missing REQUIRED fields, where the model names them (`wire.required_fields`), are
        // refused by the handler, after the version check (a2a-sdk 1.3.0
        // `@validate_request_params`), not by the params parse.
        let missing = self
            .profile
            .wire()
            .checks_required_fields()
            .then(|| crate::protocol::required::violations(method, &params))
            .flatten()
            .filter(|found| !found.is_empty());
        // The order of the checks is the model's (`wire.version_check`).
        let checked = match (self.profile.wire().version_check, missing) {
            (_, Some(found)) => self
                .check_version(version)
                .and_then(|()| self.check_streaming(method))
                .and(Err(Refusal::Fields(found))),
            (VersionCheck::First, None) => self
                .check_version(version)
                .and_then(|()| self.check_streaming(method))
                .and_then(|()| Call::parse(method, params)),
            (VersionCheck::AfterParams, None) => Call::parse(method, params).and_then(|call| {
                self.check_version(version)?;
                self.check_streaming(method)?;
                Ok(call)
            }),
        };
        match checked {
            Ok(call) => self.run(id, call, caller).await,
            Err(r) => self.rpc_error(id, r),
        }
    }

    /// Runs one parsed call.
    pub(super) async fn run(
        self: Rc<Self>,
        id: Value,
        mut call: Call,
        caller: &Caller,
    ) -> Response<BoxBody> {
        if let Call::Send(p) | Call::Stream(p) = &mut call {
            // An inline push config is held for the turn, which registers it for its task.
            let inline = p
                .configuration
                .as_mut()
                .and_then(|c| c.task_push_notification_config.take());
            if let Some(cfg) = inline {
                if let Err(r) = self.hold_inline_push(&p.message.message_id, cfg) {
                    return self.rpc_error(id, r);
                }
            }
        }
        match call {
            Call::Send(p) => {
                let configuration = p.configuration.as_ref();
                let blocking = !configuration
                    .and_then(|c| c.return_immediately)
                    .unwrap_or(false);
                let history = configuration.and_then(|c| c.history_length);
                if let Err(r) = check_history_length(history) {
                    return self.rpc_error(id, r);
                }
                // The turn runs as its own task: a caller that hangs up (a client
                // timeout, a dropped connection) does not stop the work, as it does
                // not in a real server.
                let work =
                    crate::activity::spawn(self.clone().send(p.message, blocking, caller.clone()));
                match work.await {
                    Ok(Ok(mut task)) => {
                        trim_history(&mut task, history);
                        self.rpc_ok(id, json!({ "task": task }))
                    }
                    Ok(Err(r)) => self.rpc_error(id, r),
                    Err(e) => self.rpc_error(id, rpc(-32603, format!("turn aborted: {e}"))),
                }
            }
            Call::Stream(p) => {
                self.clone()
                    .send_streaming(id, p.message, caller.clone())
                    .await
            }
            Call::Get(p) => {
                if let Err(r) = check_history_length(p.history_length) {
                    return self.rpc_error(id, r);
                }
                match self.load_for(caller, &p.id).await {
                    Ok(Some((mut task, _))) => {
                        trim_history(&mut task, p.history_length);
                        self.rpc_ok(id, serde_json::to_value(task).expect("tasks serialise"))
                    }
                    Ok(None) => self.rpc_error(id, rpc(-32001, format!("task {} not found", p.id))),
                    Err(e) => self.rpc_error(id, rpc(-32603, e)),
                }
            }
            Call::List(p) => match self.list_tasks(&p, caller).await {
                Ok(v) => self.rpc_ok(id, v),
                Err(r) => self.rpc_error(id, r),
            },
            Call::Cancel(p) => {
                let (me, caller) = (self.clone(), caller.clone());
                let work = crate::activity::spawn(async move { me.cancel(&caller, &p.id).await });
                match work.await {
                    Ok(Ok(task)) => {
                        self.rpc_ok(id, serde_json::to_value(task).expect("tasks serialise"))
                    }
                    Ok(Err(r)) => self.rpc_error(id, r),
                    Err(e) => self.rpc_error(id, rpc(-32603, format!("cancel aborted: {e}"))),
                }
            }
            Call::Subscribe(p) => self.clone().subscribe(id, p.id, caller).await,
            Call::CreatePush(cfg) => match self.create_push_config(cfg, caller).await {
                Ok(cfg) => self.rpc_ok(id, serde_json::to_value(cfg).expect("configs serialise")),
                Err(r) => self.rpc_error(id, r),
            },
            Call::GetPush(p) => match self.get_push_config(&p.task_id, &p.id, caller).await {
                Ok(cfg) => self.rpc_ok(id, serde_json::to_value(cfg).expect("configs serialise")),
                Err(r) => self.rpc_error(id, r),
            },
            Call::ListPush(p) => match self.list_push_configs(&p.task_id, caller).await {
                Ok(configs) => {
                    let answer = a2a::ListTaskPushNotificationConfigsResponse {
                        configs,
                        next_page_token: None,
                    };
                    self.rpc_ok(id, serde_json::to_value(answer).expect("configs serialise"))
                }
                Err(r) => self.rpc_error(id, r),
            },
            Call::DeletePush(p) => match self.delete_push_config(&p.task_id, &p.id, caller).await {
                Ok(()) => self.rpc_ok(id, Value::Null),
                Err(r) => self.rpc_error(id, r),
            },
        }
    }
}

/// A call of a known method with its params parsed.
pub(super) enum Call {
    Send(SendMessageRequest),
    Stream(SendMessageRequest),
    Get(a2a::GetTaskRequest),
    List(a2a::ListTasksRequest),
    Cancel(a2a::CancelTaskRequest),
    Subscribe(a2a::SubscribeToTaskRequest),
    CreatePush(a2a::TaskPushNotificationConfig),
    GetPush(a2a::GetTaskPushNotificationConfigRequest),
    ListPush(a2a::ListTaskPushNotificationConfigsRequest),
    DeletePush(a2a::DeleteTaskPushNotificationConfigRequest),
}

impl Call {
    /// The method looked up (`-32601` when unknown), then its params parsed (`-32602`).
    pub(super) fn parse(method: &str, params: Value) -> Result<Call, Refusal> {
        fn typed<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, Refusal> {
            serde_json::from_value(params).map_err(|e| rpc(-32602, format!("invalid params: {e}")))
        }
        use a2a::jsonrpc::methods as m;
        Ok(match method {
            m::SEND_MESSAGE => Call::Send(typed(params)?),
            m::SEND_STREAMING_MESSAGE => Call::Stream(typed(params)?),
            m::GET_TASK => Call::Get(typed(params)?),
            m::LIST_TASKS => Call::List(typed(params)?),
            m::CANCEL_TASK => Call::Cancel(typed(params)?),
            m::SUBSCRIBE_TO_TASK => Call::Subscribe(typed(params)?),
            m::CREATE_PUSH_CONFIG => {
                let cfg: a2a::TaskPushNotificationConfig = typed(params)?;
                if cfg.task_id.is_empty() {
                    return Err(rpc(-32602, "invalid params: taskId required"));
                }
                Call::CreatePush(cfg)
            }
            m::GET_PUSH_CONFIG => Call::GetPush(typed(params)?),
            m::LIST_PUSH_CONFIGS => Call::ListPush(typed(params)?),
            m::DELETE_PUSH_CONFIG => Call::DeletePush(typed(params)?),
            other => return Err(rpc(-32601, format!("method `{other}` not found"))),
        })
    }
}

/// `historyLength` must not be negative (a2a-sdk 1.3.0: `-32602` "history length must be
/// non-negative", before the task is looked up).
pub(super) fn check_history_length(len: Option<i32>) -> Result<(), Refusal> {
    match len {
        Some(n) if n < 0 => Err(rpc(-32602, "history length must be non-negative")),
        _ => Ok(()),
    }
}

/// Keeps the last `len` history messages of an answer (A2A 1.0 §3.1.3; unset: all, 0: none,
/// the field left out). The stored task is not touched.
pub(super) fn trim_history(task: &mut Task, len: Option<i32>) {
    let Some(keep) = len.and_then(|n| usize::try_from(n).ok()) else {
        return;
    };
    if keep == 0 {
        task.history = None;
    } else if let Some(history) = task.history.as_mut() {
        let cut = history.len().saturating_sub(keep);
        history.drain(..cut);
    }
}

impl Replica {
    /// A server-sent-events response carrying each stream event as a JSON-RPC result. A
    /// drain ends it `handler.sse_grace_ms` after SIGTERM ([`Replica::stream_cut`]): the body
    /// just ends, whatever the run still had to say.
    pub(super) fn sse_response(
        &self,
        id: Value,
        mut rx: mpsc::Receiver<StreamResponse>,
    ) -> Response<BoxBody> {
        let (tx, body) = ChannelBody::channel(16);
        let cut = self.stream_cut();
        let (trace, host) = (self.links.trace.clone(), self.host.clone());
        crate::activity::spawn(async move {
            tokio::pin!(cut);
            loop {
                let event = tokio::select! {
                    biased;
                    () = &mut cut => {
                        trace.record(&host, Event::note(Tone::Bad, "drain: stream cut"));
                        return;
                    }
                    event = rx.recv() => event,
                };
                let Some(event) = event else { return };
                let line = json!({"jsonrpc": "2.0", "id": id, "result": event});
                let chunk = format!("data: {line}\n\n");
                if tx.send(Bytes::from(chunk)).await.is_err() {
                    return;
                }
            }
        });
        Response::builder()
            .status(StatusCode::OK)
            .header("content-type", "text/event-stream")
            .header("cache-control", "no-cache")
            .body(body)
            .expect("static response parts are valid")
    }
}
