//! The command line of `txmem db`. Every value is parsed into its type
//! here, by clap's value parsers, so a bad value is reported before
//! anything is loaded, naming the value and what was expected.

use std::str::FromStr;
use std::time::Duration;

use clap::{Args, Subcommand};
use txmem::{ContentionPolicy, Opacity};
use txmem_db::ycsb::{
    Distribution, Index, Mix, DEFAULT_RECORDS, DEFAULT_THETA, DEFAULT_VALUE_SIZE, MAX_OPS_PER_TXN,
    MAX_RECORDS, MAX_VALUE_SIZE,
};

use crate::harness::drive::ThreadList;
use crate::harness::DEFAULT_SEED;
use crate::measure::args::{
    parse_duration, parse_policy, parse_repeats, HookArgs, OutputArgs, OutputFlavor,
};

/// `txmem db <ycsb|tpcc> [options]`: load a database on txmem's
/// transactional maps, run a transaction mix on it from several threads,
/// check it after every run, and report throughput, aborts and latency.
#[derive(Args, Debug)]
#[command(
    subcommand_required = true,
    after_help = "Use a release build for real numbers: cargo run --release -- db ycsb --workload a,c --ops-per-txn 16"
)]
pub struct DbArgs {
    /// The benchmark.
    #[command(subcommand)]
    pub benchmark: Benchmark,
}

/// The database benchmarks.
// One value per process: the size of the larger variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Benchmark {
    /// YCSB: workloads A–F on one table of records (A 50% reads / 50%
    /// updates, B 95/5, C reads only, D reads of the latest records and
    /// inserts, E short scans and inserts, F reads and read-modify-writes).
    Ycsb(YcsbArgs),
    /// TPC-C: the five-transaction mix (NewOrder, Payment, OrderStatus,
    /// Delivery, StockLevel) on warehouses.
    Tpcc(TpccArgs),
}

impl Benchmark {
    /// The benchmark's name on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            Benchmark::Ycsb(_) => "ycsb",
            Benchmark::Tpcc(_) => "tpcc",
        }
    }
}

/// `txmem db ycsb`: the workload flags, then the common ones.
#[derive(Args, Debug)]
#[command(
    after_help = "Each (workload, opacity mode, thread count) loads a fresh table. Transactions of several \
                  operations are counted under their writing operation (update, insert, read-modify-write) if \
                  they have one. STO's YCSB figures use --ops-per-txn 16."
)]
pub struct YcsbArgs {
    /// Workloads to run, comma separated: a, b, c, d, e, f.
    #[arg(long, value_name = "A,..", value_delimiter = ',', default_value = "a", value_parser = Mix::from_str)]
    pub workload: Vec<Mix>,

    /// Records loaded before the run, e.g. 1000000, 100k, 10M.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_RECORDS, value_parser = parse_records)]
    pub records: u64,

    /// Bytes per record (YCSB's default is 10 fields of 10 bytes).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_VALUE_SIZE, value_parser = parse_value_size)]
    pub value_size: usize,

    /// Key distribution: zipfian, uniform or latest (default: latest for
    /// workload d, zipfian for the others).
    #[arg(long, value_name = "NAME", value_parser = Distribution::from_str)]
    pub distribution: Option<Distribution>,

    /// Skew θ of the zipfian and latest distributions, in (0, 1).
    #[arg(long, value_name = "THETA", default_value_t = DEFAULT_THETA, value_parser = parse_theta)]
    pub theta: f64,

    /// Operations per transaction (1: classic YCSB; 16: STO's variant).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_ops_per_txn)]
    pub ops_per_txn: usize,

    /// The index: hash (THashMap) or ordered (TBTreeMap). Default: ordered
    /// for workload e, whose scans need key order; hash for the others.
    #[arg(long, value_name = "KIND", value_parser = Index::from_str)]
    pub index: Option<Index>,

    /// Options every benchmark shares.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `txmem db tpcc`: the workload flags, then the common ones.
#[derive(Args, Debug)]
pub struct TpccArgs {
    /// Warehouses (default: one per thread, so every thread has a home
    /// warehouse of its own).
    #[arg(long, value_name = "N", value_parser = parse_warehouses)]
    pub warehouses: Option<u32>,

    /// Items in the catalogue (TPC-C: 100000), e.g. 100k.
    #[arg(long, value_name = "N", default_value_t = 100_000, value_parser = parse_items)]
    pub items: u32,

    /// Customers per district (TPC-C: 3000); fewer for quick runs.
    #[arg(long, value_name = "N", default_value_t = 3000, value_parser = parse_per_district)]
    pub customers: u32,

    /// Orders per district loaded before the run (TPC-C: 3000).
    #[arg(long, value_name = "N", default_value_t = 3000, value_parser = parse_per_district)]
    pub orders: u32,

    /// Options every benchmark shares.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// The options of every `txmem db` benchmark: threads, timing, txmem's
/// knobs, outputs.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Thread counts, comma separated (default: 1, 2, 4, ... up to the core count).
    #[arg(long, value_name = "N,N,..", value_parser = ThreadList::from_str)]
    pub threads: Option<ThreadList>,

    /// Timed length of each repeat, e.g. 2s, 500ms.
    #[arg(long, value_name = "TIME", default_value = "1s", value_parser = parse_duration)]
    pub duration: Duration,

    /// Repeats per row; the table shows their median, min and max.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = parse_repeats)]
    pub repeat: usize,

    /// Untimed warm-up after loading, before the repeats of each row
    /// (default: duration/5, at most 300ms).
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    pub warmup: Option<Duration>,

    /// txmem's opacity modes, comma separated: tl2 (rows `txmem`),
    /// revalidate (`txmem-revalidate`), none (`txmem-no-opacity`).
    #[arg(long, value_name = "MODE,..", value_delimiter = ',', default_value = "tl2", value_parser = Opacity::from_str)]
    pub opacity: Vec<Opacity>,

    /// STO's read-only items: reads of records the transaction has not
    /// written go to the read log instead of the tracking set (on, the
    /// default; off to compare).
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = parse_switch, action = clap::ArgAction::Set)]
    pub untracked_reads: bool,

    /// Read-my-writes: reads look for the transaction's own writes (on, the
    /// default). Off, a transaction that reads a record it wrote sees the
    /// committed value (STO's knob; both workloads read before they write).
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = parse_switch, action = clap::ArgAction::Set)]
    pub read_my_writes: bool,

    /// The tracking set's hash index: built once a transaction tracks more
    /// than N items (default 10), or `off` (a linear scan at any size).
    #[arg(long, value_name = "N|off", value_parser = parse_cutoff)]
    pub index_cutoff: Option<usize>,

    /// txmem's contention policy: immediate, backoff-exponential (default),
    /// backoff-linear, backoff-random, hourglass, karma, timestamp.
    #[arg(long, value_name = "POLICY", value_parser = parse_policy)]
    pub contention: Option<ContentionPolicy>,

    /// The files to write, and the progress bar.
    #[command(flatten)]
    pub output: OutputArgs<DbOutput>,

    /// Seed of the workload random generators (each thread derives its own).
    #[arg(long, default_value_t = DEFAULT_SEED, value_name = "N")]
    pub seed: u64,

    #[command(flatten)]
    pub hooks: HookArgs,
}

/// `txmem db`'s output flags: a bare `--json` or `--plot` writes
/// `txmem-db.json` or `txmem-db.svg`.
#[derive(Debug, Clone)]
pub struct DbOutput;

impl OutputFlavor for DbOutput {
    const JSON_HELP: &'static str = "Write results as JSON, to FILE or txmem-db.json (the `txmem bench` contract, with per-kind rows and latency percentiles added)";
    const JSON_DEFAULT: Option<&'static str> = Some("txmem-db.json");
    const PLOT_HELP: &'static str = "Write an SVG plot, to FILE or txmem-db.svg: transactions per second against threads, one panel per workload";
    const PLOT_DEFAULT: Option<&'static str> = Some("txmem-db.svg");
    const TABLES_HELP: Option<(&'static str, &'static str)> = Some((
        "Write results as CSV (the main columns of the JSON results)",
        "Write the results as a Markdown table (a column per thread count)",
    ));
    const PROGRESS_HELP: &'static str = "Never draw progress bars";
}

/// Parses a count with an optional `k` (thousand) or `M` (million) suffix.
fn parse_count(s: &str, what: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, scale) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1_000),
        Some((i, 'm' | 'M')) => (&t[..i], 1_000_000),
        _ => (t, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("`{s}` is not {what} (expected e.g. 1000, 100k, 1M)"))
}

/// Parses a record count in `1..=MAX_RECORDS`.
fn parse_records(s: &str) -> Result<u64, String> {
    let n = parse_count(s, "a record count")?;
    if (1..=MAX_RECORDS).contains(&n) {
        Ok(n)
    } else {
        Err(format!("record count {n} out of range 1..={MAX_RECORDS}"))
    }
}

/// Parses a record size in bytes.
fn parse_value_size(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_VALUE_SIZE).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{s}` is not a value size in 1..={MAX_VALUE_SIZE} bytes"
        )),
    }
}

/// Parses a zipfian skew θ in (0, 1).
fn parse_theta(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(t) if t > 0.0 && t < 1.0 => Ok(t),
        _ => Err(format!(
            "`{s}` is not a zipfian θ (expected a number between 0 and 1, e.g. 0.99)"
        )),
    }
}

/// Parses an operation count per transaction.
fn parse_ops_per_txn(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_OPS_PER_TXN).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{s}` is not an operation count in 1..={MAX_OPS_PER_TXN}"
        )),
    }
}

/// Parses a warehouse count in 1..=10000.
fn parse_warehouses(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=10_000).contains(&n) => Ok(n),
        _ => Err(format!("`{s}` is not a warehouse count in 1..=10000")),
    }
}

/// Parses an item count in 1..=10M.
fn parse_items(s: &str) -> Result<u32, String> {
    let n = parse_count(s, "an item count")?;
    if (1..=10_000_000).contains(&n) {
        Ok(n as u32)
    } else {
        Err(format!("item count {n} out of range 1..=10000000"))
    }
}

/// `on` or `off`.
fn parse_switch(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        other => Err(format!("`{other}` is not on or off")),
    }
}

/// An item count, or `off` (never index).
fn parse_cutoff(s: &str) -> Result<usize, String> {
    if s == "off" {
        return Ok(usize::MAX);
    }
    s.parse()
        .map_err(|_| format!("`{s}` is not an item count or off"))
}

/// A per-district count of at least one.
fn parse_per_district(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("`{s}` is not a count per district (at least 1)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_take_suffixes() {
        assert_eq!(parse_records("1M"), Ok(1_000_000));
        assert_eq!(parse_records("250k"), Ok(250_000));
        assert_eq!(parse_records("4096"), Ok(4096));
        assert!(parse_records("0").unwrap_err().contains("out of range"));
        assert!(parse_records("lots").unwrap_err().contains("`lots`"));
        assert_eq!(parse_items("100k"), Ok(100_000));
    }

    #[test]
    fn bad_values_are_named() {
        assert!(parse_theta("1").unwrap_err().contains("`1`"));
        assert_eq!(parse_theta("0.5"), Ok(0.5));
        assert!(parse_ops_per_txn("0").unwrap_err().contains("`0`"));
        assert!(parse_value_size("-3").unwrap_err().contains("`-3`"));
        assert!(parse_warehouses("0").unwrap_err().contains("`0`"));
    }
}
