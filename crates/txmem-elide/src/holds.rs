//! Per-thread records of lock acquisitions that did not go through the underlying lock.
//!
//! `lock_api`'s unlock functions receive no token, so a lock elided in a transaction, or a
//! read lock taken on the biased fast path (a reader slot), must be remembered somewhere to
//! be released the same way. (Elided records are written inside the transaction, so an
//! abort erases them together with everything else.) A small fixed array per thread does this without allocation
//! or destructor (so the thread-local access is cheap). Acquisitions through the underlying
//! lock are not recorded: "no record" means "release the underlying lock". All records of
//! one thread for one lock are interchangeable, so out-of-order guard drops are fine.

use std::cell::RefCell;

/// How a read lock was taken.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Hold {
    /// Through the thread's reader slot (reader bias on).
    Fast,
    /// Inside a hardware transaction.
    Elided,
}

/// Records one thread can keep at a time; further reads use the underlying lock.
pub(crate) const CAPACITY: usize = 16;

struct Holds {
    len: usize,
    entries: [(usize, Hold); CAPACITY],
}

thread_local! {
    static HOLDS: RefCell<Holds> = const {
        RefCell::new(Holds { len: 0, entries: [(0, Hold::Fast); CAPACITY] })
    };
}

/// True if a record can be pushed.
#[inline]
pub(crate) fn has_room() -> bool {
    HOLDS.with(|h| h.borrow().len < CAPACITY)
}

/// Records a hold of the lock at `addr`; false (and nothing recorded) when full.
#[inline]
pub(crate) fn try_push(addr: usize, kind: Hold) -> bool {
    HOLDS.with(|h| {
        let mut h = h.borrow_mut();
        if h.len == CAPACITY {
            return false;
        }
        let n = h.len;
        h.entries[n] = (addr, kind);
        h.len = n + 1;
        true
    })
}

/// Removes and returns the most recent record for the lock at `addr`.
#[inline]
pub(crate) fn take(addr: usize) -> Option<Hold> {
    take_where(addr, |_| true)
}

/// Removes the most recent `Elided` record for the lock at `addr`; true if there was one.
#[inline]
pub(crate) fn take_elided(addr: usize) -> bool {
    take_where(addr, |k| k == Hold::Elided).is_some()
}

#[inline]
fn take_where(addr: usize, want: impl Fn(Hold) -> bool) -> Option<Hold> {
    HOLDS.with(|h| {
        let mut h = h.borrow_mut();
        let n = h.len;
        let i = (0..n)
            .rev()
            .find(|&i| h.entries[i].0 == addr && want(h.entries[i].1))?;
        let kind = h.entries[i].1;
        h.entries.copy_within(i + 1..n, i);
        h.len = n - 1;
        Some(kind)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_per_address_and_lifo() {
        assert!(try_push(1, Hold::Fast));
        assert!(try_push(2, Hold::Elided));
        assert!(try_push(1, Hold::Elided));
        assert_eq!(take(1), Some(Hold::Elided));
        assert_eq!(take(1), Some(Hold::Fast));
        assert_eq!(take(1), None);
        assert_eq!(take(2), Some(Hold::Elided));
        assert_eq!(take(2), None);
    }

    #[test]
    fn take_elided_skips_fast_records() {
        assert!(try_push(2, Hold::Fast));
        assert!(!take_elided(2));
        assert!(try_push(2, Hold::Elided));
        assert!(try_push(2, Hold::Fast));
        assert!(take_elided(2));
        assert_eq!(take(2), Some(Hold::Fast));
        assert_eq!(take(2), Some(Hold::Fast));
        assert_eq!(take(2), None);
    }

    #[test]
    fn capacity_is_bounded() {
        for i in 0..CAPACITY {
            assert!(try_push(10 + i, Hold::Fast));
        }
        assert!(!has_room());
        assert!(!try_push(99, Hold::Fast));
        for i in 0..CAPACITY {
            assert_eq!(take(10 + i), Some(Hold::Fast));
        }
        assert!(has_room());
    }
}
