//! What this machine and process report, for the benchmark's figures: peak resident memory
//! ([`peak_rss_kib`]), the load average ([`load_average`]), the process's CPU seconds
//! ([`process_cpu_s`]), and the stopwatch every phase is timed with (wall and CPU seconds
//! together).
//!
//! Everything is read from `/proc` (through the one bounded reader, [`crate::input`]) and is
//! `None` where `/proc` does not tell.

use std::path::Path;
use std::time::Instant;

/// A `/proc` file's text, if it can be read.
fn proc_text(path: &str) -> Option<String> {
    crate::input::read_text(Path::new(path), crate::input::FileKind::Log).ok()
}

/// Peak resident set size of this process (`VmHWM`), in KiB, if `/proc` has it.
pub fn peak_rss_kib() -> Option<u64> {
    let status = proc_text("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The load averages, as `/proc/loadavg` gives them (first three fields).
pub fn load_average() -> Option<(f64, String)> {
    let text = proc_text("/proc/loadavg")?;
    let fields: Vec<&str> = text.split_whitespace().take(3).collect();
    let one = fields.first()?.parse().ok()?;
    Some((one, fields.join(" ")))
}

/// CPU seconds this process has used, user plus system, every thread (`/proc/self/stat`,
/// in the kernel's 100 Hz clock ticks).
pub fn process_cpu_s() -> Option<f64> {
    let stat = proc_text("/proc/self/stat")?;
    // The command name (field 2) may hold spaces; the fields after its `)` are fixed.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3, so utime (14) and stime (15) are at 11 and 12.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / 100.0)
}

/// Wall and CPU time since it started.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stopwatch {
    pub(super) wall: Instant,
    cpu: Option<f64>,
}

impl Stopwatch {
    pub(super) fn start() -> Stopwatch {
        Stopwatch {
            wall: Instant::now(),
            cpu: process_cpu_s(),
        }
    }

    /// (wall seconds, CPU seconds) since the start.
    pub(super) fn read(&self) -> (f64, Option<f64>) {
        let cpu = match (self.cpu, process_cpu_s()) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        };
        (self.wall.elapsed().as_secs_f64(), cpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_read_through_the_bounded_reader() {
        // /proc files say they hold 0 bytes; the reader's cap, not their size, bounds them.
        assert!(peak_rss_kib().is_some_and(|k| k > 0));
        assert!(load_average().is_some());
        assert!(process_cpu_s().is_some());
    }
}
