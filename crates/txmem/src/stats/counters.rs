//! Per-thread counters and their global sum.

use std::fmt;
use std::ops::Sub;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam_utils::CachePadded;

use super::Serialization;
use crate::error::AbortCause;
use crate::sync::Mutex;

/// A counter written by one thread and read by any: updates are a relaxed
/// load and store, never a locked read-modify-write.
#[derive(Default, Debug)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.store(
            self.0.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    }
    /// Zeroes the counter (its owner must not be updating it meanwhile).
    pub fn reset(&self) {
        self.0.store(0, Ordering::Relaxed);
    }
    #[inline]
    pub fn max(&self, n: u64) {
        if n > self.0.load(Ordering::Relaxed) {
            self.0.store(n, Ordering::Relaxed);
        }
    }
    #[inline]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// One thread's counters.
#[derive(Default, Debug)]
pub(crate) struct ThreadStats {
    /// Commits that wrote (the total is this plus `read_only_commits`, so
    /// a commit updates one of the two).
    pub write_commits: Counter,
    pub read_only_commits: Counter,
    pub aborts: [Counter; AbortCause::COUNT],
    pub blocking_waits: Counter,
    pub serialized: Counter,
    pub irrevocable_commits: Counter,
    pub started_irrevocable: Counter,
    pub switched_irrevocable: Counter,
    pub max_consecutive_aborts: Counter,
    pub read_items: Counter,
    pub write_items: Counter,
    pub max_items: Counter,
}

impl ThreadStats {
    /// Counts one commit of a transaction with `reads` read and `writes`
    /// written items (`items` in all).
    #[inline]
    pub fn record_commit(&self, reads: u32, writes: u32, items: usize) {
        if writes == 0 {
            self.read_only_commits.add(1);
        } else {
            self.write_commits.add(1);
            self.write_items.add(writes as u64);
        }
        self.read_items.add(reads as u64);
        self.max_items.max(items as u64);
    }

    /// The extra counts of a commit that came after aborts or ran
    /// irrevocably (`irrevocable`: why it did).
    #[cold]
    pub fn record_hard_commit(&self, consecutive: u32, irrevocable: Option<Serialization>) {
        self.max_consecutive_aborts.max(consecutive as u64);
        if let Some(why) = irrevocable {
            self.irrevocable_commits.add(1);
            match why {
                Serialization::Started => self.started_irrevocable.add(1),
                Serialization::Switched => self.switched_irrevocable.add(1),
                // Counted when the runtime serialized it (`serialized`).
                Serialization::AfterAborts => {}
            }
        }
    }

    fn add_into(&self, s: &mut Stats) {
        s.commits += self.write_commits.get() + self.read_only_commits.get();
        s.read_only_commits += self.read_only_commits.get();
        for (i, c) in self.aborts.iter().enumerate() {
            s.aborts[i] += c.get();
        }
        s.blocking_waits += self.blocking_waits.get();
        s.serialized += self.serialized.get();
        s.irrevocable_commits += self.irrevocable_commits.get();
        s.started_irrevocable += self.started_irrevocable.get();
        s.switched_irrevocable += self.switched_irrevocable.get();
        s.max_consecutive_aborts = s
            .max_consecutive_aborts
            .max(self.max_consecutive_aborts.get());
        s.read_items += self.read_items.get();
        s.write_items += self.write_items.get();
        s.max_items = s.max_items.max(self.max_items.get());
    }
}

struct Registry {
    live: Vec<Arc<CachePadded<ThreadStats>>>,
    exited: Stats,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    live: Vec::new(),
    exited: Stats::ZERO,
});

/// Registers a thread's counters; they stay counted after the thread exits.
pub(crate) fn register() -> Arc<CachePadded<ThreadStats>> {
    let s = Arc::new(CachePadded::new(ThreadStats::default()));
    REGISTRY.lock().live.push(s.clone());
    s
}

/// Folds an exiting thread's counters into the global total.
pub(crate) fn retire(s: &Arc<CachePadded<ThreadStats>>) {
    let mut reg = REGISTRY.lock();
    let mut exited = reg.exited;
    s.add_into(&mut exited);
    reg.exited = exited;
    reg.live.retain(|x| !Arc::ptr_eq(x, s));
}

/// Zeroes every thread's maxima (see [`super::reset_maxima`]).
pub(crate) fn reset_maxima() {
    let mut reg = REGISTRY.lock();
    reg.exited.max_items = 0;
    reg.exited.max_consecutive_aborts = 0;
    for s in &reg.live {
        s.max_items.reset();
        s.max_consecutive_aborts.reset();
    }
}

pub(crate) fn snapshot() -> Stats {
    let reg = REGISTRY.lock();
    let mut total = reg.exited;
    for s in &reg.live {
        s.add_into(&mut total);
    }
    total
}

/// Counters summed over threads. Subtract two snapshots to measure an interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Committed transactions (including read-only ones).
    pub commits: u64,
    /// Committed transactions that wrote nothing.
    pub read_only_commits: u64,
    /// Aborted attempts, indexed like [`AbortCause::ALL`]; see [`Stats::aborts_by`].
    pub aborts: [u64; AbortCause::COUNT],
    /// Times a transaction blocked in `retry` waiting for a change.
    pub blocking_waits: u64,
    /// Attempts run irrevocably because of too many consecutive aborts.
    pub serialized: u64,
    /// Committed irrevocable transactions (requested or serialized).
    pub irrevocable_commits: u64,
    /// Committed transactions that ran irrevocably from their start because
    /// their options asked for it ([`TxOptions::irrevocable`](crate::TxOptions::irrevocable)).
    pub started_irrevocable: u64,
    /// Committed transactions that became irrevocable mid-flight
    /// ([`Transaction::become_irrevocable`](crate::Transaction::become_irrevocable)).
    pub switched_irrevocable: u64,
    /// The longest run of consecutive aborts of one transaction.
    pub max_consecutive_aborts: u64,
    /// Read-set items of committed transactions, summed.
    pub read_items: u64,
    /// Write-set items of committed transactions, summed.
    pub write_items: u64,
    /// The largest item count of a committed transaction.
    pub max_items: u64,
}

impl Stats {
    const ZERO: Stats = Stats {
        commits: 0,
        read_only_commits: 0,
        aborts: [0; AbortCause::COUNT],
        blocking_waits: 0,
        serialized: 0,
        irrevocable_commits: 0,
        started_irrevocable: 0,
        switched_irrevocable: 0,
        max_consecutive_aborts: 0,
        read_items: 0,
        write_items: 0,
        max_items: 0,
    };

    /// Aborts with the given cause.
    pub fn aborts_by(&self, cause: AbortCause) -> u64 {
        self.aborts[cause.index()]
    }

    /// All aborts.
    pub fn total_aborts(&self) -> u64 {
        self.aborts.iter().sum()
    }

    /// Aborts per commit (0 when nothing committed).
    pub fn aborts_per_commit(&self) -> f64 {
        if self.commits == 0 {
            0.0
        } else {
            self.total_aborts() as f64 / self.commits as f64
        }
    }

    /// Average read-set size of committed transactions.
    pub fn avg_read_set(&self) -> f64 {
        if self.commits == 0 {
            0.0
        } else {
            self.read_items as f64 / self.commits as f64
        }
    }

    /// Average write-set size of committed transactions.
    pub fn avg_write_set(&self) -> f64 {
        if self.commits == 0 {
            0.0
        } else {
            self.write_items as f64 / self.commits as f64
        }
    }
}

impl Sub for Stats {
    type Output = Stats;
    /// The counts accumulated between two snapshots (maxima are kept from `self`).
    fn sub(self, rhs: Stats) -> Stats {
        let mut out = self;
        out.commits -= rhs.commits.min(out.commits);
        out.read_only_commits -= rhs.read_only_commits.min(out.read_only_commits);
        for i in 0..AbortCause::COUNT {
            out.aborts[i] -= rhs.aborts[i].min(out.aborts[i]);
        }
        out.blocking_waits -= rhs.blocking_waits.min(out.blocking_waits);
        out.serialized -= rhs.serialized.min(out.serialized);
        out.irrevocable_commits -= rhs.irrevocable_commits.min(out.irrevocable_commits);
        out.started_irrevocable -= rhs.started_irrevocable.min(out.started_irrevocable);
        out.switched_irrevocable -= rhs.switched_irrevocable.min(out.switched_irrevocable);
        out.read_items -= rhs.read_items.min(out.read_items);
        out.write_items -= rhs.write_items.min(out.write_items);
        out
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "commits {} (read-only {}), aborts {} ({:.3} per commit), blocking waits {}, serialized {}, irrevocable {} (started {}, switched {})",
            self.commits,
            self.read_only_commits,
            self.total_aborts(),
            self.aborts_per_commit(),
            self.blocking_waits,
            self.serialized,
            self.irrevocable_commits,
            self.started_irrevocable,
            self.switched_irrevocable
        )?;
        write!(f, "aborts by cause:")?;
        for c in AbortCause::ALL {
            write!(f, " {}={}", c.name(), self.aborts_by(c))?;
        }
        writeln!(f)?;
        write!(
            f,
            "avg read set {:.1}, avg write set {:.1}, max items {}, max consecutive aborts {}",
            self.avg_read_set(),
            self.avg_write_set(),
            self.max_items,
            self.max_consecutive_aborts
        )
    }
}
