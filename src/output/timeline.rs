//! `timeline-<model>-<routing>-seed<N>.html`: one failing run, drawn as a timeline.
//!
//! For the first failing seed of each (model, routing) combination, the sweep re-runs that
//! seed with the full trace kept (the run is deterministic, so it is the same run; the page
//! says so by comparing trace hashes) and draws it: one lane per host (`client`, `router`,
//! `replica-i`, `store`, `ledger`, `webhook`, `driver`), every trace event placed by
//! simulated time, the router's forwards and the replicas' store and ledger calls as lines
//! between lanes, client operations as bars coloured by outcome, fault periods shaded on the
//! lanes they hit, and each violation marked where its sentence points (the turn it names,
//! the times it cites). Above the picture: each violated invariant, its sentences and the
//! reproduce command. Below: the faults, the fault points that fired (BUGGIFY and kill
//! points, also drawn as diamonds on the driver lane), the client operations and the whole
//! trace as tables.
//!
//! The page is self-contained: inline CSS and SVG, no script, nothing fetched. Hover an
//! event for its text.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::check::{Finding, Violation};
use crate::client::history::{Op, OpKind, Outcome};
use crate::experiment::Experiment;
use crate::faults::PeriodChange;
use crate::host::Host;
use crate::output::html::{html, html_line, Html};
use crate::sim::{Checked, RunSummary, Sim};
use crate::trace::Tone;
use crate::world::{self, RunRecord};

/// Height of one lane, px.
const LANE: f64 = 30.0;
/// Width of the lane labels, px.
const LABEL: f64 = 92.0;
/// Height of one client-operation row, px.
const OP_ROW: f64 = 7.0;
/// Space above the first lane (time axis and violation markers), px.
const HEAD: f64 = 44.0;

/// Everything one timeline page shows.
pub struct Page<'a> {
    /// The experiment's name.
    pub experiment: &'a str,
    /// The command that replays the run.
    pub reproduce: String,
    /// The re-run, with its trace kept.
    pub record: &'a RunRecord,
    /// What the checkers found in it.
    pub findings: &'a [Finding],
    /// The trace hash the sweep saw for this seed, to show the re-run is the same run.
    pub sweep_hash: Option<&'a str>,
}

/// The file name of a run's timeline: `timeline-<model>-<routing>-seed<N>.html`, with any
/// character outside `[A-Za-z0-9._-]` replaced by `_`.
pub fn file_name(model: &str, routing: &str, seed: u64) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!(
        "timeline-{}-{}-seed{seed}.html",
        clean(model),
        clean(routing)
    )
}

/// For each (model, routing) combination of `runs`, the first run (lowest seed) with a
/// violation. `runs` must be sorted as a sweep returns them.
pub fn first_failures(runs: &[RunSummary]) -> Vec<&RunSummary> {
    crate::output::report::groups(runs)
        .into_iter()
        .filter_map(|g| g.runs.into_iter().find(|r| !r.violated().is_empty()))
        .collect()
}

/// Re-runs the first failing seed of each combination with its trace kept and writes its
/// timeline into `dir` atomically. Timelines of earlier sweeps that are not among them are
/// removed, so the directory shows this sweep only. Returns the files written.
pub fn write_first_failures(
    exp: &Experiment,
    runs: &[RunSummary],
    dir: &Path,
) -> std::io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for summary in first_failures(runs) {
        let Some(profile) = exp.profiles.iter().find(|p| p.name == summary.model) else {
            continue;
        };
        let rerun = Sim::experiment_builder(exp, profile, &summary.routing, summary.seed)
            .keep_trace(true)
            .build()
            .map(|sim| sim.check());
        let Ok(Checked {
            record: Some(record),
            findings,
            ..
        }) = rerun
        else {
            eprintln!(
                "timeline of {} / {} seed {} skipped: the re-run panicked",
                summary.model, summary.routing, summary.seed
            );
            continue;
        };
        let page = Page {
            experiment: &exp.file.name,
            reproduce: exp.reproduce(summary.seed, &summary.model, &summary.routing),
            record: &record,
            findings: &findings,
            sweep_hash: Some(&summary.trace_hash),
        };
        let path = dir.join(file_name(&summary.model, &summary.routing, summary.seed));
        crate::output::report::write_atomic(&path, &html(&page))?;
        written.push(path);
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with("timeline-")
                && name.ends_with(".html")
                && !written
                    .iter()
                    .any(|p| p.file_name() == Some(entry.file_name().as_os_str()))
            {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    Ok(written)
}

/// Lane order: client, router, replicas, store, ledger, webhook, driver, then any other host.
fn lanes(record: &RunRecord) -> Vec<Host> {
    let mut out = Host::all(record.replicas);
    out.push(Host::Driver);
    for e in &record.trace {
        if !out.contains(&e.host) {
            out.push(e.host.clone());
        }
    }
    out
}

/// A fault period on a lane: `[from, to)` simulated ms and what it is.
struct Period {
    lane: Host,
    from: u64,
    to: u64,
    kind: &'static str,
    what: String,
}

/// Turns the applied fault actions into periods per lane.
fn periods(record: &RunRecord) -> Vec<Period> {
    let mut open: BTreeMap<(Host, &'static str, String), (u64, String)> = BTreeMap::new();
    let mut out = Vec::new();
    let close = |open: &mut BTreeMap<(Host, &'static str, String), (u64, String)>,
                 out: &mut Vec<Period>,
                 key: &(Host, &'static str, String),
                 at: u64| {
        if let Some((from, what)) = open.remove(key) {
            out.push(Period {
                lane: key.0.clone(),
                from,
                to: at,
                kind: key.1,
                what,
            });
        }
    };
    for (at, action) in &record.faults {
        for change in action.periods() {
            match change {
                PeriodChange::Open { lane, kind, link } => {
                    open.entry((lane, kind, link))
                        .or_insert((*at, action.to_string()));
                }
                PeriodChange::Close { lane, kind, link } => {
                    close(&mut open, &mut out, &(lane, kind, link), *at)
                }
                PeriodChange::CloseAll => {
                    let keys: Vec<_> = open.keys().cloned().collect();
                    for key in keys {
                        close(&mut open, &mut out, &key, *at);
                    }
                }
            }
        }
    }
    let end = record.sim_ms;
    for (key, (from, what)) in open {
        out.push(Period {
            lane: key.0,
            from,
            to: end,
            kind: key.1,
            what,
        });
    }
    out.sort_by(|a, b| (a.from, &a.lane, a.kind).cmp(&(b.from, &b.lane, b.kind)));
    out
}

/// Where a violation points: the send operations of the turn it is about and the times it
/// cites.
fn anchors(v: &Violation, history: &[Op]) -> (Vec<u64>, Vec<u64>) {
    let mut ops = Vec::new();
    if let Some((conv, turn)) = &v.anchors.turn {
        for op in history {
            if let OpKind::Send {
                conversation,
                turn: t,
                ..
            } = &op.kind
            {
                if conversation == conv && t == turn {
                    ops.push(op.id);
                }
            }
        }
    }
    (ops, v.anchors.times_ms.clone())
}

fn outcome_class(o: &Outcome) -> &'static str {
    match o {
        Outcome::Ok => "ok",
        Outcome::Fail { .. } => "fail",
        Outcome::Info { .. } => "info",
    }
}

fn outcome_text(o: &Outcome) -> String {
    match o {
        Outcome::Ok => "ok".into(),
        Outcome::Fail { code, message } => format!("fail {code} {message}"),
        Outcome::Info { why } => format!("info ({why})"),
    }
}

/// An event's colour: by its tone, then by the host that recorded it.
fn event_colour(host: &Host, tone: Tone) -> &'static str {
    match tone {
        Tone::Bad => "#d62728",
        Tone::Warn => "#ff7f0e",
        Tone::Plain => match host {
            Host::Driver => "#7b3294",
            Host::Ledger => "#2ca02c",
            Host::Store => "#1f77b4",
            _ => "#555555",
        },
    }
}

/// The page, as bytes.
pub fn html(page: &Page<'_>) -> Vec<u8> {
    let r = page.record;
    let lanes = lanes(r);
    let lane_of = |host: &Host| lanes.iter().position(|l| l == host);
    let end_ms = r
        .sim_ms
        .max(r.trace.iter().map(|e| e.at_ms).max().unwrap_or(0))
        .max(1);
    let scale = (4000.0 / end_ms as f64).clamp(0.2, 2.0);
    let x_of = |ms: u64| LABEL + 8.0 + ms as f64 * scale;
    let plot_w = x_of(end_ms) + 40.0;

    // Client operations in rows, each in the first row free at its start.
    let mut row_ends: Vec<u64> = Vec::new();
    let mut op_rows: BTreeMap<u64, usize> = BTreeMap::new();
    let mut ops: Vec<&Op> = r.history.iter().collect();
    ops.sort_by_key(|o| (o.invoke_ms, o.id));
    for op in &ops {
        let row = match row_ends.iter().position(|end| *end < op.invoke_ms) {
            Some(i) => i,
            None => {
                row_ends.push(0);
                row_ends.len() - 1
            }
        };
        row_ends[row] = op.complete_ms.max(op.invoke_ms + 1);
        op_rows.insert(op.id, row);
    }
    let client_h = (row_ends.len() as f64 * OP_ROW + 14.0).max(LANE);
    let lane_top = |i: usize| {
        if i == 0 {
            HEAD
        } else {
            HEAD + client_h + (i - 1) as f64 * LANE
        }
    };
    let lane_h = |i: usize| if i == 0 { client_h } else { LANE };
    let lane_mid = |i: usize| lane_top(i) + lane_h(i) / 2.0;
    let plot_h = lane_top(lanes.len() - 1) + LANE + 10.0;

    // Violations, numbered, with what they point at.
    struct Mark {
        label: String,
        invariant: crate::check::Invariant,
        detail: String,
        ops: Vec<u64>,
        times: Vec<u64>,
    }
    let mut marks = Vec::new();
    for f in page.findings {
        for v in &f.violations {
            let (ops, times) = anchors(v, &r.history);
            marks.push(Mark {
                label: format!("V{}", marks.len() + 1),
                invariant: f.invariant,
                detail: v.detail.clone(),
                ops,
                times,
            });
        }
    }
    let marked_ops: BTreeMap<u64, Vec<String>> = {
        let mut m: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        for mark in &marks {
            for id in &mark.ops {
                m.entry(*id).or_default().push(mark.label.clone());
            }
        }
        m
    };

    let mut svg = Html::new();
    html_line!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{plot_w:.0}" height="{plot_h:.0}" font-family="Helvetica, Arial, sans-serif" font-size="10">"#; plot_w = plot_w, plot_h = plot_h
    );
    // Lanes.
    for (i, lane) in lanes.iter().enumerate() {
        let top = lane_top(i);
        html_line!(
            svg,
            r##"<rect x="0" y="{top:.1}" width="{plot_w:.0}" height="{:.1}" fill="{}"/><text x="6" y="{:.1}" font-weight="bold">{}</text>"##,
            lane_h(i),
            if i % 2 == 0 { "#fafafa" } else { "#f0f0f0" },
            lane_mid(i) + 3.0,
            &lane.to_string(); top = top, plot_w = plot_w
        );
    }
    // Time axis.
    let step = [
        10u64, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 60_000,
    ]
    .into_iter()
    .find(|s| *s as f64 * scale >= 70.0)
    .unwrap_or(60_000);
    let mut t = 0;
    while t <= end_ms {
        let x = x_of(t);
        html_line!(
            svg,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{plot_h:.1}" stroke="#e0e0e0"/><text x="{x:.1}" y="12" text-anchor="middle" fill="#666">{t} ms</text>"##,
            HEAD - 4.0; x = x, plot_h = plot_h, t = t
        );
        t += step;
    }
    if r.healed_at_ms > 0 && r.healed_at_ms <= end_ms {
        let x = x_of(r.healed_at_ms);
        html_line!(
            svg,
            r##"<g><title>everything healed at {} ms; the liveness phase begins</title><line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{plot_h:.1}" stroke="#2ca02c" stroke-dasharray="6 3"/><text x="{:.1}" y="24" fill="#2ca02c">healed</text></g>"##,
            r.healed_at_ms,
            HEAD - 4.0,
            x + 3.0; x = x, plot_h = plot_h
        );
    }
    // Fault periods.
    for p in periods(r) {
        let Some(i) = lane_of(&p.lane) else { continue };
        let (fill, inset) = match p.kind {
            "down" => ("#d62728", 2.0),
            "partition" => ("#9467bd", 8.0),
            "latency" => ("#ff7f0e", 12.0),
            _ => ("#e377c2", 14.0),
        };
        let x = x_of(p.from);
        let w = ((p.to.max(p.from + 1) - p.from) as f64 * scale).max(2.0);
        html_line!(
            svg,
            r#"<rect x="{x:.1}" y="{:.1}" width="{w:.1}" height="{:.1}" fill="{fill}" fill-opacity="0.22"><title>{}: {} ({} to {} ms)</title></rect>"#,
            lane_top(i) + inset / 2.0,
            lane_h(i) - inset,
            &p.lane.to_string(),
            &p.what,
            p.from,
            p.to; x = x, w = w, fill = fill
        );
    }
    // Fault actions on the driver lane, as ticks across every lane.
    for (at, action) in &r.faults {
        let x = x_of(*at);
        html_line!(
            svg,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{plot_h:.1}" stroke="#7b3294" stroke-opacity="0.35" stroke-dasharray="2 3"><title>{at} ms fault: {}</title></line>"##,
            HEAD,
            &action.to_string(); x = x, plot_h = plot_h, at = at
        );
    }
    // Fault points that fired, as diamonds on the driver lane.
    if let Some(i) = lane_of(&Host::Driver) {
        let y = lane_top(i) + lane_h(i) / 2.0;
        for (at, point) in &r.point_firings {
            let x = x_of(*at);
            html_line!(
                svg,
                r##"<path d="M{x:.1} {:.1}l4 4l-4 4l-4 -4z" fill="#7b3294"><title>{at} ms point fired: {}</title></path>"##,
                y - 4.0,
                point; x = x, at = at
            );
        }
    }
    // Messages: forwards and calls between lanes.
    for e in &r.trace {
        let (Some(from), Some(to)) = (lane_of(&e.host), e.event.peer().and_then(lane_of)) else {
            continue;
        };
        if from == to {
            continue;
        }
        let x = x_of(e.at_ms);
        html_line!(
            svg,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#888" stroke-opacity="0.35"/>"##,
            lane_mid(from),
            lane_mid(to); x = x
        );
    }
    // Client operations.
    for op in &ops {
        let row = op_rows.get(&op.id).copied().unwrap_or(0);
        let x = x_of(op.invoke_ms);
        let w = ((op.complete_ms.saturating_sub(op.invoke_ms)) as f64 * scale).max(2.0);
        let y = HEAD + 7.0 + row as f64 * OP_ROW;
        let fill = match outcome_class(&op.outcome) {
            "ok" => "#2ca02c",
            "fail" => "#d62728",
            _ => "#ff7f0e",
        };
        let marked = marked_ops.get(&op.id);
        html_line!(
            svg,
            r##"<a href="#op-{}"><rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{:.1}" fill="{fill}"{}><title>op {}: {} {} to {} ms: {}{}{}</title></rect></a>"##,
            op.id,
            OP_ROW - 2.0,
            Html::from_static(if marked.is_some() {
                r##" stroke="#000" stroke-width="1.5""##
            } else {
                ""
            }),
            op.id,
            &op.kind.label(),
            op.invoke_ms,
            op.complete_ms,
            &outcome_text(&op.outcome),
            op.replica
                .as_ref()
                .map(|r| format!(" from {r}"))
                .unwrap_or_default(),
            marked
                .map(|m| format!(" [violation {}]", m.join(", ")))
                .unwrap_or_default(); x = x, y = y, w = w, fill = fill
        );
    }
    // Trace events, stacked when they would overlap.
    let mut last: BTreeMap<usize, (f64, usize)> = BTreeMap::new();
    for (n, e) in r.trace.iter().enumerate() {
        let Some(i) = lane_of(&e.host) else { continue };
        if i == 0 {
            continue; // the client lane shows operations as bars
        }
        let x = x_of(e.at_ms);
        let level = match last.get(&i) {
            Some((px, lvl)) if x - px < 3.0 => (lvl + 1) % 5,
            _ => 0,
        };
        last.insert(i, (x, level));
        let y = lane_top(i) + 5.0 + level as f64 * 5.0;
        html_line!(
            svg,
            r##"<a href="#ev-{n}"><circle cx="{x:.1}" cy="{y:.1}" r="2.4" fill="{}"><title>{} ms {}: {}</title></circle></a>"##,
            event_colour(&e.host, e.event.tone()),
            e.at_ms,
            &e.host.to_string(),
            &e.event.to_string(); n = n, x = x, y = y
        );
    }
    // Violation markers.
    for mark in &marks {
        let mut xs: Vec<(f64, String)> = Vec::new();
        for id in &mark.ops {
            if let Some(op) = r.history.iter().find(|o| o.id == *id) {
                xs.push((x_of(op.complete_ms), format!("op {id} completes")));
            }
        }
        for t in &mark.times {
            xs.push((x_of(*t), format!("{t} ms")));
        }
        if xs.is_empty() {
            xs.push((x_of(end_ms), "end of run".into()));
        }
        // One marker per place: a turn completing at a time the sentence also cites.
        xs.sort_by(|a, b| a.0.total_cmp(&b.0));
        xs.dedup_by(|b, a| (a.0 - b.0).abs() < 1.0);
        for (x, why) in xs {
            html_line!(
                svg,
                r##"<a href="#{}"><g><title>{} {}: {} ({why})</title><line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{plot_h:.1}" stroke="#d62728" stroke-width="1.2"/><path d="M{:.1},{:.1} l10,0 l-5,8 z" fill="#d62728"/><text x="{:.1}" y="{:.1}" fill="#d62728" font-weight="bold">{}</text></g></a>"##,
                mark.label,
                mark.label,
                mark.invariant,
                &mark.detail,
                HEAD - 8.0,
                x - 5.0,
                HEAD - 16.0,
                x + 6.0,
                HEAD - 9.0,
                mark.label; why = why, x = x, plot_h = plot_h
            );
        }
    }
    html!(svg, "</svg>\n");

    // The page.
    let mut h = Html::new();
    let title = format!("{} / {} seed {}", r.model, r.routing, r.seed);
    html_line!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{} — {}</title>",
        &title,
        page.experiment
    );
    h.push(&Html::from_static(concat!(
        "<style>\n",
        "body{font:14px/1.45 Helvetica,Arial,sans-serif;margin:20px;color:#222}\n",
        "h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 6px}\n",
        "code{background:#f3f3f3;padding:1px 4px;border-radius:3px}\n",
        ".scroll{overflow-x:auto;border:1px solid #ccc;margin:8px 0}\n",
        ".v{border-left:4px solid #d62728;padding:4px 10px;margin:6px 0;background:#fff5f5}\n",
        ".v:target,tr:target{outline:2px solid #d62728}\n",
        "table{border-collapse:collapse;font-size:12px}td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}\n",
        "td.n{text-align:right;font-variant-numeric:tabular-nums}\n",
        ".ok{color:#2ca02c}.fail{color:#d62728}.info{color:#ff7f0e}.hl{background:#fff0f0}\n",
        ".key span{display:inline-block;margin-right:14px}.sw{display:inline-block;width:12px;height:10px;margin-right:4px;vertical-align:middle}\n",
        "</style>\n</head>\n<body>\n"
    )));
    html_line!(h, "<h1>{}</h1>", &title);
    let (ok, fail, info) = r
        .history
        .iter()
        .fold((0, 0, 0), |(a, b, c), o| match o.outcome {
            Outcome::Ok => (a + 1, b, c),
            Outcome::Fail { .. } => (a, b + 1, c),
            Outcome::Info { .. } => (a, b, c + 1),
        });
    html_line!(
        h,
        "<p>Experiment <b>{}</b>, {} replicas, faults {}. {} simulated ms; {} client operations ({ok} ok, {fail} fail, {info} info); {} effects at the ledger. Trace hash <code>{}</code>{}.</p>",
        page.experiment,
        r.replicas,
        &world::describe_resolved(r),
        r.sim_ms,
        r.history.len(),
        r.effects.iter().filter(|e| e.applied).count(),
        &r.trace_hash,
        match page.sweep_hash {
            Some(s) if s == r.trace_hash => {
                Html::text(" (the same as in the sweep: this is the same run)")
            }
            Some(s) => {
                let mut b = Html::new();
                html!(
                    b,
                    " — <b class=\"fail\">the sweep saw {}: this re-run differs, which is a determinism bug</b>",
                    s
                );
                b
            }
            None => Html::new(),
        }; ok = ok, fail = fail, info = info
    );
    html_line!(h, "<p>Reproduce: <code>{}</code></p>", &page.reproduce);
    if let Some(e) = &r.error {
        html_line!(h, "<p class=\"fail\">Run error: {}</p>", e);
    }
    html!(h, "<h2>Violations</h2>\n");
    if marks.is_empty() {
        html!(h, "<p>None in this re-run.</p>\n");
    }
    for f in page.findings {
        html_line!(
            h,
            "<p><b>{}</b>: <span class=\"{}\">{}</span>, {} violation(s), exercised {} time(s).</p>",
            f.invariant,
            match f.verdict().word() {
                "fail" => "fail",
                "pass" => "ok",
                _ => "info",
            },
            f.verdict().word(),
            f.violations.len(),
            f.exercised
        );
        for mark in marks.iter().filter(|m| m.invariant == f.invariant) {
            html_line!(
                h,
                "<div class=\"v\" id=\"{}\"><b>{}</b> {}: {}</div>",
                mark.label,
                mark.label,
                mark.invariant,
                &mark.detail
            );
        }
    }
    html!(h, "<h2>Timeline</h2>\n<p class=\"key\">");
    for (colour, what) in [
        ("#2ca02c", "client op ok"),
        ("#d62728", "client op fail / error event"),
        ("#ff7f0e", "client op info / duplicate"),
        ("#1f77b4", "store event"),
        ("#2ca02c", "ledger event"),
        ("#555555", "other event"),
    ] {
        html!(
            h,
            "<span><i class=\"sw\" style=\"background:{colour}\"></i>{what}</span>"; colour = colour, what = what
        );
    }
    for (colour, what) in [
        ("#d62728", "pod down"),
        ("#9467bd", "partition"),
        ("#ff7f0e", "latency spike"),
        ("#e377c2", "lost replies"),
    ] {
        html!(
            h,
            "<span><i class=\"sw\" style=\"background:{colour};opacity:.35\"></i>{what}</span>"; colour = colour, what = what
        );
    }
    html!(h, "<span>red V<i>n</i>: a violation; grey lines: messages between hosts; dotted purple: a fault action; purple diamond: a fault point (BUGGIFY or kill point) fired. Hover for details, click to jump to the row.</span></p>\n");
    html_line!(h, "<div class=\"scroll\">\n{svg}</div>"; svg = svg);

    html!(h, "<h2>Faults</h2>\n");
    if r.faults.is_empty() {
        html!(h, "<p>None.</p>\n");
    } else {
        html!(h, "<table><tr><th>ms</th><th>action</th></tr>\n");
        for (at, action) in &r.faults {
            html_line!(
                h,
                "<tr><td class=\"n\">{at}</td><td>{}</td></tr>",
                &action.to_string(); at = at
            );
        }
        html!(h, "</table>\n");
    }

    html!(h, "<h2>Fault points fired</h2>\n");
    if r.points_fired.is_empty() {
        html!(h, "<p>None.</p>\n");
    } else {
        html!(
            h,
            "<table><tr><th>point</th><th>times</th><th>at ms</th></tr>\n"
        );
        for (point, n) in &r.points_fired {
            let at: Vec<String> = r
                .point_firings
                .iter()
                .filter(|(_, p)| p == point)
                .map(|(at, _)| at.to_string())
                .collect();
            html_line!(
                h,
                "<tr><td>{}</td><td class=\"n\">{n}</td><td>{}</td></tr>",
                point,
                at.join(", "); n = n
            );
        }
        html!(h, "</table>\n");
    }

    html!(h, "<h2>Client operations</h2>\n<table><tr><th>op</th><th>operation</th><th>invoke ms</th><th>complete ms</th><th>outcome</th><th>replica</th><th>violations</th></tr>\n");
    for op in &r.history {
        let marked = marked_ops.get(&op.id);
        html_line!(
            h,
            "<tr id=\"op-{}\"{}><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td></tr>",
            op.id,
            Html::from_static(if marked.is_some() { " class=\"hl\"" } else { "" }),
            op.id,
            &op.kind.label(),
            op.invoke_ms,
            op.complete_ms,
            outcome_class(&op.outcome),
            &outcome_text(&op.outcome),
            op.replica_or(""),
            marked
                .map(|m| {
                    let links: Vec<Html> = m
                        .iter()
                        .map(|l| {
                            let mut a = Html::new();
                            html!(a, "<a href=\"#{}\">{}</a>", l, l);
                            a
                        })
                        .collect();
                    Html::join(&links, &Html::from_static(" "))
                })
                .unwrap_or_default()
        );
    }
    html!(h, "</table>\n");

    html_line!(
        h,
        "<h2>Trace</h2>\n<details><summary>All {} events</summary>\n<table><tr><th>ms</th><th>host</th><th>event</th></tr>",
        r.trace.len()
    );
    for (n, e) in r.trace.iter().enumerate() {
        html_line!(
            h,
            "<tr id=\"ev-{n}\"><td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>",
            e.at_ms,
            &e.host.to_string(),
            &e.event.to_string(); n = n
        );
    }
    html!(h, "</table>\n</details>\n</body>\n</html>\n");
    h.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_safe() {
        assert_eq!(
            file_name("a2a-python-1.3-memory", "round-robin", 7),
            "timeline-a2a-python-1.3-memory-round-robin-seed7.html"
        );
        assert_eq!(file_name("x/y z", "r", 0), "timeline-x_y_z-r-seed0.html");
    }

    #[test]
    fn a_violation_points_at_its_turn_and_times() {
        let op = Op {
            id: 3,
            kind: OpKind::Send {
                conversation: "c1".into(),
                turn: 2,
                message_id: "m".into(),
                blocking: true,
                foreign_context: false,
                omitted_context: false,
                named_task: false,
                needs_auth: false,
                reply: None,
                parts: crate::client::Parts::Data,
                shape: crate::replica::AgentShape::default(),
            },
            invoke_ms: 100,
            complete_ms: 145,
            outcome: Outcome::Ok,
            replica: Some(crate::host::Host::Replica(1)),
            task: None,
            stream_states: Vec::new(),
            streamed: None,
            stream_snapshot_first: false,
            stream_redelivered: None,
            principal: "alice".into(),
        };
        let v = Violation::new(
            crate::check::ViolationKind::MISSING_FROM_A_READ,
            "turn 2 of c1, acknowledged by replica-1 at 145 ms, is missing from a later answer (get c1 at 300 ms from replica-0)",
        )
        .about("c1", 2)
        .at(145)
        .at(300);
        let (ops, times) = anchors(&v, &[op]);
        assert_eq!(ops, vec![3]);
        assert_eq!(times, vec![145, 300]);
    }
}
