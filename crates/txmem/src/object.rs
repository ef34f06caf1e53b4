//! [`TObject`], the trait a datatype implements to take part in
//! transactions.
//!
//! The commit context and lock outcome its methods take are defined with
//! the commit protocol (`tx::commit::lock`) and re-exported here, so that an
//! object implementation finds everything it names in one place.

use crate::item::{Item, NEEDS_CLEANUP, READ};
pub(crate) use crate::tx::commit::lock::{Commit, LockOutcome};

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

    /// Undoes the item's effects when an
    /// [`or_else`](crate::Transaction::or_else) branch that created it is
    /// rolled back; the runtime then drops its pending write. What the
    /// branch read stays read: the transaction goes on to the second branch
    /// because of it, so it must still hold at commit (and a blocking
    /// `retry` must wake when it changes).
    ///
    /// The default runs [`cleanup`](Self::cleanup) at once, as for an
    /// aborted transaction, if the item is flagged
    /// [`NEEDS_CLEANUP`](crate::item::NEEDS_CLEANUP), and keeps no flag
    /// but `READ`. An object whose write already changed shared state that
    /// the branch's reads depend on may keep that change until the
    /// transaction ends instead, by leaving `NEEDS_CLEANUP` set: the
    /// collections keep an insert's placeholder, which holds the absence of
    /// the key that the insert reported.
    fn roll_back(&self, item: &mut Item) {
        if item.has(NEEDS_CLEANUP) {
            self.cleanup(item, false);
        }
        item.restore_flags(item.flags() & READ);
    }
}
