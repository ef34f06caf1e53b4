//! Range scans in both directions (`scan`, `scan_rev` and the collecting
//! `range`, `range_rev`): leaf by leaf along the right links, or by one
//! descent per leaf going left, recording every leaf and entry met; and the
//! cursor that rewrites the values it walks over (`update_range`).

use std::ops::{Bound, RangeBounds};

use crate::collections::node::map::MapNodes;
use crate::collections::{below_start, within_end};
use crate::error::TxResult;
use crate::tx::Transaction;

use super::storage::{deref, EPtr};
use super::TBTreeMap;

impl<K, V> TBTreeMap<K, V>
where
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// This transaction's view of entry `e`: `Some(f(key, value))` if
    /// visible. Records the entry's state read (except for the
    /// transaction's own placeholders and removals, which need none).
    #[inline]
    fn entry_view<'env, R>(
        &'env self,
        tx: &mut Transaction<'env>,
        e: EPtr<K, V>,
        f: impl FnOnce(&K, &V) -> R,
    ) -> TxResult<Option<R>> {
        // SAFETY: reached while pinned.
        let key = &unsafe { deref(e) }.key;
        self.view_value(tx, e, |v| f(key, v), |_| Ok(()))
    }

    /// Visits the entries with keys in `range` in ascending order, calling
    /// `f` on each until it returns `false`. The read set covers every key
    /// in the range up to where the scan stopped, present or not (the
    /// leaves covering them): a concurrent insert into that part of the
    /// range conflicts (phantom protection).
    pub fn scan<'env, R: RangeBounds<K>>(
        &'env self,
        tx: &mut Transaction<'env>,
        range: R,
        mut f: impl FnMut(&K, &V) -> bool,
    ) -> TxResult<()> {
        self.walk(tx, range, |tx, e| {
            Ok(self.entry_view(tx, e, &mut f)?.unwrap_or(true))
        })
    }

    /// Replaces the value of each entry with a key in `range` for which
    /// `f(key, value)` returns `Some(new)`, in ascending order; returns how
    /// many it replaced. The same as a [`scan`](Self::scan) followed by a
    /// [`set`](Self::set) of each key, with the same reads (every leaf of
    /// the range and every entry visited) and writes, but in one pass: the
    /// write goes to the entry the scan is at, with no second descent and
    /// search for its key, and each entry's read is kept on the item its
    /// write uses.
    ///
    /// ```
    /// use txmem::{atomically, TBTreeMap};
    /// let lines = TBTreeMap::new();
    /// atomically(|tx| {
    ///     for k in 0..5u64 {
    ///         lines.insert(tx, k, k * 10)?;
    ///     }
    ///     Ok(())
    /// });
    /// // Double the values of keys 1..4, summing the old ones on the way.
    /// let (doubled, sum) = atomically(|tx| {
    ///     let mut sum = 0;
    ///     let n = lines.update_range(tx, 1..4, |_, &v| {
    ///         sum += v;
    ///         Some(v * 2)
    ///     })?;
    ///     Ok((n, sum))
    /// });
    /// assert_eq!((doubled, sum), (3, 60));
    /// assert_eq!(lines.load_keys(), vec![0, 1, 2, 3, 4]);
    /// assert_eq!(lines.load(&3), Some(60));
    /// ```
    pub fn update_range<'env, R: RangeBounds<K>>(
        &'env self,
        tx: &mut Transaction<'env>,
        range: R,
        mut f: impl FnMut(&K, &V) -> Option<V>,
    ) -> TxResult<usize> {
        let mut updated = 0;
        self.walk(tx, range, |tx, e| {
            let id = tx.item(self, e as u64);
            // SAFETY: reached while pinned.
            let key = &unsafe { deref(e) }.key;
            if let Some(Some(new)) = self.view_item(tx, id, e, |v| f(key, v), |_| Ok(()))? {
                tx.item_mut(id).set_write(new);
                updated += 1;
            }
            Ok(true)
        })?;
        Ok(updated)
    }

    /// The walk of [`scan`](Self::scan): records each leaf of `range` and
    /// calls `visit` on each of its entries in the range, in ascending
    /// order, until `visit` returns `false`.
    fn walk<'env, R: RangeBounds<K>>(
        &'env self,
        tx: &mut Transaction<'env>,
        range: R,
        mut visit: impl FnMut(&mut Transaction<'env>, EPtr<K, V>) -> TxResult<bool>,
    ) -> TxResult<()> {
        let _ = tx.guard();
        let below = below_start(range.start_bound());
        let end = within_end(range.end_bound());
        let mut pos = match range.start_bound() {
            Bound::Included(lo) | Bound::Excluded(lo) => self.locate(|k| k <= lo),
            Bound::Unbounded => self.read_leaf(self.first),
        };
        let mut first = true;
        loop {
            self.record_leaf(tx, pos.leaf, pos.word)?;
            // SAFETY: reached while pinned.
            let d = unsafe { deref(pos.data) };
            let from = if first {
                d.keys().partition_point(&below)
            } else {
                0
            };
            first = false;
            for i in from..d.keys().len() {
                if !end(&d.keys()[i]) || !visit(tx, d.entries()[i])? {
                    return Ok(());
                }
            }
            match &d.high {
                Some(h) if end(h) => pos = self.read_leaf(d.next),
                _ => return Ok(()),
            }
        }
    }

    /// Visits the entries with keys in `range` in descending order, calling
    /// `f` on each until it returns `false`; same protection as
    /// [`scan`](Self::scan). Each step to the previous leaf is a descent
    /// (O(log n) per leaf, not per key).
    pub fn scan_rev<'env, R: RangeBounds<K>>(
        &'env self,
        tx: &mut Transaction<'env>,
        range: R,
        mut f: impl FnMut(&K, &V) -> bool,
    ) -> TxResult<()> {
        let _ = tx.guard();
        let below = below_start(range.start_bound());
        let end = within_end(range.end_bound());
        let mut pos = match range.end_bound() {
            Bound::Included(hi) => self.locate(|k| k <= hi),
            Bound::Excluded(hi) => self.locate(|k| k < hi),
            Bound::Unbounded => self.locate(|_| true),
        };
        // The low end of the leaf visited before (keys from there on are
        // done, whatever a later leaf holds).
        let mut done_from: Option<&K> = None;
        loop {
            self.record_leaf(tx, pos.leaf, pos.word)?;
            // SAFETY: reached while pinned.
            let d = unsafe { deref(pos.data) };
            let upto = d
                .keys()
                .partition_point(|k| end(k) && done_from.is_none_or(|l| k < l));
            for i in (0..upto).rev() {
                if below(&d.keys()[i]) {
                    return Ok(());
                }
                if let Some(go_on) = self.entry_view(tx, d.entries()[i], &mut f)? {
                    if !go_on {
                        return Ok(());
                    }
                }
            }
            // SAFETY: handles live as long as the map.
            let low = match &unsafe { deref(pos.leaf) }.low {
                None => return Ok(()),
                Some(low) => low,
            };
            // Keys below `low` are all out of range once `low` is at or
            // below the start bound.
            let done = match range.start_bound() {
                Bound::Included(lo) | Bound::Excluded(lo) => low <= lo,
                Bound::Unbounded => false,
            };
            if done {
                return Ok(());
            }
            done_from = Some(low);
            pos = self.locate(|k| k < low);
        }
    }

    /// The entries with keys in `range`, ascending (clones); see [`scan`](Self::scan).
    pub fn range<'env, R: RangeBounds<K>>(
        &'env self,
        tx: &mut Transaction<'env>,
        range: R,
    ) -> TxResult<Vec<(K, V)>> {
        crate::collections::collect_scan(|visit| self.scan(tx, range, visit))
    }

    /// The entries with keys in `range`, descending (clones); see [`scan_rev`](Self::scan_rev).
    pub fn range_rev<'env, R: RangeBounds<K>>(
        &'env self,
        tx: &mut Transaction<'env>,
        range: R,
    ) -> TxResult<Vec<(K, V)>> {
        crate::collections::collect_scan(|visit| self.scan_rev(tx, range, visit))
    }

    /// Every entry, ascending (clones): [`range`](Self::range) over all keys.
    pub fn to_vec<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Vec<(K, V)>> {
        self.range(tx, ..)
    }
}
