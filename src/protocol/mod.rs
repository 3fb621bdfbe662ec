//! The A2A wire: what crosses a socket between a client, the router and a replica.
//!
//! - [`sse`]: the server-sent-events framing of the streaming methods.
pub mod sse;
