//! Commit-time locking: what the runtime hands an object during commit
//! ([`Commit`]), what the object's [`lock`](crate::TObject::lock) answers
//! ([`LockOutcome`]), and the standard lock step for a [`TVersion`]-guarded
//! subobject ([`Commit::lock_version`]).
//!
//! Kept apart from the protocol in `commit/mod.rs` because objects depend on
//! it (the `TObject` trait names these types) while the protocol depends on
//! objects: this file sits below both.
//!
//! Why a bounded spin: locks are taken at commit in no particular order, so
//! a writer that waited forever for a lock could deadlock with another that
//! holds it and waits for one of ours. Giving up after `LOCK_SPINS` keeps
//! commit deadlock-free; only an irrevocable transaction, which no one else
//! may make wait, spins without a bound.

use crossbeam_epoch::Guard;
use std::cell::OnceCell;

use crate::item::Item;
use crate::version::{TVersion, LOCK_SPINS};

/// The result of [`TObject::lock`](crate::TObject::lock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockOutcome {
    /// The lock is held by this transaction now.
    Acquired,
    /// Another transaction holds the lock.
    Busy,
    /// The item was read and its version changed: the transaction must abort.
    Stale,
}

/// What the runtime tells an object during commit (and during validation
/// while the transaction runs).
pub struct Commit<'a> {
    pub(crate) version: u64,
    pub(crate) irrevocable: bool,
    pub(crate) guard: &'a OnceCell<Guard>,
}

impl<'a> Commit<'a> {
    /// The commit version to publish in the versions of installed items.
    /// Only meaningful inside [`TObject::install`](crate::TObject::install).
    ///
    /// Publish at least this version (as [`TVersion::next_after`] does):
    /// opaque readers accept a version without revalidating only when it is
    /// at most their snapshot bound, which is sound because every version a
    /// commit publishes is above the clock value it read after locking.
    #[inline]
    pub fn version(&self) -> u64 {
        self.version
    }

    /// True if the transaction is irrevocable: its locks must be acquired
    /// even if that means waiting.
    #[inline]
    pub fn must_succeed(&self) -> bool {
        self.irrevocable
    }

    /// An epoch guard, pinned on first use, for retiring memory that the
    /// install replaces (`guard.defer_destroy(old)`).
    #[inline]
    pub fn guard(&self) -> &Guard {
        self.guard.get_or_init(crossbeam_epoch::pin)
    }

    /// The standard lock step for an item protected by `version`: if the item
    /// was read, lock only if the version is unchanged; otherwise lock with a
    /// bounded spin (unbounded when irrevocable). On success the item's
    /// `read_version` holds the word as it was before locking, which
    /// [`TVersion::next_after`] and [`TVersion::unlock_unchanged`] take.
    #[inline]
    pub fn lock_version(&self, version: &TVersion, item: &mut Item) -> LockOutcome {
        // Fast path: one compare-and-swap when nobody holds the lock.
        if item.is_read() {
            return self.lock_read(version, item.read_version());
        }
        match self.lock_unread(version) {
            Ok(prev) => {
                item.remember_version(prev);
                LockOutcome::Acquired
            }
            Err(outcome) => outcome,
        }
    }

    /// Locks `version` if it is still at `seen`, the word a read saw: for
    /// an item read and written, and for a word-log entry that took over
    /// its read (`tx::words`). Waits (a bounded spin, unbounded when
    /// irrevocable) while another transaction holds it at `seen`, which it
    /// may leave unchanged; `Stale` if the word moved on.
    #[inline(always)]
    pub(crate) fn lock_read(&self, version: &TVersion, seen: u64) -> LockOutcome {
        if version.try_lock_at(seen) {
            return LockOutcome::Acquired;
        }
        self.lock_read_contended(version, seen)
    }

    /// [`lock_read`](Self::lock_read) after its first attempt failed.
    #[cold]
    #[inline(never)]
    fn lock_read_contended(&self, version: &TVersion, seen: u64) -> LockOutcome {
        loop {
            if version.try_lock_at(seen) {
                return LockOutcome::Acquired;
            }
            // Locked at the version we read: another transaction is
            // committing and may still leave it unchanged; wait for it.
            // Unlocked at that version again: it left it unchanged just
            // now; try again. Anything else means the read is stale.
            let now = version.load();
            if now == seen {
                continue;
            }
            if now != seen | crate::version::LOCK_BIT {
                return LockOutcome::Stale;
            }
            if !self.wait_for_unlock(version) {
                return LockOutcome::Busy;
            }
        }
    }

    /// Locks `version` whatever its word: for an item the transaction did
    /// not read, and for a word-log entry that holds no read (`tx::words`;
    /// a read of it in the read log is validated there). A bounded spin while
    /// another transaction holds it, unbounded when irrevocable. Returns the
    /// word as it was before locking.
    #[inline(always)]
    pub(crate) fn lock_unread(&self, version: &TVersion) -> Result<u64, LockOutcome> {
        let cur = version.load();
        if !TVersion::is_locked(cur) && version.try_lock_at(cur) {
            return Ok(cur);
        }
        self.lock_unread_contended(version)
    }

    /// [`lock_unread`](Self::lock_unread) after its first attempt failed.
    #[cold]
    #[inline(never)]
    fn lock_unread_contended(&self, version: &TVersion) -> Result<u64, LockOutcome> {
        loop {
            if let Some(prev) = version.lock_bounded() {
                return Ok(prev);
            }
            if !self.irrevocable {
                return Err(LockOutcome::Busy);
            }
            crate::sync::yield_now();
        }
    }

    fn wait_for_unlock(&self, version: &TVersion) -> bool {
        let mut spins = 0;
        while TVersion::is_locked(version.load()) {
            if !self.irrevocable && spins >= LOCK_SPINS {
                return false;
            }
            spins += 1;
            crate::sync::spin_hint();
        }
        true
    }
}
