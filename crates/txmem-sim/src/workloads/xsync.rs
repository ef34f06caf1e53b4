//! XSync's counter array (§3, Fig 2): threads increment randomly chosen counters of an array
//! of `array_size` under five schemes, to show when eliding a lock pays and when the lock's
//! granularity still matters.
//!
//! The counters are 8-byte words packed into lines (8 per 64-byte line; XSync's 4-byte counters
//! pack 16, so a line here is shared by half as many counters). Fine-grained locks are an array
//! of lock words packed the same way, one per counter. The schemes:
//!
//! * `coarse`: one spinlock around every increment;
//! * `fine`: counter *i*'s own spinlock;
//! * `htm`: a bare hardware transaction per increment, retried until it commits (no lock, no
//!   fallback: XSync's "naive HTM");
//! * `elided-coarse` / `elided-fine`: the same locks, elided by `txmem-htm`'s policies (retry
//!   budget, lock-busy waits). Sections are not coarsened: XSync's coarsening would group
//!   increments of different random counters, which the simulated elision cannot express yet.
//!
//! Simulated memory is grown to hold the arrays when they need more than the configuration
//! gives (the size of memory changes no timing).

use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::counter::{add_to, finish, Incrementer};
use super::{RunResult, SyncKind, WorkloadConfig, WorkloadError};
use crate::config::SimConfig;
use crate::elision::ElisionStats;

/// How the counter array is synchronized.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum XsyncScheme {
    /// One spinlock for the whole array.
    Coarse,
    /// One spinlock per counter.
    Fine,
    /// A hardware transaction per increment, without a lock.
    Htm,
    /// The coarse lock, elided.
    ElidedCoarse,
    /// The fine locks, elided.
    ElidedFine,
}

impl XsyncScheme {
    /// Every scheme, in the order of XSync's figure legend.
    pub const ALL: [XsyncScheme; 5] = [
        XsyncScheme::Coarse,
        XsyncScheme::Fine,
        XsyncScheme::Htm,
        XsyncScheme::ElidedCoarse,
        XsyncScheme::ElidedFine,
    ];

    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            XsyncScheme::Coarse => "coarse",
            XsyncScheme::Fine => "fine",
            XsyncScheme::Htm => "htm",
            XsyncScheme::ElidedCoarse => "elided-coarse",
            XsyncScheme::ElidedFine => "elided-fine",
        }
    }

    pub(crate) fn sync(self) -> SyncKind {
        match self {
            XsyncScheme::Coarse | XsyncScheme::Fine => SyncKind::Spinlock,
            XsyncScheme::Htm => SyncKind::Tx,
            XsyncScheme::ElidedCoarse | XsyncScheme::ElidedFine => SyncKind::Elided,
        }
    }

    fn fine(self) -> bool {
        matches!(self, XsyncScheme::Fine | XsyncScheme::ElidedFine)
    }
}

/// Every CPU (hardware thread) makes `increments` increments of random counters of an array of
/// `array_size`, under `xsync_scheme`; checks that the counters sum to the increments made.
pub fn run_xsync_counters(cfg: &SimConfig, w: &WorkloadConfig) -> Result<RunResult, WorkloadError> {
    let size = w.array_size;
    if size == 0 {
        return Err(WorkloadError::Check("array_size must be at least 1".into()));
    }
    const WORD: u64 = 8;
    let lb = cfg.line_bytes;
    let per_line = (lb / WORD).max(1);
    let array_lines = size.div_ceil(per_line);
    // Counters, fine locks, the coarse lock on a line of its own.
    let lines = 2 * array_lines + 1;
    let start = Instant::now();
    let mut sim = super::sim_with_lines(cfg, lines)?;
    let counters = sim.alloc_lines(array_lines);
    let locks = sim.alloc_lines(array_lines);
    let coarse = sim.alloc_lines(1);
    let scheme = w.xsync_scheme;
    let (n, think) = (w.increments, w.think_cycles);
    let elision = Rc::new(Cell::new(ElisionStats::default()));
    for cpu_index in 0..cfg.cpus() {
        let (ecfg, total) = (w.elision.clone(), elision.clone());
        sim.spawn(cpu_index, move |cpu| async move {
            let mut inc = Incrementer::new(scheme.sync(), &ecfg);
            let mut done = 0;
            while done < n {
                let i = cpu.random_below(size);
                let counter = counters + i * WORD;
                let lock = if scheme.fine() {
                    locks + i * WORD
                } else {
                    coarse
                };
                // One section at a time: a coarsened group would have to touch as many random
                // counters as it covers, and `Elision::run_group` repeats one section.
                done += inc.increments(&cpu, counter, lock, 1).await;
                if think > 0 {
                    cpu.compute(think).await;
                }
            }
            add_to(&total, inc.elision_stats());
        });
    }
    let expect = cfg.cpus() as u64 * n;
    finish(&mut sim, start, &elision, |sim| {
        let got: u64 = (0..size).map(|i| sim.read(counters + i * WORD)).sum();
        if got == expect {
            Ok(())
        } else {
            Err(format!("counters sum to {got}, expected {expect}"))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::{run, WorkloadKind};

    fn config(scheme: XsyncScheme, size: u64) -> (SimConfig, WorkloadConfig) {
        let sim = SimConfig {
            cores: 4,
            ..SimConfig::default()
        };
        let w = WorkloadConfig {
            kind: WorkloadKind::XsyncCounters,
            xsync_scheme: scheme,
            array_size: size,
            increments: 200,
            ..WorkloadConfig::default()
        };
        (sim, w)
    }

    #[test]
    fn every_scheme_counts_every_increment_and_is_deterministic() {
        for scheme in XsyncScheme::ALL {
            for size in [1, 64, 5000] {
                let (sim, w) = config(scheme, size);
                let a = run(&sim, &w).unwrap_or_else(|e| panic!("{}: {e}", scheme.name()));
                let b = run(&sim, &w).unwrap();
                assert_eq!(a.stats, b.stats, "{} at {size}", scheme.name());
            }
        }
    }

    #[test]
    fn every_hardware_thread_increments() {
        // 2 cores x 2 hardware threads: four threads' increments, on two private hierarchies.
        let (mut sim, w) = config(XsyncScheme::ElidedFine, 256);
        sim.cores = 2;
        sim.threads_per_core = 2;
        let r = run(&sim, &w).unwrap();
        assert_eq!(r.elision.sections, 4 * 200);
    }

    #[test]
    fn the_array_grows_memory_when_it_must() {
        // 2^20 counters need 16 MiB of counters and locks, past the default 4 MiB.
        let (sim, mut w) = config(XsyncScheme::Fine, 1 << 20);
        w.increments = 20;
        assert!(run(&sim, &w).is_ok());
    }

    #[test]
    fn the_schemes_take_the_paths_they_name() {
        let (sim, w) = config(XsyncScheme::Coarse, 64);
        let r = run(&sim, &w).unwrap();
        assert_eq!(r.stats.tx.commits, 0, "a spinlock runs no transaction");
        let (sim, w) = config(XsyncScheme::Htm, 64);
        let r = run(&sim, &w).unwrap();
        assert_eq!(r.stats.tx.commits, 4 * 200, "one commit per increment");
        let (sim, w) = config(XsyncScheme::ElidedFine, 4096);
        let r = run(&sim, &w).unwrap();
        assert!(r.elision.elided_commits > 0, "{:?}", r.elision);
    }
}
