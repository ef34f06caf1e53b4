//! The terminal table: one block per workload, rows by threads then system.

use std::fmt::Write as _;

use crate::measure::report::{Report, REFERENCE};
use crate::plot::human;

fn ops(x: Option<f64>) -> String {
    x.map(human).unwrap_or_else(|| "-".into())
}

/// A latency in nanoseconds, short: `850ns`, `3.1µs`, `12ms`.
pub fn latency(ns: u64) -> String {
    let x = ns as f64;
    if x < 1e3 {
        format!("{ns}ns")
    } else if x < 1e6 {
        format!("{:.1}µs", x / 1e3)
    } else if x < 1e9 {
        format!("{:.1}ms", x / 1e6)
    } else {
        format!("{:.2}s", x / 1e9)
    }
}

fn aborts_per_commit(apc: Option<f64>) -> String {
    apc.map(|a| format!("{a:.3}"))
        .unwrap_or_else(|| "n/a".into())
}

/// The table printed after a run.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} — {} — {}",
        report.title,
        report.date,
        report.machine.line()
    );
    if let Some(line) = report.placement_line() {
        let _ = writeln!(out, "{line}");
    }
    let rate = format!("{}/s", report.unit);
    let mut header = vec![
        "workload",
        "system",
        "threads",
        rate.as_str(),
        "min–max",
        "aborts/commit",
        "vs txmem",
    ];
    // Workloads with transaction kinds add latency columns and a line per kind.
    let latencies = report.results.iter().any(|r| r.latency_ns.is_some());
    if latencies {
        header.extend(["p50", "p99"]);
    }
    let columns = header.len();
    // Each line: its cells and the result row it belongs to.
    let mut rows: Vec<(Vec<String>, usize)> = Vec::new();
    for (i, r) in report.results.iter().enumerate() {
        let (throughput, range) = match r.status {
            "ok" => (
                ops(r.ops_per_sec),
                format!("{}–{}", ops(r.ops_per_sec_min), ops(r.ops_per_sec_max)),
            ),
            "failed" => ("FAILED".to_string(), r.error.clone().unwrap_or_default()),
            other => (other.to_string(), String::new()),
        };
        let ratio = match r.ratio_to_txmem {
            Some(_) if r.system == REFERENCE => "1.00".to_string(),
            Some(x) => format!("{x:.2}x"),
            None => "-".into(),
        };
        let mut cells = vec![
            r.workload.clone(),
            r.system.clone(),
            r.threads.to_string(),
            throughput,
            range,
            aborts_per_commit(r.aborts_per_commit),
            ratio,
        ];
        if latencies {
            let l = r.latency_ns.as_ref();
            cells.push(l.map_or_else(|| "-".into(), |l| latency(l.p50)));
            cells.push(l.map_or_else(|| "-".into(), |l| latency(l.p99)));
        }
        rows.push((cells, i));
        for k in &r.kinds {
            let mut cells = vec![
                String::new(),
                format!(
                    "  {} {}",
                    k.kind,
                    k.share
                        .map(|s| format!("{:.1}%", s * 100.0))
                        .unwrap_or_default()
                ),
                String::new(),
                ops(k.commits_per_sec),
                String::new(),
                aborts_per_commit(k.aborts_per_commit),
                String::new(),
            ];
            let l = k.latency_ns.as_ref();
            cells.push(l.map_or_else(|| "-".into(), |l| latency(l.p50)));
            cells.push(l.map_or_else(|| "-".into(), |l| latency(l.p99)));
            rows.push((cells, i));
        }
    }
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for (row, _) in &rows {
        for (i, (w, cell)) in width.iter_mut().zip(row).enumerate() {
            // The error text of a failed row (in the range column) may be
            // long: let it overflow.
            let n = cell.chars().count();
            *w = (*w).max(if i == 4 { n.min(40) } else { n });
        }
    }
    let fmt_row = |cells: &[String]| {
        let mut line = String::new();
        for (i, (c, w)) in cells.iter().zip(&width).enumerate().take(columns) {
            let pad = w.saturating_sub(c.chars().count());
            if i >= 2 && i != 4 {
                line.push_str(&" ".repeat(pad));
                line.push_str(c);
            } else {
                line.push_str(c);
                line.push_str(&" ".repeat(pad));
            }
            line.push_str("  ");
        }
        line.trim_end().to_string()
    };
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let _ = writeln!(out, "{}", fmt_row(&header));
    let mut last = None;
    for (row, i) in &rows {
        let r = &report.results[*i];
        if last.is_some_and(|l: &str| l != r.workload) {
            out.push('\n');
        }
        last = Some(r.workload.as_str());
        let _ = writeln!(out, "{}", fmt_row(row));
    }
    if report.results.is_empty() {
        out.push_str("(no rows ran)\n");
    }
    // One line per (system, reason), not per workload.
    let mut seen: Vec<(&str, &str, usize)> = Vec::new();
    for s in &report.skipped {
        match seen
            .iter_mut()
            .find(|(sys, why, _)| *sys == s.system.name() && *why == s.reason)
        {
            Some(e) => e.2 += 1,
            None => seen.push((s.system.name(), &s.reason, 1)),
        }
    }
    for (system, why, n) in seen {
        let _ = writeln!(
            out,
            "skipped {system} ({n} workload{}): {why}",
            if n == 1 { "" } else { "s" }
        );
    }
    elision_lines(&mut out, report);
    if report.interrupted {
        out.push_str("interrupted: the table holds the rows that finished\n");
    }
    let failed = report
        .results
        .iter()
        .filter(|r| r.status == "failed")
        .count();
    if failed > 0 {
        let _ = writeln!(
            out,
            "{failed} row(s) FAILED their result check (no figure reported)"
        );
    }
    out
}

/// Under the table, for the elided-lock rows: the share of sections that
/// committed in hardware and the hardware aborts per section by cause; or,
/// where RTM is not usable, one line saying the rows ran on their fallbacks.
fn elision_lines(out: &mut String, report: &Report) {
    let rows: Vec<_> = report
        .results
        .iter()
        .filter(|r| r.status == "ok")
        .filter_map(|r| Some((r, r.elision.as_ref()?)))
        .collect();
    if rows.is_empty() {
        return;
    }
    if rows.iter().all(|(_, e)| e.htm == "none") {
        let _ = writeln!(
            out,
            "elided rows: RTM not usable here ({}): every section ran on the fallback lock",
            report.machine.rtm
        );
        return;
    }
    let _ = writeln!(
        out,
        "elided rows: sections committed in hardware; hardware aborts per section by cause"
    );
    let width = rows
        .iter()
        .map(|(r, _)| r.system.len() + r.workload.len())
        .max()
        .unwrap_or(0);
    for (r, e) in rows {
        let per = |n: u64| {
            if e.sections == 0 {
                0.0
            } else {
                n as f64 / e.sections as f64
            }
        };
        let a = &e.aborts;
        let label = format!("{} {}", r.system, r.workload);
        let _ = writeln!(
            out,
            "  {label:<w$}  t={:<2} {:>7}  conflict {:.3}  capacity {:.3}  lock-busy {:.3}  other {:.3}",
            r.threads,
            e.hw_commit_fraction
                .map(|f| format!("{:.2}%", f * 100.0))
                .unwrap_or_else(|| "-".into()),
            per(a.conflict),
            per(a.capacity),
            per(a.lock_busy),
            per(a.explicit + a.debug + a.other),
            w = width + 1,
        );
    }
}
