//! The `txmem` command line: its subcommands, how it is parsed, and how a
//! subcommand's result becomes the exit status.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::builder::StyledStr;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::bench::args::BenchArgs;
use crate::db::args::DbArgs;
use crate::failure::Failure;
use crate::serve::ServeArgs;
use crate::sim::args::SimArgs;
use crate::stamp::args::StampArgs;

/// The txmem command.
#[derive(Debug, Parser)]
#[command(
    name = "txmem",
    version,
    about = "Transactional-memory toolkit: benchmarks, database workloads, STAMP and simulator experiments"
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
    /// Run database workloads (YCSB, TPC-C) on txmem's transactional maps.
    Db(DbArgs),
    /// Run the STAMP applications (sequential, typed and word-based variants), each verified.
    Stamp(StampArgs),
    /// Serve memcached's protocols from a cache synchronized by txmem transactions.
    Serve(ServeArgs),
}

impl Command {
    /// The subcommand's path on the command line (`["db", "ycsb"]`).
    fn path(&self) -> Vec<&'static str> {
        match self {
            Command::Sim(_) => vec!["sim"],
            Command::Bench(_) => vec!["bench"],
            Command::Db(args) => vec!["db", args.benchmark.name()],
            Command::Stamp(_) => vec!["stamp"],
            Command::Serve(_) => vec!["serve"],
        }
    }
}

/// Runs the command with the process's arguments and returns its exit
/// status: 0 on success, 2 for bad arguments (with the usage line), 1 for
/// a failure while running; `txmem bench` and `txmem db` add 1 for a row
/// that failed its check and 130 after Ctrl-C.
pub fn run() -> ExitCode {
    let cli = parse(std::env::args_os()).unwrap_or_else(|e| e.exit());
    let path = cli.command.path();
    let result = match cli.command {
        Command::Sim(args) => crate::sim::run(args).map(|()| 0),
        Command::Bench(args) => crate::bench::run(args),
        Command::Db(args) => crate::db::run(args),
        Command::Stamp(args) => crate::stamp::run(args),
        Command::Serve(args) => crate::serve::run(args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(Failure::Usage(msg)) => usage_error(&path, &msg).exit(),
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
                if let Some(usage) = usage_of(&subcommands_named(&args)) {
                    e.insert(ContextKind::Usage, ContextValue::StyledStr(usage));
                }
            }
            e
        })?;
    Cli::from_arg_matches(&matches)
}

/// The subcommands the arguments name, outermost first (`["db", "ycsb"]`):
/// the first argument that is a subcommand, then the first after it that
/// is one of its subcommands, and so on.
fn subcommands_named(args: &[OsString]) -> Vec<String> {
    let mut cmd = Cli::command();
    let mut path = Vec::new();
    for a in args.iter().skip(1).filter_map(|a| a.to_str()) {
        if let Some(sub) = cmd.find_subcommand(a) {
            path.push(a.to_string());
            cmd = sub.clone();
        }
    }
    path
}

/// The whole command, built (usage lines render from a built command).
fn built_command() -> clap::Command {
    let mut cmd = Cli::command();
    cmd.build();
    cmd
}

/// The usage line of the subcommand at `path`, e.g. `Usage: txmem db ycsb [OPTIONS]`.
fn usage_of<S: AsRef<str>>(path: &[S]) -> Option<StyledStr> {
    if path.is_empty() {
        return None;
    }
    let mut cmd = built_command();
    let mut sub = &mut cmd;
    for name in path {
        sub = sub.find_subcommand_mut(name.as_ref())?;
    }
    Some(sub.render_usage())
}

/// A usage error of the subcommand at `path` (as far as it exists),
/// formatted as clap formats its own.
fn usage_error<S: AsRef<str>>(path: &[S], msg: &str) -> clap::Error {
    let mut cmd = built_command();
    let mut sub = &mut cmd;
    for name in path {
        if sub.find_subcommand(name.as_ref()).is_none() {
            break;
        }
        sub = sub.find_subcommand_mut(name.as_ref()).expect("just found");
    }
    sub.error(ErrorKind::ValueValidation, msg)
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
        let err = parse_err(&["db", "ycsb", "--workload", "g"]);
        assert!(
            err.contains("`g`") && err.contains("Usage: txmem db ycsb"),
            "{err}"
        );
    }

    #[test]
    fn a_usage_error_names_the_nested_subcommand() {
        let err = usage_error(&["db", "tpcc"], "bad").render().to_string();
        assert!(err.contains("Usage: txmem db tpcc"), "{err}");
        let err = usage_error(&["bench"], "bad").render().to_string();
        assert!(err.contains("Usage: txmem bench"), "{err}");
    }

    #[test]
    fn the_command_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
