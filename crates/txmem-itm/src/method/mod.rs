//! The algorithms behind the barriers, one trait for all.

mod eager;
mod lazy;
mod norec;
mod serial;

use crate::config::MethodKind;
use std::sync::atomic::{fence, Ordering};

use crate::orec::{self, CLOCK, LOCKED};
use crate::tx::desc::TxDesc;

pub(crate) use crate::stats::AbortCause;

/// What a committed transaction must wait for before it returns to code that may use data it
/// privatized (or saw another transaction privatize) without barriers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Privatization {
    /// Nothing: the algorithm is privatization-safe by itself (serial, NOrec).
    Safe,
    /// A writer with this write version: wait for transactions that started before it.
    Writer(u64),
    /// A reader with this snapshot: wait for writers it may have seen to finish their wait.
    Reader(u64),
}

/// One transactional-memory algorithm. Barriers hand it whole aligned 8-byte words; the
/// descriptor holds the logs, the method decides what they mean.
pub(crate) trait Method {
    /// True if a committing writer reads other descriptors' published start (to wait for
    /// older transactions): a start must then be published with a full fence, as the other
    /// side of that handshake.
    fn reads_states_at_commit(&self) -> bool {
        false
    }
    /// Called when an ordinary (non-serial) attempt starts, after it passed the gate.
    fn begin(&self, _tx: &mut TxDesc) {}
    /// The common case of [`Method::read_word`], or None to take the full path: no logic that
    /// can abort, few registers, inlined into every barrier.
    #[inline(always)]
    fn fast_read(&self, _tx: &mut TxDesc, _word: usize) -> Option<u64> {
        None
    }
    /// Reads the word at the 8-byte aligned `word`.
    fn read_word(&self, tx: &mut TxDesc, word: usize) -> Result<u64, AbortCause>;
    /// Reads the word at `word`, which the transaction is about to write (`_ITM_RfW*`): an
    /// algorithm that locks at encounter time takes the lock now instead of validating a
    /// read it would lock a moment later.
    fn read_for_write(&self, tx: &mut TxDesc, word: usize) -> Result<u64, AbortCause> {
        self.read_word(tx, word)
    }
    /// Writes the bytes of `val` selected by `mask` into the word at `word`.
    fn write_word(
        &self,
        tx: &mut TxDesc,
        word: usize,
        val: u64,
        mask: u64,
    ) -> Result<(), AbortCause>;
    /// Commits; says what must be waited for before the program goes on.
    fn commit(&self, tx: &mut TxDesc) -> Result<Privatization, AbortCause>;
    /// Undoes what the attempt did to shared state (memory written in place, orecs held)
    /// after an abort; the descriptor then empties every log.
    fn rollback(&self, tx: &mut TxDesc);
    /// True if everything read so far is still current (used when going irrevocable).
    fn validate(&self, tx: &TxDesc) -> bool;
    /// Publishes buffered writes in place, the gate held (when going irrevocable).
    fn write_back_serial(&self, tx: &mut TxDesc);
}

/// Runs `$body` with `$m` bound to the method `$kind` names.
macro_rules! with_method {
    ($kind:expr, $m:ident => $body:expr) => {
        match $kind {
            MethodKind::Lazy => {
                let $m = lazy::Lazy;
                $body
            }
            MethodKind::Eager => {
                let $m = eager::Eager;
                $body
            }
            MethodKind::NOrec => {
                let $m = norec::NOrec;
                $body
            }
            MethodKind::Serial => {
                let $m = serial::Serial;
                $body
            }
        }
    };
}

/// The method a transaction runs ([`TxDesc::method`]), dispatched by a `match` rather than a
/// vtable: barriers are the hot path, and a match lets each method's read and write be inlined
/// into them.
impl MethodKind {
    #[inline(always)]
    pub fn reads_states_at_commit(self) -> bool {
        with_method!(self, m => m.reads_states_at_commit())
    }
    #[inline(always)]
    pub fn begin(self, tx: &mut TxDesc) {
        with_method!(self, m => m.begin(tx))
    }
    #[inline(always)]
    pub fn fast_read(self, tx: &mut TxDesc, word: usize) -> Option<u64> {
        with_method!(self, m => m.fast_read(tx, word))
    }
    #[inline(always)]
    pub fn read_word(self, tx: &mut TxDesc, word: usize) -> Result<u64, AbortCause> {
        with_method!(self, m => m.read_word(tx, word))
    }
    #[inline(always)]
    pub fn read_for_write(self, tx: &mut TxDesc, word: usize) -> Result<u64, AbortCause> {
        with_method!(self, m => m.read_for_write(tx, word))
    }
    #[inline(always)]
    pub fn write_word(
        self,
        tx: &mut TxDesc,
        word: usize,
        val: u64,
        mask: u64,
    ) -> Result<(), AbortCause> {
        with_method!(self, m => m.write_word(tx, word, val, mask))
    }
    pub fn commit(self, tx: &mut TxDesc) -> Result<Privatization, AbortCause> {
        with_method!(self, m => m.commit(tx))
    }
    pub fn rollback(self, tx: &mut TxDesc) {
        with_method!(self, m => m.rollback(tx))
    }
    pub fn validate(self, tx: &TxDesc) -> bool {
        with_method!(self, m => m.validate(tx))
    }
    pub fn write_back_serial(self, tx: &mut TxDesc) {
        with_method!(self, m => m.write_back_serial(tx))
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

/// Saves in the undo log the bytes of `word` that `mask` selects: what an in-place write
/// (eager, serial) does before it stores, so that a rollback puts them back.
#[inline(always)]
pub(crate) fn log_undo_masked(tx: &mut TxDesc, word: usize, mask: u64) {
    let lo = mask.trailing_zeros() as usize / 8;
    let hi = 8 - mask.leading_zeros() as usize / 8;
    tx.log_undo(word + lo, hi - lo);
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

/// Locks orec `idx` for `tx` (or finds it already locked by `tx`); false if another
/// transaction holds it.
pub(crate) fn lock_orec(tx: &mut TxDesc, idx: usize) -> bool {
    let o = orec::orec(idx);
    let v = o.load(Ordering::Acquire);
    if v == tx.lock_word {
        return true;
    }
    if v & LOCKED != 0
        || o.compare_exchange(v, tx.lock_word, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
    {
        return false;
    }
    // As after taking NOrec's lock (`seqlock::try_lock`): the stores made under this lock must
    // not be seen beside the orec's old, unlocked version by a reader that fences after
    // loading them.
    fence(Ordering::Release);
    tx.locks.push((idx, v));
    if v > tx.start {
        tx.stale_locks.push(idx);
    }
    true
}

/// A write-back method's read of `word`: the transaction's own buffered bytes over memory's,
/// with memory read by `load` (the method's consistent read) unless every byte was written.
#[inline(always)]
pub(crate) fn read_through_redo(
    tx: &mut TxDesc,
    word: usize,
    load: impl FnOnce(&mut TxDesc) -> Result<u64, AbortCause>,
) -> Result<u64, AbortCause> {
    match tx.redo.get(word) {
        Some((val, u64::MAX)) => Ok(val),
        Some((val, mask)) => Ok((load(tx)? & !mask) | (val & mask)),
        None => load(tx),
    }
}

/// A write-back method going irrevocable with the gate held: its buffered writes go to
/// memory in place, each word's orec stamped as a serial writer's (a transaction that waited
/// through the gate and revalidates sees the change), and the redo log is spent.
pub(crate) fn write_back_serial(tx: &mut TxDesc) {
    for e in tx.redo.entries() {
        orec::stamp(e.word, 8, tx.serial_version);
    }
    write_back(tx);
    tx.redo.clear();
}

/// Writes the redo log to memory. The caller excludes conflicting writers (orec locks, the
/// sequence lock or the serial gate).
pub(crate) fn write_back(tx: &TxDesc) {
    for e in tx.redo.entries() {
        // SAFETY: every word in the redo log was written by the program through a barrier
        // (so its selected bytes are writable); the caller excludes other writers.
        unsafe { store_masked(e.word, e.val, e.mask) };
    }
}

/// Releases every orec `tx` holds: with `version`, or with the version each had before.
pub(crate) fn release(tx: &mut TxDesc, version: Option<u64>) {
    for &(idx, prev) in tx.locks.iter() {
        orec::orec(idx).store(version.unwrap_or(prev), Ordering::Release);
    }
    tx.locks.clear();
    tx.stale_locks.clear();
}

/// True if every orec read still shows a version no newer than the start version (or is
/// locked by `tx` and had such a version before).
pub(crate) fn validate_reads(tx: &TxDesc) -> bool {
    tx.reads.iter().all(|&idx| {
        let v = orec::orec(idx).load(Ordering::Acquire);
        if v == tx.lock_word {
            !tx.stale_locks.contains(&idx)
        } else {
            v & LOCKED == 0 && v <= tx.start
        }
    })
}

/// The common case of [`read_consistent`]: an unlocked orec (LOCKED is above every version)
/// no newer than the snapshot, unchanged across the load of the word, and room in the read
/// set. None in every other case.
#[inline(always)]
pub(crate) fn read_unchanged(tx: &mut TxDesc, word: usize) -> Option<u64> {
    let idx = orec::index(word);
    let o = orec::orec(idx);
    let v1 = o.load(Ordering::Acquire);
    if v1 > tx.start || tx.reads.len() == tx.reads.capacity() {
        return None;
    }
    // SAFETY: the barrier hands an aligned word holding bytes the program reads; the orec
    // check below discards a value written meanwhile.
    let val = unsafe { load_word(word) };
    fence(Ordering::Acquire);
    if o.load(Ordering::Relaxed) != v1 {
        return None;
    }
    // Byte-wise loops read a word (and its orec) several times, one or two words between:
    // one entry validates them all.
    if recent(&tx.reads, |&r| r == idx).is_none() {
        push_within_capacity(&mut tx.reads, idx);
    }
    Some(val)
}

/// The entry among the last two of `log` that `hit` accepts, if any: where a byte-wise loop
/// over one or two strings (`strlen`, `memcmp`) logged the word it reads again.
#[inline(always)]
pub(crate) fn recent<T>(log: &[T], hit: impl Fn(&T) -> bool) -> Option<&T> {
    match log {
        [.., a, b] => {
            if hit(b) {
                Some(b)
            } else if hit(a) {
                Some(a)
            } else {
                None
            }
        }
        [b] => hit(b).then_some(b),
        [] => None,
    }
}

/// Appends `x` to a log whose length the caller has just checked against its capacity:
/// the barriers' fast paths, which leave a full log to the slow path, need no growth code
/// (and no registers saved for a call that never happens).
#[inline(always)]
pub(crate) fn push_within_capacity<T>(log: &mut Vec<T>, x: T) {
    let len = log.len();
    assert!(
        len < log.capacity(),
        "push_within_capacity: the log is full"
    );
    // SAFETY: `len < capacity` (checked above), so the slot at `len` is allocated and
    // unused; writing it and counting it keeps the vector's invariants.
    unsafe {
        log.as_mut_ptr().add(len).write(x);
        log.set_len(len + 1);
    }
}

/// Reads `word` consistently with the transaction's snapshot, logging its
/// orec in the read set: the seqlock pattern on the word's orec (read the
/// orec, the word, the orec again), extending the snapshot when the orec is
/// newer and the read set still validates. With `own_locks`, a word whose
/// orec this transaction holds (eager writes in place) is read directly.
pub(crate) fn read_consistent(
    tx: &mut TxDesc,
    word: usize,
    own_locks: bool,
) -> Result<u64, AbortCause> {
    let idx = orec::index(word);
    let o = orec::orec(idx);
    loop {
        let v1 = o.load(Ordering::Acquire);
        if own_locks && v1 == tx.lock_word {
            // SAFETY: the barrier hands an aligned word the program reads; we own its orec.
            return Ok(unsafe { load_word(word) });
        }
        if v1 & LOCKED != 0 {
            return Err(AbortCause::LockBusyOnRead);
        }
        // SAFETY: the barrier hands an aligned word holding bytes the program reads; the
        // orec check below discards a value written meanwhile.
        let val = unsafe { load_word(word) };
        // The value must be read before the orec is read again.
        fence(Ordering::Acquire);
        if o.load(Ordering::Relaxed) != v1 {
            continue;
        }
        if v1 > tx.start {
            // Newer than the snapshot: move the snapshot forward if nothing read so far
            // changed, else abort.
            let now = CLOCK.load(Ordering::Acquire);
            if !validate_reads(tx) {
                return Err(AbortCause::Opacity);
            }
            tx.start = now;
            tx.state.store(now, Ordering::Release);
            continue;
        }
        tx.reads.push(idx);
        return Ok(val);
    }
}
