//! What every report's settings object says about the run whatever the
//! command: the checkout it was built from, and the test hooks that ran.

use serde_json::json;

use super::settings::Measurement;

/// Adds `break_check` to a settings object when the test hook broke some
/// systems' checks (a production build has no hook and writes no such key).
/// `txmem db` reports it too.
pub fn note_broken_checks(settings: &mut serde_json::Value, measure: &Measurement) {
    if !measure.break_check.is_empty() {
        settings["break_check"] = json!(measure.break_check);
    }
}

/// The short hash of the checkout's HEAD, where there is one.
pub fn git_commit() -> Option<String> {
    std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}
