//! The global commit clock and the two gates that share its word.
//!
//! The clock is a TL2-style counter: opaque transactions read it at begin
//! (their snapshot bound) and committing writers advance it. Its low bits are
//! reserved for two rarely-set gates, so that checking them costs ordinary
//! transactions nothing beyond the clock access they make anyway:
//!
//! * [`IRREVOCABLE`]: an irrevocable transaction runs; no other writer may
//!   commit until it finishes.
//! * [`HOURGLASS`]: a starving transaction holds the hourglass; no new
//!   transaction may begin until it commits.

use crossbeam_utils::CachePadded;
use std::sync::atomic::Ordering;

use crate::sync::{protocol_static, AtomicU64};
use crate::version::VERSION_STEP;

/// Gate bit: an irrevocable transaction is running.
pub(crate) const IRREVOCABLE: u64 = 0b001;
/// Gate bit: the hourglass is held by a starving transaction.
pub(crate) const HOURGLASS: u64 = 0b010;
/// All gate bits (the clock advances in steps of `VERSION_STEP`, above them).
const GATES: u64 = IRREVOCABLE | HOURGLASS;

protocol_static! {
    static CLOCK: CachePadded<AtomicU64> = CachePadded::new(AtomicU64::new(VERSION_STEP));
}

/// A snapshot of the clock word: time and gate bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ClockWord(pub u64);

impl ClockWord {
    #[inline]
    pub fn time(self) -> u64 {
        self.0 & !GATES
    }
    #[inline]
    pub fn has(self, gate: u64) -> bool {
        self.0 & gate != 0
    }
}

/// Reads the clock (acquire).
#[inline]
pub(crate) fn now() -> ClockWord {
    ClockWord(CLOCK.load(Ordering::Acquire))
}

/// Reads the clock with sequentially consistent ordering: a committer that
/// has locked its write set reads the gates this way, pairing with the
/// gate-setter's SeqCst read-modify-write.
#[inline]
pub(crate) fn now_seqcst() -> ClockWord {
    ClockWord(CLOCK.load(Ordering::SeqCst))
}

/// Advances the clock and returns the new word (a TL2 commit version).
#[inline]
pub(crate) fn tick() -> ClockWord {
    let prev = CLOCK.fetch_add(VERSION_STEP, Ordering::SeqCst);
    ClockWord(prev + VERSION_STEP)
}

/// Moves the clock's time up to at least `time` (gates untouched) and
/// returns the word it leaves. For snapshots that must cover a version the
/// clock has not reached.
#[cold]
pub(crate) fn advance_to(time: u64) -> ClockWord {
    let mut cur = CLOCK.load(Ordering::SeqCst);
    loop {
        if ClockWord(cur).time() >= time {
            return ClockWord(cur);
        }
        let new = (time & !GATES) | (cur & GATES);
        match CLOCK.compare_exchange_weak(cur, new, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => return ClockWord(new),
            Err(actual) => cur = actual,
        }
    }
}

/// Sets a gate bit; returns false if it was already set (held by someone else).
pub(crate) fn try_close(gate: u64) -> bool {
    CLOCK.fetch_or(gate, Ordering::SeqCst) & gate == 0
}

/// Clears a gate bit previously set by this thread.
pub(crate) fn open(gate: u64) {
    CLOCK.fetch_and(!gate, Ordering::SeqCst);
}

/// Waits until `gate` is open and returns the clock word then.
#[cold]
pub(crate) fn wait_open_then_now(gate: u64) -> ClockWord {
    wait_open(gate);
    now()
}

/// Waits (spinning, then yielding) until `gate` is open.
pub(crate) fn wait_open(gate: u64) {
    let backoff = crossbeam_utils::Backoff::new();
    while now().has(gate) {
        if backoff.is_completed() {
            crate::sync::yield_now();
        } else {
            backoff.snooze();
            crate::sync::spin_hint();
        }
    }
}
