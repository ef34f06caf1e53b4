//! Single-operation transactions: a write to one subobject, outside any
//! `atomically` block, that commits as a transaction of its own.
//!
//! Many updates touch one value only — a counter, a flag, a statistic. Such
//! an update needs none of the transaction machinery (no tracking set, no
//! read set to validate, nothing to roll back): it is the commit protocol
//! for a transaction with one item, run directly. It still takes the item's
//! version lock, draws a commit version exactly as a full transaction that
//! writes one item would, respects the irrevocability gate and
//! wakes blocked `retry`ers, so it serializes with every transaction like
//! any other committed writer. (ScalaSTM's `Ref.single` and Clojure's `swap!`
//! offer the same convenience.)

use super::commit::version_past;
use crate::clock;
use crate::sync::spin_hint;
use crate::version::TVersion;
use crate::wait;

/// Commits a single-operation write to the subobject guarded by `version`,
/// which belongs to the object at address `object` (for wake-ups).
///
/// `prepare` computes what to write from the committed state. It runs before
/// the lock is taken (user code never runs under a version lock), and again
/// if another writer commits in between, so it must not have side effects
/// beyond its result. `install` runs with the lock held, after the commit
/// point, and must store the prepared value (it is given the commit version,
/// the clock value read after locking plus one step); the lock is then
/// released with the new version.
///
/// Panics if called inside a transaction on this thread: the write would not
/// belong to that transaction (and could wait forever on the thread's own
/// irrevocability). Use the transactional operations there instead.
#[inline]
pub(crate) fn commit_single<P, R>(
    object: usize,
    version: &TVersion,
    mut prepare: impl FnMut() -> P,
    install: impl FnOnce(P, u64) -> R,
) -> R {
    assert_outside_transaction();
    let (seen, prepared, commit_version) = loop {
        let seen = version.load();
        if TVersion::is_locked(seen) {
            spin_hint();
            continue;
        }
        let prepared = prepare();
        // Locking at `seen` fails if anyone committed since `prepare` read the
        // state (every commit changes the version), so what was prepared is
        // based on the latest committed state.
        if !version.try_lock_at(seen) {
            continue;
        }
        match commit_version() {
            Some(cv) => break (seen, prepared, cv),
            None => {
                version.unlock_unchanged(seen);
                drop(prepared);
                clock::wait_irrevocable_open();
            }
        }
    };
    // Read after locking (see `wait`): either this commit sees the waiter, or
    // the waiter's re-check sees the lock or the new version.
    let wake = wait::waiters_present();
    let result = install(prepared, commit_version);
    version.unlock_to(TVersion::next_after(seen, commit_version));
    if wake {
        wait::wake_readers_of(std::iter::once(object));
    }
    result
}

/// Panics if this thread runs a transaction (see [`commit_single`]).
#[inline]
pub(crate) fn assert_outside_transaction() {
    assert!(
        !super::context::in_transaction(),
        "txmem: single-operation writes (store/swap/update, insert_now/remove_now/update_now) run \
         as transactions of their own; inside a transaction use the operations that take the \
         `&mut Transaction`"
    );
}

/// The commit version of a single-operation write that has locked
/// everything it writes, drawn as a full commit of one item draws it; or
/// `None` if the irrevocability gate is closed: the caller then unlocks,
/// waits for the gate ([`clock::wait_irrevocable_open`]) and starts over.
#[inline]
pub(crate) fn commit_version() -> Option<u64> {
    // This SeqCst clock read, after the SeqCst lock RMWs, is also where a
    // closed irrevocability gate is seen.
    let word = clock::now_seqcst();
    (!word.irrevocable()).then(|| version_past(word))
}
