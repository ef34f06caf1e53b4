//! Command-line arguments of `txmem bench` and their parsers.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

/// `txmem bench [SUITE] [options]`: run a benchmark suite side by side
/// against peers and print throughput with ratios to txmem.
///
/// With no suite, runs a quick mixed selection (about a minute).
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Suites: quick (default), micro, intset, bank, all. `--list` shows every workload and system.\n\
                  Use a release build for real numbers: cargo run --release -- bench micro\n\
                  libitm rows need gcc with libitm (CC_LIBITM picks the compiler; ITM_DEFAULT_METHOD is passed on)."
)]
pub struct BenchArgs {
    /// Suite to run: quick, micro, intset, bank or all.
    pub suite: Option<String>,

    /// List suites, workloads and systems, then exit.
    #[arg(long)]
    pub list: bool,

    /// Thread counts, comma separated (default: 1, 2, 4, ... up to the core count).
    #[arg(long, value_name = "N,N,..")]
    pub threads: Option<String>,

    /// Timed length of each repeat, e.g. 2s, 500ms, 1.5s (default 1s; quick: 120ms).
    #[arg(long, value_name = "TIME")]
    pub duration: Option<String>,

    /// Repeats per row; the table shows their median, min and max (default 3).
    #[arg(long, value_name = "N")]
    pub repeat: Option<String>,

    /// Untimed warm-up before the repeats of each row (default: duration/5, at most 300ms).
    #[arg(long, value_name = "TIME")]
    pub warmup: Option<String>,

    /// Only systems whose name is in this comma-separated list (e.g. txmem,mutex,libitm).
    #[arg(long, value_delimiter = ',', value_name = "NAME,..")]
    pub systems: Option<Vec<String>>,

    /// Only workloads whose name contains this text (e.g. `tx=10`, `hash`).
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,

    /// txmem's contention policy: immediate, backoff-exponential (default),
    /// backoff-linear, backoff-random, hourglass, karma, timestamp.
    #[arg(long, value_name = "POLICY")]
    pub contention: Option<String>,

    /// Write results as JSON (the stable contract read by other tools).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write results as CSV (same columns as the JSON results).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,

    /// Write an SVG plot: throughput against threads, one panel per workload.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// Write the results as a Markdown table (a column per thread count),
    /// ready to paste into documentation.
    #[arg(long, value_name = "FILE.md")]
    pub markdown: Option<PathBuf>,

    /// Seed of the workload random generators (each thread derives its own).
    #[arg(long, default_value_t = 0x7478_6d65_6d, value_name = "N")]
    pub seed: u64,

    /// Never draw progress bars.
    #[arg(long)]
    pub no_progress: bool,
}

// Values are parsed by `bench::run`, not by clap's value parsers: clap
// prints the usage line only for structural errors, and the issue wants it
// for every bad argument (main.rs, shared with `txmem sim`, uses `parse()`).

/// A non-empty list of positive thread counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadList(pub Vec<usize>);

/// Parses `1,2,4`: positive counts, no duplicates, at most 1024.
pub fn parse_threads(s: &str) -> Result<ThreadList, String> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let n: usize = part
            .parse()
            .map_err(|_| format!("`{part}` is not a thread count (expected e.g. 1,2,4)"))?;
        if n == 0 || n > 1024 {
            return Err(format!("thread count {n} out of range 1..=1024"));
        }
        if out.contains(&n) {
            return Err(format!("thread count {n} given twice"));
        }
        out.push(n);
    }
    Ok(ThreadList(out))
}

/// Parses `2s`, `500ms`, `1.5s`, `100us`, `1m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (expected e.g. 2s, 500ms)"))?;
    let secs = match unit.trim() {
        "s" | "sec" | "" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "m" | "min" => value * 60.0,
        other => {
            return Err(format!(
                "unknown time unit `{other}` in `{s}` (use s, ms, us, m)"
            ))
        }
    };
    if !secs.is_finite() || secs <= 0.0 || secs > 24.0 * 3600.0 {
        return Err(format!(
            "duration `{s}` out of range (above 0, at most a day)"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

pub fn parse_repeat(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(n),
        _ => Err(format!("`{s}` is not a repeat count in 1..=1000")),
    }
}

/// Formats a duration the way [`parse_duration`] reads it.
pub fn fmt_duration(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms >= 1000.0 && (ms / 1000.0).fract() == 0.0 {
        format!("{}s", ms / 1000.0)
    } else {
        format!("{}ms", (ms * 1000.0).round() / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("50ms").unwrap(), Duration::from_millis(50));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("3 weeks").is_err());
        assert_eq!(fmt_duration(Duration::from_millis(50)), "50ms");
        assert_eq!(fmt_duration(Duration::from_secs(2)), "2s");
    }

    #[test]
    fn thread_lists() {
        assert_eq!(parse_threads("1,2,4").unwrap(), ThreadList(vec![1, 2, 4]));
        assert!(parse_threads("0").is_err());
        assert!(parse_threads("1,,2").is_err());
        assert!(parse_threads("2,2").is_err());
        assert!(parse_threads("x").is_err());
    }
}
