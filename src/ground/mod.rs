//! The hosts that hold ground truth, independent of the system under test.
//!
//! - [`ledger`]: the business-effect sink: did an effect happen, and how often;
//! - [`webhook`]: the push-notification receiver;
//! - [`push`]: every connection a push opened, and what replicas reported about pushes.
pub mod ledger;
pub mod push;
pub mod webhook;
