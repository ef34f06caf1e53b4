//! Per-thread records of elided lock acquisitions.
//!
//! `lock_api`'s unlock functions receive no token, so a lock whose section runs elided in a
//! transaction must be remembered somewhere to be released the same way (by committing).
//! A small fixed array of plain cells in the engine's thread context does this without
//! allocation or borrow flags. The record is written inside the transaction right after it
//! starts, so an abort erases it together with everything else. Acquisitions with no record
//! were made on the fallback lock. All records of one thread for one lock are
//! interchangeable (they are all nested parts of the same transaction), so out-of-order
//! guard drops are fine.
//!
//! The records also keep a thread from being handed a second guard of a lock it already
//! holds elided (a real lock would deadlock; an elided one must not hand out aliasing
//! `&mut` access instead): see [`Holds::check`].
//!
//! Only the HTM paths touch these records; on a CPU without HTM they are never used.

use std::cell::Cell;

/// Records one thread can keep at a time; further acquisitions use the fallback lock.
pub(crate) const CAPACITY: usize = 16;

/// How a lock is held.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Mode {
    /// A reader's hold of a reader-writer lock.
    Shared,
    /// A mutex, or a writer's hold of a reader-writer lock.
    Exclusive,
}

/// Records are lock addresses with the low bit set for exclusive holds (locks are at
/// least 8-byte aligned, so the bit is free).
const EXCLUSIVE_BIT: usize = 1;

/// What [`Holds::check`] found for a new acquisition.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    /// The acquisition may be elided and recorded.
    Free,
    /// No room for another record: take the fallback lock.
    Full,
    /// The thread already holds the lock in a mode that excludes this acquisition.
    Conflict,
}

/// One thread's records (kept in the elision engine's thread context). Plain cells: only
/// the owning thread touches them, and no method calls out while using them.
pub(crate) struct Holds {
    len: Cell<usize>,
    records: [Cell<usize>; CAPACITY],
}

#[inline]
fn record(addr: usize, mode: Mode) -> usize {
    debug_assert_eq!(addr & EXCLUSIVE_BIT, 0, "lock addresses are aligned");
    match mode {
        Mode::Shared => addr,
        Mode::Exclusive => addr | EXCLUSIVE_BIT,
    }
}

impl Holds {
    pub(crate) const fn new() -> Self {
        Holds {
            len: Cell::new(0),
            records: [const { Cell::new(0) }; CAPACITY],
        }
    }

    #[inline]
    fn live(&self) -> &[Cell<usize>] {
        &self.records[..self.len.get()]
    }

    /// Whether a `wanted` acquisition of the lock at `addr` may be elided and recorded.
    #[inline]
    pub(crate) fn check(&self, addr: usize, wanted: Mode) -> Check {
        if self.len.get() == 0 {
            return Check::Free;
        }
        if self.conflicting_hold(addr, wanted) {
            Check::Conflict
        } else if self.len.get() == CAPACITY {
            Check::Full
        } else {
            Check::Free
        }
    }

    /// Records an elided hold of the lock at `addr`; false (and nothing recorded) when full.
    #[inline]
    pub(crate) fn try_push(&self, addr: usize, mode: Mode) -> bool {
        let n = self.len.get();
        if n == CAPACITY {
            return false;
        }
        self.records[n].set(record(addr, mode));
        self.len.set(n + 1);
        true
    }

    /// Removes the most recent record of a `mode` hold of the lock at `addr`; true if there
    /// was one.
    #[inline]
    pub(crate) fn take(&self, addr: usize, mode: Mode) -> bool {
        let wanted = record(addr, mode);
        let live = self.live();
        let Some(i) = live.iter().rposition(|r| r.get() == wanted) else {
            return false;
        };
        for j in i + 1..live.len() {
            live[j - 1].set(live[j].get());
        }
        self.len.set(live.len() - 1);
        true
    }

    /// The strongest mode in which this thread holds the lock at `addr` elided, if it does.
    #[inline]
    pub(crate) fn held(&self, addr: usize) -> Option<Mode> {
        self.live()
            .iter()
            .map(Cell::get)
            .filter(|&r| r & !EXCLUSIVE_BIT == addr)
            .map(|r| {
                if r & EXCLUSIVE_BIT != 0 {
                    Mode::Exclusive
                } else {
                    Mode::Shared
                }
            })
            .max()
    }

    /// True if this thread holds the lock at `addr` elided in a mode that excludes a
    /// `wanted` acquisition by the same thread: any hold excludes an exclusive one, an
    /// exclusive hold excludes a shared one.
    #[inline]
    pub(crate) fn conflicting_hold(&self, addr: usize, wanted: Mode) -> bool {
        match wanted {
            Mode::Shared => self.held(addr) == Some(Mode::Exclusive),
            Mode::Exclusive => self.held(addr).is_some(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use Mode::{Exclusive, Shared};

    // Each test thread has its own records (in the engine they live in the thread context).
    thread_local! {
        static H: Holds = const { Holds::new() };
    }
    fn try_push(addr: usize, mode: Mode) -> bool {
        H.with(|h| h.try_push(addr, mode))
    }
    fn take(addr: usize, mode: Mode) -> bool {
        H.with(|h| h.take(addr, mode))
    }
    fn held(addr: usize) -> Option<Mode> {
        H.with(|h| h.held(addr))
    }
    fn conflicting_hold(addr: usize, wanted: Mode) -> bool {
        H.with(|h| h.conflicting_hold(addr, wanted))
    }
    fn has_room() -> bool {
        H.with(|h| h.check(8, Shared) != Check::Full)
    }

    #[test]
    fn records_are_per_address_and_mode() {
        assert!(try_push(8, Exclusive));
        assert!(try_push(16, Shared));
        assert!(try_push(8, Exclusive));
        assert_eq!(held(8), Some(Exclusive));
        assert_eq!(held(16), Some(Shared));
        assert_eq!(held(24), None);
        assert!(
            !take(16, Exclusive),
            "a shared hold is not an exclusive one"
        );
        assert!(take(16, Shared));
        assert!(!take(16, Shared));
        assert_eq!(held(16), None);
        assert!(take(8, Exclusive));
        assert!(take(8, Exclusive));
        assert!(!take(8, Exclusive));
    }

    #[test]
    fn held_reports_the_strongest_mode() {
        assert!(try_push(32, Shared));
        assert!(try_push(32, Exclusive));
        assert_eq!(held(32), Some(Exclusive));
        assert!(take(32, Exclusive));
        assert_eq!(held(32), Some(Shared));
        assert!(take(32, Shared));
        assert_eq!(held(32), None);
    }

    #[test]
    fn conflicts_follow_reader_writer_rules() {
        assert!(!conflicting_hold(40, Exclusive));
        assert!(try_push(40, Shared));
        assert!(!conflicting_hold(40, Shared), "reads may nest");
        assert!(conflicting_hold(40, Exclusive));
        assert!(take(40, Shared));
        assert!(try_push(40, Exclusive));
        assert!(conflicting_hold(40, Shared));
        assert!(conflicting_hold(40, Exclusive));
        assert!(take(40, Exclusive));
    }

    #[test]
    fn capacity_is_bounded() {
        for i in 0..CAPACITY {
            assert!(try_push(8 * (10 + i), Shared));
        }
        assert!(!has_room());
        assert!(!try_push(8 * 99, Shared));
        for i in 0..CAPACITY {
            assert!(take(8 * (10 + i), Shared));
        }
        assert!(has_room());
    }
}
