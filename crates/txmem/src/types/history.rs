//! One step of history per slot: the value a slot held before its last
//! write, with that value's version, so that a read-only transaction's
//! snapshot older than the write can still be served (see
//! [`TArray::with_snapshot_history`](crate::TArray::with_snapshot_history)).
//!
//! Why it is sound. A snapshot attempt reads the state as of its bound
//! `start`: every commit with a version at most `start`, none after. When a
//! slot's current version is past `start`, the write that made it belongs
//! after the snapshot; if the value before it has a version at most
//! `start`, that value is the slot's state in the snapshot (versions of one
//! slot only grow). The pair is saved by the writer while it holds the
//! slot's lock, before it installs; the reader reads it between two reads
//! of the slot's version word that agree, so no writer touched it between.
//!
//! Why not every newer write qualifies. A snapshot must also respect real
//! time: a write that finished before the transaction began must be in its
//! snapshot. So the test is on the replacing commit's *commit version*, not
//! on the slot's new version: a slot's version may run ahead of the clock
//! (one step past its old version when that is larger), so a version past
//! the snapshot says nothing of when it was written. A commit that does not
//! advance the clock (see `tx::commit::version_past`) has a commit version
//! one step past the clock it read after locking, so a transaction beginning
//! after it ends may still read the clock at that same value: such a commit
//! version is exactly `start + VERSION_STEP`. The reader accepts history
//! only for commit versions past that bound, unless it advanced the clock
//! itself at its start (then any commit that ended before has a commit
//! version at most `start`). See `TxState::begin`.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, Ordering};

use super::cell::ValueCell;
use crate::version::{TVersion, LOCK_BIT};
use crate::word::AtomicWord;

/// The version word of a `Previous` that holds no value yet: unlocked, and
/// past any snapshot.
const NONE: u64 = !LOCK_BIT;

/// The previous value of one slot (its encoded word), its version word, and
/// the commit version of the write that replaced it.
pub(crate) struct Previous {
    /// The version word of the saved value; at first a word no snapshot
    /// accepts.
    version: AtomicU64,
    bits: AtomicWord,
    /// The replacing commit's commit version: one step past the clock it
    /// read after locking (or its tick). Not the slot's new version, which
    /// may run ahead of the clock (one step past the old version when that
    /// is larger), and so says nothing of when the write happened.
    overwritten: AtomicU64,
}

impl Previous {
    pub fn new() -> Self {
        Previous {
            version: AtomicU64::new(NONE),
            bits: AtomicWord::new(MaybeUninit::new(0)),
            overwritten: AtomicU64::new(0),
        }
    }

    /// Saves the current value of a slot its caller holds locked (so the
    /// slot's version word is its version with the lock bit), just before
    /// the caller installs a new one in a commit of version
    /// `commit_version`. The caller's unlock (a release store) publishes the
    /// words.
    #[inline]
    pub fn save<T>(&self, version: &TVersion, cell: &ValueCell<T>, commit_version: u64) {
        debug_assert!(ValueCell::<T>::INLINE);
        let locked = version.load();
        debug_assert!(TVersion::is_locked(locked));
        self.version.store(locked & !LOCK_BIT, Ordering::Relaxed);
        self.bits.store(cell.raw_bits(), Ordering::Relaxed);
        self.overwritten.store(commit_version, Ordering::Relaxed);
    }

    /// The saved value's version word, the replacing commit's version and
    /// the value, if the slot's version word is still `seen` after reading
    /// them (no write since).
    #[inline]
    pub fn read<T>(&self, version: &TVersion, seen: u64) -> Option<(u64, u64, T)> {
        debug_assert!(ValueCell::<T>::INLINE);
        let word = self.version.load(Ordering::Acquire);
        let bits = self.bits.load(Ordering::Acquire);
        let overwritten = self.overwritten.load(Ordering::Acquire);
        if version.load() != seen {
            return None;
        }
        // SAFETY: the bits were saved from a cell of inline `T` (written by
        // `ValueCell::encode`, saved under the slot's lock, and stable since:
        // the version word did not change), and the version word is not the
        // initial one, so they hold a `T`. `T` has no drop glue.
        (word != NONE).then(|| {
            (word, overwritten, unsafe {
                ValueCell::<T>::decode_inline(bits)
            })
        })
    }
}
