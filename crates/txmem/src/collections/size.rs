//! A commutative size counter with a version that writers *share-lock*.
//!
//! Collections count their elements here. A committing insert or remove must
//! change the count atomically with its other writes (a transaction that
//! reads the size must not see the count of a half-installed commit), yet
//! two inserts must not conflict over the count. An ordinary version lock
//! would serialize every committing writer on one word, so this counter uses
//! a reader-writer discipline on its word instead:
//!
//! * a committing transaction that changes the count but never read it
//!   takes a **share** (any number of committers hold shares at once);
//! * a committing transaction that *read* the count takes the word
//!   **exclusively**, and only if the version it read is unchanged and no
//!   share is held (so its read stays valid up to its commit point);
//! * installing adds the delta, bumps the version (to at least the commit
//!   version, for TL2 opacity) and drops the share;
//! * a read waits until no share or exclusive lock is held, and is valid
//!   while the word stays exactly as read.
//!
//! The same word serves as the "list version" of [`TList`](super::TList):
//! every committed insert or remove bumps it, so iteration can read it.
//!
//! Word layout: bit 0 exclusive lock, bits 1..20 the number of shares,
//! bits 20.. the version divided by [`VERSION_STEP`].

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use crate::error::TxResult;
use crate::item::{Item, USER_FLAG0};
use crate::object::{Commit, LockOutcome};
use crate::tx::{ItemId, Transaction};
use crate::version::VERSION_STEP;

use super::struct_wait;

const EXCL: u64 = 1;
const SHARE: u64 = 2;
const SHARE_MASK: u64 = (1 << VSHIFT) - 2;
const VSHIFT: u32 = 20;
const BUSY_MASK: u64 = EXCL | SHARE_MASK;

/// Item flag: this item holds a share of the size word.
const HOLDS_SHARE: u32 = USER_FLAG0 << 20;
/// Item flag: this item holds the size word exclusively.
const HOLDS_EXCL: u32 = USER_FLAG0 << 21;

#[inline]
fn version_units(word: u64) -> u64 {
    word >> VSHIFT
}

/// The version word recorded in an item for a read of `word` (a multiple of
/// `VERSION_STEP`, comparable with the clock by the runtime's opacity check).
#[inline]
fn recorded(word: u64) -> u64 {
    version_units(word) * VERSION_STEP
}

#[inline]
fn word_of_recorded(rec: u64) -> u64 {
    (rec / VERSION_STEP) << VSHIFT
}

/// See the module documentation.
pub(crate) struct SizeCounter {
    word: AtomicU64,
    count: AtomicI64,
}

impl SizeCounter {
    pub fn new(count: i64) -> Self {
        SizeCounter {
            word: AtomicU64::new(0),
            count: AtomicI64::new(count),
        }
    }

    /// The committed count, outside any transaction (a consistent value:
    /// the count of some moment at which no commit was half-installed).
    pub fn load(&self) -> i64 {
        let mut spins = 0;
        loop {
            let w1 = self.word.load(Ordering::Acquire);
            if w1 & BUSY_MASK == 0 {
                let c = self.count.load(Ordering::Acquire);
                if self.word.load(Ordering::Acquire) == w1 {
                    return c;
                }
            }
            super::struct_wait_forever(&mut spins);
        }
    }

    /// The word if no commit holds it (for seqlock-style snapshots).
    pub fn load_word(&self) -> Option<u64> {
        let w = self.word.load(Ordering::Acquire);
        (w & BUSY_MASK == 0).then_some(w)
    }

    /// Reads the committed count inside a transaction, recording the read in
    /// item `id`, after calling `also` under the same consistent word (for
    /// collections that read their whole structure under this version).
    pub fn observe_with<'env, R>(
        &self,
        tx: &mut Transaction<'env>,
        id: ItemId,
        mut also: impl FnMut() -> R,
    ) -> TxResult<(i64, R)> {
        let mut spins = 0;
        let (w, c, r) = loop {
            let w1 = self.word.load(Ordering::Acquire);
            if w1 & BUSY_MASK == 0 {
                let c = self.count.load(Ordering::Acquire);
                let r = also();
                if self.word.load(Ordering::Acquire) == w1 {
                    break (w1, c, r);
                }
            } else {
                struct_wait(&mut spins)?;
            }
        };
        tx.record_read(id, recorded(w))?;
        Ok((c, r))
    }

    /// Adds `delta` to the item's pending delta (the item becomes a write).
    pub fn add_pending(item: &mut Item, delta: i64) {
        let cur = item.write_value::<i64>().copied().unwrap_or(0);
        item.set_write(cur + delta);
    }

    /// The item's pending delta.
    pub fn pending(item: &Item) -> i64 {
        item.write_value::<i64>().copied().unwrap_or(0)
    }

    pub fn lock(&self, item: &mut Item, commit: &Commit<'_>) -> LockOutcome {
        let delta = Self::pending(item);
        let mut spins = 0u32;
        if item.is_read() {
            let expected = word_of_recorded(item.read_version());
            loop {
                match self.word.compare_exchange(
                    expected,
                    expected | EXCL,
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                ) {
                    Ok(_) => {
                        item.set_flags(HOLDS_EXCL);
                        return LockOutcome::Acquired;
                    }
                    Err(cur) => {
                        if version_units(cur) != version_units(expected) {
                            return LockOutcome::Stale;
                        }
                        // Shares or an exclusive holder at our version: they
                        // may still leave the version unchanged; wait a little.
                        spins += 1;
                        if !commit.must_succeed() && spins > 256 {
                            return LockOutcome::Busy;
                        }
                        if spins > 64 {
                            std::thread::yield_now();
                        } else {
                            std::hint::spin_loop();
                        }
                    }
                }
            }
        }
        if delta == 0 {
            // Nothing to change and nothing read: no lock needed.
            return LockOutcome::Acquired;
        }
        loop {
            let cur = self.word.load(Ordering::Relaxed);
            if cur & EXCL == 0 {
                if self
                    .word
                    .compare_exchange(cur, cur + SHARE, Ordering::SeqCst, Ordering::Relaxed)
                    .is_ok()
                {
                    item.set_flags(HOLDS_SHARE);
                    return LockOutcome::Acquired;
                }
                continue;
            }
            spins += 1;
            if !commit.must_succeed() && spins > 256 {
                return LockOutcome::Busy;
            }
            std::hint::spin_loop();
        }
    }

    pub fn check(&self, item: &Item) -> bool {
        self.word.load(Ordering::SeqCst) == word_of_recorded(item.read_version())
    }

    pub fn install(&self, item: &mut Item, commit: &Commit<'_>) {
        let held = item.flags() & (HOLDS_SHARE | HOLDS_EXCL);
        if held == 0 {
            return;
        }
        let delta = Self::pending(item);
        if delta != 0 {
            self.count.fetch_add(delta, Ordering::AcqRel);
        }
        let target = commit.version() / VERSION_STEP;
        let mut cur = self.word.load(Ordering::Relaxed);
        loop {
            let bumped = if delta != 0 || held == HOLDS_EXCL {
                (version_units(cur) + 1).max(target)
            } else {
                version_units(cur)
            };
            let low = (cur & SHARE_MASK) - if held == HOLDS_SHARE { SHARE } else { 0 };
            let new = (bumped << VSHIFT) | low;
            match self
                .word
                .compare_exchange_weak(cur, new, Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(c) => cur = c,
            }
        }
        item.clear_flags(HOLDS_SHARE | HOLDS_EXCL);
    }

    pub fn unlock(&self, item: &mut Item) {
        if item.has(HOLDS_SHARE) {
            self.word.fetch_sub(SHARE, Ordering::SeqCst);
        } else if item.has(HOLDS_EXCL) {
            self.word.fetch_and(!EXCL, Ordering::SeqCst);
        }
        item.clear_flags(HOLDS_SHARE | HOLDS_EXCL);
    }
}
