//! The push-notification receiver: records every delivery attempt it receives.
//!
//! Push delivery is accounted separately from task completion (A2A-BEHAVIOURS.md §4: "task
//! completed ≠ push delivered"), so the webhook is its own host with its own record.

use std::cell::RefCell;
use std::rc::Rc;

use http::StatusCode;
use serde::{Deserialize, Serialize};

use crate::host::Host;
use crate::net;
use crate::trace::{now_ms, Event, Trace};

/// Port the webhook serves on.
pub const PORT: u16 = 7200;

/// How the webhook answers. The first segment of the request path picks the mode
/// (`/ok/...`, `/redirect/...`, `/slow/...`, `/hang/...`), so one run can mix receivers;
/// any other path gets the run's default mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum WebhookMode {
    /// 200 OK.
    #[default]
    Ok,
    /// 302 to a private address (A2A-BEHAVIOURS.md §6.5).
    Redirect,
    /// 200 OK after 2 simulated seconds (§6.13: a slow receiver awaited inline).
    Slow,
    /// Never answers (the sender's timeout decides).
    Hang,
}

impl WebhookMode {
    /// The mode a path asks for, if it names one.
    pub fn from_path(path: &str) -> Option<WebhookMode> {
        match path.trim_start_matches('/').split('/').next()? {
            "ok" => Some(WebhookMode::Ok),
            "redirect" => Some(WebhookMode::Redirect),
            "slow" => Some(WebhookMode::Slow),
            "hang" => Some(WebhookMode::Hang),
            _ => None,
        }
    }
}

/// Where the redirect mode points: a private address.
pub const REDIRECT_TARGET: &str = "http://10.0.0.1:7200/internal";

/// One delivery that reached the webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub at_ms: u64,
    pub path: String,
    pub authorization: Option<String>,
    pub body: String,
    pub status: u16,
}

/// Everything the webhook received.
#[derive(Debug, Default)]
pub struct WebhookState {
    pub deliveries: Vec<Delivery>,
}

/// Shared handle to the webhook's record.
pub type SharedWebhook = Rc<RefCell<WebhookState>>;

/// The `webhook` host.
pub async fn serve(state: SharedWebhook, mode: WebhookMode, trace: Trace) -> turmoil::Result {
    net::serve(PORT, move |req: http::Request<hyper::body::Incoming>| {
        let state = state.clone();
        let trace = trace.clone();
        async move {
            let path = req.uri().path().to_string();
            let authorization = req
                .headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let body = net::read_request(req.into_body()).await.unwrap_or_default();
            let mode = WebhookMode::from_path(&path).unwrap_or(mode);
            match mode {
                WebhookMode::Slow => tokio::time::sleep(std::time::Duration::from_secs(2)).await,
                WebhookMode::Hang => std::future::pending::<()>().await,
                _ => {}
            }
            let status = match mode {
                WebhookMode::Redirect => StatusCode::FOUND,
                _ => StatusCode::OK,
            };
            trace.record(
                Host::Webhook,
                Event::Delivery {
                    path: path.clone(),
                    status: status.as_u16(),
                },
            );
            state.borrow_mut().deliveries.push(Delivery {
                at_ms: now_ms(),
                path,
                authorization,
                body: String::from_utf8_lossy(&body).into_owned(),
                status: status.as_u16(),
            });
            let mut resp = net::json_response(status, &serde_json::json!({}));
            if mode == WebhookMode::Redirect {
                resp.headers_mut()
                    .insert("location", http::HeaderValue::from_static(REDIRECT_TARGET));
            }
            Ok(resp)
        }
    })
    .await
}
