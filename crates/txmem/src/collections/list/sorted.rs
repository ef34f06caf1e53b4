//! The shared implementation of both list types: the node (state, gap
//! version, element, link), the list head (its gap and link), the size
//! counter and the flag that allows equal elements; construction and drop.

use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::collections::node::INSERTING;
use crate::collections::size::SizeCounter;
use crate::version::TVersion;

/// A list node: its state (commit lock, inserting and deleted flags), the
/// gap version of the interval up to its successor, its element and its
/// link.
pub(in crate::collections) struct LNode<T> {
    pub(super) state: TVersion,
    pub(super) gap: TVersion,
    pub(super) value: T,
    pub(super) next: AtomicPtr<LNode<T>>,
}

impl<T> LNode<T> {
    /// A placeholder for `value`, not linked yet.
    pub(super) fn placeholder(value: T) -> Box<Self> {
        let node = Box::new(LNode {
            state: TVersion::new(),
            gap: TVersion::new(),
            value,
            next: AtomicPtr::new(ptr::null_mut()),
        });
        // Not shared yet.
        node.state.set_flags_locked(INSERTING);
        node
    }
}

/// The shared implementation of [`TList`](super::TList) and [`TListSet`](super::TListSet).
pub(crate) struct SortedList<T> {
    pub(super) head_gap: TVersion,
    pub(super) head_next: AtomicPtr<LNode<T>>,
    pub(super) size: SizeCounter,
    pub(super) dups: bool,
}

// SAFETY: the list owns values of type `T` in heap nodes, read by reference
// from many threads (`T: Sync`) and dropped by the epoch collector possibly
// on another thread (`T: Send`).
unsafe impl<T: Send + Sync> Sync for SortedList<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for SortedList<T> {}

impl<T: Ord + Clone + Send + Sync + 'static> SortedList<T> {
    pub(super) fn new(dups: bool) -> Self {
        SortedList {
            head_gap: TVersion::new(),
            head_next: AtomicPtr::new(ptr::null_mut()),
            size: SizeCounter::new(0),
            dups,
        }
    }
}

impl<T> Drop for SortedList<T> {
    fn drop(&mut self) {
        let mut cur = *self.head_next.get_mut();
        while !cur.is_null() {
            // SAFETY: `&mut self` is exclusive; linked nodes are owned by
            // the list exactly once (unlinked ones by the epoch).
            let node = unsafe { Box::from_raw(cur) };
            cur = node.next.load(Ordering::Relaxed);
        }
    }
}
