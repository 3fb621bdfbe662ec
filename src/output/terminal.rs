//! What a sweep prints on a terminal: short, and at most [`WIDTH`] columns.
//!
//! [`compact`] gives one block per model × routing combination: a heading with its runs
//! and how many invariants it violated, then one line per violated invariant (runs with a
//! violation / runs, and the 95% Wilson interval of that rate), then the invariants no run
//! of it exercised. An invariant exercised and never violated is counted in the heading
//! (`held`). The full matrix stays in `summary.csv` and `chart.svg`; [`super::report::table`]
//! is the wide table (`run --wide`).
//!
//! Colour (red for a violation, green for a combination that holds, dim for what was not
//! exercised) only when the caller says so: [`colour_wanted`] is true on a terminal unless
//! `NO_COLOR` is set (<https://no-color.org>). Nothing here goes into a file.

use std::fmt::Write as _;
use std::io::IsTerminal;

use crate::check;
use crate::sim::RunSummary;

use super::report::{groups, tally, wilson};

/// The widest line printed (a terminal of 100 columns shows every line whole).
pub const WIDTH: usize = 100;

/// Whether stdout should get colour: it is a terminal, and `NO_COLOR` is unset or empty.
pub fn colour_wanted() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// ANSI styling, or none.
#[derive(Debug, Clone, Copy)]
pub struct Paint(pub bool);

impl Paint {
    fn wrap(self, code: &str, text: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
    /// Bold.
    pub fn bold(self, text: &str) -> String {
        self.wrap("1", text)
    }
    /// Red: a violation.
    pub fn bad(self, text: &str) -> String {
        self.wrap("31", text)
    }
    /// Green: holds.
    pub fn good(self, text: &str) -> String {
        self.wrap("32", text)
    }
    /// Dim: not exercised.
    pub fn dim(self, text: &str) -> String {
        self.wrap("2", text)
    }
}

/// A rate as a percentage: whole percent, one decimal below 1% and above 99% (so a small
/// bound never reads 0% or 100% when it is not).
fn percent(x: f64) -> String {
    let p = x * 100.0;
    let tenths = (p * 10.0).round();
    if tenths == 0.0 || tenths == 1000.0 || (1.0..=99.0).contains(&p) {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

/// The 95% Wilson interval of `k` in `n`, as `[lo, hi]`.
pub fn interval(k: u64, n: u64) -> String {
    let (lo, hi) = wilson(k, n);
    format!("[{}, {}]", percent(lo), percent(hi))
}

/// `text` word-wrapped to [`WIDTH`]: the first line starts with `first` (and a space, unless
/// `first` is blank or ends with one), the others with `rest` (both counted in the width).
/// A word longer than a line stays whole.
pub fn wrap(text: &str, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = first.trim().is_empty() || first.ends_with(' ');
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if !empty && line.chars().count() + 1 + word.chars().count() > WIDTH {
            out.push_str(line.trim_end());
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// The compact summary of a sweep (see the module documentation).
pub fn compact(runs: &[RunSummary], paint: Paint) -> String {
    let invariants = check::names();
    let mut out = String::new();
    let name_width = invariants
        .iter()
        .map(|n| n.as_str().len())
        .max()
        .unwrap_or(0);
    for g in groups(runs) {
        let n = g.runs.len() as u64;
        let mut violated = Vec::new();
        let mut held = 0;
        let mut unexercised = Vec::new();
        for inv in &invariants {
            let (v, e) = tally(&g.runs, *inv);
            if v > 0 {
                violated.push((*inv, v, e));
            } else if e > 0 {
                held += 1;
            } else {
                unexercised.push(inv.as_str());
            }
        }
        let errors = g.runs.iter().filter(|r| r.error.is_some()).count();
        let verdict = if violated.is_empty() {
            paint.good(&format!("no violation ({held} held)"))
        } else {
            paint.bad(&format!(
                "{} violated{}",
                violated.len(),
                if held > 0 {
                    format!(", {held} held")
                } else {
                    String::new()
                }
            ))
        };
        let errors = if errors > 0 {
            paint.bad(&format!(", {errors} runs did not finish"))
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{} ({n} runs): {verdict}{errors}",
            paint.bold(&format!("{} / {}", g.model, g.routing)),
        );
        let available: crate::sim::Availability = g.runs.iter().map(|r| r.availability).sum();
        if available.turns > 0 {
            let _ = writeln!(out, "    {}", paint.dim(&available.describe()));
        }
        for (inv, v, e) in violated {
            let exercised = if e < n {
                format!("  ({e} exercised)")
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "    {}  {:>9}  {}{exercised}",
                paint.bad(&format!("{inv:<name_width$}")),
                format!("{v}/{n}"),
                interval(v, n),
            );
        }
        if !unexercised.is_empty() {
            let text = wrap(&unexercised.join(", "), "    never exercised:", "      ");
            out.push_str(&paint.dim(text.trim_end()));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_keeps_every_line_within_the_width() {
        let text = "word ".repeat(80);
        let wrapped = wrap(&text, "  first:", "    ");
        assert!(wrapped.lines().count() > 3);
        for line in wrapped.lines() {
            assert!(line.len() <= WIDTH, "{line}");
        }
        assert!(wrapped.starts_with("  first: word"));
        assert!(wrapped.lines().nth(1).unwrap().starts_with("    word"));
        assert_eq!(wrap("a b", "  ", "  "), "  a b\n");
        assert_eq!(wrap("short", "", ""), "short\n");
    }

    #[test]
    fn small_rates_keep_a_decimal() {
        assert_eq!(interval(0, 2000), "[0%, 0.2%]");
        assert_eq!(interval(50, 100), "[40%, 60%]");
        assert_eq!(interval(100, 100), "[96%, 100%]");
        assert_eq!(interval(2000, 2000), "[99.8%, 100%]");
    }
}
