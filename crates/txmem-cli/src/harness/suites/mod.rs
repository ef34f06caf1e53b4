//! The suites: which workloads each holds and which systems run them.
//! Planning a suite yields its rows ([`Plan`]); the runner of `txmem
//! bench` and the criterion benches both measure those rows.

pub mod asynctx;
pub mod bank;
pub mod config;
pub mod intset;
pub mod micro;

use std::fmt;
use std::str::FromStr;

use crate::harness::spec::Plan;
use crate::harness::suites::config::SuiteConfig;

/// A suite of `txmem bench`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite {
    /// A mixed selection of the others, about a minute.
    Quick,
    /// The array microbenchmark.
    Micro,
    /// Integer sets.
    Intset,
    /// The bank.
    Bank,
    /// Async transactions under tokio.
    Async,
    /// micro, intset, bank and async.
    All,
}

impl Suite {
    /// Every suite, in the order `--list` shows them.
    pub const ALL: [Suite; 6] = [
        Suite::Quick,
        Suite::Micro,
        Suite::Intset,
        Suite::Bank,
        Suite::Async,
        Suite::All,
    ];

    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Suite::Quick => "quick",
            Suite::Micro => "micro",
            Suite::Intset => "intset",
            Suite::Bank => "bank",
            Suite::Async => "async",
            Suite::All => "all",
        }
    }

    /// One line on what the suite runs.
    pub fn description(self) -> &'static str {
        match self {
            Suite::Quick => "a mixed selection of the suites below (the default, about a minute)",
            Suite::Micro => "STO thesis §7.2 array microbenchmark: 1M integers, transactions of 5/10/50/100 half reads, half increments",
            Suite::Intset => "list / hash / ordered integer sets, sizes 256 and 4096, update rates 0/20/50%",
            Suite::Bank => "1024 accounts: 80% transfers, 20% audits of the total",
            Suite::Async => "async transactions on a tokio runtime per thread: a queue ping-pong between two tasks, the bank",
            Suite::All => "micro, intset, bank and async",
        }
    }

    /// True for the suites made of others (`quick`, `all`).
    pub fn is_selection(self) -> bool {
        matches!(self, Suite::Quick | Suite::All)
    }

    /// The suite's rows. `cfg.quick` picks the quick selection of each
    /// suite it includes.
    pub fn plan(self, cfg: &SuiteConfig) -> Plan {
        let mut p = Plan::default();
        match self {
            Suite::Micro => micro::plan(cfg, &mut p),
            Suite::Intset => intset::plan(cfg, &mut p),
            Suite::Bank => bank::plan(cfg, &mut p),
            Suite::Async => asynctx::plan(cfg, &mut p),
            Suite::Quick => {
                micro::plan(cfg, &mut p);
                bank::plan(cfg, &mut p);
                intset::plan(cfg, &mut p);
            }
            Suite::All => {
                micro::plan(cfg, &mut p);
                bank::plan(cfg, &mut p);
                intset::plan(cfg, &mut p);
                asynctx::plan(cfg, &mut p);
            }
        }
        p
    }
}

impl fmt::Display for Suite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Suite {
    type Err = String;

    fn from_str(s: &str) -> Result<Suite, String> {
        Suite::ALL
            .into_iter()
            .find(|x| x.name() == s.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = Suite::ALL.iter().map(|x| x.name()).collect();
                format!(
                    "unknown suite `{s}` (expected one of: {})",
                    names.join(", ")
                )
            })
    }
}
