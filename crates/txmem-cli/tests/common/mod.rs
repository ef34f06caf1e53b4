//! Helpers the command's end-to-end tests share (`mod common;` in each).

#![allow(dead_code)] // (not every test binary uses every helper)

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The `txmem` binary this package built.
pub fn txmem() -> Command {
    Command::new(env!("CARGO_BIN_EXE_txmem"))
}

/// A path named `name` in a directory private to this test process
/// (`suite` tells the test binaries' directories apart).
pub fn tmp(suite: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("txmem-cli-{suite}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A run's status and both outputs, for failure messages.
pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The JSON document a run wrote to `path`.
pub fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}
