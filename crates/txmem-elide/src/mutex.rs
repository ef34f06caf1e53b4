//! The elided mutex (XSync's XScope behind the `lock_api` interface).

use crate::engine;
use crate::holds::Mode;
use crate::htm::{DefaultHtm, Htm};
use crate::stats::{Counters, ElisionStats};
use crossbeam_utils::CachePadded;
use lock_api::RawMutex as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The lock word and the counter of fallback acquisitions, which is only written while the
/// lock is held and so shares the lock's cache line at no cost.
struct Word {
    lock: parking_lot::RawMutex,
    fallback: AtomicU64,
}

/// A raw mutex whose critical sections run as hardware transactions when possible.
///
/// `lock` first tries to run the section as a transaction that reads the fallback lock's
/// word (subscribing to it: if any thread acquires the lock for real, the transaction
/// aborts). The per-thread adaptive [retry policy](crate::policy::retry) decides how often to
/// retry and when to give up and acquire the fallback lock, a [`parking_lot::RawMutex`].
/// `unlock` commits the transaction or releases the fallback lock.
///
/// Without HTM ([`Htm::available`] false, e.g. [`Rtm`](crate::htm::Rtm) on a CPU without
/// RTM) `lock` is one relaxed load plus the fallback lock's single compare-and-swap, and
/// `unlock` one relaxed load plus its release.
///
/// The lock word sits alone on its cache line (the struct is cache-padded, 256 bytes with its
/// statistics): otherwise writes to data next to it inside one transaction would abort every
/// other elided section that subscribed to the word.
///
/// Use it through [`ElidedMutex`]. Guards are not `Send`: a transaction belongs to the thread
/// that started it.
#[repr(C)]
pub struct RawElidedMutex<H: Htm = DefaultHtm> {
    word: CachePadded<Word>,
    shared: CachePadded<Counters>,
    htm: H,
}

/// A mutex with lock elision: `lock_api::Mutex` over [`RawElidedMutex`].
///
/// ```
/// use txmem_elide::ElidedMutex;
///
/// let m = ElidedMutex::<Vec<u32>>::new(Vec::new());
/// m.lock().push(1);
/// assert_eq!(*m.lock(), [1]);
/// ```
pub type ElidedMutex<T, H = DefaultHtm> = lock_api::Mutex<RawElidedMutex<H>, T>;

/// The guard of an [`ElidedMutex`].
pub type ElidedMutexGuard<'a, T, H = DefaultHtm> = lock_api::MutexGuard<'a, RawElidedMutex<H>, T>;

impl<H: Htm> RawElidedMutex<H> {
    /// An unlocked mutex.
    pub const fn new() -> Self {
        RawElidedMutex {
            word: CachePadded::new(Word {
                lock: parking_lot::RawMutex::INIT,
                fallback: AtomicU64::new(0),
            }),
            shared: CachePadded::new(Counters::new()),
            htm: H::INIT,
        }
    }

    /// The backend this lock elides with.
    pub fn htm(&self) -> &H {
        &self.htm
    }

    /// This lock's statistics.
    pub fn stats(&self) -> ElisionStats {
        let mut s = self.shared.snapshot();
        s.fallback_acquisitions += self.word.fallback.load(Relaxed);
        s
    }

    #[inline]
    pub(crate) fn fallback_locked(&self) -> bool {
        self.word.lock.is_locked()
    }

    #[inline]
    fn count_fallback(&self) {
        // Only the lock holder writes this counter, so a plain load and store suffice.
        let f = &self.word.fallback;
        f.store(f.load(Relaxed).wrapping_add(1), Relaxed);
    }

    /// Acquires the fallback lock directly, without trying to elide.
    #[inline]
    fn lock_fallback(&self) {
        self.word.lock.lock();
        self.count_fallback();
        self.htm.fallback_acquired();
    }

    pub(crate) fn wait_until_free(&self) {
        engine::wait_while_busy(
            || self.word.lock.is_locked(),
            || {
                // Queue behind the holder, then let go at once: a cheap way to sleep until
                // the lock is released without spinning.
                self.word.lock.lock();
                // SAFETY: acquired on the line above by this thread.
                unsafe { self.word.lock.unlock() };
            },
        )
    }

    /// Runs the retry policy; on return the section is either elided (and recorded as such
    /// for `unlock`) or holds the fallback.
    #[inline(never)]
    fn lock_elided(&self) {
        let elided = engine::enter(
            &self.htm,
            &self.shared,
            self.addr(),
            Mode::Exclusive,
            || self.word.lock.is_locked(),
            || self.wait_until_free(),
        );
        if !elided {
            self.acquire_fallback_after_policy();
        }
    }

    #[inline]
    fn addr(&self) -> usize {
        self as *const Self as usize
    }

    /// Acquires the fallback lock after the retry policy gave up on elision.
    pub(crate) fn acquire_fallback_after_policy(&self) {
        self.word.lock.lock();
        self.count_fallback();
        engine::fallback_acquired(&self.htm);
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.shared
    }

    /// Commits an elided section covering `sections` critical sections.
    pub(crate) fn commit(&self, sections: u32) {
        engine::commit(&self.htm, &self.shared, sections);
    }
}

impl<H: Htm> Default for RawElidedMutex<H> {
    fn default() -> Self {
        Self::new()
    }
}

impl<H: Htm> core::fmt::Debug for RawElidedMutex<H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RawElidedMutex")
            .field("htm", &self.htm.name())
            .field("fallback_locked", &self.fallback_locked())
            .finish()
    }
}

// SAFETY: mutual exclusion holds on every path. A fallback holder has the parking_lot lock.
// An elided section runs inside a transaction that read the lock word while it was free; by
// the `Htm` contract, a thread that later acquires the fallback lock either waits in
// `fallback_acquired` until the section has ended (simulated backends) or aborts and rolls
// the section back (hardware), and two elided sections are atomic and isolated from each
// other. `unlock` tells the two paths apart by a per-thread record written inside the
// transaction right after it started (so an abort erases it): with a record the section is
// elided; without one the caller, who holds a guard, holds the fallback lock.
unsafe impl<H: Htm> lock_api::RawMutex for RawElidedMutex<H> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();

    type GuardMarker = lock_api::GuardNoSend;

    #[inline]
    fn lock(&self) {
        if self.htm.available() {
            self.lock_elided();
        } else {
            self.lock_fallback();
        }
    }

    /// Tries the fallback lock once, without elision. Fails if this thread already holds the
    /// lock, elided or not.
    #[inline]
    fn try_lock(&self) -> bool {
        if self.htm.available() && engine::holds_conflicting(self.addr(), Mode::Exclusive) {
            return false;
        }
        if self.word.lock.try_lock() {
            self.count_fallback();
            self.htm.fallback_acquired();
            true
        } else {
            false
        }
    }

    #[inline]
    unsafe fn unlock(&self) {
        let committed = self.htm.available()
            && engine::release(&self.htm, &self.shared, self.addr(), Mode::Exclusive);
        if !committed {
            // SAFETY: the caller holds the lock and there is no elided record for it (see the
            // impl comment), so this thread holds the fallback lock.
            unsafe { self.word.lock.unlock() }
        }
    }

    /// Whether the *fallback* lock is held (elided sections do not show).
    #[inline]
    fn is_locked(&self) -> bool {
        self.word.lock.is_locked()
    }
}
