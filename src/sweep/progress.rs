//! A sweep's progress on stderr: runs done, runs with a violation so far, the rate and the
//! time left.
//!
//! On a terminal it is an [`indicatif`] bar, redrawn in place. Anywhere else (a pipe, a CI
//! log, `| tee`) it is at most one plain line every [`LINE_EVERY`], so a log gets a few
//! readable lines and no carriage-return frames; a sweep shorter than that prints none.
//! `run --quiet` (and `check --json`) turn it off. The rate and the time left come from
//! the wall clock, which never reaches simulated state or any file.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often a plain progress line may be printed when stderr is not a terminal.
pub const LINE_EVERY: Duration = Duration::from_secs(10);

enum Mode {
    Off,
    Bar(ProgressBar),
    Lines { last: Instant },
}

/// The progress display of one sweep.
pub struct Reporter {
    mode: Mode,
    started: Instant,
    /// Runs already done when the sweep started (a resumed journal), not counted in the rate.
    done_before: usize,
    total: usize,
}

impl Reporter {
    /// A display for a sweep of `total` runs of which `done` (`violating` of them with a
    /// violation) are already done: off unless `enabled`, a bar on a terminal, plain lines
    /// otherwise.
    pub fn new(enabled: bool, total: usize, done: usize, violating: usize) -> Reporter {
        let started = Instant::now();
        let mode = if !enabled {
            Mode::Off
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(
                Some(total as u64),
                ProgressDrawTarget::stderr_with_hz(10),
            );
            bar.set_style(
                ProgressStyle::with_template("[{bar:30}] {pos}/{len} runs, {msg}, ETA {eta}")
                    .expect("a valid template")
                    .progress_chars("#>."),
            );
            bar.set_position(done as u64);
            bar.reset_eta();
            bar.set_message(bar_message(violating, 0, Duration::ZERO));
            Mode::Bar(bar)
        } else {
            Mode::Lines { last: started }
        };
        Reporter {
            mode,
            started,
            done_before: done,
            total,
        }
    }

    /// `done` runs are finished, `violating` of them with a violation or an error.
    pub fn update(&mut self, done: usize, violating: usize) {
        match &mut self.mode {
            Mode::Off => {}
            Mode::Bar(bar) => {
                let ran = done.saturating_sub(self.done_before);
                bar.set_message(bar_message(violating, ran, self.started.elapsed()));
                bar.set_position(done as u64);
            }
            Mode::Lines { last } => {
                if last.elapsed() < LINE_EVERY {
                    return;
                }
                *last = Instant::now();
                let line = plain_line(
                    done,
                    self.total,
                    violating,
                    done.saturating_sub(self.done_before),
                    self.started.elapsed(),
                );
                eprintln!("{line}");
            }
        }
    }

    /// Prints a message above the bar (or as a line), without tearing the bar.
    pub fn println(&self, message: &str) {
        match &self.mode {
            Mode::Bar(bar) => bar.println(message),
            _ => eprintln!("{message}"),
        }
    }

    /// Ends the display, leaving the bar's last state on the terminal.
    pub fn finish(self) {
        if let Mode::Bar(bar) = self.mode {
            bar.finish();
        }
    }
}

/// The bar's message: `14 with violations, 12.0 runs/s` (`ran` runs took `elapsed`).
fn bar_message(violating: usize, ran: usize, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    if ran == 0 || secs <= 0.0 {
        return format!("{violating} with violations");
    }
    format!(
        "{violating} with violations, {:.1} runs/s",
        ran as f64 / secs
    )
}

/// The plain progress line: `progress: 120/600 runs (20%), 14 with violations, 12.0 runs/s,
/// ETA 40 s`. `ran` runs took `elapsed` (the rate's basis).
pub fn plain_line(
    done: usize,
    total: usize,
    violating: usize,
    ran: usize,
    elapsed: Duration,
) -> String {
    let secs = elapsed.as_secs_f64().max(1e-9);
    let rate = ran as f64 / secs;
    let eta = if rate > 0.0 {
        format!("{:.0} s", total.saturating_sub(done) as f64 / rate)
    } else {
        "unknown".to_string()
    };
    format!(
        "progress: {done}/{total} runs ({}%), {violating} with violations, {rate:.1} runs/s, ETA {eta}",
        done * 100 / total.max(1)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plain_line_says_done_violations_rate_and_eta() {
        let line = plain_line(120, 600, 14, 120, Duration::from_secs(10));
        assert_eq!(
            line,
            "progress: 120/600 runs (20%), 14 with violations, 12.0 runs/s, ETA 40 s"
        );
        assert!(plain_line(0, 10, 0, 0, Duration::ZERO).ends_with("ETA unknown"));
    }

    #[test]
    fn off_prints_nothing_and_finishes() {
        let mut r = Reporter::new(false, 10, 0, 0);
        r.update(5, 1);
        r.finish();
    }
}
