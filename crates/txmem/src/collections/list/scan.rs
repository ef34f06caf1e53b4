//! Iteration: ordered scans of a range (`scan`, `range`), the first
//! element, and the last element (found from the tail without recording
//! the whole list), recording every node and gap they pass.

use std::ops::{Bound, RangeBounds};
use std::ptr;
use std::sync::atomic::Ordering;

use crate::collections::node::gaps::GapChain;
use crate::collections::node::{DELETED, F_INSERT, F_REMOVE, INSERTING};
use crate::collections::within_end;
use crate::error::TxResult;
use crate::tx::Transaction;

use super::sorted::{LNode, SortedList};

impl<T: Ord + Clone + Send + Sync + 'static> SortedList<T> {
    /// Visits, in order, the elements visible to the transaction within
    /// `start..end`, calling `visit` until it returns `false`. Records the
    /// gap before the range, then the state of every node and the gap after
    /// every node visited (up to where the visit stopped).
    fn scan<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        start: Bound<&T>,
        end: Bound<&T>,
        mut visit: impl FnMut(&T) -> bool,
    ) -> TxResult<()> {
        let _ = tx.guard();
        let pos = self.locate_start(start);
        self.record_gap(tx, pos.pred, pos.gap)?;
        let within = within_end(end);
        let mut cur = pos.next;
        while !cur.is_null() {
            // SAFETY: reached from recorded gaps while pinned.
            let n = unsafe { &*cur };
            if !within(&n.value) {
                break;
            }
            if self.visible(tx, cur)? && !visit(&n.value) {
                return Ok(());
            }
            cur = self.record_gap_after(tx, cur)?;
        }
        Ok(())
    }

    pub(super) fn range<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        range: impl RangeBounds<T>,
    ) -> TxResult<Vec<T>> {
        let mut out = Vec::new();
        self.scan(tx, range.start_bound(), range.end_bound(), |v| {
            out.push(v.clone());
            true
        })?;
        Ok(out)
    }

    pub(super) fn first<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Option<T>> {
        let mut first = None;
        self.scan(tx, Bound::Unbounded, Bound::Unbounded, |v| {
            first = Some(v.clone());
            false
        })?;
        Ok(first)
    }

    /// The last element. Only the tail of the list matters: the last node
    /// that looks visible is found without recording anything, then its
    /// state and everything after it are recorded. If that node turns out
    /// invisible, the whole list is scanned instead.
    pub(super) fn last<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Option<T>> {
        let _ = tx.guard();
        let mut candidate: *const LNode<T> = ptr::null();
        let mut cur = self.head_next.load(Ordering::Acquire) as *const LNode<T>;
        while !cur.is_null() {
            // SAFETY: reached from the head while pinned.
            let n = unsafe { &*cur };
            let looks_visible = match tx.find_item(self, cur as u64) {
                Some(id) => {
                    let flags = tx.item_ref(id).flags();
                    flags & F_REMOVE == 0
                        && (flags & F_INSERT != 0 || n.state.load() & (INSERTING | DELETED) == 0)
                }
                None => n.state.load() & (INSERTING | DELETED) == 0,
            };
            if looks_visible {
                candidate = cur;
            }
            cur = n.next.load(Ordering::Acquire);
        }
        if !candidate.is_null() && self.visible(tx, candidate)? {
            let mut last = candidate;
            let mut cur = self.record_gap_after(tx, candidate)?;
            while !cur.is_null() {
                if self.visible(tx, cur)? {
                    last = cur;
                }
                cur = self.record_gap_after(tx, cur)?;
            }
            // SAFETY: reached while pinned; the transaction stays pinned.
            return Ok(Some(unsafe { &*last }.value.clone()));
        }
        let mut last = None;
        self.scan(tx, Bound::Unbounded, Bound::Unbounded, |v| {
            last = Some(v.clone());
            true
        })?;
        Ok(last)
    }
}
