//! Elision statistics, per lock and per thread, read as `txmem-htm`'s [`ElisionStats`].
//!
//! Every elided lock keeps a [`Counters`] block (read it with
//! [`ElisionStatsExt::elision_stats`](crate::ElisionStatsExt::elision_stats)), and every thread
//! that runs the elision machinery keeps one too, cache-padded and registered in a global
//! list so [`global`] can sum them ([`thread`] reads the calling thread's).
//!
//! Costs: per-thread counters are written only by their owner (a plain load and store, no
//! atomic read-modify-write). Per-lock fallback acquisitions of exclusive locks are counted
//! while the lock is held, which also needs no read-modify-write. Per-lock aborts and
//! coarsened groups use one relaxed `fetch_add` on a cache line that no transaction reads
//! (they are rare, and an abort costs far more). Per-lock attempts and elided commits, the
//! counts every section would pay for, are kept only while [`set_per_lock_counts`] is on.
//! Read-side acquisitions of the reader-writer lock's biased fast path are not counted per
//! lock (that would put a shared write back on the path the bias exists to keep private).

use crate::htm::AbortStatus;
use crossbeam_utils::CachePadded;
use std::cell::{OnceCell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

// The snapshot types are `txmem-htm`'s, so the simulator's elided locks count the same way.
pub use txmem_htm::{AbortCounts, ElisionStats};

/// A block of statistics counters (the live form of [`ElisionStats`]).
#[derive(Debug, Default)]
pub struct Counters {
    attempts: AtomicU64,
    commits: AtomicU64,
    aborts: [AtomicU64; AbortCounts::SLOTS],
    fallback: AtomicU64,
    coarsened: AtomicU64,
}

/// Which counter to bump.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Stat {
    Attempt,
    Commit,
    Abort(AbortStatus),
    Fallback,
    Coarsened(u64),
}

impl Counters {
    /// A zeroed block.
    pub const fn new() -> Self {
        Counters {
            attempts: AtomicU64::new(0),
            commits: AtomicU64::new(0),
            aborts: [const { AtomicU64::new(0) }; AbortCounts::SLOTS],
            fallback: AtomicU64::new(0),
            coarsened: AtomicU64::new(0),
        }
    }

    #[inline]
    fn cell(&self, s: Stat) -> (&AtomicU64, u64) {
        match s {
            Stat::Attempt => (&self.attempts, 1),
            Stat::Commit => (&self.commits, 1),
            Stat::Abort(st) => (&self.aborts[AbortCounts::slot(st)], 1),
            Stat::Fallback => (&self.fallback, 1),
            Stat::Coarsened(n) => (&self.coarsened, n),
        }
    }

    /// Adds with an atomic read-modify-write (any thread may call this).
    #[inline]
    pub(crate) fn add_shared(&self, s: Stat) {
        let (c, n) = self.cell(s);
        c.fetch_add(n, Relaxed);
    }

    /// Adds with an atomic read-modify-write if per-lock counting of attempts and commits is
    /// on (see [`set_per_lock_counts`]).
    #[inline]
    pub(crate) fn add_per_lock(&self, s: Stat) {
        if PER_LOCK.load(Relaxed) {
            self.add_shared(s);
        }
    }

    /// Adds with a plain load and store: only correct while the caller is the only writer of
    /// this counter (the owning thread, or the holder of an exclusive lock).
    #[inline]
    pub(crate) fn add_owned(&self, s: Stat) {
        let (c, n) = self.cell(s);
        c.store(c.load(Relaxed).wrapping_add(n), Relaxed);
    }

    /// Reads the counters (each one atomically; the set is not a consistent snapshot while
    /// other threads are updating it).
    pub fn snapshot(&self) -> ElisionStats {
        ElisionStats {
            attempts: self.attempts.load(Relaxed),
            elided_commits: self.commits.load(Relaxed),
            aborts: AbortCounts::from_slots(self.aborts.each_ref().map(|a| a.load(Relaxed))),
            fallback_acquisitions: self.fallback.load(Relaxed),
            coarsened_sections: self.coarsened.load(Relaxed),
            // Neither is counted here (see `txmem_htm::ElisionStats`); the reader-writer lock
            // adds its bias revocations to its snapshot.
            ..ElisionStats::ZERO
        }
    }
}

static PER_LOCK: AtomicBool = AtomicBool::new(false);

/// Turns per-lock counting of attempts and elided commits on or off (off by default).
///
/// Counting them means an atomic add on a line shared by every thread that uses the lock, at
/// each section's start and commit: on real hardware that costs about as much as the elided
/// section itself, and under concurrency the line bounces between cores, which is the very
/// traffic elision exists to avoid. Per-thread counts ([`thread`], [`global`]) are always
/// kept (each thread writes its own line), and so are the per-lock counts of the rare
/// events: aborts by cause, fallback acquisitions, coarsened sections and bias revocations.
///
/// ```
/// use txmem_elide::{stats, ElidedMutex, ElisionStatsExt};
///
/// stats::set_per_lock_counts(true);
/// let m = ElidedMutex::<u32>::new(0);
/// *m.lock() += 1;
/// let s = m.elision_stats();
/// assert_eq!(s.elided_commits + s.fallback_acquisitions, 1);
/// ```
pub fn set_per_lock_counts(on: bool) {
    PER_LOCK.store(on, Relaxed);
}

/// Whether per-lock counting of attempts and elided commits is on.
pub fn per_lock_counts() -> bool {
    PER_LOCK.load(Relaxed)
}

struct Registry {
    live: Vec<Arc<CachePadded<Counters>>>,
    retired: ElisionStats,
}

static REGISTRY: parking_lot::Mutex<Registry> = parking_lot::Mutex::new(Registry {
    live: Vec::new(),
    retired: ElisionStats::ZERO,
});

struct Local(Arc<CachePadded<Counters>>);

thread_local! {
    /// The block the calling thread registered, for [`thread`]. The thread writes its counters
    /// through the elision engine's thread context, which this module does not see; it learns
    /// of the block here once, when the block is registered.
    static MINE: RefCell<Option<Arc<CachePadded<Counters>>>> = const { RefCell::new(None) };
}

impl Local {
    fn register() -> Local {
        let block = Arc::new(CachePadded::new(Counters::new()));
        REGISTRY.lock().live.push(block.clone());
        // Fails only while the thread is being torn down; `thread` then reads nothing.
        let _ = MINE.try_with(|m| *m.borrow_mut() = Some(block.clone()));
        Local(block)
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        let mut r = REGISTRY.lock();
        r.retired += self.0.snapshot();
        r.live.retain(|b| !Arc::ptr_eq(b, &self.0));
    }
}

/// One thread's counters, registered in the global list on first use (kept in the elision
/// engine's thread context).
pub(crate) struct ThreadCounters(OnceCell<Local>);

impl ThreadCounters {
    pub(crate) const fn new() -> Self {
        ThreadCounters(OnceCell::new())
    }

    /// Bumps a counter (the owning thread is the only writer).
    #[inline]
    pub(crate) fn add(&self, s: Stat) {
        self.0.get_or_init(Local::register).0.add_owned(s);
    }
}

/// The calling thread's statistics.
pub fn thread() -> ElisionStats {
    MINE.try_with(|m| m.borrow().as_ref().map(|b| b.snapshot()))
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// The sum over all threads, including threads that have exited.
pub fn global() -> ElisionStats {
    let r = REGISTRY.lock();
    r.live.iter().fold(r.retired, |acc, b| acc + b.snapshot())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aborts_land_in_their_cause_bucket() {
        let c = Counters::new();
        c.add_shared(Stat::Abort(AbortStatus::lock_busy()));
        c.add_shared(Stat::Abort(AbortStatus::explicit(1)));
        c.add_owned(Stat::Abort(AbortStatus::conflict()));
        c.add_owned(Stat::Abort(AbortStatus::capacity()));
        c.add_owned(Stat::Abort(AbortStatus::debug()));
        c.add_owned(Stat::Abort(AbortStatus::other()));
        c.add_owned(Stat::Coarsened(5));
        let s = c.snapshot();
        assert_eq!(
            s.aborts,
            AbortCounts {
                explicit: 1,
                lock_busy: 1,
                conflict: 1,
                capacity: 1,
                debug: 1,
                other: 1
            }
        );
        assert_eq!(s.aborts.total(), 6);
        assert_eq!(s.coarsened_sections, 5);
    }

    #[test]
    fn exited_threads_are_kept_in_global() {
        let before = global().fallback_acquisitions;
        std::thread::spawn(|| {
            let c = ThreadCounters::new();
            c.add(Stat::Fallback);
            c.add(Stat::Fallback);
            assert_eq!(thread().fallback_acquisitions, 2);
        })
        .join()
        .unwrap();
        assert!(global().fallback_acquisitions >= before + 2);
    }
}
