//! Push-notification delivery: the sender's policy, a simulated resolver, and two logs.
//!
//! A replica sends a push with the policy of its model's `[push]` knobs: which states are
//! pushed, whether the URL is validated at registration and/or at send, whether redirects
//! are followed, whether the resolved address is pinned between the check and the
//! connection, how many retries, and whether failures are logged.
//!
//! Names in push URLs go through [`Resolver::resolve`], a simulated DNS:
//! - `webhook` and `hooks.example` resolve to the webhook host at a public address;
//! - `rebind.example` has two A records and a zero TTL: its answers alternate public,
//!   private (an internal service), public, ...: DNS rebinding (A2A-BEHAVIOURS.md §6.6),
//!   which catches any sender that checks one answer and connects with another;
//! - literal private, loopback and link-local addresses are what they are.
//!
//! In `a2a-chaos serve` ([`RealEgress`]) the machine resolves names instead and the push
//! goes to the real URL; loopback targets only with `--allow-loopback-push`.
//!
//! Two logs come out of a run. The sender log is what the system says about its pushes
//! (nothing, for a sender that drops failures silently). The egress log is what the
//! simulator saw leave a replica: every connection a push opened and where it went.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use crate::host::Host;

/// One resolved address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    /// The address as text (`203.0.113.10`, `10.0.0.7`).
    pub ip: String,
    /// Private, loopback or link-local.
    pub private: bool,
    /// The simulated host behind it, if any.
    pub host: Option<&'static str>,
}

/// The simulated resolver: answers depend on the name and on how often it was asked.
#[derive(Debug, Default)]
pub struct Resolver {
    queries: BTreeMap<String, u32>,
}

impl Resolver {
    /// Resolves `name` once.
    pub fn resolve(&mut self, name: &str) -> Option<Address> {
        let n = self.queries.entry(name.to_string()).or_insert(0);
        *n += 1;
        let public = || Address {
            ip: "203.0.113.10".into(),
            private: false,
            host: Some("webhook"),
        };
        match name {
            "webhook" | "hooks.example" => Some(public()),
            "rebind.example" if *n % 2 == 1 => Some(public()),
            // The attacker's DNS now points at an internal service.
            "rebind.example" => Some(Address {
                ip: "10.0.0.7".into(),
                private: true,
                host: Some("store"),
            }),
            literal => literal_address(literal),
        }
    }
}

/// A literal IPv4 address, classified.
pub fn literal_address(text: &str) -> Option<Address> {
    let ip: std::net::Ipv4Addr = text.parse().ok()?;
    let private = ip.is_private() || ip.is_loopback() || ip.is_link_local() || ip.is_unspecified();
    Some(Address {
        ip: text.to_string(),
        private,
        host: None,
    })
}

/// What the sender reported about one delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushReport {
    pub at_ms: u64,
    pub replica: Host,
    pub task_id: String,
    pub state: a2a::TaskState,
    pub url: String,
    /// `delivered (200)`, `failed: ...`.
    pub outcome: String,
    pub delivered: bool,
}

/// One connection a push opened, as the simulator saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Egress {
    pub at_ms: u64,
    pub replica: Host,
    pub task_id: String,
    pub url: String,
    pub address: Address,
}

/// The logs and the resolver a run's replicas share.
/// Pushes to real URLs (`a2a-chaos serve`): the target's host is resolved by the machine,
/// and the POST goes to it over real TCP. Loopback targets pass only when asked for
/// (`serve --allow-loopback-push`, e.g. a test's receiver); other private, link-local and
/// unspecified addresses never do, whatever the model checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RealEgress {
    /// Loopback targets count as public.
    pub allow_loopback: bool,
}

impl RealEgress {
    /// Resolves `host` (an IP literal, or a name the machine resolves) to its first address;
    /// `private` is set for loopback (unless allowed), private, link-local and unspecified
    /// addresses. `host` of the answer stays `None`: the address is a real one.
    pub fn resolve(&self, host: &str, port: u16) -> Option<Address> {
        use std::net::{IpAddr, ToSocketAddrs};
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let ip: IpAddr = match bare.parse() {
            Ok(ip) => ip,
            Err(_) => (bare, port).to_socket_addrs().ok()?.next()?.ip(),
        };
        let loopback = ip.is_loopback();
        let private = match ip {
            IpAddr::V4(v4) => v4.is_private() || v4.is_link_local() || v4.is_unspecified(),
            IpAddr::V6(v6) => {
                let first = v6.segments()[0];
                v6.is_unspecified() || (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80
            }
        };
        Some(Address {
            ip: ip.to_string(),
            private: private || (loopback && !self.allow_loopback),
            host: None,
        })
    }
}

#[derive(Debug, Default)]
pub struct PushWorld {
    /// Set by `serve`: pushes go to the real URLs (see [`RealEgress`]); unset in a
    /// simulation, where the simulated resolver and hosts answer.
    pub real: Option<RealEgress>,
    pub resolver: Resolver,
    pub reports: Vec<PushReport>,
    pub egress: Vec<Egress>,
}

/// Shared handle to the push world.
pub type SharedPush = Rc<RefCell<PushWorld>>;

/// Splits `http://host[:port]/path`.
pub fn parse_url(url: &str) -> Option<(String, u16, String)> {
    crate::protocol::parse_http_url(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebinding_answers_public_then_private() {
        let mut r = Resolver::default();
        assert!(!r.resolve("rebind.example").unwrap().private);
        assert!(r.resolve("rebind.example").unwrap().private);
        assert!(!r.resolve("rebind.example").unwrap().private);
        assert!(!r.resolve("hooks.example").unwrap().private);
    }

    #[test]
    fn real_egress_lets_loopback_through_only_when_allowed() {
        let strict = RealEgress::default();
        let open = RealEgress {
            allow_loopback: true,
        };
        assert!(strict.resolve("127.0.0.1", 80).unwrap().private);
        assert!(!open.resolve("127.0.0.1", 80).unwrap().private);
        assert!(!open.resolve("[::1]", 80).unwrap().private);
        assert!(open.resolve("10.1.2.3", 80).unwrap().private);
        assert!(open.resolve("169.254.169.254", 80).unwrap().private);
        assert!(open.resolve("fd00::1", 80).unwrap().private);
        assert!(!strict.resolve("203.0.113.9", 80).unwrap().private);
    }

    #[test]
    fn literal_private_addresses_are_private() {
        assert!(literal_address("10.0.0.1").unwrap().private);
        assert!(literal_address("127.0.0.1").unwrap().private);
        assert!(literal_address("169.254.1.1").unwrap().private);
        assert!(!literal_address("203.0.113.9").unwrap().private);
        assert!(literal_address("not-an-ip").is_none());
    }
}
