//! The proxy's request-level faults, each deterministic from `--seed`: client request `k`
//! (1-based, JSON-RPC POSTs only) is hit by a fault with period `N` when `(k + seed) % N == 0`.

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
