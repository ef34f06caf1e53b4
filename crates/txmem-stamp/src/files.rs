//! Reading and writing the input files of the applications STAMP feeds
//! from files: the errors every parser shares, so that each names the file
//! and line.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// The text of `path`, or an error naming it.
pub(crate) fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// An error at line `line` (1-based) of `path`.
pub(crate) fn at(path: &Path, line: usize, what: impl std::fmt::Display) -> String {
    format!("{}:{line}: {what}", path.display())
}

/// Creates `path` and runs `body` on a buffered writer to it; every
/// error names the file.
pub(crate) fn write(
    path: &Path,
    body: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let mut w = BufWriter::new(File::create(path).map_err(fail)?);
    body(&mut w).map_err(fail)?;
    w.flush().map_err(fail)
}

/// The text's lines (`\n` or `\r\n` ended), numbered from 1.
pub(crate) fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().map(|(i, l)| (i + 1, l))
}

/// Parses `token` as a `T`, or says what it is not.
pub(crate) fn number<T: std::str::FromStr>(token: &str, what: &str) -> Result<T, String> {
    token
        .parse()
        .map_err(|_| format!("`{token}` is not {what}"))
}
