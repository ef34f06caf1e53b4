//! Serial execution: the transaction holds the gate, so it reads and writes in place; an undo
//! log (unless irrevocable) lets it cancel.

use super::{load_word, log_undo_masked, store_masked, AbortCause, Method, Privatization};
use crate::tx::desc::TxDesc;

pub(crate) struct Serial;

impl Method for Serial {
    #[inline(always)]
    fn read_word(&self, _tx: &mut TxDesc, word: usize) -> Result<u64, AbortCause> {
        // SAFETY: the barrier hands an aligned word holding bytes the program reads.
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
        if !tx.irrevocable {
            log_undo_masked(tx, word, mask);
        }
        // Stamp before writing: a transaction upgrading later revalidates against orecs.
        crate::orec::stamp(word, 8, tx.serial_version);
        // SAFETY: the barrier hands an aligned word whose selected bytes the program writes.
        unsafe { store_masked(word, val, mask) };
        Ok(())
    }

    fn commit(&self, _tx: &mut TxDesc) -> Result<Privatization, AbortCause> {
        // It ran alone: the gate drained every other transaction first.
        Ok(Privatization::Safe)
    }

    fn rollback(&self, _tx: &mut TxDesc) {}

    fn validate(&self, _tx: &TxDesc) -> bool {
        true
    }

    fn write_back_serial(&self, _tx: &mut TxDesc) {}
}
