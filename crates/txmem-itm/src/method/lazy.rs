//! Lazy write-back with commit-time locking (TL2-like).
//!
//! Reads check the word's orec against the transaction's start version (extending the start
//! version when the read set still validates); writes go to a redo log of masked words;
//! commit locks the written words' orecs, takes a write version from the global clock,
//! validates the read set, writes back and releases the orecs with the write version.

use std::sync::atomic::Ordering;

use super::{lock_orec, release, store_masked, AbortCause, Method};
use crate::orec::{self, CLOCK};
use crate::tx::TxDesc;

pub(crate) struct Lazy;

impl Lazy {
    fn load_checked(&self, tx: &mut TxDesc, word: usize) -> Result<u64, AbortCause> {
        super::read_consistent(tx, word, false)
    }
}

impl Method for Lazy {
    fn read_word(&self, tx: &mut TxDesc, word: usize) -> Result<u64, AbortCause> {
        match tx.redo.get(&word) {
            Some(&(val, u64::MAX)) => Ok(val),
            Some(&(val, mask)) => {
                let mem = self.load_checked(tx, word)?;
                Ok((mem & !mask) | (val & mask))
            }
            None => self.load_checked(tx, word),
        }
    }

    fn write_word(
        &self,
        tx: &mut TxDesc,
        word: usize,
        val: u64,
        mask: u64,
    ) -> Result<(), AbortCause> {
        let e = tx.redo.entry(word).or_insert((0, 0));
        e.0 = (e.0 & !mask) | (val & mask);
        e.1 |= mask;
        Ok(())
    }

    fn commit(&self, tx: &mut TxDesc) -> Result<Option<u64>, AbortCause> {
        if tx.redo.is_empty() {
            // Read-only: every read was consistent with the start version when made.
            return Ok(None);
        }
        let words: Vec<usize> = tx.redo.keys().copied().collect();
        for w in words {
            if !lock_orec(tx, orec::index(w)) {
                release(tx, None);
                return Err(AbortCause::CommitLocked);
            }
        }
        let wv = CLOCK.fetch_add(1, Ordering::AcqRel) + 1;
        if wv != tx.start + 1 && !self.validate(tx) {
            release(tx, None);
            return Err(AbortCause::CommitValidate);
        }
        for (&w, &(val, mask)) in tx.redo.iter() {
            // SAFETY: every word in the redo log was written by the program through a barrier
            // (so its selected bytes are writable), and its orec is locked by us.
            unsafe { store_masked(w, val, mask) };
        }
        release(tx, Some(wv));
        Ok(Some(wv))
    }

    fn rollback(&self, tx: &mut TxDesc) {
        // Nothing was written in place, so the old versions still describe memory.
        release(tx, None);
        tx.redo.clear();
        tx.reads.clear();
    }

    fn validate(&self, tx: &TxDesc) -> bool {
        super::validate_reads(tx)
    }

    fn write_back_serial(&self, tx: &mut TxDesc) {
        let version = tx.serial_version;
        for (&w, &(val, mask)) in tx.redo.iter() {
            orec::stamp(w, 8, version);
            // SAFETY: as in commit; the gate is held, so nobody else runs.
            unsafe { store_masked(w, val, mask) };
        }
        tx.redo.clear();
        tx.reads.clear();
    }
}
