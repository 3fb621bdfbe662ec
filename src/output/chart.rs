//! `chart.svg`: the summary of a sweep as one hand-written SVG picture.
//!
//! One row per (model, routing) combination; one column per invariant showing the violation
//! rate as a bar with its 95% Wilson interval as an error bar (and `k/n` beside it, or
//! `unknown` when no run exercised the invariant); a last column with the p50 and p99
//! latency of acknowledged sends. Everything is drawn from [`SummaryRow`]s, the rows of
//! `summary.csv`, so the picture shows exactly what the file says. Hovering a cell shows its
//! numbers (`<title>`). The output is plain SVG 1.1, no script, no external resources, and
//! deterministic: the same rows give the same bytes.

use crate::output::html::{html, html_line, Html};

use crate::output::report::SummaryRow;

/// Row height, px.
const ROW: f64 = 22.0;
/// Width of one invariant column's plot area, px.
const CELL: f64 = 150.0;
/// Width of the latency column's plot area, px.
const LATENCY: f64 = 220.0;
/// Gap between columns, px.
const GAP: f64 = 70.0;
/// Space above the first row, px.
const TOP: f64 = 96.0;

/// Colours for routing strategies, in order of first appearance.
const PALETTE: &[&str] = &[
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#e15759", "#9c755f",
];

/// Escapes text for SVG and HTML (the one escape, [`crate::output::html::escape`]).
pub use crate::output::html::escape;

/// A round axis maximum at or above `v` (1, 2 or 5 times a power of ten).
fn nice_max(v: u64) -> u64 {
    let mut step = 1u64;
    loop {
        for m in [1, 2, 5] {
            if step * m >= v.max(1) {
                return step * m;
            }
        }
        step = step.saturating_mul(10);
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// The chart of a sweep's summary rows; `title` names the experiment.
pub fn svg(title: &str, rows: &[SummaryRow]) -> Vec<u8> {
    // Combinations and invariants, in the order of the rows.
    let mut combos: Vec<(&str, &str)> = Vec::new();
    let mut invariants: Vec<crate::check::Invariant> = Vec::new();
    let mut routings: Vec<&str> = Vec::new();
    for r in rows {
        if !combos.contains(&(r.model.as_str(), r.routing.as_str())) {
            combos.push((&r.model, &r.routing));
        }
        if !invariants.contains(&r.invariant) {
            invariants.push(r.invariant);
        }
        if !routings.contains(&r.routing.as_str()) {
            routings.push(&r.routing);
        }
    }
    let colour = |routing: &str| {
        let i = routings.iter().position(|r| *r == routing).unwrap_or(0);
        PALETTE[i % PALETTE.len()]
    };
    let label_w = combos
        .iter()
        .map(|(m, r)| (m.chars().count() + r.chars().count() + 3) as f64 * 6.4)
        .fold(160.0f64, f64::max)
        + 16.0;
    let col_x = |c: usize| label_w + c as f64 * (CELL + GAP);
    let lat_x = col_x(invariants.len());
    let width = lat_x + LATENCY + 90.0;
    let height = TOP + combos.len() as f64 * ROW + 64.0;
    let lat_max = nice_max(rows.iter().filter_map(|r| r.p99_ms).max().unwrap_or(1));

    let mut s = Html::new();
    html_line!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="Helvetica, Arial, sans-serif" font-size="11">"#; width = width, height = height
    );
    html_line!(
        s,
        "<title>{}: violation rate per invariant with 95% Wilson intervals, and latency</title>",
        title
    );
    html_line!(
        s,
        r##"<rect x="0" y="0" width="{width:.0}" height="{height:.0}" fill="#ffffff"/>"##; width = width, height = height
    );
    html_line!(
        s,
        r#"<text x="12" y="22" font-size="15" font-weight="bold">{}</text>"#,
        title
    );
    html_line!(
        s,
        r##"<text x="12" y="40" fill="#444">Runs with at least one violation, per invariant (bar), with the 95% Wilson interval (whiskers); latency of acknowledged sends (simulated ms).</text>"##
    );
    // Legend: one swatch per routing strategy.
    let mut lx = 12.0;
    for r in &routings {
        html_line!(
            s,
            r#"<rect x="{lx:.1}" y="50" width="12" height="10" fill="{}"/><text x="{:.1}" y="59">{}</text>"#,
            colour(r),
            lx + 16.0,
            r; lx = lx
        );
        lx += 16.0 + r.chars().count() as f64 * 6.4 + 18.0;
    }

    // Column headers and axes.
    let axis_y = TOP - 6.0;
    let bottom = TOP + combos.len() as f64 * ROW;
    for (c, inv) in invariants.iter().enumerate() {
        let x = col_x(c);
        html_line!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-weight="bold">{}</text>"#,
            x + CELL / 2.0,
            TOP - 22.0,
            inv
        );
        for (frac, label) in [(0.0, "0%"), (0.5, "50%"), (1.0, "100%")] {
            let gx = x + frac * CELL;
            html_line!(
                s,
                r##"<line x1="{gx:.1}" y1="{axis_y:.1}" x2="{gx:.1}" y2="{bottom:.1}" stroke="#ddd"/><text x="{gx:.1}" y="{:.1}" text-anchor="middle" fill="#666" font-size="9">{label}</text>"##,
                axis_y - 2.0; gx = gx, axis_y = axis_y, bottom = bottom, label = label
            );
        }
    }
    html_line!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-weight="bold">latency (ms): p50 solid, p99 light</text>"#,
        lat_x + LATENCY / 2.0,
        TOP - 22.0
    );
    for (frac, value) in [(0.0, 0), (0.5, lat_max / 2), (1.0, lat_max)] {
        let gx = lat_x + frac * LATENCY;
        html_line!(
            s,
            r##"<line x1="{gx:.1}" y1="{axis_y:.1}" x2="{gx:.1}" y2="{bottom:.1}" stroke="#ddd"/><text x="{gx:.1}" y="{:.1}" text-anchor="middle" fill="#666" font-size="9">{value}</text>"##,
            axis_y - 2.0; gx = gx, axis_y = axis_y, bottom = bottom, value = value
        );
    }

    // Rows.
    let mut previous_model = None;
    for (i, (model, routing)) in combos.iter().enumerate() {
        let y = TOP + i as f64 * ROW;
        let mid = y + ROW / 2.0;
        if previous_model.is_some() && previous_model != Some(*model) {
            html_line!(
                s,
                r##"<line x1="8" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#999"/>"##,
                width - 8.0; y = y
            );
        }
        previous_model = Some(*model);
        html_line!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{} / <tspan fill="{}">{}</tspan></text>"#,
            label_w - 10.0,
            mid + 4.0,
            model,
            colour(routing),
            routing
        );
        let fill = colour(routing);
        for (c, inv) in invariants.iter().enumerate() {
            let x = col_x(c);
            let Some(row) = rows
                .iter()
                .find(|r| r.model == *model && r.routing == *routing && r.invariant == *inv)
            else {
                continue;
            };
            let rate = row.violation_rate();
            let (lo, hi) = row.ci95;
            if row.runs_exercised == 0 {
                html_line!(
                    s,
                    r##"<g><title>{} / {} / {}: unknown: no run of {} exercised it</title><text x="{:.1}" y="{:.1}" fill="#999" font-style="italic">unknown</text></g>"##,
                    model,
                    routing,
                    inv,
                    row.runs,
                    x + 2.0,
                    mid + 4.0
                );
                continue;
            }
            let bar = rate * CELL;
            let (x_lo, x_hi) = (x + lo * CELL, x + hi * CELL);
            html_line!(
                s,
                concat!(
                    r#"<g><title>{} / {} / {}: {}/{} runs violated ({}), 95% CI {} to {}, exercised in {} runs</title>"#,
                    r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#f3f3f3"/>"##,
                    r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
                    r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#222"/>"##,
                    r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#222"/>"##,
                    r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#222"/>"##,
                    r#"<text x="{:.1}" y="{:.1}"{}>{}/{}</text></g>"#
                ),
                model,
                routing,
                inv,
                row.runs_violated,
                row.runs,
                pct(rate),
                pct(lo),
                pct(hi),
                row.runs_exercised,
                // track
                x,
                y + 4.0,
                CELL,
                ROW - 8.0,
                // bar
                x,
                y + 5.0,
                bar,
                ROW - 10.0,
                fill,
                // whisker and caps
                x_lo,
                mid,
                x_hi,
                mid,
                x_lo,
                mid - 4.0,
                x_lo,
                mid + 4.0,
                x_hi,
                mid - 4.0,
                x_hi,
                mid + 4.0,
                // label
                x + CELL + 4.0,
                mid + 4.0,
                Html::from_static(if row.runs_violated > 0 {
                    r#" font-weight="bold""#
                } else {
                    r##" fill="#666""##
                }),
                row.runs_violated,
                row.runs
            );
        }
        // Latency: the first row of the combination carries it (every row repeats it).
        if let Some(row) = rows
            .iter()
            .find(|r| r.model == *model && r.routing == *routing)
        {
            match (row.p50_ms, row.p99_ms) {
                (Some(p50), Some(p99)) => {
                    let scale = LATENCY / lat_max as f64;
                    html_line!(
                        s,
                        concat!(
                            r#"<g><title>{} / {}: p50 {} ms, p99 {} ms, p99.9 {} ms</title>"#,
                            r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}" fill-opacity="0.35"/>"#,
                            r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
                            r#"<text x="{:.1}" y="{:.1}">{} / {}</text></g>"#
                        ),
                        model,
                        routing,
                        p50,
                        p99,
                        row.p999_ms.map_or("-".to_string(), |v| v.to_string()),
                        lat_x,
                        y + 4.0,
                        p99 as f64 * scale,
                        ROW - 8.0,
                        fill,
                        lat_x,
                        y + 7.0,
                        p50 as f64 * scale,
                        ROW - 14.0,
                        fill,
                        lat_x + p99 as f64 * scale + 4.0,
                        mid + 4.0,
                        p50,
                        p99
                    );
                }
                _ => {
                    html_line!(
                        s,
                        r##"<text x="{:.1}" y="{:.1}" fill="#999" font-style="italic">no acknowledged send</text>"##,
                        lat_x + 2.0,
                        mid + 4.0
                    );
                }
            }
        }
    }
    let runs: Vec<u64> = {
        let mut v: Vec<u64> = rows.iter().map(|r| r.runs).collect();
        v.sort();
        v.dedup();
        v
    };
    html_line!(
        s,
        r##"<text x="12" y="{:.1}" fill="#444">Runs per combination: {}. Source: summary.csv beside this file. "unknown": no run exercised the invariant, so no verdict.</text>"##,
        bottom + 28.0,
        runs.iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    html!(s, "</svg>\n");
    s.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(model: &str, invariant: &'static str, k: u64, exercised: u64) -> SummaryRow {
        SummaryRow {
            model: model.into(),
            routing: "round-robin".into(),
            invariant: crate::check::Invariant::new(invariant),
            runs: 20,
            runs_violated: k,
            ci95: crate::output::report::wilson(k, 20),
            runs_exercised: exercised,
            requests: 100,
            effects: 50,
            p50_ms: Some(40),
            p99_ms: Some(90),
            p999_ms: Some(95),
        }
    }

    #[test]
    fn the_chart_shows_rates_intervals_and_unknowns() {
        let rows = vec![
            row("a<b", "no-lost-writes", 5, 20),
            row("a<b", "versions-monotonic", 0, 0),
        ];
        let text = String::from_utf8(svg("t & u", &rows)).unwrap();
        assert!(text.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(text.contains("5/20 runs violated (25.0%), 95% CI 11.2% to 46.9%"));
        assert!(text.contains(">unknown<"));
        assert!(text.contains("a&lt;b") && text.contains("t &amp; u"));
        assert!(text.contains("p50 40 ms, p99 90 ms"));
        assert_eq!(svg("t & u", &rows), text.into_bytes(), "deterministic");
    }

    #[test]
    fn nice_axis_maxima() {
        assert_eq!(nice_max(0), 1);
        assert_eq!(nice_max(77), 100);
        assert_eq!(nice_max(120), 200);
        assert_eq!(nice_max(450), 500);
    }
}
