//! NOrec's sequence lock, written once over any atomic word so that the model checker runs the
//! same code (`tests/loom.rs`, with loom's atomics) as the library (with std's).
//!
//! The lock is even while no commit writes back and odd during a write-back. A reader takes an
//! even *snapshot*, reads memory, and accepts what it read only if the lock still holds that
//! snapshot afterwards; a committer moves the lock from its snapshot to odd (which fails if
//! anyone committed since), writes back, and releases it two steps past the snapshot.

/// The atomic operations the protocol needs, on a 64-bit word.
pub trait SeqWord {
    /// Load with acquire ordering.
    fn load_acquire(&self) -> u64;
    /// Load with relaxed ordering (after [`SeqWord::fence_acquire`]).
    fn load_relaxed(&self) -> u64;
    /// Store with release ordering.
    fn store_release(&self, v: u64);
    /// Compare-and-swap with acquire ordering on success.
    fn cas_acquire(&self, current: u64, new: u64) -> bool;
    /// An acquire fence: loads before it are ordered before loads after it.
    fn fence_acquire();
    /// A release fence: stores before it are ordered before stores after it.
    fn fence_release();
    /// Called while waiting for a write-back to finish, `round` times so far.
    fn wait(round: u32);
}

impl SeqWord for std::sync::atomic::AtomicU64 {
    #[inline(always)]
    fn load_acquire(&self) -> u64 {
        self.load(std::sync::atomic::Ordering::Acquire)
    }
    #[inline(always)]
    fn load_relaxed(&self) -> u64 {
        self.load(std::sync::atomic::Ordering::Relaxed)
    }
    #[inline(always)]
    fn store_release(&self, v: u64) {
        self.store(v, std::sync::atomic::Ordering::Release)
    }
    #[inline(always)]
    fn cas_acquire(&self, current: u64, new: u64) -> bool {
        use std::sync::atomic::Ordering::{Acquire, Relaxed};
        self.compare_exchange(current, new, Acquire, Relaxed)
            .is_ok()
    }
    #[inline(always)]
    fn fence_acquire() {
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire)
    }
    #[inline(always)]
    fn fence_release() {
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release)
    }
    fn wait(round: u32) {
        // A write-back is short unless its thread was preempted: spin, then give the CPU up.
        if round < 64 {
            std::hint::spin_loop()
        } else {
            std::thread::yield_now()
        }
    }
}

#[cfg(txmem_loom)]
impl SeqWord for loom::sync::atomic::AtomicU64 {
    fn load_acquire(&self) -> u64 {
        self.load(loom::sync::atomic::Ordering::Acquire)
    }
    fn load_relaxed(&self) -> u64 {
        self.load(loom::sync::atomic::Ordering::Relaxed)
    }
    fn store_release(&self, v: u64) {
        self.store(v, loom::sync::atomic::Ordering::Release)
    }
    fn cas_acquire(&self, current: u64, new: u64) -> bool {
        use loom::sync::atomic::Ordering::{Acquire, Relaxed};
        self.compare_exchange(current, new, Acquire, Relaxed)
            .is_ok()
    }
    fn fence_acquire() {
        loom::sync::atomic::fence(loom::sync::atomic::Ordering::Acquire)
    }
    fn fence_release() {
        loom::sync::atomic::fence(loom::sync::atomic::Ordering::Release)
    }
    fn wait(_round: u32) {
        loom::thread::yield_now()
    }
}

/// An even value of the lock, waiting out a write-back in progress.
pub fn snapshot<W: SeqWord>(seq: &W) -> u64 {
    let mut round = 0;
    loop {
        let s = seq.load_acquire();
        if s & 1 == 0 {
            return s;
        }
        W::wait(round);
        round = round.saturating_add(1);
    }
}

/// True if the lock still holds `snap`: every load made before this call saw memory as it was
/// at `snap`.
#[inline(always)]
pub fn unchanged<W: SeqWord>(seq: &W, snap: u64) -> bool {
    W::fence_acquire();
    seq.load_relaxed() == snap
}

/// A fresh snapshot at which `still_valid` (which rereads what was read before) holds, or None
/// if it does not.
pub fn revalidate<W: SeqWord>(seq: &W, mut still_valid: impl FnMut() -> bool) -> Option<u64> {
    loop {
        let s = snapshot(seq);
        if !still_valid() {
            return None;
        }
        if unchanged(seq, s) {
            return Some(s);
        }
    }
}

/// Takes the lock for a write-back, if nobody committed since `snap`.
#[inline(always)]
pub fn try_lock<W: SeqWord>(seq: &W, snap: u64) -> bool {
    if !seq.cas_acquire(snap, snap + 1) {
        return false;
    }
    // The write-back's stores must not be seen without the odd value: a reader that loads one
    // of them and then fences (`unchanged`) must find the lock moved. Without this fence the
    // language's memory model allows the reader to see a new value beside the old snapshot
    // (x86 does not, but the compiler may reorder); the model checker found it.
    W::fence_release();
    true
}

/// Releases the lock taken at `snap`, publishing the write-back.
#[inline(always)]
pub fn unlock<W: SeqWord>(seq: &W, snap: u64) {
    seq.store_release(snap + 2)
}
