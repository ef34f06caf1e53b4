//! The benchmark harness: what `txmem bench` measures and how threads drive
//! it, shared with the criterion benches so that both measure the same
//! code.
//!
//! A suite (`suites/`) plans rows: a workload, a system, and how to build a
//! fresh instance of the pair ([`Row`]). Word workloads (`micro`, `bank`, the
//! intset arena) are written once over a word memory (`mem.rs`) and run by
//! every word-backed system: txmem (`txmem_sys.rs`), the locks and STM
//! crates (`peers/`); `workload.rs` pairs them into rows. The driver
//! (`drive.rs`) runs an instance on several threads for a time or an
//! operation count.
//!
//! The public items below are what a criterion bench needs: the intset
//! suite's rows, grouped by workload, and the driver.

pub(crate) mod drive;
pub(crate) mod kinds;
pub(crate) mod mem;
pub(crate) mod peers;
pub(crate) mod rtm;
pub(crate) mod spec;
pub(crate) mod suites;
pub(crate) mod system;
pub(crate) mod txmem_sys;
pub(crate) mod versions;
pub(crate) mod workload;

use std::time::Duration;

use txmem::ContentionPolicy;

pub use drive::{Budget, ThreadList};

use spec::{Instance, Subject};
use suites::config::SuiteConfig;
use suites::Suite;

/// The seed `txmem bench` draws workloads from unless told otherwise
/// (`txmem` in ASCII).
pub const DEFAULT_SEED: u64 = 0x0074_786d_656d;

/// One row of a suite: a system ready to build a fresh instance of its
/// workload.
pub struct Row {
    system: system::System,
    make: Box<dyn Fn() -> Box<dyn Instance> + Send + Sync>,
}

impl Row {
    /// The system's name, as `txmem bench` reports it.
    pub fn system(&self) -> &'static str {
        self.system.name()
    }

    /// A fresh instance, filled with the workload's initial contents.
    pub fn build(&self) -> Prepared {
        Prepared((self.make)())
    }
}

/// A row's instance, ready to run: its structure holds the workload's
/// initial contents (and whatever earlier runs left in it).
pub struct Prepared(Box<dyn Instance>);

impl Prepared {
    /// Runs the workload on `threads` threads within `budget`, thread `i`
    /// drawing its operations from a generator seeded with `seed` and `i`.
    /// Returns the time from the start signal until the last thread
    /// finished; `Err` if a thread panicked.
    pub fn run(&self, threads: usize, budget: Budget<'_>, seed: u64) -> Result<Duration, String> {
        drive::run_threads(self.0.as_ref(), threads, budget, seed).map(|(_, elapsed)| elapsed)
    }
}

/// One workload of the intset suite and its in-process rows.
pub struct IntsetWorkload {
    /// `list`, `hash` or `ordered`.
    pub structure: &'static str,
    /// Initial number of keys.
    pub size: usize,
    /// Percentage of operations that are inserts or removes.
    pub update_percent: u32,
    /// The name `txmem bench` reports it under.
    pub name: String,
    /// Its rows, in the order `txmem bench intset` runs them (libitm, which
    /// runs in a child process, is left out).
    pub rows: Vec<Row>,
}

/// Every workload of the full intset suite with the rows `txmem bench
/// intset` measures, planned with the default contention policy and
/// initial contents drawn from `seed`.
pub fn intset_workloads(seed: u64) -> Vec<IntsetWorkload> {
    let cfg = SuiteConfig {
        quick: false,
        policy: ContentionPolicy::DEFAULT,
        seed,
        libitm: Err("runs in a child process".into()),
        txmem_itm: Err("runs in a child process".into()),
    };
    let mut cases = Suite::Intset.plan(&cfg).cases;
    suites::intset::workloads(false, seed)
        .into_iter()
        .map(|w| {
            let name = w.name();
            let (mine, rest): (Vec<_>, Vec<_>) = cases.drain(..).partition(|c| c.workload == name);
            cases = rest;
            let rows = mine
                .into_iter()
                .filter_map(|c| match c.subject {
                    Subject::InProcess(make) => Some(Row {
                        system: c.system,
                        make,
                    }),
                    Subject::External(_) | Subject::Sized(_) => None,
                })
                .collect();
            IntsetWorkload {
                structure: w.kind.name(),
                size: w.size,
                update_percent: w.update_percent,
                name,
                rows,
            }
        })
        .collect()
}
