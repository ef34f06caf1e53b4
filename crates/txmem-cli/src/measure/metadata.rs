//! What every report's settings object says about the run whatever the
//! command: the commit it was built from, and the test hooks that ran.

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

/// The short hash of the commit the binary was built from (recorded by
/// the build script), where it was built in a git checkout. Not the
/// checkout the command runs in: a binary kept from an older build names
/// its own commit.
pub fn git_commit() -> Option<String> {
    Some(env!("TXMEM_BUILD_COMMIT"))
        .filter(|c| !c.is_empty())
        .map(str::to_string)
}
