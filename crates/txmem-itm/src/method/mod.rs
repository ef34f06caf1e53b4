//! The algorithms behind the barriers, one trait for all.

mod lazy;
mod serial;

use crate::config::{self, MethodKind};
use crate::tx::TxDesc;

/// Why a transaction aborted (and will run again).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum AbortCause {
    /// A read found its word's orec locked by a committing writer.
    ReadLocked,
    /// A read found a newer version and the read set no longer validated.
    ReadValidate,
    /// Commit could not lock an orec of its write set.
    CommitLocked,
    /// Commit-time validation of the read set failed.
    CommitValidate,
    /// Validation failed while upgrading to irrevocable; the rerun starts serial.
    Upgrade,
}

impl AbortCause {
    pub const ALL: [AbortCause; 5] = [
        AbortCause::ReadLocked,
        AbortCause::ReadValidate,
        AbortCause::CommitLocked,
        AbortCause::CommitValidate,
        AbortCause::Upgrade,
    ];
    pub fn label(self) -> &'static str {
        match self {
            AbortCause::ReadLocked => "read-locked",
            AbortCause::ReadValidate => "read-validate",
            AbortCause::CommitLocked => "commit-locked",
            AbortCause::CommitValidate => "commit-validate",
            AbortCause::Upgrade => "upgrade-validate",
        }
    }
}

/// One transactional-memory algorithm. Barriers hand it whole aligned 8-byte words; the
/// descriptor holds the logs, the method decides what they mean.
pub(crate) trait Method: Sync {
    /// Reads the word at the 8-byte aligned `word`.
    fn read_word(&self, tx: &mut TxDesc, word: usize) -> Result<u64, AbortCause>;
    /// Writes the bytes of `val` selected by `mask` into the word at `word`.
    fn write_word(&self, tx: &mut TxDesc, word: usize, val: u64, mask: u64);
    /// Commits; returns the write version if other threads must be waited for (privatization).
    fn commit(&self, tx: &mut TxDesc) -> Result<Option<u64>, AbortCause>;
    /// Drops the method's own logs after an abort (the descriptor handles the undo log).
    fn rollback(&self, tx: &mut TxDesc);
    /// True if everything read so far is still current (used when going irrevocable).
    fn validate(&self, tx: &TxDesc) -> bool;
    /// Publishes buffered writes in place, the gate held (when going irrevocable).
    fn write_back_serial(&self, tx: &mut TxDesc);
}

static SERIAL: serial::Serial = serial::Serial;
static LAZY: lazy::Lazy = lazy::Lazy;

pub(crate) fn serial() -> &'static dyn Method {
    &SERIAL
}

/// The method TXMEM_ITM_METHOD names, for transactions that need not run serial.
pub(crate) fn default_method() -> &'static dyn Method {
    match config::get().method {
        MethodKind::Serial => &SERIAL,
        MethodKind::Lazy => &LAZY,
    }
}

/// Stores the bytes of `val` selected by `mask` into the word at `word`.
///
/// # Safety
/// `word` must be 8-byte aligned and every selected byte writable by the transaction.
pub(crate) unsafe fn store_masked(word: usize, val: u64, mask: u64) {
    use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
    if mask == u64::MAX {
        // SAFETY: aligned and writable per the contract; atomic so concurrent word-sized
        // readers (other transactions' barriers) never see a torn word.
        unsafe { AtomicU64::from_ptr(word as *mut u64).store(val, Ordering::Relaxed) };
        return;
    }
    let bytes = val.to_le_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if mask & (0xff << (8 * i)) != 0 {
            // SAFETY: only the selected bytes are written, each writable per the contract.
            unsafe { AtomicU8::from_ptr((word + i) as *mut u8).store(*b, Ordering::Relaxed) };
        }
    }
}

/// Loads the word at `word`.
///
/// # Safety
/// `word` must be 8-byte aligned and contain at least one byte the program may read: the whole
/// aligned word is then on a mapped page.
pub(crate) unsafe fn load_word(word: usize) -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    // SAFETY: per the contract; an atomic load, because other transactions may write the word
    // concurrently and the orec protocol discards such values.
    unsafe { AtomicU64::from_ptr(word as *mut u64).load(Ordering::Relaxed) }
}
