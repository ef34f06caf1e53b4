//! NOrec (Dalessandro, Spear and Scott): no ownership records at all. One global sequence lock
//! orders commits; a transaction logs the values it read and, whenever the sequence lock has
//! moved since its snapshot, checks that those values are still in memory before it goes on.
//! Writes are buffered and written back at commit with the sequence lock held.
//!
//! Commits are serialized, which limits writers' scaling, but reads cost one load of a line
//! that only commits write, conflicts are exact (by value, no false sharing of orecs), and the
//! algorithm is privatization-safe without waiting for other transactions: a doomed reader
//! notices the commit that doomed it at its next read, and no write-back can run after a
//! later commit.

use std::sync::atomic::AtomicU64;

use crossbeam_utils::CachePadded;

use super::{
    load_word, push_within_capacity, recent, write_back, AbortCause, Method, Privatization,
};
use crate::seqlock;
use crate::tx::desc::TxDesc;

/// The sequence lock (`seqlock`): even while no commit writes back, odd during a write-back.
static SEQ: CachePadded<AtomicU64> = CachePadded::new(AtomicU64::new(0));

pub(crate) struct NOrec;

/// Checks that every value read is still in memory, and returns the sequence value at which
/// that held; aborts if one changed. Out of line: it runs only after another commit.
#[cold]
#[inline(never)]
fn revalidate(tx: &TxDesc) -> Result<u64, AbortCause> {
    seqlock::revalidate(&*SEQ, || {
        tx.values
            .iter()
            // SAFETY: words the transaction read through a barrier, so on mapped pages.
            .all(|&(w, v)| unsafe { load_word(w) } == v)
    })
    .ok_or(AbortCause::Opacity)
}

impl NOrec {
    /// Reads `word` from memory consistently with the values read before it.
    #[inline(always)]
    fn load_consistent(&self, tx: &mut TxDesc, word: usize) -> Result<u64, AbortCause> {
        loop {
            // SAFETY: the barrier hands an aligned word holding bytes the program reads; the
            // sequence check below discards a value a concurrent write-back produced.
            let val = unsafe { load_word(word) };
            if seqlock::unchanged(&*SEQ, tx.seq) {
                tx.values.push((word, val));
                return Ok(val);
            }
            tx.seq = revalidate(tx)?;
        }
    }
}

impl Method for NOrec {
    #[inline(always)]
    fn fast_read(&self, tx: &mut TxDesc, word: usize) -> Option<u64> {
        if tx.redo.may_hold(word) {
            return None;
        }
        // A byte-wise loop (`strlen`, or `memcmp` over two strings, compiled for
        // transactions) reads each word several times, one or two words between. The value
        // logged for it was consistent with the snapshot then and, being in the log, is
        // rechecked by every revalidation that moves the snapshot, so it is the answer now:
        // no load, no sequence check, no second entry.
        if let Some(v) = recent(&tx.values, |&(w, _)| w == word) {
            return Some(v.1);
        }
        if tx.values.len() == tx.values.capacity() {
            return None;
        }
        // SAFETY: as in `load_consistent`.
        let val = unsafe { load_word(word) };
        if !seqlock::unchanged(&*SEQ, tx.seq) {
            return None;
        }
        push_within_capacity(&mut tx.values, (word, val));
        Some(val)
    }

    fn begin(&self, tx: &mut TxDesc) {
        tx.seq = seqlock::snapshot(&*SEQ);
    }

    #[inline(always)]
    fn read_word(&self, tx: &mut TxDesc, word: usize) -> Result<u64, AbortCause> {
        super::read_through_redo(tx, word, |tx| self.load_consistent(tx, word))
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
            return Ok(Privatization::Safe);
        }
        while !seqlock::try_lock(&*SEQ, tx.seq) {
            // Someone committed since the snapshot: still consistent?
            tx.seq = revalidate(tx).map_err(|_| AbortCause::Validation)?;
        }
        write_back(tx);
        seqlock::unlock(&*SEQ, tx.seq);
        Ok(Privatization::Safe)
    }

    fn rollback(&self, _tx: &mut TxDesc) {
        // Nothing shared was touched: writes are buffered, and the lock is only held while
        // committing.
    }

    fn validate(&self, tx: &TxDesc) -> bool {
        tx.values
            .iter()
            // SAFETY: as in `revalidate`.
            .all(|&(w, v)| unsafe { load_word(w) } == v)
    }

    fn write_back_serial(&self, tx: &mut TxDesc) {
        // Stamping orecs is moot beside NOrec, but it is what a serial write leaves behind.
        super::write_back_serial(tx);
    }
}
