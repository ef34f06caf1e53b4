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
//! Only the HTM paths touch these records; on a CPU without HTM they are never used.

use std::cell::RefCell;

/// Records one thread can keep at a time; further acquisitions use the fallback lock.
pub(crate) const CAPACITY: usize = 16;

struct Holds {
    len: usize,
    addrs: [usize; CAPACITY],
}

thread_local! {
    static HOLDS: RefCell<Holds> = const {
        RefCell::new(Holds { len: 0, addrs: [0; CAPACITY] })
    };
}

/// True if a record can be pushed.
#[inline]
pub(crate) fn has_room() -> bool {
    HOLDS.with(|h| h.borrow().len < CAPACITY)
}

/// Records an elided hold of the lock at `addr`; false (and nothing recorded) when full.
#[inline]
pub(crate) fn try_push(addr: usize) -> bool {
    HOLDS.with(|h| {
        let mut h = h.borrow_mut();
        if h.len == CAPACITY {
            return false;
        }
        let n = h.len;
        h.addrs[n] = addr;
        h.len = n + 1;
        true
    })
}

/// Removes the most recent record for the lock at `addr`; true if there was one.
#[inline]
pub(crate) fn take(addr: usize) -> bool {
    HOLDS.with(|h| {
        let mut h = h.borrow_mut();
        let n = h.len;
        let Some(i) = (0..n).rev().find(|&i| h.addrs[i] == addr) else {
            return false;
        };
        h.addrs.copy_within(i + 1..n, i);
        h.len = n - 1;
        true
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_per_address() {
        assert!(try_push(1));
        assert!(try_push(2));
        assert!(try_push(1));
        assert!(take(2));
        assert!(!take(2));
        assert!(take(1));
        assert!(take(1));
        assert!(!take(1));
    }

    #[test]
    fn capacity_is_bounded() {
        for i in 0..CAPACITY {
            assert!(try_push(10 + i));
        }
        assert!(!has_room());
        assert!(!try_push(99));
        for i in 0..CAPACITY {
            assert!(take(10 + i));
        }
        assert!(has_room());
    }
}
