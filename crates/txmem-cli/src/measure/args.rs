//! Parsers of the measuring options every command shares (`--duration`,
//! `--warmup`, `--repeat`, `--contention`).

use std::time::Duration;

use clap::Args;
use txmem::ContentionPolicy;

#[cfg(feature = "test-hooks")]
use std::str::FromStr;

#[cfg(feature = "test-hooks")]
use crate::harness::system::System;

/// The test hooks' hidden options, flattened into the measuring commands'
/// arguments: the only place the `test-hooks` feature reaches. A build
/// without it has none, and every hook is off.
#[derive(Args, Debug, Clone, Default)]
pub struct HookArgs {
    /// Test hook: corrupt these systems' state after the first timed
    /// repeat, before its check, so that tests can prove a wrong result is
    /// reported as a failure and never as a figure.
    #[cfg(feature = "test-hooks")]
    #[arg(long, hide = true, value_delimiter = ',', value_parser = System::from_str)]
    pub break_check: Vec<System>,
}

impl HookArgs {
    /// The systems whose checks to break: none without the feature.
    pub fn break_check(&self) -> Vec<crate::harness::system::System> {
        #[cfg(feature = "test-hooks")]
        return self.break_check.clone();
        #[cfg(not(feature = "test-hooks"))]
        Vec::new()
    }
}

/// Parses `2s`, `500ms`, `1.5s`, `100us`, `1m`: above zero, at most a day.
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

/// Formats a duration the way [`parse_duration`] reads it.
pub fn fmt_duration(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms >= 1000.0 && (ms / 1000.0).fract() == 0.0 {
        format!("{}s", ms / 1000.0)
    } else {
        format!("{}ms", (ms * 1000.0).round() / 1000.0)
    }
}

/// Parses a repeat count in 1..=1000.
pub fn parse_repeats(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(n),
        _ => Err(format!("`{s}` is not a repeat count in 1..=1000")),
    }
}

/// Parses a contention policy by its name in txmem.
pub fn parse_policy(name: &str) -> Result<ContentionPolicy, String> {
    let all = ContentionPolicy::all();
    all.iter()
        .find(|p| p.name() == name)
        .cloned()
        .ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|p| p.name()).collect();
            format!(
                "unknown contention policy `{name}` (expected one of: {})",
                names.join(", ")
            )
        })
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
    fn repeats() {
        assert_eq!(parse_repeats("3"), Ok(3));
        assert!(parse_repeats("0").unwrap_err().contains("repeat count"));
    }

    #[test]
    fn policies_by_name() {
        assert!(parse_policy("karma").is_ok());
        assert!(parse_policy("nope").unwrap_err().contains("karma"));
    }
}
