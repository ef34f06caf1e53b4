//! JSON output: `{"suite", "version", "machine", "settings", "results", ...}`.

use std::path::Path;

use crate::measure::report::Report;

/// Writes the JSON report to `path`.
pub fn write(path: &Path, report: &Report) -> Result<(), String> {
    let text =
        serde_json::to_string_pretty(report).map_err(|e| format!("cannot encode JSON: {e}"))?;
    std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
}
