//! Host ids: the hosts of a run as a type.
//!
//! A run's hosts are `client`, `router`, `replica-0` .. `replica-N`, `store`, `ledger` and
//! `webhook`; the driver records what it does as `driver`, and a changed agent card may
//! name hosts of its own (`agent-v2.example`, [`Host::Other`]). Text becomes a [`Host`]
//! once, where it comes in ([`Host::parse`]: a scenario's steps, the `x-a2a-chaos-target`
//! and `x-a2a-chaos-replica` headers, the name a request carries to the store or the
//! ledger, a recorded history); everything after matches on the variants, and
//! [`Display`](fmt::Display) prints the same words the trace and every output have always
//! had, so a host's rendering is part of every trace hash.
//!
//! A host compares, sorts and hashes as its name does: `replica-10` sorts before
//! `replica-2`, as the names always have (the driver heals in that order).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::convert::Infallible;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The name of a replica is this prefix and its index (`replica-0`).
pub const REPLICA_PREFIX: &str = "replica-";

/// One host of a run.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// `client`: the workload's or the script's A2A client.
    Client,
    /// `router`: the load balancer in front of the replicas.
    Router,
    /// `replica-N`: the replica with index N (from 0).
    Replica(usize),
    /// `store`: the shared task store.
    Store,
    /// `ledger`: the business-effect ledger.
    Ledger,
    /// `webhook`: the push receiver.
    Webhook,
    /// `driver`: who applies faults (it records, it is not on the network).
    Driver,
    /// Any other name: a host a changed card names, or a name read from outside that is
    /// none of the above (`replica-01`, `?`).
    Other(OtherHost),
}

/// A host name that is none of [`Host`]'s named variants (only [`Host::parse`] makes one,
/// so `Other` never holds `router` or `replica-1`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OtherHost(String);

impl OtherHost {
    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Host {
    /// Reads a host name: the one place text becomes a host. A name that is no host of a
    /// run is [`Host::Other`], so printing the result gives back exactly `name`
    /// (`replica-01` is not `replica-1`).
    pub fn parse(name: &str) -> Host {
        match name {
            "client" => Host::Client,
            "router" => Host::Router,
            "store" => Host::Store,
            "ledger" => Host::Ledger,
            "webhook" => Host::Webhook,
            "driver" => Host::Driver,
            _ => match replica_index(name) {
                Some(i) => Host::Replica(i),
                None => Host::Other(OtherHost(name.to_string())),
            },
        }
    }

    /// The name, as the trace prints it.
    pub fn name(&self) -> Cow<'_, str> {
        match self {
            Host::Client => Cow::Borrowed("client"),
            Host::Router => Cow::Borrowed("router"),
            Host::Replica(i) => Cow::Owned(format!("{REPLICA_PREFIX}{i}")),
            Host::Store => Cow::Borrowed("store"),
            Host::Ledger => Cow::Borrowed("ledger"),
            Host::Webhook => Cow::Borrowed("webhook"),
            Host::Driver => Cow::Borrowed("driver"),
            Host::Other(o) => Cow::Borrowed(o.as_str()),
        }
    }

    /// The replica's index, for a replica.
    pub fn replica_index(&self) -> Option<usize> {
        match self {
            Host::Replica(i) => Some(*i),
            _ => None,
        }
    }

    /// Whether it is a replica.
    pub fn is_replica(&self) -> bool {
        matches!(self, Host::Replica(_))
    }

    /// Every host of a run with `replicas` replicas on the network, in a fixed order:
    /// client, router, the replicas, store, ledger, webhook.
    pub fn all(replicas: usize) -> Vec<Host> {
        let mut out = vec![Host::Client, Host::Router];
        out.extend((0..replicas).map(Host::Replica));
        out.extend([Host::Store, Host::Ledger, Host::Webhook]);
        out
    }
}

/// The index of a replica's name: `replica-` and a number written as it prints (no sign,
/// no leading zero).
fn replica_index(name: &str) -> Option<usize> {
    let digits = name.strip_prefix(REPLICA_PREFIX)?;
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    canonical.then(|| digits.parse().ok()).flatten()
}

/// The name, padded as a `str` would be (`{:<10}` in a trace line).
impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.name())
    }
}

impl FromStr for Host {
    type Err = Infallible;

    fn from_str(name: &str) -> Result<Host, Infallible> {
        Ok(Host::parse(name))
    }
}

impl From<&Host> for Host {
    fn from(host: &Host) -> Host {
        host.clone()
    }
}

impl Ord for Host {
    fn cmp(&self, other: &Host) -> Ordering {
        self.name().cmp(&other.name())
    }
}

impl PartialOrd for Host {
    fn partial_cmp(&self, other: &Host) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A host is the name a record gives in text (a violation's anchor, the replica a
/// checker's message names): the checkers compare the two.
impl PartialEq<str> for Host {
    fn eq(&self, name: &str) -> bool {
        self.name() == name
    }
}

impl PartialEq<String> for Host {
    fn eq(&self, name: &String) -> bool {
        self.name() == name.as_str()
    }
}

impl PartialEq<Host> for String {
    fn eq(&self, host: &Host) -> bool {
        host == self
    }
}

impl Serialize for Host {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for Host {
    /// Any string reads (as [`Host::parse`] does); what a field may name is checked where
    /// the file is checked, with the file's words.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Host, D::Error> {
        String::deserialize(deserializer).map(|name| Host::parse(&name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_host_prints_the_name_it_was_read_from() {
        for name in [
            "client",
            "router",
            "replica-0",
            "replica-7",
            "replica-12",
            "store",
            "ledger",
            "webhook",
            "driver",
            "agent-v2.example",
            "?",
            "replica-",
            "replica-01",
            "replica-+1",
            "replica-x",
            "replica-99999999999999999999999",
            "",
        ] {
            assert_eq!(Host::parse(name).to_string(), name);
            assert_eq!(Host::parse(name).name(), name);
        }
        assert_eq!(Host::parse("replica-3"), Host::Replica(3));
        assert!(matches!(Host::parse("replica-03"), Host::Other(_)));
        assert!(matches!(Host::parse("replica-+3"), Host::Other(_)));
    }

    #[test]
    fn hosts_sort_as_their_names() {
        let mut hosts = Host::all(12);
        hosts.push(Host::Driver);
        hosts.push(Host::parse("agent.partner.example"));
        let mut by_name: Vec<String> = hosts.iter().map(Host::to_string).collect();
        hosts.sort();
        by_name.sort();
        let sorted: Vec<String> = hosts.iter().map(Host::to_string).collect();
        assert_eq!(sorted, by_name);
        assert!(Host::Replica(10) < Host::Replica(2));
    }

    #[test]
    fn a_host_reads_and_writes_as_its_name() {
        let v = serde_json::to_value(Host::Replica(2)).unwrap();
        assert_eq!(v, serde_json::json!("replica-2"));
        let back: Host = serde_json::from_value(v).unwrap();
        assert_eq!(back, Host::Replica(2));
        assert_eq!(Host::Replica(2), *"replica-2");
    }

    #[test]
    fn a_host_pads_as_its_name() {
        for host in [
            Host::Router,
            Host::Replica(3),
            Host::parse("agent-v2.example"),
        ] {
            let name = host.to_string();
            assert_eq!(format!("{host:<10}|"), format!("{name:<10}|"));
            assert_eq!(format!("{host:>12}|"), format!("{name:>12}|"));
        }
    }
}
