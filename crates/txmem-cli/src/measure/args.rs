//! The measuring options every command shares: the output flags
//! ([`OutputArgs`]), the test hooks ([`HookArgs`]), and the parsers of
//! `--duration`, `--warmup`, `--repeat` and `--contention`.

use std::marker::PhantomData;
use std::str::FromStr;
use std::time::Duration;

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use txmem::ContentionPolicy;

use crate::output::OutputFile;

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

/// What one command's output flags say beyond the shape they share: their
/// help, the files `--json` and `--plot` write when given without a value,
/// whether the command writes tables (`--csv`, `--markdown`), and whether
/// `-q`/`--quiet` are kept as names of `--no-progress`.
pub trait OutputFlavor {
    /// `--json`'s help.
    const JSON_HELP: &'static str;
    /// The file a bare `--json` writes; `None`: `--json` takes a file.
    const JSON_DEFAULT: Option<&'static str> = None;
    /// `--plot`'s help.
    const PLOT_HELP: &'static str;
    /// The file a bare `--plot` writes; `None`: `--plot` takes a file.
    const PLOT_DEFAULT: Option<&'static str> = None;
    /// `--csv`'s and `--markdown`'s help, for a command that writes its
    /// results as tables; `None`: the command has neither flag.
    const TABLES_HELP: Option<(&'static str, &'static str)> = None;
    /// `--no-progress`'s help.
    const PROGRESS_HELP: &'static str;
    /// Whether `-q` and `--quiet` also say `--no-progress`.
    const QUIET: bool = false;
}

/// The output flags of a measuring command (`--json`, `--csv`, `--plot`,
/// `--markdown`, `--no-progress`), flattened into its arguments. One shape
/// for every command; `F` says what differs, so that each command keeps
/// the flags it always took.
#[derive(Debug, Clone)]
pub struct OutputArgs<F> {
    /// `--json`: the JSON report.
    pub json: Option<OutputFile>,
    /// `--csv`: the results as CSV (commands that write tables).
    pub csv: Option<OutputFile>,
    /// `--plot`: an SVG plot.
    pub plot: Option<OutputFile>,
    /// `--markdown`: the results as a Markdown table (commands that write
    /// tables).
    pub markdown: Option<OutputFile>,
    /// `--no-progress`: never draw a progress bar.
    pub no_progress: bool,
    flavor: PhantomData<fn() -> F>,
}

impl<F> OutputArgs<F> {
    /// The files to write, as the measuring runner takes them.
    pub fn outputs(&self) -> super::settings::Outputs {
        super::settings::Outputs {
            json: self.json.clone(),
            csv: self.csv.clone(),
            plot: self.plot.clone(),
            markdown: self.markdown.clone(),
        }
    }
}

/// An output file's option: `--ID FILE`, or `--ID [FILE]` when a bare flag
/// writes `default`.
fn file_arg(
    id: &'static str,
    value: &'static str,
    help: &'static str,
    default: Option<&'static str>,
) -> Arg {
    let arg = Arg::new(id)
        .long(id)
        .value_name(value)
        .help(help)
        .action(ArgAction::Set)
        .value_parser(OutputFile::from_str);
    match default {
        Some(file) => arg.num_args(0..=1).default_missing_value(file),
        None => arg,
    }
}

impl<F: OutputFlavor> Args for OutputArgs<F> {
    fn augment_args(cmd: Command) -> Command {
        // In the order the commands always listed them.
        let mut cmd = cmd.arg(file_arg("json", "FILE", F::JSON_HELP, F::JSON_DEFAULT));
        if let Some((csv, _)) = F::TABLES_HELP {
            cmd = cmd.arg(file_arg("csv", "FILE", csv, None));
        }
        cmd = cmd.arg(file_arg("plot", "FILE.svg", F::PLOT_HELP, F::PLOT_DEFAULT));
        if let Some((_, markdown)) = F::TABLES_HELP {
            cmd = cmd.arg(file_arg("markdown", "FILE.md", markdown, None));
        }
        let mut progress = Arg::new("no_progress")
            .long("no-progress")
            .action(ArgAction::SetTrue)
            .help(F::PROGRESS_HELP);
        if F::QUIET {
            progress = progress.short('q').visible_alias("quiet");
        }
        cmd.arg(progress)
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl<F: OutputFlavor> FromArgMatches for OutputArgs<F> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let file = |id: &str| m.get_one::<OutputFile>(id).cloned();
        // A command without tables never defined `--csv` or `--markdown`.
        let table = |id: &str| F::TABLES_HELP.and_then(|_| file(id));
        Ok(OutputArgs {
            json: file("json"),
            csv: table("csv"),
            plot: file("plot"),
            markdown: table("markdown"),
            no_progress: m.get_flag("no_progress"),
            flavor: PhantomData,
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
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
