//! The trait through which transactional objects take part in commit.

use crossbeam_epoch::Guard;
use std::cell::OnceCell;

use crate::item::Item;
use crate::version::{TVersion, LOCK_SPINS};

/// A transactional object: a datatype whose operations a transaction tracks as
/// [`Item`]s, one per logical subobject (a key the object chooses).
///
/// The runtime commits a transaction by calling these methods on every item
/// (STO's protocol):
///
/// 1. [`lock`](Self::lock) every written item;
/// 2. [`check`](Self::check) every read item;
/// 3. [`install`](Self::install) every written item (the commit point lies
///    between 2 and 3), which must also release the item's lock;
/// 4. [`cleanup`](Self::cleanup), committed or not, for items flagged
///    [`NEEDS_CLEANUP`](crate::item::NEEDS_CLEANUP).
///
/// If the transaction aborts after some locks were taken, [`unlock`](Self::unlock)
/// is called for each locked item instead of `install`. An irrevocable
/// transaction skips step 2: no other transaction commits while it runs, so
/// its reads cannot have gone stale (`check` still runs when a transaction
/// becomes irrevocable, for what it read before).
///
/// Rules an implementation must follow so that the runtime's guarantees hold:
/// * `check` must fail for a subobject that a concurrent transaction has
///   locked (unless this transaction holds the lock), and a committed change
///   must be visible to `check` no later than the moment its lock is released;
/// * `lock` must be a read-modify-write that the matching `check` observes
///   (blocking `retry` and irrevocability rely on it), and it must not wait
///   forever unless [`Commit::must_succeed`] says the transaction is
///   irrevocable — use [`Commit::lock_version`], which implements both rules;
/// * `install` and `unlock` must not fail.
///
/// See the crate-level docs for a complete custom object (a reservation
/// counter whose check fails only when no units remain).
pub trait TObject: Sync {
    /// Locks the subobject of a written item. Return [`LockOutcome::Busy`] if
    /// the lock is held elsewhere and [`LockOutcome::Stale`] if the item was
    /// also read and has changed since.
    fn lock(&self, item: &mut Item, commit: &Commit<'_>) -> LockOutcome;

    /// True if the item's read is still valid.
    fn check(&self, item: &Item, commit: &Commit<'_>) -> bool;

    /// Makes the item's write visible and releases its lock.
    fn install(&self, item: &mut Item, commit: &Commit<'_>);

    /// Releases the lock of an item whose transaction aborts after locking.
    fn unlock(&self, item: &mut Item);

    /// Called once when the transaction ends, for items flagged
    /// [`NEEDS_CLEANUP`](crate::item::NEEDS_CLEANUP).
    fn cleanup(&self, item: &mut Item, committed: bool) {
        let _ = (item, committed);
    }
}

/// The result of [`TObject::lock`].
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
    /// Only meaningful inside [`TObject::install`].
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
            if version.try_lock_at(item.read_version()) {
                return LockOutcome::Acquired;
            }
        } else {
            let cur = version.load();
            if !TVersion::is_locked(cur) && version.try_lock_at(cur) {
                item.remember_version(cur);
                return LockOutcome::Acquired;
            }
        }
        self.lock_version_contended(version, item)
    }

    /// [`lock_version`](Self::lock_version) after its first attempt failed.
    #[cold]
    #[inline(never)]
    fn lock_version_contended(&self, version: &TVersion, item: &mut Item) -> LockOutcome {
        if item.is_read() {
            let seen = item.read_version();
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
        loop {
            if let Some(prev) = version.lock_bounded() {
                item.remember_version(prev);
                return LockOutcome::Acquired;
            }
            if !self.irrevocable {
                return LockOutcome::Busy;
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
