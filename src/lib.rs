//! a2a-chaos: a deterministic multi-replica chaos simulator for A2A (Agent2Agent) servers.
//!
//! Several in-process A2A replicas speak real A2A JSON-RPC over HTTP/1.1 on turmoil's
//! simulated network, behind a router, with per-pod memory stores or a shared versioned
//! store, plus an independent business-effect ledger and a webhook receiver. The driver
//! injects pod kills, partitions, latency and lost replies; clients retry and duplicate;
//! checkers then compare what clients were told with what really happened.
//!
//! One u64 seed drives everything, so any run replays exactly.
//!
//! The pieces, in the order a request meets them:
//! - [`workload`] and [`scenario`]: what the `client` host does (generated or scripted);
//! - [`client`] and [`history`]: A2A calls and their `ok` / `fail` / `info` record;
//! - [`auth`]: bearer credentials and principals;
//! - [`card`]: the agent card's publisher, the client's card cache, and the extra hosts a
//!   card may name;
//! - [`router`]: the reverse proxy and its routing strategies;
//! - [`replica`]: the A2A server and scripted agent, shaped by a [`model::Profile`];
//! - [`store`], [`ledger`], [`webhook`]: the hosts that hold ground truth;
//! - [`faults`] and [`cluster`]: the fault plan and the driver loop; [`activity`]: the work
//!   in flight that tells the driver a run has settled;
//! - [`check`]: the invariants; [`runner`], [`report`], [`experiment`]: sweeps and output;
//!   [`chart`] and [`timeline`]: the picture of a sweep and of one failing run;
//!   [`shard`] and [`journal`]: sweeps split over machines, and resumed after an interruption;
//! - [`live`]: the same scripts over real TCP against real replicas (`serve`, `live`,
//!   `fidelity`);
//! - [`names`]: names that become file names (experiments, scenarios, models); [`input`]:
//!   the one bounded reader every input file comes through; [`files`]: output files that
//!   cannot be hijacked (no symbolic links, one process per output folder);
//! - [`shrink`]: from a failing run to a small scenario; [`strategies`]: proptest strategies
//!   that generate scenarios for your own tests.

pub mod activity;
pub mod auth;
pub mod bench;
pub mod buggify;
pub mod card;
pub mod check;
pub mod cli;
pub mod client;
pub mod error;
pub mod experiment;
pub mod faults;
pub mod fidelity;
pub mod files;
pub mod ground;
pub mod input;
pub mod live;
pub mod logging;
pub mod model;
pub mod names;
pub mod net;
pub mod output;
pub mod protocol;
pub mod replica;
pub mod router;
pub mod scenario;
pub mod seed;
pub mod shrink;
pub mod sim;
pub mod store;
pub mod strategies;
pub mod sweep;
pub mod trace;
pub mod workload;
pub mod world;
