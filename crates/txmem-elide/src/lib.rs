//! Lock elision with hardware transactional memory, behind `lock_api` locks.
//!
//! Critical sections guarded by the locks in this crate run, when the CPU allows it, as
//! hardware transactions that only *read* the lock (subscribe to it) instead of acquiring it,
//! so sections that touch different data run in parallel. When transactions keep failing,
//! a per-thread policy falls back to acquiring the lock for real.
//!
//! # Pieces
//!
//! * [`htm`]: the [`Htm`] trait (begin with an abort status, end, abort with an
//!   8-bit code, test, plus optional suspend/resume and rollback-only begin) and its
//!   backends: [`Rtm`](htm::Rtm) (Intel RTM via stable `asm!`, enabled only after run-time
//!   detection), [`MockHtm`](htm::MockHtm) (scripted, for deterministic tests) and
//!   [`NoHtm`](htm::NoHtm).
//! * [`ElidedMutex`] (over [`RawElidedMutex`], a `lock_api::RawMutex`): XSync's XScope with
//!   the adaptive retry limit and lock-busy waiting; [`Batch`] adds transaction coarsening.
//! * [`ElidedRwLock`] (over [`RawElidedRwLock`], a `lock_api::RawRwLock`): readers and
//!   writers elided, over a reader-biased fallback lock ([`BiasedRwLock`]) that makes
//!   read-mostly workloads scale even without HTM.
//! * [`TxCondvar`]: a condition variable whose notifications are deferred to the end of the
//!   elided section, with a [`Notifier`] handle for commit handlers.
//! * [`policy`]: the retry and coarsening policies as pure state machines. They are
//!   `txmem-htm`'s, re-exported here; the simulator (`txmem-sim`) runs the same ones in its
//!   simulated elided lock, and the abort statuses in [`htm`] are that crate's too.
//! * [`stats`]: per-lock and per-thread counters (elided commits, aborts by cause, fallback
//!   acquisitions, coarsened sections).
//!
//! # Cargo features
//!
//! * `serde` (off by default): turns on `txmem-htm`'s `serde` feature, so the
//!   elision counts this crate reports ([`ElisionStats`])
//!   implement `serde::Serialize`.
//!
//! # On a CPU without HTM
//!
//! [`DefaultHtm`](htm::DefaultHtm) is [`Rtm`](htm::Rtm), which checks CPUID once per process
//! (and probes that transactions really commit), caching the answer. Where RTM is absent or
//! disabled, every lock skips elision after one relaxed load and behaves as its fallback: a
//! `parking_lot` mutex, or the reader-biased reader-writer lock. No transactional
//! instruction is ever executed on such a CPU. Set `TXMEM_ELIDE_HTM=off` to force this mode.
//!
//! # What may run in an elided section
//!
//! Anything, safely: an aborted hardware transaction leaves no trace. But system calls, I/O,
//! sleeping, page faults and other effects outside memory abort the transaction every time,
//! so such sections will always end up on the fallback lock. Effects that must happen should
//! be deferred until after the section (as [`TxCondvar`] does for wake-ups).
//!
//! ```
//! use txmem_elide::{stats, ElidedMutex, ElisionStatsExt};
//!
//! stats::set_per_lock_counts(true); // off by default: see `stats`
//! let counter = ElidedMutex::<u64>::new(0);
//! std::thread::scope(|s| {
//!     for _ in 0..2 {
//!         s.spawn(|| {
//!             for _ in 0..1000 {
//!                 *counter.lock() += 1;
//!             }
//!         });
//!     }
//! });
//! assert_eq!(*counter.lock(), 2000);
//! let st = counter.elision_stats();
//! assert_eq!(st.elided_commits + st.fallback_acquisitions, 2001);
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

mod batch;
mod condvar;
mod engine;
mod holds;
pub mod htm;
mod mutex;
mod rwlock;
pub mod stats;

pub use batch::Batch;
pub use condvar::{flush_deferred, Notifier, TxCondvar, WaitTicket, WaitTimeoutResult};
pub use engine::{configure_thread, thread_policy};
pub use mutex::{ElidedMutex, ElidedMutexGuard, RawElidedMutex};
pub use rwlock::{
    BiasedRwLock, ElidedRwLock, ElidedRwLockReadGuard, ElidedRwLockWriteGuard, RawBiasedRwLock,
    RawElidedRwLock, READER_SLOTS, RESTORE_AFTER_READS,
};
pub use stats::ElisionStats;
pub use txmem_htm::policy;

use htm::Htm;

/// Reads the elision statistics of an elided lock.
pub trait ElisionStatsExt {
    /// This lock's statistics.
    fn elision_stats(&self) -> ElisionStats;
}

impl<H: Htm, T: ?Sized> ElisionStatsExt for lock_api::Mutex<RawElidedMutex<H>, T> {
    fn elision_stats(&self) -> ElisionStats {
        // SAFETY: the raw lock is only used to read its counters.
        unsafe { self.raw() }.stats()
    }
}

impl<H: Htm, T: ?Sized> ElisionStatsExt for lock_api::RwLock<RawElidedRwLock<H>, T> {
    fn elision_stats(&self) -> ElisionStats {
        // SAFETY: the raw lock is only used to read its counters.
        unsafe { self.raw() }.stats()
    }
}
