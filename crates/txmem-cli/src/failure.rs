//! How a subcommand fails: bad arguments (reported with the usage line and
//! exit status 2, as clap reports its own) or a failure while running.

/// Why a subcommand stopped.
#[derive(Debug)]
pub enum Failure {
    /// The arguments do not make sense together; the message names the
    /// bad value and what was expected.
    Usage(String),
    /// Something failed while running (a file that cannot be written, an
    /// experiment that cannot run).
    Run(String),
}
