//! The version-lock word that guards every transactional subobject.
//!
//! A [`TVersion`] packs a lock bit and a monotonically increasing version number
//! into one `AtomicU64`. Committing transactions lock the words of the items they
//! write, install, and publish a larger version while unlocking; readers record
//! the version they saw and later check that it is unchanged and unlocked.
//!
//! Versions are multiples of [`VERSION_STEP`]; the low bits are reserved: bit 0
//! is the lock bit and bits 1–2 are free for the owning object's own flags
//! (for example a "being inserted" mark).

use std::sync::atomic::Ordering;

use crate::sync::{spin_hint, AtomicU64};

/// The lock bit of a version word.
pub const LOCK_BIT: u64 = 1;
/// Low bits an object may use for its own flags (never compared as version).
pub const USER_BITS: u64 = 0b110;
/// The distance between two consecutive versions.
pub const VERSION_STEP: u64 = 8;
const VERSION_MASK: u64 = !(VERSION_STEP - 1);

/// How many times a committing transaction re-reads a busy lock before it
/// gives up. Locks are held only for the few instructions of an install, so
/// a short bounded spin resolves most collisions without an abort, and the
/// bound keeps commit deadlock-free without ordering the write set.
#[cfg(not(txmem_loom))]
pub(crate) const LOCK_SPINS: u32 = 64;
#[cfg(txmem_loom)]
pub(crate) const LOCK_SPINS: u32 = 2;

/// A version number with a lock bit: the concurrency-control word of a
/// transactional subobject.
///
/// Most users never touch this type; it is public so that custom
/// [`TObject`](crate::TObject) implementations can use the same protocol as the
/// built-in datatypes.
///
/// ```
/// use txmem::TVersion;
/// let v = TVersion::new();
/// let seen = v.load();
/// assert!(!TVersion::is_locked(seen));
/// assert!(v.try_lock_at(seen));
/// v.unlock_to(TVersion::next_after(seen, 0));
/// assert!(v.load() > seen);
/// ```
#[derive(Debug, Default)]
#[repr(transparent)]
pub struct TVersion(AtomicU64);

impl TVersion {
    /// A fresh, unlocked version word (version 0).
    #[cfg(not(txmem_loom))]
    pub const fn new() -> Self {
        TVersion(AtomicU64::new(0))
    }

    /// A fresh, unlocked version word (version 0).
    #[cfg(txmem_loom)]
    pub fn new() -> Self {
        TVersion(AtomicU64::new(0))
    }

    /// A version word starting at `version` (rounded down to a version step).
    pub fn with_version(version: u64) -> Self {
        TVersion(AtomicU64::new(version & VERSION_MASK))
    }

    /// Reads the word (version, lock bit and flag bits), sequentially
    /// consistent.
    ///
    /// Why not acquire: a commit that does not tick the clock (one write,
    /// or the no-clock modes) publishes a version just past the clock value
    /// it read after locking, and a reader accepts that version without
    /// revalidating if its snapshot bound, read from the clock, covers it.
    /// That is sound because the committer's lock precedes its clock read,
    /// which precedes the clock change the reader's bound came from, which
    /// precedes the reader's version loads: an order the lock's and the
    /// clock's sequentially consistent accesses give, but that constrains
    /// only sequentially consistent loads. With acquire loads a reader could
    /// see a transfer's credit and not its debit (Miri's weak-memory
    /// emulation found such an audit). On x86 both orderings are a plain
    /// load, and on ARMv8 both are `ldar` unless the target has RCpc.
    #[inline]
    pub fn load(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }

    /// Reads the word with sequentially consistent ordering: the same as
    /// [`load`](Self::load), named where the runtime pairs the read with a
    /// read of a global flag (blocking `retry`, irrevocability).
    #[inline]
    pub fn load_seqcst(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }

    /// True when the word's lock bit is set.
    #[inline]
    pub const fn is_locked(word: u64) -> bool {
        word & LOCK_BIT != 0
    }

    /// The version number part of a word (flags and lock bit cleared).
    #[inline]
    pub const fn version_of(word: u64) -> u64 {
        word & VERSION_MASK
    }

    /// Locks the word if it still equals `expected` (which must be unlocked).
    /// Fails if the word changed, including if someone else locked it.
    #[inline]
    pub fn try_lock_at(&self, expected: u64) -> bool {
        debug_assert!(!Self::is_locked(expected));
        self.0
            .compare_exchange(
                expected,
                expected | LOCK_BIT,
                Ordering::SeqCst,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    /// Locks the word whatever its version, spinning a bounded number of
    /// times while another transaction holds it. Returns the word as it was
    /// just before locking, or `None` if the lock stayed busy.
    #[inline]
    pub fn lock_bounded(&self) -> Option<u64> {
        let mut spins = 0;
        loop {
            let cur = self.0.load(Ordering::Relaxed);
            if !Self::is_locked(cur) {
                if self.try_lock_at(cur) {
                    return Some(cur);
                }
            } else if spins >= LOCK_SPINS {
                return None;
            }
            spins += 1;
            spin_hint();
        }
    }

    /// Releases a lock taken by this transaction without changing the version
    /// (the abort path). `previous` is the word before locking.
    #[inline]
    pub fn unlock_unchanged(&self, previous: u64) {
        self.0.store(previous & !LOCK_BIT, Ordering::Release);
    }

    /// Releases the lock and publishes `word` (normally from [`next_after`](Self::next_after)).
    #[inline]
    pub fn unlock_to(&self, word: u64) {
        debug_assert!(!Self::is_locked(word));
        self.0.store(word, Ordering::Release);
    }

    /// The word a committing transaction publishes: the commit version, but
    /// always larger than the previous version so that versions never go
    /// backwards, with the previous word's flag bits kept.
    #[inline]
    pub const fn next_after(previous: u64, commit_version: u64) -> u64 {
        let old = previous & VERSION_MASK;
        let new = if commit_version > old {
            commit_version
        } else {
            old + VERSION_STEP
        };
        new | (previous & USER_BITS)
    }

    /// Sets or clears user flag bits while holding the lock (or before the
    /// object is shared).
    #[inline]
    pub fn set_flags_locked(&self, flags: u64) {
        debug_assert_eq!(flags & !USER_BITS, 0);
        let cur = self.0.load(Ordering::Relaxed);
        self.0.store((cur & !USER_BITS) | flags, Ordering::Release);
    }

    /// True if a read that recorded `seen` is still valid: the version is
    /// unchanged and the word is unlocked, or locked by the checking
    /// transaction itself (`locked_by_me`).
    #[inline]
    pub fn still_valid(&self, seen: u64, locked_by_me: bool) -> bool {
        let cur = self.0.load(Ordering::SeqCst);
        cur == seen || (locked_by_me && cur == seen | LOCK_BIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_unlock_and_versions_grow() {
        let v = TVersion::new();
        let w = v.load();
        assert!(v.try_lock_at(w));
        assert!(TVersion::is_locked(v.load()));
        assert!(!v.try_lock_at(w), "a locked word cannot be locked again");
        assert!(v.lock_bounded().is_none());
        assert!(v.still_valid(w, true));
        assert!(!v.still_valid(w, false));
        v.unlock_to(TVersion::next_after(w, 40));
        assert_eq!(TVersion::version_of(v.load()), 40);
        // A commit version lower than the current one still moves forward.
        let w2 = v.lock_bounded().unwrap();
        v.unlock_to(TVersion::next_after(w2, 16));
        assert_eq!(TVersion::version_of(v.load()), 48);
        assert!(!v.still_valid(w, false));
    }

    #[test]
    fn flags_survive_new_versions() {
        let v = TVersion::new();
        v.set_flags_locked(0b010);
        let w = v.lock_bounded().unwrap();
        v.unlock_to(TVersion::next_after(w, 8));
        assert_eq!(v.load() & USER_BITS, 0b010);
        v.unlock_unchanged(v.load() | LOCK_BIT);
        assert!(!TVersion::is_locked(v.load()));
    }
}
