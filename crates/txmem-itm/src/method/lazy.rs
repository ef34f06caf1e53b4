//! Lazy write-back with commit-time locking (TL2-like).
//!
//! Reads check the word's orec against the transaction's start version (extending the start
//! version when the read set still validates); writes go to a redo log of masked words;
//! commit locks the written words' orecs, takes a write version from the global clock,
//! validates the read set, writes back and releases the orecs with the write version.

use std::sync::atomic::Ordering;

use super::{lock_orec, release, write_back, AbortCause, Method, Privatization};
use crate::orec::{self, CLOCK};
use crate::tx::desc::TxDesc;

pub(crate) struct Lazy;

impl Lazy {
    #[inline(always)]
    fn load_checked(&self, tx: &mut TxDesc, word: usize) -> Result<u64, AbortCause> {
        super::read_consistent(tx, word, false)
    }
}

impl Method for Lazy {
    fn reads_states_at_commit(&self) -> bool {
        // Writers wait for transactions that started before their commit.
        true
    }

    #[inline(always)]
    fn fast_read(&self, tx: &mut TxDesc, word: usize) -> Option<u64> {
        if tx.redo.may_hold(word) {
            return None;
        }
        super::read_unchanged(tx, word)
    }

    #[inline(always)]
    fn read_word(&self, tx: &mut TxDesc, word: usize) -> Result<u64, AbortCause> {
        super::read_through_redo(tx, word, |tx| self.load_checked(tx, word))
    }

    #[inline(always)]
    fn write_word(
        &self,
        tx: &mut TxDesc,
        word: usize,
        val: u64,
        mask: u64,
    ) -> Result<(), AbortCause> {
        tx.redo.insert(word, val, mask);
        Ok(())
    }

    fn commit(&self, tx: &mut TxDesc) -> Result<Privatization, AbortCause> {
        if tx.redo.is_empty() {
            // Read-only: every read was consistent with the start version when made.
            return Ok(Privatization::Reader(tx.start));
        }
        // Taken out for the loop, since locking needs the descriptor; no allocation.
        let redo = std::mem::take(&mut tx.redo);
        let locked = redo
            .entries()
            .iter()
            .all(|e| lock_orec(tx, orec::index(e.word)));
        tx.redo = redo;
        if !locked {
            release(tx, None);
            return Err(AbortCause::LockBusyAtCommit);
        }
        let wv = CLOCK.fetch_add(1, Ordering::AcqRel) + 1;
        if wv != tx.start + 1 && !self.validate(tx) {
            release(tx, None);
            return Err(AbortCause::Validation);
        }
        write_back(tx);
        // Before the writes become visible: a reader that sees them sees this too.
        tx.quiescing.store(wv, Ordering::Release);
        release(tx, Some(wv));
        Ok(Privatization::Writer(wv))
    }

    fn rollback(&self, tx: &mut TxDesc) {
        // Nothing was written in place, so the old versions still describe memory.
        release(tx, None);
    }

    fn validate(&self, tx: &TxDesc) -> bool {
        super::validate_reads(tx)
    }

    fn write_back_serial(&self, tx: &mut TxDesc) {
        super::write_back_serial(tx);
    }
}
