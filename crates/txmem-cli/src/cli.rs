//! The `txmem` command line: its subcommands, how it is parsed, and how a
//! subcommand's result becomes the exit status.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::builder::StyledStr;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::bench::args::BenchArgs;
use crate::failure::Failure;
use crate::sim::args::SimArgs;

/// The txmem command.
#[derive(Debug, Parser)]
#[command(
    name = "txmem",
    version,
    about = "Transactional-memory toolkit: benchmarks and simulator experiments"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Subcommands.
// One value per process: the size of the larger variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// Run simulator experiments (caches, coherence, hardware TM) and parameter sweeps.
    Sim(SimArgs),
    /// Run benchmark suites (micro, intset, bank) side by side against peers.
    Bench(BenchArgs),
}

impl Command {
    /// The subcommand's name on the command line.
    fn name(&self) -> &'static str {
        match self {
            Command::Sim(_) => "sim",
            Command::Bench(_) => "bench",
        }
    }
}

/// Runs the command with the process's arguments and returns its exit
/// status: 0 on success, 2 for bad arguments (with the usage line), 1 for
/// a failure while running; `txmem bench` adds 1 for a row that failed its
/// check and 130 after Ctrl-C.
pub fn run() -> ExitCode {
    let cli = parse(std::env::args_os()).unwrap_or_else(|e| e.exit());
    let name = cli.command.name();
    let result = match cli.command {
        Command::Sim(args) => crate::sim::run(args).map(|()| 0),
        Command::Bench(args) => crate::bench::run(args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(Failure::Usage(msg)) => usage_error(name, &msg).exit(),
        Err(Failure::Run(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// Parses the arguments. clap prints the usage line with structural errors
/// only (an unknown flag, a missing value); a value its parser refused is
/// as much a usage error, so it gets the subcommand's usage line too.
fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Cli, clap::Error> {
    let args: Vec<OsString> = args.into_iter().collect();
    let matches = Cli::command()
        .try_get_matches_from(&args)
        .map_err(|mut e| {
            let bad_value = matches!(
                e.kind(),
                ErrorKind::ValueValidation | ErrorKind::InvalidValue
            );
            if bad_value && e.get(ContextKind::Usage).is_none() {
                if let Some(usage) = subcommand_named(&args).and_then(|n| usage_of(&n)) {
                    e.insert(ContextKind::Usage, ContextValue::StyledStr(usage));
                }
            }
            e
        })?;
    Cli::from_arg_matches(&matches)
}

/// The subcommand the arguments name (the first argument that is one).
fn subcommand_named(args: &[OsString]) -> Option<String> {
    let cmd = Cli::command();
    args.iter()
        .skip(1)
        .filter_map(|a| a.to_str())
        .find(|a| cmd.find_subcommand(a).is_some())
        .map(str::to_string)
}

/// The usage line of subcommand `name`, e.g. `Usage: txmem bench [OPTIONS] [SUITE]`.
fn usage_of(name: &str) -> Option<StyledStr> {
    let mut cmd = Cli::command();
    cmd.build();
    cmd.find_subcommand_mut(name).map(|s| s.render_usage())
}

/// A usage error of subcommand `name`, formatted as clap formats its own.
fn usage_error(name: &str, msg: &str) -> clap::Error {
    let mut cmd = Cli::command();
    cmd.build();
    match cmd.find_subcommand_mut(name) {
        Some(sub) => sub.error(ErrorKind::ValueValidation, msg),
        None => cmd.error(ErrorKind::ValueValidation, msg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_err(args: &[&str]) -> String {
        let args = std::iter::once("txmem")
            .chain(args.iter().copied())
            .map(OsString::from);
        parse(args).unwrap_err().render().to_string()
    }

    #[test]
    fn a_bad_value_is_reported_with_the_subcommands_usage() {
        let err = parse_err(&["bench", "--threads", "1,x"]);
        assert!(err.contains("`x` is not a thread count"), "{err}");
        assert!(err.contains("Usage: txmem bench"), "{err}");
        let err = parse_err(&["sim", "--set", "cores"]);
        assert!(
            err.contains("PATH=VALUE") && err.contains("Usage: txmem sim"),
            "{err}"
        );
    }

    #[test]
    fn the_command_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
