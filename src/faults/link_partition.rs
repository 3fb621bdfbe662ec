//! `link-partition`: any two hosts lose each other for a while, both ways or one way.
//!
//! Rate: partitions per simulated second. Each picks two distinct hosts uniformly (`client`,
//! `router`, every replica, `store`, `ledger`, `webhook`), cuts the link both ways or, half
//! the time, in one direction only, and repairs it after 200 to 800 ms (its stability
//! window). A one-way cut is the nasty one: requests arrive and answers do not (or the
//! reverse), so a replica cut from the ledger's answers performs effects it never hears of,
//! and a client cut from the router's answers sees timeouts for work that was done. A push
//! to a webhook cut off times out. In the simulation the calls keep a one-way cut themselves
//! (`net::oneway`): turmoil's own one-way partition would lose what it caught.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::partition::{Partition, PartitionOneway, Repair};
use super::{arrivals, hosts, FaultKind, PlanInput, Scheduled};

/// The link-partition fault.
pub struct LinkPartition;

impl FaultKind for LinkPartition {
    fn describe(&self) -> &'static str {
        "partitions between any two hosts per simulated second, half of them one-way; each lasts 200-800 ms"
    }

    fn plan(&self, rate: f64, input: &PlanInput, rng: &mut ChaCha8Rng) -> Vec<Scheduled> {
        let all = hosts(input.replicas);
        let mut out = Vec::new();
        for at_ms in arrivals(rate, input.window_ms, rng) {
            let (a, b) = super::pick_pair(&all, rng);
            let oneway = rng.random_bool(0.5);
            let length_ms = rng.random_range(200..=800);
            out.push(Scheduled {
                at_ms,
                action: if oneway {
                    PartitionOneway(a.clone(), b.clone()).into()
                } else {
                    Partition(a.clone(), b.clone()).into()
                },
            });
            out.push(Scheduled {
                at_ms: at_ms + length_ms,
                action: Repair(a, b).into(),
            });
        }
        out
    }
}
