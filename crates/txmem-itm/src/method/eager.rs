//! Eager write-through with encounter-time locking and an undo log (like GCC's `ml_wt`, over
//! the same orec table and clock as the lazy method).
//!
//! A write locks its word's orec at once, logs the old bytes and writes in place; reads of
//! words locked by this transaction read memory directly. Commit takes a write version,
//! validates the read set and releases the orecs with it. An abort restores the undo log and
//! then releases the orecs with a *new* version: a concurrent reader may have read an
//! intermediate value between its two orec checks, and an unchanged version would let it
//! accept that value.

use std::sync::atomic::Ordering;

use super::{
    load_word, lock_orec, log_undo_masked, release, store_masked, AbortCause, Method, Privatization,
};
use crate::orec::{self, CLOCK};
use crate::tx::desc::TxDesc;

pub(crate) struct Eager;

impl Eager {
    #[inline(always)]
    fn load_checked(&self, tx: &mut TxDesc, word: usize) -> Result<u64, AbortCause> {
        super::read_consistent(tx, word, true)
    }

    /// Locks the orec of `word` for `tx` (encounter-time locking).
    fn acquire(&self, tx: &mut TxDesc, word: usize) -> Result<(), AbortCause> {
        let idx = orec::index(word);
        if !lock_orec(tx, idx) {
            return Err(AbortCause::LockBusyOnWrite);
        }
        if tx.stale_locks.last() == Some(&idx) {
            // The word changed since our snapshot: extend it if what we read still holds.
            // (Validated with the orec still listed as stale, so a read of this very word
            // fails.)
            let now = CLOCK.load(Ordering::Acquire);
            if !self.validate(tx) {
                return Err(AbortCause::Opacity);
            }
            tx.stale_locks.pop();
            tx.start = now;
            tx.state.store(now, Ordering::Release);
        }
        Ok(())
    }
}

impl Method for Eager {
    fn reads_states_at_commit(&self) -> bool {
        // Writers wait for transactions that started before their commit.
        true
    }

    #[inline(always)]
    fn fast_read(&self, tx: &mut TxDesc, word: usize) -> Option<u64> {
        // A word this transaction locked fails the version test (LOCKED is above every
        // version) and is read in place by the full path.
        super::read_unchanged(tx, word)
    }

    #[inline(always)]
    fn read_word(&self, tx: &mut TxDesc, word: usize) -> Result<u64, AbortCause> {
        self.load_checked(tx, word)
    }

    #[inline(always)]
    fn read_for_write(&self, tx: &mut TxDesc, word: usize) -> Result<u64, AbortCause> {
        self.acquire(tx, word)?;
        // SAFETY: the barrier hands an aligned word the program reads; we own its orec.
        Ok(unsafe { load_word(word) })
    }

    #[inline(always)]
    fn write_word(
        &self,
        tx: &mut TxDesc,
        word: usize,
        val: u64,
        mask: u64,
    ) -> Result<(), AbortCause> {
        self.acquire(tx, word)?;
        log_undo_masked(tx, word, mask);
        // SAFETY: the barrier hands an aligned word whose selected bytes the program writes;
        // its orec is locked by us.
        unsafe { store_masked(word, val, mask) };
        Ok(())
    }

    fn commit(&self, tx: &mut TxDesc) -> Result<Privatization, AbortCause> {
        if tx.locks.is_empty() {
            return Ok(Privatization::Reader(tx.start));
        }
        let wv = CLOCK.fetch_add(1, Ordering::AcqRel) + 1;
        if wv != tx.start + 1 && !self.validate(tx) {
            return Err(AbortCause::Validation);
        }
        // Before the orecs show the new version: a reader that sees it sees this too.
        tx.quiescing.store(wv, Ordering::Release);
        release(tx, Some(wv));
        Ok(Privatization::Writer(wv))
    }

    fn rollback(&self, tx: &mut TxDesc) {
        // Memory first, then the orecs, with a version no reader can have seen.
        tx.undo_to(0, 0);
        if !tx.locks.is_empty() {
            let v = CLOCK.fetch_add(1, Ordering::AcqRel) + 1;
            release(tx, Some(v));
        }
    }

    fn validate(&self, tx: &TxDesc) -> bool {
        super::validate_reads(tx)
    }

    fn write_back_serial(&self, tx: &mut TxDesc) {
        // Memory already holds our writes; hand the orecs back stamped as a serial writer.
        let v = tx.serial_version;
        release(tx, Some(v));
    }
}
