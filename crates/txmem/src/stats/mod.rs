//! Statistics a user can act on: commits, aborts by cause, blocking retries,
//! read/write-set sizes and a per-call-site profile.
//!
//! Counters are per thread: the owning thread updates them with plain
//! (relaxed load + store) writes to its own cache lines, so leaving them on
//! costs a handful of non-atomic-RMW instructions per transaction (see the
//! measured figure in `docs/results/`). [`snapshot`] sums every thread's
//! counters, including threads that have exited.
//!
//! ```
//! use txmem::{atomically, stats, TBox};
//! let b = TBox::new(0u64);
//! let before = stats::snapshot();
//! atomically(|tx| b.set(tx, 1));
//! let delta = stats::snapshot() - before;
//! assert!(delta.commits >= 1);
//! ```

mod counters;
mod sites;

pub use counters::Stats;
pub use sites::{SiteProfile, SiteStats};

pub(crate) use counters::{register as register_thread, retire as retire_thread, ThreadStats};
pub(crate) use sites::{SiteCounters, SiteTable};

use std::sync::atomic::{AtomicBool, Ordering};

/// Why a committed transaction ran irrevocably (serially): the three ways
/// a transactional program loses its concurrency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Serialization {
    /// Its options asked for it from the start.
    Started,
    /// It called `become_irrevocable` mid-flight.
    Switched,
    /// The runtime serialized it after too many consecutive aborts.
    AfterAborts,
}

static ENABLED: AtomicBool = AtomicBool::new(true);

/// Turns statistics collection on or off for all threads (on by default).
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

#[inline]
pub(crate) fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Zeroes the maxima ([`Stats::max_items`], [`Stats::max_consecutive_aborts`])
/// of every thread, so that later snapshots' maxima cover only what runs from
/// now on (a difference of snapshots cannot undo a maximum).
///
/// Call it while no transaction runs: each thread updates its own counters
/// without locked instructions, so a maximum it records concurrently may be
/// kept or lost.
pub fn reset_maxima() {
    counters::reset_maxima()
}

/// Sums the counters of every thread (live and exited).
pub fn snapshot() -> Stats {
    counters::snapshot()
}

/// The per-call-site profile: one row per source location of an
/// `atomically` (or `TxOptions::run`) call, summed over threads.
pub fn site_profile() -> SiteProfile {
    sites::profile()
}
