//! The links of a live run that pass through proxies the tool owns, and the network faults
//! acting on them with the simulation's step names (issue 38).
//!
//! A [`Network`] keeps one [`Link`] per carried pair of hosts (which pairs:
//! [`crate::faults::live_link`]):
//! - `router → replica-N`: the router connects to the link, which connects to the replica's
//!   current address (a restarted replica listens on a new port: the link follows it);
//! - `replica-N → store` and `replica-N → ledger`: each replica is started with the link's
//!   address in place of the database's and the ledger's (its `{db}` and `{ledger}`), so a
//!   fault on one replica's link leaves the others' alone;
//! - `replica-N → webhook`: the replica sends every push through its link (`{webhook}`;
//!   the a2a-python peer's `--webhook-via`), whatever URL its client set;
//! - `client → router`: the run's client reaches its router through a link.
//!
//! The faults, as the simulation names them: `partition` stops both directions,
//! `partition-oneway` the one from its first host to its second, `hold` stops both until
//! `release`, `repair` and `release` open both again, `latency` delays every chunk both
//! ways, `heal = "all"` ends every fault. A stopped direction closes nothing: the kernels
//! buffer, retransmit and time out as on a network that loses every segment, and what
//! waited arrives once the link reopens unless an application gave up first.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::net::SocketAddr;

use crate::faults::{hold, latency, partition, Action};
use crate::host::Host;

use super::link::{Link, Way};

/// The carried links of a live run (see the module docs).
#[derive(Default)]
pub struct Network {
    /// By (from, to): the host that connects and the one it connects to.
    links: RefCell<BTreeMap<(Host, Host), Link>>,
}

impl Network {
    /// Carries connections from `from` to `to` (at `target`) through a link, starting it
    /// on first use and pointing it at `target` after; returns the address `from` connects
    /// to instead.
    pub async fn carry(
        &self,
        from: &Host,
        to: &Host,
        target: SocketAddr,
    ) -> std::io::Result<SocketAddr> {
        let key = (from.clone(), to.clone());
        if let Some(link) = self.links.borrow().get(&key) {
            link.retarget(target);
            return Ok(link.addr());
        }
        let link = Link::start(&from.name(), &to.name(), target).await?;
        let addr = link.addr();
        self.links.borrow_mut().insert(key, link);
        Ok(addr)
    }

    /// Whether the link between `a` and `b` is carried, either way round.
    pub fn carries(&self, a: &Host, b: &Host) -> bool {
        self.find(a, b, |_, _| ()).is_some()
    }

    /// Calls `f` with the link between `a` and `b` and whether `a` is the host that connects.
    fn find<T>(&self, a: &Host, b: &Host, f: impl FnOnce(&Link, bool) -> T) -> Option<T> {
        let links = self.links.borrow();
        if let Some(link) = links.get(&(a.clone(), b.clone())) {
            return Some(f(link, true));
        }
        links
            .get(&(b.clone(), a.clone()))
            .map(|link| f(link, false))
    }

    /// Applies a network fault; `false` when `action` is not one, or names a link this run
    /// does not carry.
    pub fn apply(&self, action: &Action) -> bool {
        match action {
            Action::Partition(partition::Partition(a, b)) | Action::Hold(hold::Hold(a, b)) => {
                self.find(a, b, |link, _| link.stop(Way::Both)).is_some()
            }
            Action::PartitionOneway(partition::PartitionOneway(from, to)) => self
                .find(from, to, |link, from_connects| {
                    // From the host that connects, the forward way; else the answers.
                    link.stop(if from_connects {
                        Way::Forward
                    } else {
                        Way::Backward
                    })
                })
                .is_some(),
            Action::Repair(partition::Repair(a, b)) | Action::Release(hold::Release(a, b)) => {
                self.find(a, b, |link, _| link.open(Way::Both)).is_some()
            }
            Action::LinkLatency(latency::LinkLatency(a, b, max_ms)) => self
                .find(a, b, |link, _| link.delay(Way::Both, max_ms.unwrap_or(0)))
                .is_some(),
            _ => false,
        }
    }

    /// Ends every fault on every link.
    pub fn heal_all(&self) {
        for link in self.links.borrow().values() {
            link.heal();
        }
    }
}

/// `url` with the `host:port` of its authority replaced by `addr`, when it names an IP
/// address and port (`postgresql+asyncpg://postgres@127.0.0.1:5432/db`); `None` otherwise
/// (a Unix socket, a host name, a SQLite file).
pub fn with_authority(url: &str, addr: SocketAddr) -> Option<String> {
    let (start, end) = host_port(url)?;
    Some(format!("{}{addr}{}", &url[..start], &url[end..]))
}

/// The address in `url`'s authority, when it is an IP address and port.
pub fn authority_addr(url: &str) -> Option<SocketAddr> {
    let (start, end) = host_port(url)?;
    url[start..end].parse().ok()
}

/// Where the `host:port` of `url`'s authority is, when it is an IP address and port.
fn host_port(url: &str) -> Option<(usize, usize)> {
    let start = url.find("://")? + 3;
    let end = url[start..].find('/').map_or(url.len(), |i| start + i);
    let host = url[start..end].rfind('@').map_or(start, |i| start + i + 1);
    url[host..end].parse::<SocketAddr>().ok()?;
    Some((host, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_url_is_pointed_at_its_link() {
        let link: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        let url = "postgresql+asyncpg://postgres@127.0.0.1:5432/run_1";
        assert_eq!(
            with_authority(url, link).as_deref(),
            Some("postgresql+asyncpg://postgres@127.0.0.1:4000/run_1")
        );
        assert_eq!(authority_addr(url), Some("127.0.0.1:5432".parse().unwrap()));
        assert_eq!(
            with_authority("http://127.0.0.1:9/", link).as_deref(),
            Some("http://127.0.0.1:4000/")
        );
        assert_eq!(
            with_authority("http://127.0.0.1:9", link).as_deref(),
            Some("http://127.0.0.1:4000")
        );
    }

    #[test]
    fn urls_without_an_address_and_port_are_left_alone() {
        let link: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        assert_eq!(
            with_authority("sqlite+aiosqlite:///tmp/tasks.db", link),
            None
        );
        assert_eq!(with_authority("postgresql://db.example/run", link), None);
        assert_eq!(authority_addr("sqlite+aiosqlite:///tmp/tasks.db"), None);
    }
}
