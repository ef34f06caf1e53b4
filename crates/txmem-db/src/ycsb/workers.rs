//! Per-worker state: each worker index has a slot with its key chooser,
//! its buffers and the counts of what it committed, which the check adds
//! up. A slot is used by one thread at a time; a second thread that runs
//! with the same index is a bug in the driver, and panics.

use std::sync::{Mutex, MutexGuard, TryLockError};

use super::config::Op;
use super::keys::KeyChooser;

/// The most worker indexes a workload accepts (`0..MAX_WORKERS`).
pub const MAX_WORKERS: usize = 1024;

/// What one worker committed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Committed {
    /// Transactions.
    pub txns: u64,
    /// Blind updates (also the next update's sequence number).
    pub updates: u64,
    /// Read-modify-writes.
    pub rmws: u64,
    /// Inserts.
    pub inserts: u64,
}

/// One operation of the transaction being run, drawn before it starts so
/// that every attempt runs the same operations.
#[derive(Clone, Copy, Debug)]
pub struct Planned {
    /// The operation.
    pub op: Op,
    /// The record (the first record, for a scan).
    pub key: u64,
    /// Records to scan.
    pub len: usize,
}

/// A worker's state.
pub struct Worker {
    /// Chooses its keys.
    pub keys: KeyChooser,
    /// The operations of the current transaction.
    pub plan: Vec<Planned>,
    /// Where reads copy the fields they return.
    pub buf: Vec<u8>,
    /// Its committed counts.
    pub committed: Committed,
}

/// A slot on its own cache lines, so that workers never share a line.
#[repr(align(128))]
#[derive(Default)]
struct Slot(Mutex<Option<Worker>>);

/// Every worker's slot.
pub struct Workers {
    slots: Box<[Slot]>,
}

impl Workers {
    /// [`MAX_WORKERS`] empty slots.
    pub fn new() -> Workers {
        Workers {
            slots: (0..MAX_WORKERS).map(|_| Slot::default()).collect(),
        }
    }

    /// Worker `index`'s state, created by `new` on first use. Panics if
    /// the index is out of range or another thread holds it.
    #[inline]
    pub fn claim(&self, index: usize, new: impl FnOnce() -> Worker) -> Claimed<'_> {
        let slot = self.slots.get(index).unwrap_or_else(|| {
            panic!("worker index {index} out of range (at most {MAX_WORKERS} workers)")
        });
        let mut guard = match slot.0.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                panic!("worker index {index} is used by two threads at once")
            }
        };
        if guard.is_none() {
            *guard = Some(new());
        }
        Claimed(guard)
    }

    /// Every worker's committed counts, by index (workers that never ran
    /// count zero). Waits for workers still running.
    pub fn committed(&self) -> Vec<Committed> {
        self.slots
            .iter()
            .map(|s| {
                let g = s.0.lock().unwrap_or_else(|p| p.into_inner());
                g.as_ref().map(|w| w.committed).unwrap_or_default()
            })
            .collect()
    }
}

/// A claimed worker slot (released when dropped).
pub struct Claimed<'a>(MutexGuard<'a, Option<Worker>>);

impl std::ops::Deref for Claimed<'_> {
    type Target = Worker;
    fn deref(&self) -> &Worker {
        self.0.as_ref().expect("claim fills the slot")
    }
}

impl std::ops::DerefMut for Claimed<'_> {
    fn deref_mut(&mut self) -> &mut Worker {
        self.0.as_mut().expect("claim fills the slot")
    }
}
