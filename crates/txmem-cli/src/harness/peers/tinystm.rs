//! TinySTM as a peer: its own `bank` test program (TinySTM's `test/bank`,
//! built by the user from TinySTM's public source), named by the
//! environment variable `TINYSTM_BANK`, run as a child process per repeat.
//! The project neither ships nor builds it; without the variable, the rows
//! are skipped with the reason.
//!
//! The program has no warm-up and draws its own random numbers; it checks
//! the bank total itself at the end (`Bank total : 0 (expected: 0)`), which
//! is the row's check here.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::harness::spec::{ExternalParams, ExternalRun};

/// The environment variable naming TinySTM's `bank` executable.
pub const ENV: &str = "TINYSTM_BANK";

/// TinySTM's bank program.
#[derive(Clone, Debug)]
pub struct TinyStmBank {
    exe: PathBuf,
}

impl TinyStmBank {
    /// The program `TINYSTM_BANK` names, or why there is none.
    pub fn from_env() -> Result<TinyStmBank, String> {
        let exe = std::env::var_os(ENV).ok_or_else(|| {
            format!("set {ENV} to TinySTM's test/bank/bank (built from its public source)")
        })?;
        let exe = PathBuf::from(exe);
        if !exe.is_file() {
            return Err(format!("{ENV}={} is not a file", exe.display()));
        }
        Ok(TinyStmBank { exe })
    }

    /// Runs one repeat of the bank with `accounts` accounts and
    /// `audit_percent`% read-all transactions.
    pub fn run(
        &self,
        accounts: usize,
        audit_percent: u32,
        p: &ExternalParams,
    ) -> Result<ExternalRun, String> {
        // (`-s 0` would seed from the clock; the seed's low 31 bits, never 0.)
        let seed = (p.seed & 0x7fff_ffff).max(1);
        let out = Command::new(&self.exe)
            .args(["-a", &accounts.to_string()])
            .args(["-r", &audit_percent.to_string()])
            .args(["-n", &p.threads.to_string()])
            .args(["-d", &p.duration.as_millis().max(1).to_string()])
            .args(["-s", &seed.to_string()])
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.exe.display()))?;
        parse(&String::from_utf8_lossy(&out.stdout))
            .map_err(|why| format!("TinySTM bank ({}): {why}", out.status))
    }
}

/// The run's counts from the program's report.
fn parse(report: &str) -> Result<ExternalRun, String> {
    // Lines look like `#txs          : 3179141 (1586397.704591 / s)`.
    let value = |name: &str| -> Option<u64> {
        report.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.split_whitespace().next()?.parse().ok())?
        })
    };
    let total = report
        .lines()
        .find(|l| l.starts_with("Bank total"))
        .ok_or("no `Bank total` line")?;
    if !total.contains(": 0 (expected: 0)") {
        return Err(format!("bank total changed: {}", total.trim()));
    }
    let ops = value("#txs").ok_or("no `#txs` line")?;
    let aborts = value("#aborts").unwrap_or(0);
    // `Duration : 2004 (ms)`, the measured one (the requested one has no unit).
    let ms = report
        .lines()
        .filter(|l| l.trim_end().ends_with("(ms)"))
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "Duration").then(|| v.split_whitespace().next()?.parse::<u64>().ok())?
        })
        .ok_or("no measured `Duration` line")?;
    Ok(ExternalRun {
        ops,
        attempts: Some(ops + aborts),
        elapsed: Duration::from_millis(ms),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "Nb accounts    : 1024\nDuration       : 2000\n\
        Duration      : 2004 (ms)\n#txs          : 3179141 (1586397.704591 / s)\n\
        #aborts       : 12 (5.9 / s)\nBank total    : 0 (expected: 0)\n";

    #[test]
    fn a_report_gives_counts_and_the_measured_time() {
        let run = parse(REPORT).unwrap();
        assert_eq!(run.ops, 3_179_141);
        assert_eq!(run.attempts, Some(3_179_153));
        assert_eq!(run.elapsed, Duration::from_millis(2004));
    }

    #[test]
    fn a_changed_total_is_a_failure() {
        let bad = REPORT.replace("total    : 0 (expected", "total    : 7 (expected");
        assert!(parse(&bad).unwrap_err().contains("bank total changed"));
        assert!(parse("garbage").is_err());
    }
}
