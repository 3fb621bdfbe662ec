//! What the proxy does as the load balancers users run do, each off by default except the
//! card rewrite:
//!
//! - **The agent card's URLs point back at the proxy.** An official client reads the card
//!   and sends every later request to the URL the card names: the replica's own address,
//!   past the proxy, where nothing is recorded and no fault applies (or, for an agent that
//!   advertises a fixed port the launcher moved, nowhere at all). Every interface URL of a
//!   card the proxy relays (`url` and `additionalInterfaces` on the 0.3 wire,
//!   `supportedInterfaces` on 1.0) gets the origin the client used (its `Host`), with the
//!   upstream's own path prefix taken off, as an ingress rewrites a `Location`. A signed card
//!   no longer verifies after the rewrite; `--keep-card-urls` relays it unchanged.
//! - **Health checks** (`--health-check-ms N`): every N ms each upstream is asked for its
//!   card; one that does not answer below 500 within the period is out of the rotation
//!   until it does (the strategies' `ready`, as an endpoints controller gives the simulated
//!   router).
//! - **Retry on the next upstream** (`--retry-next`): a request whose connection was refused
//!   or that an upstream answered 502 goes to the next upstream, once per upstream (nginx's
//!   `proxy_next_upstream error http_502`). Each attempt is its own exchange in the history:
//!   the answer the client never saw is recorded as dropped, so a 502 after the work was
//!   done and its retry count as two sends of one turn, which is what they were.
//! - **Sticky sessions** (`--sticky-cookie`): every answer sets the cookie
//!   `a2a-chaos-replica=<upstream>`, and a request carrying it goes to that upstream while it
//!   is in the rotation (HAProxy's `cookie ... insert`), for clients that keep cookies.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use serde_json::Value;

use http::Response;

use crate::net::{self, BoxBody, Call};

use super::bad_gateway;

/// The sticky-session cookie's name.
pub const STICKY_COOKIE: &str = "a2a-chaos-replica";

/// The load-balancer behaviours asked for (see the module's header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Balancer {
    /// Probe every upstream's card this often, and route only to the ones that answer.
    pub health_every: Option<Duration>,
    /// Send a refused or 502-answered request to the next upstream.
    pub retry_next: bool,
    /// Pin a client to the upstream named by its cookie.
    pub sticky_cookie: bool,
    /// Rewrite the agent card's interface URLs to the proxy's.
    pub rewrite_card: bool,
}

impl Default for Balancer {
    fn default() -> Self {
        Balancer {
            health_every: None,
            retry_next: false,
            sticky_cookie: false,
            rewrite_card: true,
        }
    }
}

impl Balancer {
    /// One line per behaviour that is on, for the proxy's banner and the history's start.
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(every) = self.health_every {
            out.push(format!(
                "health checks: each upstream's card every {} ms",
                every.as_millis()
            ));
        }
        if self.retry_next {
            out.push("retry: a refused or 502-answered request goes to the next upstream".into());
        }
        if self.sticky_cookie {
            out.push(format!("sticky sessions: cookie {STICKY_COOKIE}"));
        }
        if !self.rewrite_card {
            out.push("agent card URLs relayed unchanged".into());
        }
        out
    }
}

/// Whether `path` asks for an agent card (1.0's name or 0.3's).
pub fn is_card_path(path: &str) -> bool {
    path.ends_with("/.well-known/agent-card.json") || path.ends_with("/.well-known/agent.json")
}

/// Points every interface URL of `card` at `http://{origin}`, keeping each URL's path less
/// the upstream's `prefix`; how many URLs it rewrote.
pub fn rewrite_card(card: &mut Value, origin: &str, prefix: &str) -> usize {
    let moved = |url: &str| -> Option<String> {
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))?;
        let path = rest.find('/').map_or("/", |i| &rest[i..]);
        let path = path.strip_prefix(prefix).unwrap_or(path);
        let path = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("/{path}")
        };
        Some(format!("http://{origin}{path}"))
    };
    let mut n = 0;
    let mut rewrite = |slot: &mut Value| {
        if let Some(new) = slot.as_str().and_then(moved) {
            *slot = Value::String(new);
            n += 1;
        }
    };
    if let Some(url) = card.get_mut("url") {
        rewrite(url);
    }
    for list in ["additionalInterfaces", "supportedInterfaces"] {
        if let Some(items) = card.get_mut(list).and_then(Value::as_array_mut) {
            for item in items {
                if let Some(url) = item.get_mut("url") {
                    rewrite(url);
                }
            }
        }
    }
    n
}

/// Whether a JSON-RPC `request` asks for the extended agent card (1.0's
/// `GetExtendedAgentCard` or 0.3's `agent/getAuthenticatedExtendedCard`), whose answer
/// [`rewrite_extended_card`] points at the proxy as [`rewrite_card`] does the well-known one.
pub fn is_card_method(request: &Value) -> bool {
    request
        .get("method")
        .and_then(Value::as_str)
        .is_some_and(|m| {
            matches!(
                m,
                "GetExtendedAgentCard" | "agent/getAuthenticatedExtendedCard"
            )
        })
}

/// Points the URLs of the card in a JSON-RPC `answer`'s result at `http://{origin}`
/// ([`rewrite_card`]); whether it held a card (an error holds none).
pub fn rewrite_extended_card(answer: &mut Value, origin: &str, prefix: &str) -> bool {
    match answer.get_mut("result").filter(|card| card.is_object()) {
        Some(card) => {
            rewrite_card(card, origin, prefix);
            true
        }
        None => false,
    }
}

/// The upstream a request's `Cookie` header pins it to, by name.
pub fn sticky_target(cookie_header: Option<&str>) -> Option<String> {
    cookie_header?.split(';').find_map(|pair| {
        let (name, value) = pair.trim().split_once('=')?;
        (name == STICKY_COOKIE).then(|| value.trim().to_string())
    })
}

/// The `Set-Cookie` value pinning a client to `upstream`.
pub fn sticky_cookie(upstream: &str) -> String {
    format!("{STICKY_COOKIE}={upstream}; Path=/; HttpOnly")
}

/// Probes every upstream's card each `every`, forever, keeping `ready` (by index) as the
/// answers say: ready when the card came back below 500 within the period.
pub async fn health_checks(
    upstreams: Vec<(String, String)>,
    ready: Rc<RefCell<Vec<bool>>>,
    every: Duration,
) {
    loop {
        for (i, (name, prefix)) in upstreams.iter().enumerate() {
            let path = format!("{prefix}/.well-known/agent-card.json");
            let up = net::send(&Call::get(name.clone(), 0, &path, every))
                .await
                .is_ok_and(|r| r.status.as_u16() < 500);
            ready.borrow_mut()[i] = up;
        }
        tokio::time::sleep(every).await;
    }
}

impl super::Proxy {
    /// The upstream a retry goes to: the next one in the rotation not yet tried, else the
    /// next untried one; `None` when every upstream was tried.
    pub(super) fn next_untried(&self, tried: &[usize]) -> Option<usize> {
        let n = self.upstreams.len();
        let ready = self.ready.borrow();
        let after = tried.last().map_or(0, |l| l + 1);
        let order = || {
            (0..n)
                .map(|k| (after + k) % n)
                .filter(|i| !tried.contains(i))
        };
        order().find(|i| ready[*i]).or_else(|| order().next())
    }

    /// The agent card from upstream `i` (or, with `--retry-next`, the next one that
    /// accepts the connection), its URLs pointed at `origin` (the proxy as the client
    /// reached it); an answer that is not a JSON card is relayed as it came.
    pub(super) async fn card(
        &self,
        mut i: usize,
        path: &str,
        headers: &[(&'static str, String)],
        origin: &str,
    ) -> Response<BoxBody> {
        let mut tried = Vec::new();
        let reply = loop {
            // Each upstream's own path prefix: the call is made for the one tried.
            let mut call = self.call(i, path, bytes::Bytes::new(), headers);
            call.method = http::Method::GET;
            match net::send(&call).await {
                Ok(r) => break r,
                Err(e) => {
                    tried.push(i);
                    let next = matches!(e, net::CallError::Unconnected(_))
                        .then(|| self.next_untried(&tried))
                        .flatten()
                        .filter(|_| self.options.balancer.retry_next);
                    match next {
                        Some(n) => i = n,
                        None => return bad_gateway(format!("{}: {e}", self.upstreams[i].name)),
                    }
                }
            }
        };
        let mut card = match serde_json::from_slice::<Value>(&reply.body) {
            Ok(v) if reply.status.is_success() && v.is_object() => v,
            _ => {
                let mut out = Response::builder().status(reply.status);
                for (name, value) in &reply.headers {
                    if name != http::header::CONTENT_LENGTH {
                        out = out.header(name, value);
                    }
                }
                return out
                    .body(net::full(reply.body))
                    .expect("upstream response parts are valid");
            }
        };
        rewrite_card(&mut card, origin, &self.upstreams[i].prefix);
        net::json_response(reply.status, &card)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_extended_card_a_json_rpc_call_answers_points_at_the_proxy_too() {
        let card = json!({"name": "desk", "supportedInterfaces": [
            {"url": "http://127.0.0.1:9001/a2a", "protocolBinding": "JSONRPC"}]});
        for method in ["GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard"] {
            let request = json!({"jsonrpc": "2.0", "id": 1, "method": method});
            assert!(is_card_method(&request));
            let mut answer = json!({"jsonrpc": "2.0", "id": 1, "result": card.clone()});
            assert!(rewrite_extended_card(&mut answer, "127.0.0.1:8080", "/a2a"));
            assert_eq!(
                answer["result"]["supportedInterfaces"][0]["url"],
                "http://127.0.0.1:8080/"
            );
        }
        // Another method's result is left as it came; an error holds no card.
        let get = json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask"});
        assert!(!is_card_method(&get));
        let mut error = json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32007}});
        assert!(!rewrite_extended_card(&mut error, "p:1", ""));
        assert_eq!(
            error,
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32007}})
        );
    }

    #[test]
    fn every_interface_url_of_a_card_points_at_the_proxy() {
        let mut v10 = json!({"name": "desk", "supportedInterfaces": [
            {"url": "http://127.0.0.1:9001/a2a/v1", "protocolBinding": "JSONRPC"},
            {"url": "https://desk.example.com/a2a/rest", "protocolBinding": "HTTP+JSON"}]});
        assert_eq!(rewrite_card(&mut v10, "127.0.0.1:8080", "/a2a"), 2);
        assert_eq!(
            v10["supportedInterfaces"][0]["url"],
            "http://127.0.0.1:8080/v1"
        );
        assert_eq!(
            v10["supportedInterfaces"][1]["url"],
            "http://127.0.0.1:8080/rest"
        );
        let mut v03 = json!({"name": "desk", "url": "http://localhost:9999/",
            "additionalInterfaces": [{"url": "http://localhost:9999", "transport": "JSONRPC"}]});
        assert_eq!(rewrite_card(&mut v03, "proxy:8080", ""), 2);
        assert_eq!(v03["url"], "http://proxy:8080/");
        assert_eq!(v03["additionalInterfaces"][0]["url"], "http://proxy:8080/");
        let mut odd = json!({"name": "x", "url": "grpc://host:1"});
        assert_eq!(rewrite_card(&mut odd, "proxy:8080", ""), 0);
        assert_eq!(odd["url"], "grpc://host:1");
    }

    #[test]
    fn the_sticky_cookie_is_read_among_others() {
        assert_eq!(
            sticky_target(Some("a=1; a2a-chaos-replica=replica-1; b=2")),
            Some("replica-1".into())
        );
        assert_eq!(sticky_target(Some("a=1")), None);
        assert_eq!(sticky_target(None), None);
        assert!(sticky_cookie("replica-0").starts_with("a2a-chaos-replica=replica-0;"));
    }

    #[test]
    fn card_paths_of_both_wires() {
        assert!(is_card_path("/.well-known/agent-card.json"));
        assert!(is_card_path("/a2a/.well-known/agent.json"));
        assert!(!is_card_path("/"));
    }
}
