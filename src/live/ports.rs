//! Ports for the processes a live run starts (replicas, PostgreSQL), which bind them
//! themselves a second or two after the tool chose them.
//!
//! Asking the kernel for a free port (`bind` to port 0) and closing it leaves that port in
//! the ephemeral range, where every other `bind(0)` and outgoing connection on the machine
//! draws from: in the second a Python replica takes to start, a link of a test running
//! beside it could take the same port, and the replica died with "address already in use"
//! (CI, stop 43). The ports handed to children therefore come from below the ephemeral
//! range, which the kernel never hands out by itself, walked by a counter per process that
//! starts at an offset drawn from the process id, so two runs side by side walk apart; each
//! candidate is still checked by binding it.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};

/// The lowest port handed out: above the registered services most machines run.
const LOWEST: u16 = 20_000;

/// How many candidates one call tries before it gives up.
const TRIES: u32 = 200;

static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);

/// A loopback port that nothing listens on, chosen below the ephemeral range; a kernel
/// port (`bind` to 0) when that range leaves no room below it.
pub fn reserve() -> std::io::Result<u16> {
    let Some(span) = span_below_ephemeral() else {
        return kernel_port();
    };
    let first = std::process::id().wrapping_mul(2_654_435_761) % span;
    let _ = NEXT.compare_exchange(u32::MAX, first, Ordering::Relaxed, Ordering::Relaxed);
    for _ in 0..TRIES {
        let n = NEXT.fetch_add(1, Ordering::Relaxed) % span;
        let port = LOWEST + n as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    kernel_port()
}

/// How many ports lie between [`LOWEST`] and the start of the kernel's ephemeral range.
fn span_below_ephemeral() -> Option<u32> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok();
    let low: u32 = range
        .as_deref()
        .and_then(|r| r.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or(32_768);
    let span = low.checked_sub(u32::from(LOWEST))?;
    (span >= 1_000).then_some(span)
}

fn kernel_port() -> std::io::Result<u16> {
    let listener = TcpListener::bind(("127.0.0.1", 0))?;
    Ok(listener.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_come_from_below_the_ephemeral_range_and_differ() {
        let a = reserve().unwrap();
        let b = reserve().unwrap();
        assert_ne!(a, b);
        if let Some(span) = span_below_ephemeral() {
            for p in [a, b] {
                assert!((LOWEST..LOWEST + span as u16).contains(&p), "{p}");
            }
        }
    }
}
