//! Sweeps: experiments ([`crate::experiment`]) over models × routing × seeds, in parallel,
//! sharded and resumable.
//!
//! - [`runner`]: every work item on every core; [`progress`]: what it shows meanwhile;
//! - [`shard`]: one machine's part of a sweep; [`journal`]: a sweep resumed after a kill;
//! - [`batch`]: `--shard auto`, from a Slurm array or a Kubernetes Indexed Job;
//!   [`census`]: what a sharded sweep's folder holds (done, unfinished, missing shards).
pub mod batch;
pub mod census;
pub mod journal;
pub mod progress;
pub mod runner;
pub mod shard;
