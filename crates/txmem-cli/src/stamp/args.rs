//! `txmem stamp`'s arguments.

use std::str::FromStr;

use clap::Args;
use txmem_stamp::{Input, Variant};

use crate::harness::drive::ThreadList;
use crate::output::OutputFile;

/// Run the STAMP applications on txmem: each variant (sequential, typed,
/// word-based) to completion, its result verified, with times, speedups
/// over the sequential run, aborts and items per transaction.
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Applications: bayes, genome, intruder, kmeans, labyrinth, ssca2, vacation-low, vacation-high, yada,\n\
                  or all.\n\
                  Use a release build: cargo run --release -- stamp all --input paper"
)]
pub struct StampArgs {
    /// Applications to run (comma separated), or `all`.
    #[arg(value_name = "APP,..", value_delimiter = ',', default_value = "all")]
    pub apps: Vec<String>,

    /// Variants, comma separated: seq, typed, words, typed-plus (default:
    /// every variant the application has).
    #[arg(long, value_name = "V,..", value_delimiter = ',', value_parser = Variant::from_str)]
    pub variant: Vec<Variant>,

    /// Thread counts of the transactional variants, comma separated (`seq`
    /// always runs on one).
    #[arg(long, value_name = "N,N,..", default_value = "1,2", value_parser = ThreadList::from_str)]
    pub threads: ThreadList,

    /// Input size: `dev` (small, seconds in all) or `paper` (the STO
    /// thesis' Table 7.1 arguments).
    #[arg(long, value_name = "dev|paper", default_value = "dev", value_parser = Input::from_str)]
    pub input: Input,

    /// Runs per row; the table shows their median time, min and max.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = parse_repeats)]
    pub repeat: usize,

    /// Write the results as JSON.
    #[arg(long, value_name = "FILE", value_parser = OutputFile::from_str)]
    pub json: Option<OutputFile>,

    /// Write an SVG plot: speedup over `seq` against threads, one panel
    /// per application, a line per variant.
    #[arg(long, value_name = "FILE.svg", value_parser = OutputFile::from_str)]
    pub plot: Option<OutputFile>,

    /// Never draw the progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

fn parse_repeats(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(n),
        _ => Err(format!("`{s}` is not a repeat count (1 to 1000)")),
    }
}
