//! The global commit clock, the irrevocability gate that shares its word,
//! and the hourglass gate beside it.
//!
//! The clock is a TL2-style counter: committing writers of more than one
//! item advance it (the others only read it; see `tx::commit::version_past`),
//! and opaque transactions take their snapshot bound from it (each thread
//! keeps the last value it saw, see `TxState::begin`). Its low bit is the
//! [`IRREVOCABLE`] gate: an irrevocable transaction runs, and no other writer
//! may commit until it finishes. Committers check it with the clock access
//! they make anyway.
//!
//! The hourglass (a starving transaction holds it; no new transaction may
//! begin until it commits) has a word of its own: every transaction checks
//! it at begin, and a word that is almost never written stays cached by
//! every core, while the clock's line moves to each committing writer.

use crossbeam_utils::CachePadded;
use std::sync::atomic::Ordering;

use crate::sync::{protocol_static, AtomicBool, AtomicU64};
use crate::version::VERSION_STEP;

/// Gate bit: an irrevocable transaction is running.
const IRREVOCABLE: u64 = 0b001;

protocol_static! {
    static CLOCK: CachePadded<AtomicU64> = CachePadded::new(AtomicU64::new(VERSION_STEP));
}

protocol_static! {
    /// True while a starving transaction holds the hourglass.
    static HOURGLASS: CachePadded<AtomicBool> = CachePadded::new(AtomicBool::new(false));
}

/// A snapshot of the clock word: time and the irrevocability gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ClockWord(pub u64);

impl ClockWord {
    #[inline]
    pub fn time(self) -> u64 {
        self.0 & !IRREVOCABLE
    }
    /// The irrevocability gate is closed: an irrevocable transaction runs.
    #[inline]
    pub fn irrevocable(self) -> bool {
        self.0 & IRREVOCABLE != 0
    }
}

/// Reads the clock (sequentially consistent: see `version::TVersion::load`
/// for why a snapshot bound must be; on x86 this is a plain load).
#[inline]
pub(crate) fn now() -> ClockWord {
    ClockWord(CLOCK.load(Ordering::SeqCst))
}

/// Reads the clock with sequentially consistent ordering: a committer that
/// has locked its write set reads the gate this way, pairing with the
/// gate-setter's SeqCst read-modify-write.
#[inline]
pub(crate) fn now_seqcst() -> ClockWord {
    #[cfg(not(txmem_loom))]
    let word = CLOCK.load(Ordering::SeqCst);
    // Loom does not model the single total order of SeqCst loads (loom
    // issue #180), so under loom the read is an RMW that changes nothing,
    // which loom orders against the gate-setter's RMW as SeqCst orders the
    // load.
    #[cfg(txmem_loom)]
    let word = CLOCK.fetch_add(0, Ordering::SeqCst);
    ClockWord(word)
}

/// How far a tick advances the clock: two version steps, so that a commit
/// version drawn by a tick is never one step past a clock value, as a
/// commit version drawn without a tick (`tx::commit::version_past`) is.
/// A reader can then tell a write that may have finished before it read
/// the clock (exactly one step past that value) from one that surely began
/// after (more): see `types::history`.
const TICK: u64 = 2 * VERSION_STEP;

/// Advances the clock and returns the new word (a TL2 commit version).
#[inline]
pub(crate) fn tick() -> ClockWord {
    let prev = CLOCK.fetch_add(TICK, Ordering::SeqCst);
    ClockWord(prev + TICK)
}

/// Moves the clock's time up to at least `time` (gate untouched) and
/// returns the word it leaves. For snapshots that must cover a version the
/// clock has not reached.
#[cold]
pub(crate) fn advance_to(time: u64) -> ClockWord {
    let mut cur = CLOCK.load(Ordering::SeqCst);
    loop {
        if ClockWord(cur).time() >= time {
            return ClockWord(cur);
        }
        let new = (time & !IRREVOCABLE) | (cur & IRREVOCABLE);
        match CLOCK.compare_exchange_weak(cur, new, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => return ClockWord(new),
            Err(actual) => cur = actual,
        }
    }
}

/// Closes the irrevocability gate; false if it was closed already (by
/// another irrevocable transaction).
pub(crate) fn try_close_irrevocable() -> bool {
    CLOCK.fetch_or(IRREVOCABLE, Ordering::SeqCst) & IRREVOCABLE == 0
}

/// Opens the irrevocability gate this thread closed.
pub(crate) fn open_irrevocable() {
    CLOCK.fetch_and(!IRREVOCABLE, Ordering::SeqCst);
}

/// Waits until the irrevocability gate is open.
pub(crate) fn wait_irrevocable_open() {
    wait_until(|| !now().irrevocable());
}

/// True while a transaction holds the hourglass.
#[inline]
pub(crate) fn hourglass_held() -> bool {
    HOURGLASS.load(Ordering::Acquire)
}

/// Takes the hourglass; false if another transaction holds it.
pub(crate) fn try_take_hourglass() -> bool {
    !HOURGLASS.swap(true, Ordering::AcqRel)
}

/// Releases the hourglass taken by this thread.
pub(crate) fn release_hourglass() {
    HOURGLASS.store(false, Ordering::Release);
}

/// Waits until no transaction holds the hourglass.
#[cold]
pub(crate) fn wait_hourglass_released() {
    wait_until(|| !hourglass_held());
}

/// Waits (spinning, then yielding) until `done` holds.
fn wait_until(done: impl Fn() -> bool) {
    let backoff = crossbeam_utils::Backoff::new();
    while !done() {
        if backoff.is_completed() {
            crate::sync::yield_now();
        } else {
            backoff.snooze();
            crate::sync::spin_hint();
        }
    }
}
