//! The command line of `txmem bench`. Every value is parsed into its type
//! here, by clap's value parsers, so a bad value is reported before
//! anything runs, naming the value and what was expected.

use std::str::FromStr;
use std::time::Duration;

use clap::Args;
use txmem::ContentionPolicy;

use crate::harness::drive::ThreadList;
use crate::harness::suites::Suite;
use crate::harness::system::System;
use crate::harness::DEFAULT_SEED;
use crate::measure::args::{
    parse_duration, parse_policy, parse_repeats, HookArgs, OutputArgs, OutputFlavor,
};

/// `txmem bench [SUITE] [options]`: run a benchmark suite side by side
/// against peers and print throughput with ratios to txmem.
///
/// With no suite, runs a quick mixed selection (about a minute).
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Suites: quick (default), micro, intset, bank, all. `--list` shows every workload and system.\n\
                  Use a release build for real numbers: cargo run --release -- bench micro\n\
                  libitm rows need gcc with libitm (CC_LIBITM picks the compiler; ITM_DEFAULT_METHOD its method, ml_wt if unset),\n\
                  or TXMEM_LIBITM_HARNESS naming a harness built elsewhere. The tinystm row needs TINYSTM_BANK\n\
                  naming TinySTM's test/bank program."
)]
pub struct BenchArgs {
    /// Suite to run: quick, micro, intset, bank or all.
    #[arg(default_value_t = Suite::Quick, value_parser = Suite::from_str)]
    pub suite: Suite,

    /// List suites, workloads and systems, then exit.
    #[arg(long)]
    pub list: bool,

    /// Thread counts, comma separated (default: 1, 2, 4, ... up to the core count).
    #[arg(long, value_name = "N,N,..", value_parser = ThreadList::from_str)]
    pub threads: Option<ThreadList>,

    /// Timed length of each repeat, e.g. 2s, 500ms, 1.5s (default 1s; quick: 120ms).
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Repeats per row; the table shows their median, min and max.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = parse_repeats)]
    pub repeat: usize,

    /// Untimed warm-up before the repeats of each row (default: duration/5, at most 300ms).
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    pub warmup: Option<Duration>,

    /// Only systems whose name is in this comma-separated list (e.g. txmem,mutex,libitm).
    #[arg(long, value_delimiter = ',', value_name = "NAME,..", value_parser = System::from_str)]
    pub systems: Option<Vec<System>>,

    /// Only workloads whose name contains this text (e.g. `tx=10`, `hash`).
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,

    /// txmem's contention policy: immediate, backoff-exponential (default),
    /// backoff-linear, backoff-random, hourglass, karma, timestamp.
    #[arg(long, value_name = "POLICY", value_parser = parse_policy)]
    pub contention: Option<ContentionPolicy>,

    /// The files to write, and the progress bar.
    #[command(flatten)]
    pub output: OutputArgs<BenchOutput>,

    /// Seed of the workload random generators (each thread derives its own).
    #[arg(long, default_value_t = DEFAULT_SEED, value_name = "N")]
    pub seed: u64,

    #[command(flatten)]
    pub hooks: HookArgs,
}

/// `txmem bench`'s output flags: every file takes a name.
#[derive(Debug, Clone)]
pub struct BenchOutput;

impl OutputFlavor for BenchOutput {
    const JSON_HELP: &'static str =
        "Write results as JSON (the stable contract read by other tools)";
    const PLOT_HELP: &'static str =
        "Write an SVG plot: throughput against threads, one panel per workload";
    const TABLES_HELP: Option<(&'static str, &'static str)> = Some((
        "Write results as CSV (same columns as the JSON results)",
        "Write the results as a Markdown table (a column per thread count), ready to paste into documentation",
    ));
    const PROGRESS_HELP: &'static str = "Never draw progress bars";
}
