//! Per-thread records of elided lock acquisitions.
//!
//! `lock_api`'s unlock functions receive no token, so a lock whose section runs elided in a
//! transaction must be remembered somewhere to be released the same way (by committing).
//! A small fixed array per thread does this without allocation or destructor, so the
//! thread-local access is cheap. The record is written inside the transaction right after it
//! starts, so an abort erases it together with everything else. Acquisitions with no record
//! were made on the fallback lock. All records of one thread for one lock are
//! interchangeable (they are all nested parts of the same transaction), so out-of-order
//! guard drops are fine.
//!
//! The records also keep a thread from being handed a second guard of a lock it already
//! holds elided (a real lock would deadlock; an elided one must not hand out aliasing
//! `&mut` access instead): see [`held`].
//!
//! Only the HTM paths touch these records; on a CPU without HTM they are never used.

use std::cell::RefCell;

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

struct Holds {
    len: usize,
    records: [usize; CAPACITY],
}

thread_local! {
    static HOLDS: RefCell<Holds> = const {
        RefCell::new(Holds { len: 0, records: [0; CAPACITY] })
    };
}

/// True if a record can be pushed.
#[inline]
pub(crate) fn has_room() -> bool {
    HOLDS.with(|h| h.borrow().len < CAPACITY)
}

#[inline]
fn record(addr: usize, mode: Mode) -> usize {
    debug_assert_eq!(addr & EXCLUSIVE_BIT, 0, "lock addresses are aligned");
    match mode {
        Mode::Shared => addr,
        Mode::Exclusive => addr | EXCLUSIVE_BIT,
    }
}

/// Records an elided hold of the lock at `addr`; false (and nothing recorded) when full.
#[inline]
pub(crate) fn try_push(addr: usize, mode: Mode) -> bool {
    HOLDS.with(|h| {
        let mut h = h.borrow_mut();
        if h.len == CAPACITY {
            return false;
        }
        let n = h.len;
        h.records[n] = record(addr, mode);
        h.len = n + 1;
        true
    })
}

/// Removes the most recent record of a `mode` hold of the lock at `addr`; true if there
/// was one.
#[inline]
pub(crate) fn take(addr: usize, mode: Mode) -> bool {
    let wanted = record(addr, mode);
    HOLDS.with(|h| {
        let mut h = h.borrow_mut();
        let n = h.len;
        let Some(i) = (0..n).rev().find(|&i| h.records[i] == wanted) else {
            return false;
        };
        h.records.copy_within(i + 1..n, i);
        h.len = n - 1;
        true
    })
}

/// The strongest mode in which this thread holds the lock at `addr` elided, if it does.
#[inline]
pub(crate) fn held(addr: usize) -> Option<Mode> {
    HOLDS.with(|h| {
        let h = h.borrow();
        h.records[..h.len]
            .iter()
            .filter(|&&r| r & !EXCLUSIVE_BIT == addr)
            .map(|&r| {
                if r & EXCLUSIVE_BIT != 0 {
                    Mode::Exclusive
                } else {
                    Mode::Shared
                }
            })
            .max()
    })
}

/// True if this thread holds the lock at `addr` elided in a mode that excludes a `wanted`
/// acquisition by the same thread: any hold excludes an exclusive one, an exclusive hold
/// excludes a shared one.
#[inline]
pub(crate) fn conflicting_hold(addr: usize, wanted: Mode) -> bool {
    match wanted {
        Mode::Shared => held(addr) == Some(Mode::Exclusive),
        Mode::Exclusive => held(addr).is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use Mode::{Exclusive, Shared};

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
