//! a2a-chaos: a deterministic multi-replica chaos simulator for A2A (Agent2Agent) servers.
//!
//! Several in-process A2A replicas speak real A2A JSON-RPC over HTTP/1.1 on turmoil's
//! simulated network, behind a router, with per-pod memory stores or a shared store (plain
//! or versioned), plus an independent business-effect ledger and a webhook receiver. The
//! driver injects pod kills, partitions, latency and lost replies; clients retry and
//! duplicate; checkers then compare what clients were told with what really happened.
//!
//! One u64 seed drives everything, so any run replays exactly.
//!
//! The crate map: the top-level modules as layers, top to bottom. Arrows point down: a
//! module uses only the modules listed after it (tests/layers.rs enforces the order).
//!
//! - **shell**
//!   - [`cli`]: the `a2a-chaos` command line, one file per command; a thin client of the
//!     layers below.
//! - **tools**: what a user runs around single runs
//!   - [`bench`](mod@bench): `a2a-chaos bench`: what a simulated request costs, and how fast each
//!     hazard is discovered;
//!   - [`fidelity`]: differential runs, one scenario simulated and against the real
//!     system, compared on everything both observe (`fidelity`, `fidelity --generate`);
//!   - [`live`]: the same scripts over real TCP against real replicas (`serve`, `live`), the
//!     recording proxy and `check-history`;
//!   - [`strategies`]: proptest strategies that generate scenarios for your own tests;
//!   - [`shrink`]: from a failing run to a small scenario that fails the same way;
//!   - [`output`]: what a sweep writes and prints (tables, CSV, chart, timeline, terminal
//!     summary, JUnit);
//!   - [`sweep`]: experiments over models × routing × seeds, in parallel, sharded over
//!     machines and resumed after an interruption.
//! - **runs**: one run, built and checked
//!   - [`sim`]: the front door, `Sim::builder()...build()?`, then run and check one seed;
//!   - [`experiment`]: experiment files (models × routing × faults × seeds) and their run
//!     budget.
//! - **judge**
//!   - [`check`]: the invariants, each with how often a run exercised it, and the
//!     documented hazards recognised in a finished run.
//! - **drive**: what happens in a run, and when
//!   - [`world`]: one simulated run: the turmoil world, its hosts, the driver loop and the
//!     record it leaves;
//!   - [`scenario`]: scripted scenarios (TOML steps and `[expect]`), and how they run;
//!   - [`workload`]: generated workloads: conversations, retries, duplicates, cancels,
//!     subscriptions, push, polls.
//! - **hosts**: the programs on the simulated network
//!   - [`client`]: the A2A client and its history of `ok` / `fail` / `info` operations;
//!   - [`replica`]: the A2A server and its scripted agent, shaped by a [`model::Profile`];
//!   - [`router`]: the reverse proxy in front of the replicas, and its routing strategies;
//!   - [`card`]: the agent card's publisher, the client's card cache, and the extra hosts a
//!     changed card may name;
//!   - [`ground`]: the hosts that hold ground truth: the business-effect ledger, the
//!     webhook, the push egress log;
//!   - [`store`]: the task stores, per pod or shared on the network;
//!   - [`buggify`]: fault points inside the code (BUGGIFY points and kill points).
//! - **base**: data and plumbing every layer above shares
//!   - [`auth`]: bearer credentials, principals and out-of-band grants;
//!   - [`model`]: replica behaviour profiles, one TOML file per model, every knob sourced;
//!   - [`protocol`]: the A2A wire (1.0 and 0.3), the agent card document, server-sent
//!     events;
//!   - [`trace`]: the ordered, typed event trace of a run and its hash;
//!   - [`faults`]: fault kinds and actions as data, planned from the seed;
//!   - [`net`]: HTTP/1.1 over the simulated TCP of either engine, or over real sockets;
//!   - [`logging`]: logs stamped with simulated time;
//!   - [`names`]: names that become file names (experiments, scenarios, models);
//!   - [`error`]: errors for unusable input, naming the file;
//!   - [`input`]: the one bounded reader every input file comes through;
//!   - [`files`]: output files that cannot be hijacked (no symbolic links, one process per
//!     output folder);
//!   - [`activity`]: the work in flight that tells the driver a run has settled;
//!   - [`host`]: the hosts of a run as a type, read from text once, where it comes in;
//!   - [`engine`]: the event engine: every host on one paused runtime whose clock jumps
//!     to the next event, and its simulated network (the other engine is turmoil);
//!   - [`seed`]: one run seed and a derived stream for each consumer of it.

pub mod activity;
pub mod auth;
pub mod bench;
pub mod buggify;
pub mod card;
pub mod check;
pub mod cli;
pub mod client;
pub mod engine;
pub mod error;
pub mod experiment;
pub mod faults;
pub mod fidelity;
pub mod files;
pub mod ground;
pub mod host;
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
