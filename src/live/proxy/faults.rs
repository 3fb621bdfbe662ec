//! The proxy's request-level faults, each deterministic from `--seed`: client request `k`
//! (1-based, JSON-RPC POSTs only) is hit by a fault with period `N` when `(k + seed) % N == 0`.
//! The duplicate fault's second send is here too.

use bytes::Bytes;
use serde_json::Value;

use super::recording::Line;
use super::{head_of, Proxy};
use crate::net;
use crate::trace::now_ms;

/// The request-level faults to inject.
#[derive(Debug, Clone, Copy, Default)]
pub struct Faults {
    /// Duplicate every Nth request.
    pub duplicate_every: Option<u64>,
    /// Drop the reply to every Nth request.
    pub drop_reply_every: Option<u64>,
    /// Hold requests this long before forwarding them.
    pub delay_ms: u64,
    /// ... every Nth request (1: all).
    pub delay_every: u64,
}

impl Faults {
    pub(super) fn hits(every: Option<u64>, k: u64, seed: u64) -> bool {
        every.is_some_and(|n| n > 0 && (k.wrapping_add(seed)) % n == 0)
    }

    /// The faults, in words, for the `start` line.
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(n) = self.duplicate_every {
            out.push(format!(
                "duplicate 1 request in {n} (request k when (k + seed) % {n} == 0)"
            ));
        }
        if let Some(n) = self.drop_reply_every {
            out.push(format!(
                "drop the reply to 1 request in {n} (request k when (k + seed) % {n} == 0)"
            ));
        }
        if self.delay_ms > 0 {
            out.push(format!(
                "delay 1 request in {} by {} ms",
                self.delay_every.max(1),
                self.delay_ms
            ));
        }
        out
    }
}

impl Proxy {
    /// Sends request `of` again, routed as a new request; records its answer, relays none.
    pub(super) async fn duplicate(
        &self,
        of: u64,
        json: &Value,
        path: &str,
        body: Bytes,
        headers: &[(&'static str, String)],
    ) {
        let auth = headers
            .iter()
            .find(|(h, _)| *h == "authorization")
            .map(|(_, v)| v.as_str());
        let i = self.pick(json, None, None, None);
        let seq = self.next_seq();
        self.recorder.write(&Line::Request {
            seq,
            at_ms: now_ms(),
            replica: Some(self.upstreams[i].name.clone()),
            a2a_version: headers
                .iter()
                .find(|(h, _)| *h == "a2a-version")
                .map(|(_, v)| v.clone()),
            body: json.clone(),
            duplicate_of: Some(of),
            delayed_ms: 0,
        });
        let call = self.call(i, path, body, headers);
        let up = match net::send_streaming(&call).await {
            Ok(up) => up,
            Err(e) => {
                let why = format!("{}: {e}", self.upstreams[i].name);
                self.respond_line(seq, 0, i, None, None, false, false, Some(why));
                return;
            }
        };
        let (by, is_sse) = head_of(&up.headers);
        let status = up.status.as_u16();
        if is_sse {
            self.respond_line(seq, status, i, by, None, true, false, None);
            self.relay_events(seq, up.body, None, false, auth).await;
            return;
        }
        match net::read_body(up.body, net::BODY_BYTES_MAX).await {
            Ok(bytes) => {
                let value = serde_json::from_slice::<Value>(&bytes).ok();
                if let Some(result) = value.as_ref().and_then(|v| v.get("result")) {
                    self.learn(result, auth);
                }
                self.respond_line(seq, status, i, by, value, false, false, None);
            }
            Err(e) => {
                self.respond_line(seq, status, i, by, None, false, false, Some(e.to_string()))
            }
        }
    }
}
