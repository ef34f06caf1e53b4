//! Searching: locating the position of an element or of a range's start
//! along the gap chain, deciding which nodes a transaction sees, and
//! recording the gap where an absent element would be.

use std::ops::Bound;

use crate::collections::node::gaps::{GapChain, Pos};
use crate::collections::node::{DELETED, F_INSERT, F_REMOVE, INSERTING};
use crate::collections::{below_start, placeholder_in_the_way};
use crate::error::TxResult;
use crate::tx::Transaction;

use super::sorted::{LNode, SortedList};

/// What an insert into a set found among the nodes equal to its element.
pub(super) enum Found {
    /// A node visible to the transaction: nothing to insert.
    Present,
    /// None visible: link a placeholder.
    Absent,
    /// An irrevocable transaction waited for another one's placeholder:
    /// search again.
    Again,
}

impl<T: Ord + Clone + Send + Sync + 'static> SortedList<T> {
    /// Finds the last node with a value below `x` (by a traversal consistent
    /// with that node's gap word). The caller is pinned.
    #[inline]
    pub(super) fn locate_value(&self, x: &T) -> Pos<LNode<T>> {
        self.locate(|n| n.value < *x)
    }

    /// The position before a range that starts at `start`: the last node
    /// below the range, with its gap word and successor.
    #[inline]
    pub(super) fn locate_start(&self, start: Bound<&T>) -> Pos<LNode<T>> {
        let before = below_start(start);
        self.locate(|n| before(&n.value))
    }

    /// Whether node `np` is visible to the transaction: its own insert is
    /// (unless it removed it again), its own removal is not; otherwise the
    /// node's committed state decides, and the read is recorded. The caller
    /// is pinned and reached `np` from the list.
    #[inline]
    pub(super) fn visible<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        np: *const LNode<T>,
    ) -> TxResult<bool> {
        let id = tx.item(self, np as u64);
        let flags = tx.item_ref(id).flags();
        if flags & F_REMOVE != 0 {
            return Ok(false);
        }
        if flags & F_INSERT != 0 {
            return Ok(true);
        }
        // SAFETY: reached while pinned.
        let n = unsafe { &*np };
        tx.observe(id, &n.state, || ())?;
        Ok(tx.item_ref(id).read_version() & (INSERTING | DELETED) == 0)
    }

    /// The first node equal to `x` visible to this transaction, starting at
    /// `pos.next`. Invisible nodes met on the way (other transactions'
    /// placeholders, removals in flight, the transaction's own removals and
    /// undone inserts) are added to the read set, and so are their gaps:
    /// the rest of the run of equal nodes lies in those, not in the gap
    /// before the run that [`find`](Self::find) records for an absence. The
    /// unlink of a committed removal behind an invisible node moves only
    /// that node's gap. (Inserts of the element go before the run and move
    /// the gap before it.)
    fn first_visible<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        pos: &Pos<LNode<T>>,
        x: &T,
    ) -> TxResult<Option<*const LNode<T>>> {
        let mut cur = pos.next;
        while !cur.is_null() {
            // SAFETY: reached from `locate`'s result while pinned.
            let n = unsafe { &*cur };
            if n.value != *x {
                break;
            }
            if self.visible(tx, cur)? {
                return Ok(Some(cur));
            }
            cur = self.record_gap_after(tx, cur)?;
        }
        Ok(None)
    }

    /// The node holding `x` as the transaction sees it; when there is none,
    /// the gap where `x` would be is recorded.
    pub(super) fn find<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        x: &T,
    ) -> TxResult<Option<*const LNode<T>>> {
        let _ = tx.guard();
        let pos = self.locate_value(x);
        let found = self.first_visible(tx, &pos, x)?;
        if found.is_none() {
            self.record_gap(tx, pos.pred, pos.gap)?;
        }
        Ok(found)
    }

    pub(super) fn contains<'env>(&'env self, tx: &mut Transaction<'env>, x: &T) -> TxResult<bool> {
        Ok(self.find(tx, x)?.is_some())
    }

    pub(super) fn get<'env>(&'env self, tx: &mut Transaction<'env>, x: &T) -> TxResult<Option<T>> {
        // SAFETY: found while pinned; the transaction stays pinned.
        Ok(self.find(tx, x)?.map(|np| unsafe { &*np }.value.clone()))
    }

    /// For a set: whether the transaction sees an element equal to `x` among
    /// the nodes from `pos.next`. Another transaction's placeholder for it
    /// wins (the attempt aborts), whether or not this transaction has read
    /// it before: otherwise both inserts could commit. Invisible nodes are
    /// passed as in [`first_visible`](Self::first_visible).
    pub(super) fn present<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        pos: &Pos<LNode<T>>,
        x: &T,
        spins: &mut u32,
    ) -> TxResult<Found> {
        let mut cur = pos.next;
        while !cur.is_null() {
            // SAFETY: reached from `locate`'s result while pinned.
            let n = unsafe { &*cur };
            if n.value != *x {
                break;
            }
            let flags = tx
                .find_item(self, cur as u64)
                .map_or(0, |id| tx.item_ref(id).flags());
            if flags & (F_INSERT | F_REMOVE) == 0 && n.state.load() & INSERTING != 0 {
                placeholder_in_the_way(tx, spins)?;
                return Ok(Found::Again);
            }
            if self.visible(tx, cur)? {
                return Ok(Found::Present);
            }
            cur = self.record_gap_after(tx, cur)?;
        }
        Ok(Found::Absent)
    }
}
