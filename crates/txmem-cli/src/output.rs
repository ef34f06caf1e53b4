//! What the command writes: files, checked when the arguments are read so
//! that a long run never ends in an unwritable path, and progress bars.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A path the command may write: its directory exists and it is not itself
/// a directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputFile(PathBuf);

impl OutputFile {
    /// The path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `text` to the file.
    pub fn write(&self, text: &str) -> Result<(), String> {
        std::fs::write(&self.0, text).map_err(|e| format!("cannot write {}: {e}", self.0.display()))
    }
}

impl FromStr for OutputFile {
    type Err = String;

    fn from_str(s: &str) -> Result<OutputFile, String> {
        let p = PathBuf::from(s);
        let dir = p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return Err(format!(
                "directory {} does not exist (expected a file in an existing directory)",
                dir.display()
            ));
        }
        if p.is_dir() {
            return Err(format!("{} is a directory (expected a file)", p.display()));
        }
        Ok(OutputFile(p))
    }
}

impl fmt::Display for OutputFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.display())
    }
}

/// A progress bar on stderr, or a hidden one (`hidden`: the user asked for
/// none, or stderr is not a terminal). Its length starts at zero.
pub fn progress_bar(hidden: bool) -> ProgressBar {
    let pb = ProgressBar::new(0);
    if hidden {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    } else {
        pb.set_draw_target(ProgressDrawTarget::stderr());
    }
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
    {
        pb.set_style(style);
    }
    pb
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_in_an_existing_directory() {
        assert!("report.json".parse::<OutputFile>().is_ok());
        let missing = "/nonexistent-dir/x.json".parse::<OutputFile>().unwrap_err();
        assert!(
            missing.contains("/nonexistent-dir does not exist"),
            "{missing}"
        );
        let dir = std::env::temp_dir();
        let is_dir = dir.to_str().unwrap().parse::<OutputFile>().unwrap_err();
        assert!(is_dir.contains("is a directory"), "{is_dir}");
    }
}
