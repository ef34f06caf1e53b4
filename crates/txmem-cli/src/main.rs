//! `txmem`: the command of the txmem toolkit.
//!
//! Subcommands: `sim` (simulator experiments and sweeps). Others are added alongside it.

mod bench;
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
    /// Run benchmark suites (micro, intset, bank) side by side against peers.
    Bench(bench::BenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sim(args) => sim_cli::run(args),
        // Bench chooses its own exit status (check failures, Ctrl-C).
        Command::Bench(args) => return bench::main(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
