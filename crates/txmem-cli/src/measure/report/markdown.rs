//! Markdown output: the results table as the pages under `docs/results/` show it,
//! one line per (workload, system) with a column per thread count, so that
//! documented figures are pasted from a run instead of transcribed by hand.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use crate::measure::report::{Report, ResultRow, REFERENCE};
use crate::plot::human;

/// `median (min–max)`, `FAILED`, or `-` when the row did not run.
fn throughput(r: Option<&ResultRow>) -> String {
    match r {
        None => "-".into(),
        Some(r) if r.status == "failed" => "FAILED".into(),
        Some(r) => match (r.ops_per_sec, r.ops_per_sec_min, r.ops_per_sec_max) {
            (Some(m), Some(lo), Some(hi)) => {
                format!("{} ({}–{})", human(m), human(lo), human(hi))
            }
            _ => r.status.to_string(),
        },
    }
}

fn ratio(r: Option<&ResultRow>) -> String {
    match r.and_then(|r| r.ratio_to_txmem) {
        Some(x) => format!("{x:.2}"),
        None => "-".into(),
    }
}

/// Renders the report: a line on where and how it was measured, then the
/// table. Workloads keep the order in which they ran; within one, systems too.
pub fn render(report: &Report) -> String {
    let threads: Vec<usize> = report
        .results
        .iter()
        .map(|r| r.threads)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "`{}`, {} — {}. {}/s median (min–max) over {} repeats; \
         ratios to the `{REFERENCE}` row at the same thread count are medians of the \
         per-round ratios of the repeats.\n",
        report.title,
        report.date,
        report.machine.line(),
        capitalized(report.unit),
        report.settings["repeats"],
    );
    if let Some(line) = report.placement_line() {
        let _ = writeln!(out, "{}.\n", capitalized(&line));
    }
    let per_thread = |suffix: &str| {
        threads
            .iter()
            .map(|t| format!("{t} thread{}{suffix}", if *t == 1 { "" } else { "s" }))
            .collect::<Vec<_>>()
    };
    let list = threads
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(" / ");
    let last = threads.last().copied().unwrap_or(1);
    let mut header = vec!["workload".to_string(), "system".to_string()];
    header.extend(per_thread(""));
    header.push(format!("vs txmem ({list} threads)"));
    header.push(format!("aborts/commit ({last} threads)"));
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let mut align = vec!["---", "---"];
    align.extend(std::iter::repeat_n("---:", header.len() - 2));
    let _ = writeln!(out, "|{}|", align.join("|"));

    let mut seen: Vec<(&str, &str)> = Vec::new();
    for r in &report.results {
        let key = (r.workload.as_str(), r.system.as_str());
        if !seen.contains(&key) {
            seen.push(key);
        }
    }
    let mut previous_workload = "";
    for (workload, system) in seen {
        let row_at = |t: usize| {
            report
                .results
                .iter()
                .find(|r| r.workload == workload && r.system == system && r.threads == t)
        };
        let name = if workload == previous_workload {
            String::new()
        } else {
            format!("`{workload}`")
        };
        previous_workload = workload;
        let mut cells = vec![name, system.to_string()];
        cells.extend(threads.iter().map(|&t| throughput(row_at(t))));
        cells.push(
            threads
                .iter()
                .map(|&t| ratio(row_at(t)))
                .collect::<Vec<_>>()
                .join(" / "),
        );
        cells.push(
            row_at(last)
                .and_then(|r| r.aborts_per_commit)
                .map_or_else(|| "n/a".into(), |a| format!("{a:.3}")),
        );
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

/// Writes the Markdown table to `path`.
pub fn write(path: &Path, report: &Report) -> Result<(), String> {
    std::fs::write(path, render(report))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
