//! Logs through tracing-subscriber, stamped with simulated time.
//!
//! Inside a simulation the timestamp is the calling host's simulated time since the start of
//! the run (`  1.234s`); outside one it is `-`. `RUST_LOG` selects what is shown (default
//! `warn`; `RUST_LOG=a2a_chaos=debug` shows every trace event as it happens).

use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;

/// A timer that prints simulated time.
pub struct SimTime;

impl FormatTime for SimTime {
    fn format_time(&self, w: &mut Writer<'_>) -> std::fmt::Result {
        match turmoil::sim_elapsed().or_else(crate::engine::elapsed) {
            Some(t) => write!(w, "{:>8.3}s", t.as_secs_f64()),
            None => write!(w, "{:>9}", "-"),
        }
    }
}

/// Installs the subscriber (once; later calls do nothing).
pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_timer(SimTime)
        .with_writer(std::io::stderr)
        .try_init();
}
