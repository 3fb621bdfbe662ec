//! The JSON-RPC face of a replica: dispatch of the A2A methods to their handlers, the
//! `A2A-Version` check, error and result responses ([`Refusal`]), the response headers, the
//! agent card ([`agent_card`]) and the server-sent-events response of the streaming methods.
//!
//! Knobs read: `push.supported` (the card's capability), `handler.after_effect_failure`
//! (how a failure after the effect is answered); in runs that simulate the card, the
//! publisher's latest card decides whether the streaming methods are served.

use std::rc::Rc;

use a2a::{SendMessageRequest, StreamResponse};
use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::{Caller, Replica, REPLICA_HEADER};
use crate::model::AfterEffect;
use crate::net::{self, BoxBody, ChannelBody};
use crate::trace::Tone;

/// An A2A error answer: a JSON-RPC error, or an HTTP status (Rasa's 409 for a duplicate in
/// flight).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Rpc(i32, String),
    Http(u16, String),
}

pub(super) fn rpc(code: i32, message: impl Into<String>) -> Refusal {
    Refusal::Rpc(code, message.into())
}

impl Replica {
    /// Whether the agent streams: what its card says (the publisher's latest revision, in
    /// runs that simulate the card), and always otherwise.
    fn streams(&self) -> bool {
        self.card.as_ref().is_none_or(|c| c.streams())
    }

    /// The refusal a client gets when a turn fails after its effect may have run.
    pub(super) fn after_effect(&self, refusal: Refusal) -> Refusal {
        match (self.profile.handler.after_effect_failure, refusal) {
            (AfterEffect::Unavailable, Refusal::Rpc(code, message)) => Refusal::Http(
                503,
                format!("outcome unknown, retry with the same messageId ({code}: {message})"),
            ),
            (_, r) => r,
        }
    }

    pub(super) fn with_headers(&self, mut resp: Response<BoxBody>) -> Response<BoxBody> {
        let h = resp.headers_mut();
        h.insert("a2a-version", http::HeaderValue::from_static("1.0"));
        h.insert(
            REPLICA_HEADER,
            http::HeaderValue::from_str(&self.name).expect("replica names are ASCII"),
        );
        resp
    }

    pub(super) fn card(&self) -> Value {
        // On a real socket (`a2a-chaos serve`) the card names the address it answers on.
        let url = net::real().and_then(|n| n.addr(&self.name)).map_or_else(
            || "http://router:8080/".to_string(),
            |a| format!("http://{a}/"),
        );
        crate::protocol::agent_card(
            &format!(
                "Scripted agent on {} (model {})",
                self.name, self.profile.name
            ),
            env!("CARGO_PKG_VERSION"),
            &url,
            self.streams(),
            self.profile.push.supported,
        )
    }

    pub(super) fn rpc_error(&self, id: Value, refusal: Refusal) -> Response<BoxBody> {
        match refusal {
            Refusal::Rpc(code, message) => net::json_response(
                StatusCode::OK,
                &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
            ),
            Refusal::Http(status, message) => net::json_response(
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32600, "message": message}}),
            ),
        }
    }

    fn rpc_ok(&self, id: Value, result: Value) -> Response<BoxBody> {
        net::json_response(
            StatusCode::OK,
            &json!({"jsonrpc": "2.0", "id": id, "result": result}),
        )
    }

    pub(super) async fn dispatch(
        self: Rc<Self>,
        version: &str,
        body: &Bytes,
        caller: &Caller,
    ) -> Response<BoxBody> {
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
        if !matches!(id, Value::String(_) | Value::Number(_) | Value::Null) {
            return self.rpc_error(Value::Null, rpc(-32600, "invalid request: bad id"));
        }
        let params = request.get("params").cloned().unwrap_or(Value::Null);
        if version != "1.0" {
            // An absent or empty header means 0.3 (A2A-BEHAVIOURS.md §1); 1.0-only servers
            // refuse 1.0 methods without it (a2a-python 1.3, seen run).
            return self.rpc_error(
                id,
                rpc(
                    -32009,
                    format!("A2A-Version `{version}` is not supported; send 1.0"),
                ),
            );
        }
        if a2a::jsonrpc::methods::is_streaming(method) && !self.streams() {
            // The card turned streaming off: a client still holding the older card is
            // told so, and nothing runs (A2A-BEHAVIOURS.md §1: -32004 UnsupportedOperation).
            self.record_as(
                Tone::Bad,
                format!("refused {method}: the agent card says the agent does not stream"),
            );
            return self.rpc_error(
                id,
                rpc(
                    a2a::errors::error_code::UNSUPPORTED_OPERATION,
                    format!("{method} is not supported: the agent card says capabilities.streaming = false"),
                ),
            );
        }
        match method {
            "SendMessage" => match serde_json::from_value::<SendMessageRequest>(params) {
                Ok(p) => {
                    let blocking = !p
                        .configuration
                        .as_ref()
                        .and_then(|c| c.return_immediately)
                        .unwrap_or(false);
                    // The turn runs as its own task: a caller that hangs up (a client
                    // timeout, a dropped connection) does not stop the work, as it does
                    // not in a real server.
                    let work = tokio::task::spawn_local(self.clone().send(
                        p.message,
                        blocking,
                        caller.clone(),
                    ));
                    match work.await {
                        Ok(Ok(task)) => self.rpc_ok(id, json!({ "task": task })),
                        Ok(Err(r)) => self.rpc_error(id, r),
                        Err(e) => self.rpc_error(id, rpc(-32603, format!("turn aborted: {e}"))),
                    }
                }
                Err(e) => self.rpc_error(id, rpc(-32602, format!("invalid params: {e}"))),
            },
            "SendStreamingMessage" => match serde_json::from_value::<SendMessageRequest>(params) {
                Ok(p) => {
                    self.clone()
                        .send_streaming(id, p.message, caller.clone())
                        .await
                }
                Err(e) => self.rpc_error(id, rpc(-32602, format!("invalid params: {e}"))),
            },
            "GetTask" => match serde_json::from_value::<a2a::GetTaskRequest>(params) {
                Ok(p) => match self.load_for(caller, &p.id).await {
                    Ok(Some((task, _))) => {
                        self.rpc_ok(id, serde_json::to_value(task).expect("tasks serialise"))
                    }
                    Ok(None) => self.rpc_error(id, rpc(-32001, format!("task {} not found", p.id))),
                    Err(e) => self.rpc_error(id, rpc(-32603, e)),
                },
                Err(e) => self.rpc_error(id, rpc(-32602, format!("invalid params: {e}"))),
            },
            "CancelTask" => match serde_json::from_value::<a2a::CancelTaskRequest>(params) {
                Ok(p) => {
                    let (me, caller) = (self.clone(), caller.clone());
                    let work =
                        tokio::task::spawn_local(async move { me.cancel(&caller, &p.id).await });
                    match work.await {
                        Ok(Ok(task)) => {
                            self.rpc_ok(id, serde_json::to_value(task).expect("tasks serialise"))
                        }
                        Ok(Err(r)) => self.rpc_error(id, r),
                        Err(e) => self.rpc_error(id, rpc(-32603, format!("cancel aborted: {e}"))),
                    }
                }
                Err(e) => self.rpc_error(id, rpc(-32602, format!("invalid params: {e}"))),
            },
            "SubscribeToTask" => {
                match serde_json::from_value::<a2a::SubscribeToTaskRequest>(params) {
                    Ok(p) => self.clone().subscribe(id, p.id, caller).await,
                    Err(e) => self.rpc_error(id, rpc(-32602, format!("invalid params: {e}"))),
                }
            }
            "CreateTaskPushNotificationConfig" => {
                match serde_json::from_value::<a2a::TaskPushNotificationConfig>(params) {
                    Ok(cfg) if !cfg.task_id.is_empty() => {
                        match self.register_push(&cfg, caller).await {
                            Ok(()) => self
                                .rpc_ok(id, serde_json::to_value(cfg).expect("configs serialise")),
                            Err(r) => self.rpc_error(id, r),
                        }
                    }
                    Ok(_) => self.rpc_error(id, rpc(-32602, "invalid params: taskId required")),
                    Err(e) => self.rpc_error(id, rpc(-32602, format!("invalid params: {e}"))),
                }
            }
            other => self.rpc_error(id, rpc(-32601, format!("method `{other}` not found"))),
        }
    }
}

/// A server-sent-events response carrying each stream event as a JSON-RPC result.
pub(super) fn sse_response(id: Value, mut rx: mpsc::Receiver<StreamResponse>) -> Response<BoxBody> {
    let (tx, body) = ChannelBody::channel(16);
    tokio::task::spawn_local(async move {
        while let Some(event) = rx.recv().await {
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
