//! The elided reader-writer lock and its reader-biased fallback.

mod biased;

pub use biased::{BiasedRwLock, RawBiasedRwLock, READER_SLOTS, RESTORE_AFTER_READS};

use crate::engine;
use crate::holds::Mode;
use crate::htm::{DefaultHtm, Htm};
use crate::stats::{Counters, ElisionStats, Stat};
use crossbeam_utils::CachePadded;
use lock_api::RawRwLock as _;

/// A raw reader-writer lock whose readers and writers run as hardware transactions when
/// possible, over a reader-biased fallback ([`RawBiasedRwLock`]).
///
/// * An elided reader's transaction reads the fallback's writer state, so it aborts if a
///   writer takes the lock for real; it writes nothing shared, so elided readers never
///   conflict with each other.
/// * An elided writer's transaction checks that the fallback is not held and that no biased
///   reader is inside (reading the reader slots while the bias is on), so any real
///   acquisition aborts it.
/// * Both use the per-thread adaptive [retry policy](crate::policy::retry).
///
/// Without HTM it *is* the biased lock plus one relaxed load per operation: reads in a
/// read-mostly workload touch only the thread's own reader slot.
///
/// Use it through [`ElidedRwLock`]. Guards are not `Send`.
#[repr(C)]
pub struct RawElidedRwLock<H: Htm = DefaultHtm> {
    lock: RawBiasedRwLock,
    shared: CachePadded<Counters>,
    htm: H,
}

/// A reader-writer lock with lock elision: `lock_api::RwLock` over [`RawElidedRwLock`].
///
/// ```
/// use std::collections::HashMap;
/// use txmem_elide::ElidedRwLock;
///
/// let map = ElidedRwLock::<HashMap<u32, u32>>::new(HashMap::new());
/// map.write().insert(1, 10);
/// assert_eq!(map.read().get(&1), Some(&10));
/// ```
pub type ElidedRwLock<T, H = DefaultHtm> = lock_api::RwLock<RawElidedRwLock<H>, T>;

/// The read guard of an [`ElidedRwLock`].
pub type ElidedRwLockReadGuard<'a, T, H = DefaultHtm> =
    lock_api::RwLockReadGuard<'a, RawElidedRwLock<H>, T>;

/// The write guard of an [`ElidedRwLock`].
pub type ElidedRwLockWriteGuard<'a, T, H = DefaultHtm> =
    lock_api::RwLockWriteGuard<'a, RawElidedRwLock<H>, T>;

impl<H: Htm> RawElidedRwLock<H> {
    /// An unlocked lock.
    pub const fn new() -> Self {
        RawElidedRwLock {
            lock: RawBiasedRwLock::new(),
            shared: CachePadded::new(Counters::new()),
            htm: H::INIT,
        }
    }

    /// The backend this lock elides with.
    pub fn htm(&self) -> &H {
        &self.htm
    }

    /// The reader-biased fallback lock.
    pub fn fallback(&self) -> &RawBiasedRwLock {
        &self.lock
    }

    /// This lock's statistics. Fallback acquisitions count writers, and readers only when
    /// the retry policy sent them to the fallback (biased reads on a machine without HTM are
    /// not counted; see [`crate::stats`]).
    pub fn stats(&self) -> ElisionStats {
        let mut s = self.shared.snapshot();
        s.bias_revocations = self.lock.revocations();
        s
    }

    fn wait_no_writer(&self) {
        engine::wait_while_busy(
            || self.lock.write_locked(),
            || {
                self.lock.lock_shared();
                // SAFETY: acquired on the line above by this thread.
                unsafe { self.lock.unlock_shared() };
            },
        )
    }

    fn wait_writable(&self) {
        engine::wait_while_busy(
            || self.lock.writer_busy(),
            || {
                self.lock.lock_exclusive();
                // SAFETY: acquired on the line above by this thread.
                unsafe { self.lock.unlock_exclusive() };
            },
        )
    }

    #[inline(never)]
    fn lock_shared_elided(&self) {
        self.lock_elided(
            Mode::Shared,
            || self.lock.write_locked(),
            || self.wait_no_writer(),
            || self.lock.lock_shared(),
        )
    }

    #[inline(never)]
    fn lock_exclusive_elided(&self) {
        self.lock_elided(
            Mode::Exclusive,
            || self.lock.writer_busy(),
            || self.wait_writable(),
            || self.lock.lock_exclusive(),
        )
    }

    /// The elided acquisition shared by readers and writers: they differ only
    /// in their mode, what makes the fallback lock busy for them, how they wait
    /// for it, and which mode of it they take when elision gives up.
    #[inline(always)]
    fn lock_elided(
        &self,
        mode: Mode,
        busy: impl Fn() -> bool,
        wait: impl Fn(),
        take_fallback: impl FnOnce(),
    ) {
        if engine::enter(&self.htm, &self.shared, self.lock.addr(), mode, busy, wait) {
            return;
        }
        take_fallback();
        self.shared.add_shared(Stat::Fallback);
        engine::fallback_acquired(&self.htm);
    }
}

impl<H: Htm> Default for RawElidedRwLock<H> {
    fn default() -> Self {
        Self::new()
    }
}

impl<H: Htm> core::fmt::Debug for RawElidedRwLock<H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RawElidedRwLock")
            .field("htm", &self.htm.name())
            .field("fallback", &self.lock)
            .finish()
    }
}

// SAFETY: fallback acquisitions are exclusive by `RawBiasedRwLock`'s argument. An elided
// reader runs in a transaction that read the writer state while no writer held the lock; an
// elided writer one that saw the lock free and no biased reader inside (reading every slot
// while the bias is on). By the `Htm` contract a later real acquisition (which writes the
// lock word or a slot, then calls `fallback_acquired`) either waits for the section or aborts
// it, and elided sections are isolated from each other. Releases match acquisitions: read
// holds that bypass the underlying lock are recorded per thread (an `Elided` record is made
// inside the transaction, so an abort erases it, and likewise for elided writers); a release
// without a matching record was taken on the underlying lock.
unsafe impl<H: Htm> lock_api::RawRwLock for RawElidedRwLock<H> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();

    type GuardMarker = lock_api::GuardNoSend;

    #[inline]
    fn lock_shared(&self) {
        if self.htm.available() {
            self.lock_shared_elided();
        } else {
            self.lock.lock_shared();
            self.htm.fallback_acquired();
        }
    }

    /// Tries the fallback once, without elision. Fails if this thread holds the write lock
    /// elided.
    #[inline]
    fn try_lock_shared(&self) -> bool {
        if self.htm.available() && engine::holds_conflicting(self.lock.addr(), Mode::Shared) {
            return false;
        }
        if self.lock.try_lock_shared() {
            self.htm.fallback_acquired();
            true
        } else {
            false
        }
    }

    #[inline]
    unsafe fn unlock_shared(&self) {
        let committed = self.htm.available()
            && engine::release(&self.htm, &self.shared, self.lock.addr(), Mode::Shared);
        if !committed {
            // SAFETY: the caller holds a read lock and it was not elided, so it is held on
            // the biased fallback.
            unsafe { self.lock.unlock_shared() }
        }
    }

    #[inline]
    fn lock_exclusive(&self) {
        if self.htm.available() {
            self.lock_exclusive_elided();
        } else {
            self.lock.lock_exclusive();
            self.shared.add_owned(Stat::Fallback);
            self.htm.fallback_acquired();
        }
    }

    /// Tries the fallback once, without elision. Fails if this thread holds the lock elided.
    #[inline]
    fn try_lock_exclusive(&self) -> bool {
        if self.htm.available() && engine::holds_conflicting(self.lock.addr(), Mode::Exclusive) {
            return false;
        }
        if self.lock.try_lock_exclusive() {
            self.shared.add_owned(Stat::Fallback);
            self.htm.fallback_acquired();
            true
        } else {
            false
        }
    }

    #[inline]
    unsafe fn unlock_exclusive(&self) {
        let committed = self.htm.available()
            && engine::release(&self.htm, &self.shared, self.lock.addr(), Mode::Exclusive);
        if !committed {
            // SAFETY: the caller holds the write lock and it was not elided.
            unsafe { self.lock.unlock_exclusive() }
        }
    }

    /// Whether the fallback is held by anyone (elided sections do not show).
    fn is_locked(&self) -> bool {
        self.lock.is_locked()
    }

    /// Whether the fallback is held by a writer (elided writers do not show).
    fn is_locked_exclusive(&self) -> bool {
        self.lock.write_locked()
    }
}
