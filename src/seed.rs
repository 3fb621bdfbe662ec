//! Named streams of randomness: one run seed, and a stable seed for each consumer of it.
//!
//! Everything random in a run (the workload, each replica, the router, each fault's plan)
//! draws from its own stream, [`derive_seed`]`(seed, name, index)`, so a new consumer never
//! shifts the draws of the others. [`Fnv`] is the stable hash the names and trace hashes use.
//! The lowest layer: it depends on nothing in the crate.

/// The seed of one named stream of randomness in a run: `stream` names its user
/// (`"workload"`, `"replica"`, `"router"`, `"faults"`) and `index` tells instances apart.
///
/// Every stream goes through a full 64-bit mix (FNV-1a of the name, then SplitMix64's
/// finaliser), so neighbouring seeds and indices give unrelated streams. (XOR-ing the index
/// into the seed made conversation c1 of seed 0 the same stream as conversation c0 of seed 1.)
pub fn derive_seed(seed: u64, stream: &str, index: u64) -> u64 {
    let mut z = seed
        .wrapping_add(Fnv::of(stream))
        .wrapping_add(index.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    for _ in 0..2 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
    }
    z
}

/// The seed of a run's timing for draw `draw` of `seed` (see
/// [`crate::sim::Builder::timing_draw`]): the seed itself for draw 0, so nothing changes;
/// otherwise a seed of its own, for the engine's scheduler and network and the replicas'
/// drawn durations, while everything else (ids, the fault plan, routing) keeps `seed`.
pub fn timing_seed(seed: u64, draw: u64) -> u64 {
    if draw == 0 {
        seed
    } else {
        derive_seed(seed, "timing", draw)
    }
}

/// A generator of its own for draw `draw` of `seed`'s stream `stream`, for a part of a run
/// that can be simulated under other draws of its timing (kill delays, slowed links); draw
/// 0 is `None`: the part keeps drawing from its owner's generator, so nothing changes.
pub fn redraw(seed: u64, stream: &str, draw: u64) -> Option<rand_chacha::ChaCha8Rng> {
    use rand::SeedableRng;
    (draw != 0).then(|| rand_chacha::ChaCha8Rng::seed_from_u64(derive_seed(seed, stream, draw)))
}

/// FNV-1a, 64 bit: stable across processes, platforms and Rust versions.
#[derive(Debug, Clone, Copy)]
pub struct Fnv(pub u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    /// Mixes `bytes` into the hash.
    pub fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// The hash of one string.
    pub fn of(text: &str) -> u64 {
        let mut h = Fnv::default();
        h.write(text.as_bytes());
        h.0
    }
}
