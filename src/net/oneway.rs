//! One-way cuts of the simulated network, kept as TCP keeps them: what is sent over the cut
//! direction waits for the repair, while the other direction flows.
//!
//! turmoil can hold a link only both ways, and its one-way partition drops what it catches
//! (its TCP never resends), so a request caught by it was lost for good where a real one
//! arrives after the repair. Live, a one-way cut stops one direction of the link's proxy
//! (`live::link`), and e.g. the router's answers cut from the client let the request in, run
//! its effect, and hold the answer until the client gave up
//! (`tests/fidelity/faults/lost-answers-client-router-*`). So the simulation keeps the
//! turmoil link open and enforces the cut in the calls themselves ([`super::send`]): a call
//! from `from` to `to` waits before it sends its request while `from → to` is cut, and a
//! call from `to` to `from` waits after its answer arrived, before it hands it over, while
//! the answers' way is cut. Not modelled: a stream already flowing over the cut direction
//! keeps flowing. The registry is per thread, like the simulation, and reset with every run.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::rc::Rc;

use tokio::sync::Notify;

thread_local! {
    static CUTS: RefCell<BTreeSet<(String, String)>> = const { RefCell::new(BTreeSet::new()) };
    static REPAIRED: RefCell<Option<Rc<Notify>>> = const { RefCell::new(None) };
}

fn repaired() -> Rc<Notify> {
    REPAIRED.with(|r| r.borrow_mut().get_or_insert_with(Rc::default).clone())
}

/// Forgets every cut: a run starts with all links whole.
pub fn reset() {
    CUTS.with(|c| c.borrow_mut().clear());
}

/// Cuts the direction from `from` to `to`.
pub fn cut(from: &str, to: &str) {
    CUTS.with(|c| c.borrow_mut().insert((from.to_string(), to.to_string())));
}

/// Repairs both directions between `a` and `b`; what waited goes on.
pub fn repair(a: &str, b: &str) {
    CUTS.with(|c| {
        let mut cuts = c.borrow_mut();
        cuts.remove(&(a.to_string(), b.to_string()));
        cuts.remove(&(b.to_string(), a.to_string()));
    });
    repaired().notify_waiters();
}

/// Whether the direction from `from` to `to` is cut.
pub fn is_cut(from: &str, to: &str) -> bool {
    CUTS.with(|c| c.borrow().contains(&(from.to_string(), to.to_string())))
}

/// The host that makes a call: by its address on turmoil's network, by its name on the
/// event engine's.
#[derive(Debug, Clone)]
pub enum Caller {
    Addr(IpAddr),
    Host(crate::engine::HostName),
}

/// Which way of a call [`way_open`] waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// From the caller to the host it calls: the request's.
    Request,
    /// From the called host back to the caller: the answer's.
    Answer,
    /// Both at once: a conversation of several round trips
    /// ([`super::Exchange::Conversation`]) goes on only with both open.
    Both,
}

/// Waits while `way` between the calling host (by its address) and `host` is cut. The
/// caller's name is looked up only while some cut exists: no cost on a whole network.
pub async fn way_open(caller: Option<&Caller>, host: &str, way: Way) {
    if CUTS.with(|c| c.borrow().is_empty()) {
        return;
    }
    let caller = match caller {
        Some(Caller::Addr(addr)) => turmoil::reverse_lookup(*addr),
        Some(Caller::Host(name)) => Some(name.to_string()),
        None => None,
    };
    let Some(caller) = caller else {
        return;
    };
    match way {
        Way::Request => open(&caller, host).await,
        Way::Answer => open(host, &caller).await,
        Way::Both => {
            while is_cut(&caller, host) || is_cut(host, &caller) {
                open(&caller, host).await;
                open(host, &caller).await;
            }
        }
    }
}

/// Waits until the direction from `from` to `to` is not cut.
pub async fn open(from: &str, to: &str) {
    loop {
        let notify = repaired();
        let repair = notify.notified();
        if !is_cut(from, to) {
            return;
        }
        repair.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_cut_direction_waits_for_its_repair_and_the_other_flows() {
        reset();
        cut("router", "client");
        assert!(is_cut("router", "client"));
        assert!(!is_cut("client", "router"));
        let order = block_on(async {
            let waiting = async {
                open("router", "client").await;
                "answer"
            };
            let fixing = async {
                open("client", "router").await;
                tokio::task::yield_now().await;
                repair("client", "router");
                std::future::pending::<&str>().await
            };
            tokio::select! {
                a = waiting => a,
                b = fixing => b,
            }
        });
        assert_eq!(order, "answer");
        assert!(!is_cut("router", "client"));
        reset();
    }

    #[test]
    fn a_conversation_waits_while_either_way_is_cut() {
        reset();
        cut("store", "replica-1");
        let me = Caller::Host("replica-1".into());
        let order = block_on(async {
            let conversation = async {
                way_open(Some(&me), "store", Way::Both).await;
                "after the repair"
            };
            let round_trip = async {
                // The request's way is whole: a one-round-trip call would go at once.
                way_open(Some(&me), "store", Way::Request).await;
                tokio::task::yield_now().await;
                assert!(is_cut("store", "replica-1"), "the conversation went first");
                repair("store", "replica-1");
                std::future::pending::<&str>().await
            };
            tokio::select! {
                a = conversation => a,
                b = round_trip => b,
            }
        });
        assert_eq!(order, "after the repair");
        reset();
    }
}
