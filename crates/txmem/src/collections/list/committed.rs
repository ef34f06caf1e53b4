//! Committed (non-transactional) reads: an element, a range, the first
//! and last elements and the size, each as of one moment (a double collect
//! of the gap and state words passed).

use std::ops::{Bound, RangeBounds};
use std::sync::atomic::Ordering;

use crate::collections::node::gaps::{GapChain, UNLINKED};
use crate::collections::node::{DELETED, INSERTING};
use crate::collections::{struct_wait, within_end};
use crate::version::TVersion;

use super::sorted::SortedList;

impl<T: Ord + Clone + Send + Sync + 'static> SortedList<T> {
    /// The committed element equal to `x`, if any, at one moment: either a
    /// node read as committed and present, or a moment at which the gap
    /// where `x` would be and the states of every node equal to it were as
    /// read (a double collect).
    pub(super) fn committed_get(&self, x: &T) -> Option<T> {
        let _g = crossbeam_epoch::pin();
        let mut spins = 0;
        // Allocates only when invisible nodes equal to `x` are met.
        let mut seen: Vec<(&TVersion, u64)> = Vec::new();
        'search: loop {
            seen.clear();
            let pos = self.locate_value(x);
            let mut cur = pos.next;
            while !cur.is_null() {
                // SAFETY: reached from the head while pinned.
                let n = unsafe { &*cur };
                if n.value != *x {
                    break;
                }
                let w = n.state.load();
                if TVersion::is_locked(w) {
                    struct_wait(&mut spins);
                    continue 'search;
                }
                if w & (INSERTING | DELETED) == 0 {
                    return Some(n.value.clone());
                }
                seen.push((&n.state, w));
                cur = n.next.load(Ordering::Acquire);
            }
            if self.gap(pos.pred).load() == pos.gap && seen.iter().all(|&(v, w)| v.load() == w) {
                return None;
            }
            struct_wait(&mut spins);
        }
    }

    /// The committed elements within `start..end`, in order (only the first
    /// one if `first_only`), at one moment: every gap and node state read is
    /// checked unchanged after the traversal (a double collect; versions
    /// only grow, and every committed change moves one of them).
    fn committed_scan(&self, start: Bound<&T>, end: Bound<&T>, first_only: bool) -> Vec<T> {
        let _g = crossbeam_epoch::pin();
        let within = within_end(end);
        let mut spins = 0;
        let mut seen: Vec<(&TVersion, u64)> = Vec::new();
        let mut out = Vec::new();
        'scan: loop {
            seen.clear();
            out.clear();
            let pos = self.locate_start(start);
            seen.push((self.gap(pos.pred), pos.gap));
            let mut cur = pos.next;
            while !cur.is_null() {
                // SAFETY: reached from the head while pinned.
                let n = unsafe { &*cur };
                if !within(&n.value) {
                    break;
                }
                let w = n.state.load();
                if TVersion::is_locked(w) {
                    struct_wait(&mut spins);
                    continue 'scan;
                }
                seen.push((&n.state, w));
                if w & (INSERTING | DELETED) == 0 {
                    out.push(n.value.clone());
                    if first_only {
                        break;
                    }
                }
                let g = n.gap.load();
                if TVersion::is_locked(g) || g & UNLINKED != 0 {
                    struct_wait(&mut spins);
                    continue 'scan;
                }
                let next = n.next.load(Ordering::Acquire);
                if n.gap.load() != g {
                    continue 'scan;
                }
                seen.push((&n.gap, g));
                cur = next;
            }
            if seen.iter().all(|&(v, w)| v.load() == w) {
                return out;
            }
            struct_wait(&mut spins);
        }
    }

    pub(super) fn committed_range(&self, range: impl RangeBounds<T>) -> Vec<T> {
        self.committed_scan(range.start_bound(), range.end_bound(), false)
    }

    pub(super) fn committed_first(&self) -> Option<T> {
        self.committed_scan(Bound::Unbounded, Bound::Unbounded, true)
            .pop()
    }

    pub(super) fn committed_last(&self) -> Option<T> {
        self.committed_scan(Bound::Unbounded, Bound::Unbounded, false)
            .pop()
    }

    pub(super) fn committed_len(&self) -> usize {
        self.size.load().max(0) as usize
    }
}
