//! Sweeps: experiments over models × routing × seeds, in parallel, sharded and resumable.
//!
//! - [`experiment`]: the experiment file;
//! - [`runner`]: every work item on every core;
//! - [`shard`]: one machine's part of a sweep; [`journal`]: a sweep resumed after a kill.
pub mod experiment;
pub mod journal;
pub mod runner;
pub mod shard;
