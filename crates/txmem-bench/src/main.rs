//! `txmem`: the command of the txmem toolkit.
//!
//! Subcommands: `sim` (simulator experiments and sweeps). Others are added alongside it.

mod plot;
mod sim_cli;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

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
#[derive(Debug, Subcommand)]
enum Command {
    /// Run simulator experiments (caches, coherence, hardware TM) and parameter sweeps.
    Sim(sim_cli::SimArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sim(args) => sim_cli::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
