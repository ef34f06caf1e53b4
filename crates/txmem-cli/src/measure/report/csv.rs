//! CSV output: one line per result, the JSON result fields as columns
//! (`samples` joined with `;`), RFC 4180 quoting.

use std::fmt::Write as _;
use std::path::Path;

use crate::measure::report::{Report, ResultRow};

/// The header: the JSON result fields, in order.
pub const COLUMNS: [&str; 16] = [
    "workload",
    "system",
    "threads",
    "ops_per_sec",
    "ops_per_sec_min",
    "ops_per_sec_max",
    "repeats",
    "aborts_per_commit",
    "ratio_to_txmem",
    "status",
    "error",
    "suite",
    "samples",
    "commits",
    "aborts",
    "note",
];

fn num(x: Option<f64>) -> String {
    x.map(|v| format!("{v}")).unwrap_or_default()
}

fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn line(r: &ResultRow) -> String {
    let samples: Vec<String> = r.samples.iter().map(|s| format!("{s}")).collect();
    let fields = [
        r.workload.clone(),
        r.system.clone(),
        r.threads.to_string(),
        num(r.ops_per_sec),
        num(r.ops_per_sec_min),
        num(r.ops_per_sec_max),
        r.repeats.to_string(),
        num(r.aborts_per_commit),
        num(r.ratio_to_txmem),
        r.status.to_string(),
        r.error.clone().unwrap_or_default(),
        r.suite.clone(),
        samples.join(";"),
        r.commits.to_string(),
        r.aborts.map(|a| a.to_string()).unwrap_or_default(),
        r.note.clone(),
    ];
    fields
        .iter()
        .map(|f| quote(f))
        .collect::<Vec<_>>()
        .join(",")
}

/// The CSV text of the report.
pub fn render(report: &Report) -> String {
    let mut out = COLUMNS.join(",");
    out.push('\n');
    for r in &report.results {
        let _ = writeln!(out, "{}", line(r));
    }
    out
}

/// Writes the CSV to `path`.
pub fn write(path: &Path, report: &Report) -> Result<(), String> {
    std::fs::write(path, render(report))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn quoting() {
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(quote("plain"), "plain");
    }
}
