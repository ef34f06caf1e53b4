//! `txmem bench`: benchmark suites run side by side against peers.
//!
//! Layout: [`args`] (command line), [`suites`] (workload definitions and
//! which systems run them), [`mem`] + [`workload`] (one generic body per
//! workload, run by every word-backed system), [`txmem_sys`] and [`peers`]
//! (the systems), [`runner`] (threads, warm-up, repeats, medians, checks),
//! [`report`] (table, JSON, CSV, SVG) and [`machine`].
//!
//! Test hook: `TXMEM_BENCH_BREAK_CHECK=<system>[,<system>..]` (or `all`)
//! corrupts the named systems' state after the first timed repeat, before
//! its check, so tests can prove that a wrong result is reported as a
//! failure and never as a figure. The run then exits with status 1.

pub mod args;
mod machine;
mod mem;
mod peers;
mod placement;
mod report;
mod runner;
mod spec;
mod suites;
mod txmem_sys;
mod workload;

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use clap::Args as _;
use serde_json::json;
use txmem::ContentionPolicy;

use args::fmt_duration;
pub use args::BenchArgs;
use peers::libitm::Libitm;
use runner::Settings;
use suites::{SuiteConfig, SUITES};

/// Environment variable of the broken-check test hook (see the module docs).
pub const BREAK_ENV: &str = "TXMEM_BENCH_BREAK_CHECK";

/// Exit status when a row failed its result check.
const EXIT_CHECK_FAILED: u8 = 1;
/// Exit status for bad arguments (as clap uses).
const EXIT_USAGE: u8 = 2;
/// Exit status after Ctrl-C (128 + SIGINT).
const EXIT_INTERRUPTED: u8 = 130;

/// Runs `txmem bench` and returns the process exit status.
pub fn main(args: BenchArgs) -> ExitCode {
    match run(args) {
        Ok(code) => ExitCode::from(code),
        Err(Failure::Usage(msg)) => {
            let usage = BenchArgs::augment_args(clap::Command::new("bench"))
                .bin_name("txmem bench")
                .render_usage();
            eprintln!("error: {msg}\n\n{usage}\n\nFor more information, try 'txmem bench --help'.");
            ExitCode::from(EXIT_USAGE)
        }
        Err(Failure::Other(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::FAILURE
        }
    }
}

enum Failure {
    /// Bad arguments: the message and the usage line.
    Usage(String),
    /// Anything else (e.g. an output file that cannot be written).
    Other(String),
}

fn parse_policy(name: &str) -> Result<ContentionPolicy, String> {
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

/// 1, 2, 4, ... up to the core count, and the core count itself.
fn default_threads(cores: usize) -> Vec<usize> {
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |n| Some(n * 2))
        .take_while(|&n| n <= cores)
        .collect();
    if v.last() != Some(&cores) {
        v.push(cores);
    }
    v
}

/// Refuses an output path whose directory does not exist, before a long run
/// rather than after it.
fn check_output(flag: &str, path: &Option<std::path::PathBuf>) -> Result<(), Failure> {
    if let Some(p) = path {
        let dir = p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return Err(Failure::Usage(format!(
                "{flag} {}: directory {} does not exist",
                p.display(),
                dir.display()
            )));
        }
        if p.is_dir() {
            return Err(Failure::Usage(format!(
                "{flag} {}: is a directory",
                p.display()
            )));
        }
    }
    Ok(())
}

fn run(args: BenchArgs) -> Result<u8, Failure> {
    let suite = args.suite.clone().unwrap_or_else(|| "quick".into());
    if !SUITES.iter().any(|s| s.0 == suite) {
        let names: Vec<&str> = SUITES.iter().map(|s| s.0).collect();
        return Err(Failure::Usage(format!(
            "unknown suite `{suite}` (expected one of: {})",
            names.join(", ")
        )));
    }
    let quick = suite == "quick";
    let policy = match &args.contention {
        Some(name) => parse_policy(name).map_err(Failure::Usage)?,
        None => ContentionPolicy::DEFAULT,
    };
    check_output("--json", &args.json)?;
    check_output("--csv", &args.csv)?;
    check_output("--plot", &args.plot)?;
    check_output("--markdown", &args.markdown)?;

    let machine = machine::Machine::detect();
    let wants_libitm = args
        .systems
        .as_ref()
        .is_none_or(|s| s.iter().any(|x| x == "libitm"));
    let libitm = if wants_libitm {
        Libitm::prepare().map(Arc::new)
    } else {
        Err("not selected".to_string())
    };
    let cfg = SuiteConfig {
        quick,
        policy,
        seed: args.seed,
        libitm: libitm.clone(),
    };

    if args.list {
        print_list(&cfg);
        return Ok(0);
    }

    let mut plan = suites::plan(&suite, &cfg).map_err(Failure::Usage)?;
    if let Some(systems) = &args.systems {
        let known: Vec<String> = plan
            .cases
            .iter()
            .map(|c| c.system.clone())
            .chain(plan.skips.iter().map(|s| s.system.clone()))
            .collect();
        if let Some(bad) = systems.iter().find(|s| !known.contains(s)) {
            let mut names = known.clone();
            names.sort();
            names.dedup();
            return Err(Failure::Usage(format!(
                "unknown system `{bad}` for suite {suite} (known: {})",
                names.join(", ")
            )));
        }
        plan.cases.retain(|c| systems.contains(&c.system));
        plan.skips.retain(|s| systems.contains(&s.system));
    }
    if let Some(f) = &args.filter {
        plan.cases.retain(|c| c.workload.contains(f.as_str()));
        plan.skips.retain(|s| s.workload.contains(f.as_str()));
    }
    if plan.cases.is_empty() {
        return Err(Failure::Usage(format!(
            "no benchmark rows match (suite {suite}, --systems/--filter); see `txmem bench --list`"
        )));
    }

    let bad = |flag: &str, v: &str, e: String| {
        Failure::Usage(format!("invalid value '{v}' for '{flag}': {e}"))
    };
    let parse_opt = |flag: &str, v: &Option<String>, f: fn(&str) -> Result<Duration, String>| {
        v.as_deref()
            .map(|x| f(x).map_err(|e| bad(flag, x, e)))
            .transpose()
    };
    let threads = match &args.threads {
        Some(t) => {
            args::parse_threads(t)
                .map_err(|e| bad("--threads", t, e))?
                .0
        }
        None => default_threads(machine.cores),
    };
    let repeats = match &args.repeat {
        Some(r) => args::parse_repeat(r).map_err(|e| bad("--repeat", r, e))?,
        None => 3,
    };
    let warmup = parse_opt("--warmup", &args.warmup, args::parse_duration)?;
    let duration =
        parse_opt("--duration", &args.duration, args::parse_duration)?.unwrap_or(if quick {
            Duration::from_millis(120)
        } else {
            Duration::from_secs(1)
        });
    let settings = Settings {
        threads,
        duration,
        repeats,
        warmup: warmup.unwrap_or_else(|| (duration / 5).min(Duration::from_millis(300))),
        seed: args.seed,
        sabotage: std::env::var(BREAK_ENV)
            .map(|v| v.split(',').map(|s| s.trim().to_string()).collect())
            .unwrap_or_default(),
        progress: !args.no_progress,
    };

    // First Ctrl-C: finish cleanly with what ran; second: exit at once.
    let _ = ctrlc::set_handler(|| {
        if runner::INTERRUPTED.swap(true, Ordering::SeqCst) {
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
        eprintln!("\ninterrupted: stopping after the current run (Ctrl-C again to quit now)");
    });

    let date = machine::utc_now();
    let measured = runner::run(&plan, &settings);
    let report = report::Report {
        suite: suite.clone(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        machine,
        settings: settings_json(&args, &settings, &policy, &libitm),
        results: report::rows(&measured),
        skipped: plan.skips.clone(),
        date,
        interrupted: runner::interrupted(),
    };
    print!("{}", report::table::render(&report));

    let mut write_error = None;
    let mut emit = |what: Result<(), String>, path: &Option<std::path::PathBuf>| match what {
        Ok(()) => {
            if let Some(p) = path {
                eprintln!("wrote {}", p.display());
            }
        }
        Err(e) => write_error = Some(e),
    };
    if let Some(p) = &args.json {
        emit(report::json::write(p, &report), &args.json);
    }
    if let Some(p) = &args.csv {
        emit(report::csv::write(p, &report), &args.csv);
    }
    if let Some(p) = &args.plot {
        emit(report::svg::write(p, &report), &args.plot);
    }
    if let Some(p) = &args.markdown {
        emit(report::markdown::write(p, &report), &args.markdown);
    }
    if let Some(e) = write_error {
        return Err(Failure::Other(e));
    }
    Ok(if report.interrupted {
        EXIT_INTERRUPTED
    } else if report.any_failed() {
        EXIT_CHECK_FAILED
    } else {
        0
    })
}

/// Every setting needed to rerun the measurement.
fn settings_json(
    args: &BenchArgs,
    s: &Settings,
    policy: &ContentionPolicy,
    libitm: &Result<Arc<Libitm>, String>,
) -> serde_json::Value {
    let git = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    json!({
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "threads": s.threads,
        "duration_ms": s.duration.as_secs_f64() * 1e3,
        "duration": fmt_duration(s.duration),
        "repeats": s.repeats,
        "warmup_ms": s.warmup.as_secs_f64() * 1e3,
        "seed": s.seed,
        "systems": args.systems,
        "filter": args.filter,
        "build": if cfg!(debug_assertions) { "debug" } else { "release" },
        "allocator": "system (Rust's default global allocator: the platform malloc)",
        "pinning": "none (threads float)",
        "txmem": {
            "contention_policy": policy.name(),
            "contention_policy_params": format!("{policy:?}"),
            "serialize_after": txmem::DEFAULT_SERIALIZE_AFTER,
            "stats": "on (default)",
            "opacity": "per system: txmem = tl2, txmem-revalidate, txmem-no-opacity = none",
        },
        "libitm": match libitm {
            Ok(l) => json!({"compiler": l.compiler(), "flags": "-O2 -fgnu-tm -pthread", "method": l.method()}),
            Err(why) => json!({"skipped": why}),
        },
        "peers": {"fast-stm": "0.7.1", "stm": "0.4.0", "parking_lot": "0.12"},
        "elision": elision_settings(),
        "break_check": s.sabotage,
        "git_commit": git,
    })
}

/// How the elided-lock rows run: the backend, whether it elides here, and
/// the retry configuration every thread starts with.
fn elision_settings() -> serde_json::Value {
    use txmem_elide::htm::{DefaultHtm, Htm};
    let htm = DefaultHtm::INIT;
    json!({
        "crate": "txmem-elide (workspace)",
        "backend": htm.name(),
        "elides": htm.available(),
        "rtm": machine::rtm_verdict(),
        "retry_config": format!("{:?}", txmem_elide::policy::RetryConfig::DEFAULT),
        "stats": "per-thread counters summed around each timed repeat; per-lock counts off",
    })
}

fn print_list(cfg: &SuiteConfig) {
    let full = SuiteConfig {
        quick: false,
        policy: cfg.policy,
        seed: cfg.seed,
        libitm: cfg.libitm.clone(),
    };
    let cfg = &full;
    println!("Suites:");
    for (name, what) in SUITES {
        println!("  {name:<7} {what}");
    }
    for (name, _) in SUITES.iter().filter(|s| s.0 != "quick" && s.0 != "all") {
        let Ok(plan) = suites::plan(name, cfg) else {
            continue;
        };
        println!("\n{name}:");
        let mut workloads: Vec<&str> = Vec::new();
        for c in &plan.cases {
            if !workloads.contains(&c.workload.as_str()) {
                workloads.push(&c.workload);
            }
        }
        for w in workloads {
            let systems: Vec<&str> = plan
                .cases
                .iter()
                .filter(|c| c.workload == w)
                .map(|c| c.system.as_str())
                .collect();
            println!("  {w}");
            println!("    systems: {}", systems.join(", "));
            for s in plan.skips.iter().filter(|s| s.workload == w) {
                println!("    skipped {}: {}", s.system, s.reason);
            }
        }
    }
    let quick = SuiteConfig {
        quick: true,
        policy: cfg.policy,
        seed: cfg.seed,
        libitm: cfg.libitm.clone(),
    };
    if let Ok(plan) = suites::plan("quick", &quick) {
        let mut ws: Vec<&str> = plan.cases.iter().map(|c| c.workload.as_str()).collect();
        ws.dedup();
        println!("\nquick runs: {}", ws.join(", "));
    }
    println!(
        "\nSystems: txmem (TL2 opacity), txmem-revalidate, txmem-no-opacity (txmem's opacity modes); \
         mutex, rwlock (coarse locks); elided-mutex, elided-rwlock (the same coarse schemes with \
         txmem-elide lock elision: RTM where usable, else the fallback lock; here: {}); \
         fine-locks (per element/bucket); fast-stm, stm (crates); libitm (GCC -fgnu-tm)",
        machine::rtm_verdict()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_thread_counts() {
        assert_eq!(default_threads(1), vec![1]);
        assert_eq!(default_threads(2), vec![1, 2]);
        assert_eq!(default_threads(6), vec![1, 2, 4, 6]);
    }

    #[test]
    fn policies_by_name() {
        assert!(parse_policy("karma").is_ok());
        assert!(parse_policy("nope").unwrap_err().contains("karma"));
    }
}
