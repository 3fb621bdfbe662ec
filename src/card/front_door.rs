//! Extra hosts a card may name (`agent-v2.example`, `agent.partner.example`,
//! `mitm.example`): forwarding proxies to the router that record what they received.
//!
//! They exist only in runs whose card simulation can name them. Each one answers like the
//! agent (it forwards every request to `router:8080` and streams the answer back), so a
//! client that follows a moved, foreign or tampered card sees its calls succeed, as it would
//! in the field: the only trace of the mistake is that the host now holds the caller's
//! bearer token. What each host received is ground truth for `credential-audience`.

use http::{Response, StatusCode};

use super::{CardAuthority, FRONT_DOOR_PORT};
use crate::host::Host;
use crate::net::{self, BoxBody, BoxError, Call};
use crate::trace::{now_ms, Event, Trace};

/// One request an extra host received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ingress {
    pub at_ms: u64,
    /// The host that received it.
    pub host: String,
    /// The audience of the bearer token it carried (`None`: no token).
    pub credential_audience: Option<String>,
}

/// Serves one extra host until it is crashed.
/// `host` is the name the card gives it (checked by `crate::faults::card::valid_host`:
/// never one of the run's own hosts), its host in the trace.
pub async fn serve(host: Host, authority: CardAuthority, trace: Trace) -> turmoil::Result {
    let host = std::rc::Rc::new(host);
    net::serve(FRONT_DOOR_PORT, move |req| {
        let host = host.clone();
        let (authority, trace) = (authority.clone(), trace.clone());
        async move { forward(&host, &authority, &trace, req).await }
    })
    .await
}

async fn forward(
    host: &Host,
    authority: &CardAuthority,
    trace: &Trace,
    req: http::Request<hyper::body::Incoming>,
) -> Result<Response<BoxBody>, BoxError> {
    let (parts, body) = req.into_parts();
    let credential = parts
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let audience = credential
        .as_deref()
        .and_then(crate::auth::claims_unverified)
        .map(|c| c.audience);
    authority.record_ingress(Ingress {
        at_ms: now_ms(),
        host: host.to_string(),
        credential_audience: audience.clone(),
    });
    trace.record(
        host,
        Event::plain(format!(
            "{} {} with {}",
            parts.method,
            parts.uri.path(),
            match &audience {
                Some(a) => format!("a bearer token for {a}"),
                None => "no credential".into(),
            }
        )),
    );
    let body = net::read_request(body)
        .await
        .map_err(|e| -> BoxError { e.to_string().into() })?;
    let mut call = Call::post_json(
        "router",
        crate::protocol::ROUTER_PORT,
        "/",
        body.to_vec(),
        std::time::Duration::from_secs(5),
    );
    call.method = parts.method.clone();
    for (name, value) in &parts.headers {
        let keep: Option<&'static str> = match name.as_str() {
            "a2a-version" => Some("a2a-version"),
            "authorization" => Some("authorization"),
            crate::protocol::CONTEXT_HEADER => Some(crate::protocol::CONTEXT_HEADER),
            crate::protocol::TARGET_HEADER => Some(crate::protocol::TARGET_HEADER),
            _ => None,
        };
        if let (Some(k), Ok(v)) = (keep, value.to_str()) {
            call = call.header(k, v);
        }
    }
    let upstream = match net::send_streaming(&call).await {
        Ok(r) => r,
        Err(e) => {
            return Ok(net::json_response(
                StatusCode::BAD_GATEWAY,
                &serde_json::json!({"error": format!("router: {e}")}),
            ))
        }
    };
    Ok(upstream.relay())
}
