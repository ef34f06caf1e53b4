//! A scalable reader-biased reader-writer lock (BRAVO over `parking_lot`'s `RawRwLock`).
//!
//! While *reader bias* is on, a reader does not touch the shared lock word: it increments a
//! counter in its own cache-padded *reader slot* (each thread leases a slot index for its
//! lifetime, as in a big-reader lock), then checks that the bias is still on. The slot is
//! written only by its thread, so releasing a fast read lock is a plain store, and a thread
//! knows it holds a fast read lock exactly when its slot is nonzero. Threads beyond
//! [`READER_SLOTS`] live at once get no slot and always use the underlying lock. Readers on different slots share
//! no written cache line, so read-mostly workloads scale. A writer takes the underlying lock,
//! *revokes* the bias and waits for every slot to drain; readers that arrive meanwhile see the
//! bias off and queue on the underlying lock. The bias comes back on only after
//! [`RESTORE_AFTER_READS`] reads in a row have gone through the underlying lock with no
//! write in between (counted on the lock word's cache line, which those readers write
//! anyway): in read-mostly phases a revocation is soon amortized, while in write-heavy
//! phases the bias stays off and the lock behaves like the underlying one, with no
//! revocations at all. (BRAVO measures the revocation time instead and keeps the bias off
//! for a multiple of it; reading the time-stamp counter costs about 18 ns on the virtual
//! machines this was measured on, more than the rest of a read.)
//!
//! The handshake: a reader does `slot += 1` (a sequentially consistent store) then reads
//! `bias`; a writer does `bias = false`
//! then reads every slot; all four are sequentially consistent, so either the reader sees the
//! bias off (and backs out) or the writer sees the reader's slot (and waits for it).
//!
//! Invariant: whenever a writer holds the underlying lock and the bias is off, no fast
//! reader is inside (revocation establishes it; the bias is turned on only by readers holding
//! the underlying lock, or by a failed `try_lock_exclusive` undoing its own revocation).
//!
//! Writers cannot starve: once a writer has revoked the bias no new reader takes the fast
//! path, and `parking_lot`'s lock is task-fair (new readers queue behind a waiting writer).

use crossbeam_utils::{Backoff, CachePadded};
use lock_api::RawRwLock as _;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Number of reader slots per lock: how many threads can use the fast read path at once
/// (slot indices are leased per thread and returned when the thread exits).
pub const READER_SLOTS: usize = 32;

/// Consecutive reads through the underlying lock, with no write in between, after which a
/// reader turns the bias back on.
pub const RESTORE_AFTER_READS: u32 = 32;

/// The fields every reader reads, and writers write only while revoking.
struct Header {
    inner: parking_lot::RawRwLock,
    bias: AtomicBool,
    slow_reads: AtomicU32,
    revocations: AtomicU64,
}

/// A reader-biased raw reader-writer lock; the fallback of
/// [`RawElidedRwLock`](crate::RawElidedRwLock), and usable on its own through
/// [`BiasedRwLock`].
///
/// It is large (a cache line per reader slot, about 4 KiB): meant for a few hot,
/// read-mostly locks, not for one lock per object.
pub struct RawBiasedRwLock {
    header: CachePadded<Header>,
    slots: [CachePadded<AtomicUsize>; READER_SLOTS],
}

/// A reader-writer lock with BRAVO-style reader bias: `lock_api::RwLock` over
/// [`RawBiasedRwLock`].
///
/// ```
/// use txmem_elide::BiasedRwLock;
///
/// let l = BiasedRwLock::new(5);
/// assert_eq!(*l.read(), 5);
/// *l.write() += 1;
/// assert_eq!(*l.read(), 6);
/// ```
pub type BiasedRwLock<T> = lock_api::RwLock<RawBiasedRwLock, T>;

/// A thread's lease on a reader-slot index, returned to the pool when the thread exits.
struct SlotLease(usize);

static FREE_SLOTS: parking_lot::Mutex<Vec<usize>> = parking_lot::Mutex::new(Vec::new());
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

/// `SLOT` before the thread has asked for an index.
const UNASSIGNED: usize = usize::MAX;
/// `SLOT` when every index is leased to other threads.
const NO_SLOT: usize = usize::MAX - 1;

impl Drop for SlotLease {
    fn drop(&mut self) {
        let _ = SLOT.try_with(|s| s.set(NO_SLOT));
        FREE_SLOTS.lock().push(self.0);
    }
}

thread_local! {
    /// This thread's slot index (no destructor, so reading it is a single TLS load).
    static SLOT: Cell<usize> = const { Cell::new(UNASSIGNED) };
    /// Returns the index when the thread exits.
    static LEASE: Cell<Option<SlotLease>> = const { Cell::new(None) };
}

#[cold]
fn lease_slot() -> usize {
    let i = FREE_SLOTS.lock().pop().unwrap_or_else(|| {
        // SeqCst: a writer that reads `NEXT_SLOT` after revoking the bias must see every
        // index a reader that saw the bias on may be using (see `revoke`).
        let i = NEXT_SLOT.fetch_add(1, Ordering::SeqCst);
        if i < READER_SLOTS {
            i
        } else {
            NEXT_SLOT.store(READER_SLOTS, Ordering::Relaxed);
            NO_SLOT
        }
    });
    if i != NO_SLOT && LEASE.try_with(|l| l.set(Some(SlotLease(i)))).is_err() {
        // Thread teardown: cannot register the return, so do not take the slot.
        FREE_SLOTS.lock().push(i);
        return NO_SLOT;
    }
    let _ = SLOT.try_with(|s| s.set(i));
    i
}

/// This thread's slot index, if it has one.
#[inline]
fn my_slot() -> Option<usize> {
    let i = SLOT.try_with(Cell::get).unwrap_or(NO_SLOT);
    let i = if i == UNASSIGNED { lease_slot() } else { i };
    if i < READER_SLOTS {
        Some(i)
    } else {
        None
    }
}

impl RawBiasedRwLock {
    /// An unlocked lock with reader bias on.
    pub const fn new() -> Self {
        RawBiasedRwLock {
            header: CachePadded::new(Header {
                inner: parking_lot::RawRwLock::INIT,
                bias: AtomicBool::new(true),
                slow_reads: AtomicU32::new(0),
                revocations: AtomicU64::new(0),
            }),
            slots: [const { CachePadded::new(AtomicUsize::new(0)) }; READER_SLOTS],
        }
    }

    #[inline]
    pub(crate) fn addr(&self) -> usize {
        self as *const Self as usize
    }

    /// Whether reader bias is currently on.
    pub fn reader_bias(&self) -> bool {
        self.header.bias.load(Ordering::Relaxed)
    }

    /// How many times writers have revoked the reader bias.
    pub fn revocations(&self) -> u64 {
        self.header.revocations.load(Ordering::Relaxed)
    }

    /// True if the underlying lock is held for writing.
    #[inline]
    pub(crate) fn write_locked(&self) -> bool {
        self.header.inner.is_locked_exclusive()
    }

    /// True if a writer could not enter now: the underlying lock is held (by a writer or
    /// slow readers), or fast readers are inside. Reads every slot while bias is on, so a
    /// transaction calling it conflicts with any fast reader that arrives later.
    #[inline]
    pub(crate) fn writer_busy(&self) -> bool {
        self.header.inner.is_locked()
            || (self.header.bias.load(Ordering::SeqCst)
                && self.slots.iter().any(|s| s.load(Ordering::SeqCst) != 0))
    }

    /// Tries the fast path: succeeds if the bias is on and this thread has a slot.
    #[inline]
    fn try_read_fast(&self) -> bool {
        if !self.header.bias.load(Ordering::Relaxed) {
            return false;
        }
        let Some(i) = my_slot() else {
            return false;
        };
        let slot = &self.slots[i];
        // Only this thread writes its slot, so load-then-store is an increment. The SeqCst
        // store orders it before the bias load below (the reader half of the handshake).
        let held = slot.load(Ordering::Relaxed);
        slot.store(held + 1, Ordering::SeqCst);
        if self.header.bias.load(Ordering::SeqCst) {
            return true;
        }
        // A writer revoked the bias in between: back out, it may be waiting for us.
        slot.store(held, Ordering::Release);
        false
    }

    #[inline]
    fn maybe_restore_bias(&self) {
        // Called with the underlying lock held for reading, so no writer is running.
        // The count is approximate on purpose: concurrent slow readers may lose increments
        // (a plain load and store instead of a locked read-modify-write), which only delays
        // restoring the bias a little.
        let h = &self.header;
        if !h.bias.load(Ordering::Relaxed) {
            let n = h.slow_reads.load(Ordering::Relaxed) + 1;
            h.slow_reads.store(n, Ordering::Relaxed);
            if n >= RESTORE_AFTER_READS {
                h.bias.store(true, Ordering::SeqCst);
            }
        }
    }

    #[cold]
    fn lock_shared_slow(&self) {
        self.header.inner.lock_shared();
        self.maybe_restore_bias();
    }

    /// Turns the bias off and waits for fast readers to leave. Requires the underlying lock
    /// held exclusively.
    #[cold]
    fn revoke(&self) {
        self.header.bias.store(false, Ordering::SeqCst);
        // Only slots ever leased can be nonzero. A reader leases its index (SeqCst) before
        // its slot store, which precedes its bias load; if that load saw the bias on, the
        // lease precedes our bias store, so this load sees it.
        let leased = NEXT_SLOT.load(Ordering::SeqCst).min(READER_SLOTS);
        for slot in &self.slots[..leased] {
            let backoff = Backoff::new();
            while slot.load(Ordering::SeqCst) != 0 {
                backoff.snooze();
            }
        }
        let r = &self.header.revocations;
        // Written only by the exclusive holder.
        r.store(r.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// Called by a writer holding the underlying lock exclusively: revokes the bias if it is
    /// on, and restarts the count of reads towards restoring it.
    #[inline]
    fn writer_entered(&self) {
        if self.header.bias.load(Ordering::Relaxed) {
            self.revoke();
        }
        // Exclusive holder: no slow reader is counting concurrently.
        self.header.slow_reads.store(0, Ordering::Relaxed);
    }

    /// Releases a read lock: the fast one if this thread's slot is nonzero, otherwise the
    /// underlying one (all read locks a thread holds on one lock are interchangeable).
    ///
    /// # Safety
    ///
    /// The thread must hold a read lock on this lock.
    #[inline]
    pub(crate) unsafe fn release_read(&self) {
        if let Some(i) = my_slot() {
            let slot = &self.slots[i];
            let held = slot.load(Ordering::Relaxed);
            if held > 0 {
                // Release: the section's reads happen before a writer sees the slot drop.
                slot.store(held - 1, Ordering::Release);
                return;
            }
        }
        // SAFETY: no fast read lock is held by this thread, so the caller's read lock is
        // held on the underlying lock.
        unsafe { self.header.inner.unlock_shared() }
    }
}

impl Default for RawBiasedRwLock {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for RawBiasedRwLock {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RawBiasedRwLock")
            .field("reader_bias", &self.reader_bias())
            .field("revocations", &self.revocations())
            .finish()
    }
}

// SAFETY: readers and writers exclude each other. A writer holds the underlying lock
// exclusively, which excludes slow readers and other writers; fast readers are excluded by
// the Dekker-style handshake in the module documentation (SeqCst slot increment then bias
// load, against SeqCst bias store then slot loads): a fast reader either sees the bias off
// and leaves before reading data, or is seen by the writer, which waits until its slot's
// Release decrement (read with SeqCst, so the reader's reads happen before the writer's
// writes). A fast reader that sees the bias on after a writer has released synchronizes with
// that writer through the reader that restored the bias while holding the underlying read
// lock. Releases are matched with acquisitions through the thread's own slot: it is nonzero
// exactly while the thread holds fast read locks, and no other thread writes it.
unsafe impl lock_api::RawRwLock for RawBiasedRwLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();

    type GuardMarker = lock_api::GuardNoSend;

    #[inline]
    fn lock_shared(&self) {
        if !self.try_read_fast() {
            self.lock_shared_slow();
        }
    }

    #[inline]
    fn try_lock_shared(&self) -> bool {
        if self.try_read_fast() {
            return true;
        }
        if self.header.inner.try_lock_shared() {
            self.maybe_restore_bias();
            true
        } else {
            false
        }
    }

    #[inline]
    unsafe fn unlock_shared(&self) {
        // SAFETY: the caller holds a read lock.
        unsafe { self.release_read() }
    }

    #[inline]
    fn lock_exclusive(&self) {
        self.header.inner.lock_exclusive();
        self.writer_entered();
    }

    fn try_lock_exclusive(&self) -> bool {
        if !self.header.inner.try_lock_exclusive() {
            return false;
        }
        if self.header.bias.load(Ordering::Relaxed) {
            self.header.bias.store(false, Ordering::SeqCst);
            if self.slots.iter().any(|s| s.load(Ordering::SeqCst) != 0) {
                // Readers inside: give up rather than wait. The bias must go back on: a
                // writer that finds it off assumes no fast reader is inside.
                self.header.bias.store(true, Ordering::SeqCst);
                // SAFETY: acquired above by this thread.
                unsafe { self.header.inner.unlock_exclusive() };
                return false;
            }
        }
        self.header.slow_reads.store(0, Ordering::Relaxed);
        true
    }

    #[inline]
    unsafe fn unlock_exclusive(&self) {
        // SAFETY: the caller holds the write lock, i.e. the underlying lock exclusively.
        unsafe { self.header.inner.unlock_exclusive() }
    }

    fn is_locked(&self) -> bool {
        self.header.inner.is_locked() || self.slots.iter().any(|s| s.load(Ordering::Relaxed) != 0)
    }

    fn is_locked_exclusive(&self) -> bool {
        self.header.inner.is_locked_exclusive()
    }
}
