//! The list as a node collection and a gap chain: its nodes' states, the
//! check of a gap read at commit, the gap and link of a node (or of the
//! head), and unlinking a removed node; the [`TObject`](crate::TObject)
//! impl is the shared node protocol's (`node_tobject!`).

use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use crossbeam_epoch::Guard;

use crate::collections::node::gaps::GapChain;
use crate::collections::node::{node_tobject, NodeCollection};
use crate::collections::size::SizeCounter;
use crate::collections::struct_wait;
use crate::item::Item;
use crate::object::Commit;
use crate::version::TVersion;

use super::sorted::{LNode, SortedList};

impl<T: Ord + Clone + Send + Sync + 'static> NodeCollection for SortedList<T> {
    type Node = LNode<T>;

    #[inline]
    fn size(&self) -> &SizeCounter {
        &self.size
    }

    #[inline]
    fn state(node: &LNode<T>) -> &TVersion {
        &node.state
    }

    #[inline]
    fn check_structure(&self, item: &Item, _: &Commit<'_>) -> bool {
        self.gap((item.key() & !1) as *const LNode<T>)
            .still_valid(item.read_version(), false)
    }

    /// Unlinks `np`: finds its predecessor, then splices it out under the
    /// two gap locks, starting over (after a wait, holding nothing) while
    /// either is busy. With a commit version, the gaps around it are bumped
    /// to at least that version.
    fn unlink(&self, np: *const LNode<T>, cv: Option<u64>, guard: &Guard) {
        let mut spins = 0;
        loop {
            // A walk from the head never passes `np`, which stays linked
            // until this unlink (see the module docs on searches).
            let mut pred: *const LNode<T> = ptr::null();
            loop {
                let next = self.link(pred).load(Ordering::Acquire) as *const LNode<T>;
                assert!(!next.is_null(), "txmem: list node missing from its list");
                if ptr::eq(next, np) {
                    break;
                }
                pred = next;
            }
            // SAFETY: the caller owns the removal of `np` (a committed
            // removal being installed, or its own abandoned placeholder in
            // cleanup), which is linked; `pred` was reached while pinned by
            // `guard`; list nodes are boxed, and
            // `T: Send` lets the collector drop them elsewhere.
            if unsafe { self.try_splice_out(pred, np, cv, guard) } {
                return;
            }
            struct_wait(&mut spins);
        }
    }
}

impl<T: Ord + Clone + Send + Sync + 'static> GapChain for SortedList<T> {
    #[inline]
    fn gap(&self, n: *const LNode<T>) -> &TVersion {
        if n.is_null() {
            &self.head_gap
        } else {
            // SAFETY: callers pass nodes reached while pinned (or their own
            // node, not shared yet).
            &unsafe { &*n }.gap
        }
    }

    #[inline]
    fn link(&self, n: *const LNode<T>) -> &AtomicPtr<LNode<T>> {
        if n.is_null() {
            &self.head_next
        } else {
            // SAFETY: as in `gap`.
            &unsafe { &*n }.next
        }
    }
}

node_tobject!(impl[T] for SortedList<T> where T: Ord + Clone + Send + Sync + 'static);
