//! The task store's knobs: where tasks live, whether saves compare-and-swap, and how a
//! replica's calls to a shared store behave when it is slow, cut off or restarted.

use serde::{Deserialize, Serialize};

/// Where a replica keeps tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// In the replica process: lost when the pod dies, invisible to other replicas.
    Memory,
    /// In the `store` host, shared by every replica, durable across store restarts.
    Shared,
}

/// Task storage knobs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreKnobs {
    /// Where tasks live.
    pub placement: Placement,
    /// Whether saves compare-and-swap on the version read (false: last writer wins, as the
    /// legacy adapter does).
    pub versioned: bool,
    /// How many times a store call that got no answer is tried again (never a conflict).
    pub transient_retries: u32,
    /// Whether the replica's connection pool hands out a pooled connection without checking
    /// it first (SQLAlchemy's default, `pool_pre_ping=False`): then the first store call
    /// after the store restarted runs on a connection of the store's former life and fails
    /// ("connection is closed"), untried again, and the pool is renewed after it. Every
    /// replica holds a pooled connection from its start on (it initialises the store). A
    /// knob only when set.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pool_without_pre_ping: bool,
    /// How long one store call waits for its answer (ms) before the replica gives up on
    /// it; unset, the world's 500 ms ([`crate::replica::Timing`]). A system with no
    /// database timeout waits as long as its kernel's TCP does. A knob only when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl StoreKnobs {
    /// The timeout of one store call, `world` unless the profile sets its own.
    pub fn call_timeout(&self, world: std::time::Duration) -> std::time::Duration {
        self.timeout_ms
            .map_or(world, std::time::Duration::from_millis)
    }
}
