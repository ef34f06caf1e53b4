//! `TArray<T>`: a fixed-length array with one version per element.

use std::fmt;
use std::ops::Range;

use crate::error::TxResult;
use crate::item::Item;
use crate::object::{Commit, LockOutcome, TObject};
use crate::tx::Transaction;

use super::cell::ValueCell;
use super::history::Previous;
use super::slot::Slot;

/// A fixed-length transactional array. Each element is its own subobject
/// with its own version, so transactions touching different elements never
/// conflict.
///
/// Indexing out of bounds panics, as slices do.
///
/// ```
/// use txmem::{atomically, TArray};
/// let a = TArray::from_fn(4, |i| i as u64);
/// atomically(|tx| {
///     let x = a.get(tx, 1)?;
///     a.set(tx, 2, x + 10)
/// });
/// assert_eq!(a.load(2), 11);
/// ```
pub struct TArray<T> {
    slots: Box<[Slot<T>]>,
    /// Each element's value before its last write, if kept (see
    /// [`with_snapshot_history`](TArray::with_snapshot_history)).
    history: Option<Box<[Previous]>>,
}

impl<T: Clone + Send + Sync + 'static> TArray<T> {
    /// An array of `len` elements, element `i` initialised to `f(i)`.
    pub fn from_fn(len: usize, mut f: impl FnMut(usize) -> T) -> Self {
        TArray {
            slots: (0..len).map(|i| Slot::new(f(i))).collect(),
            history: None,
        }
    }

    /// Keeps each element's value before its last write, so that a
    /// read-only transaction ([`TxOptions::read_only`](crate::TxOptions::read_only))
    /// whose snapshot is older than that write reads the older value
    /// instead of restarting. A long read-only transaction (an audit of
    /// every element) then commits in its first or second attempt unless an
    /// element it has yet to read is written twice while it runs, where
    /// without history any write to such an element restarts it.
    ///
    /// The cost: 16 bytes per element, and a write saves the old value
    /// (one more cache line per written element). For element types stored
    /// inline (at most 8 bytes, no drop glue); panics for others.
    ///
    /// ```
    /// use txmem::{TArray, TxOptions};
    /// let accounts = TArray::from_fn(1024, |_| 100i64).with_snapshot_history();
    /// let audit = TxOptions::new().read_only(true);
    /// let total: i64 = audit.run(|tx| {
    ///     (0..accounts.len()).try_fold(0, |sum, i| Ok(sum + accounts.get(tx, i)?))
    /// });
    /// assert_eq!(total, 102_400);
    /// ```
    pub fn with_snapshot_history(mut self) -> Self {
        assert!(
            ValueCell::<T>::INLINE,
            "TArray::with_snapshot_history: elements of type `{}` are not stored inline \
             (at most 8 bytes, no drop glue)",
            std::any::type_name::<T>()
        );
        self.history = Some((0..self.slots.len()).map(|_| Previous::new()).collect());
        self
    }

    /// The saved previous value of element `index`, if the array keeps them.
    #[inline(always)]
    fn previous(&self, index: usize) -> Option<&Previous> {
        self.history.as_ref().map(|h| &h[index])
    }

    /// An array of `len` copies of `value`.
    pub fn new(len: usize, value: T) -> Self {
        Self::from_fn(len, |_| value.clone())
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True if the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    #[inline]
    fn slot(&self, index: usize) -> &Slot<T> {
        match self.slots.get(index) {
            Some(slot) => slot,
            None => out_of_bounds(index, self.slots.len()),
        }
    }

    /// Reads element `index`.
    #[inline(always)]
    pub fn get<'env>(&'env self, tx: &mut Transaction<'env>, index: usize) -> TxResult<T> {
        self.slot(index)
            .get(tx, self, index as u64, self.history.is_some(), || {
                self.previous(index)
            })
    }

    /// Calls `f` with a reference to element `index`.
    #[inline]
    pub fn read_with<'env, R>(
        &'env self,
        tx: &mut Transaction<'env>,
        index: usize,
        f: impl FnOnce(&T) -> R,
    ) -> TxResult<R> {
        self.slot(index).read_with(
            tx,
            self,
            index as u64,
            self.history.is_some(),
            || self.previous(index),
            f,
        )
    }

    /// Folds the elements of `range` in order, `f(acc, &element)`, as a
    /// loop of [`read_with`](Self::read_with) would: the same reads, the
    /// same conflicts and guarantees. One datatype operation rather than a
    /// read per element: in a read-only transaction's snapshot attempt an
    /// element within the snapshot costs a check of its version and no
    /// call into the runtime (any other element, and every element in
    /// other attempts, takes the ordinary read).
    ///
    /// Panics if `range` is out of bounds, as slicing does.
    ///
    /// ```
    /// use txmem::{read_only, TArray};
    /// let accounts = TArray::from_fn(100, |_| 10i64);
    /// let total = read_only(|tx| accounts.fold(tx, 0..accounts.len(), 0, |sum, &v| sum + v));
    /// assert_eq!(total, 1000);
    /// ```
    pub fn fold<'env, B>(
        &'env self,
        tx: &mut Transaction<'env>,
        range: Range<usize>,
        init: B,
        mut f: impl FnMut(B, &T) -> B,
    ) -> TxResult<B> {
        let slots = &self.slots[range.clone()];
        let mut acc = init;
        match tx.snapshot_bound().filter(|_| ValueCell::<T>::INLINE) {
            Some(bound) => {
                for (slot, index) in slots.iter().zip(range) {
                    acc = match slot.read_within(bound) {
                        Some(v) => f(acc, &v),
                        None => self.read_outside_snapshot(tx, index, |v| f(acc, v))?,
                    };
                }
            }
            None => {
                for index in range {
                    acc = self.read_with(tx, index, |v| f(acc, v))?;
                }
            }
        }
        Ok(acc)
    }

    /// [`read_with`](Self::read_with), out of line: `fold`'s read of an
    /// element its snapshot check could not decide, kept out of the loop
    /// that checks the others.
    #[cold]
    #[inline(never)]
    fn read_outside_snapshot<'env, R>(
        &'env self,
        tx: &mut Transaction<'env>,
        index: usize,
        f: impl FnOnce(&T) -> R,
    ) -> TxResult<R> {
        self.read_with(tx, index, f)
    }

    /// Writes element `index`.
    #[inline(always)]
    pub fn set<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        index: usize,
        value: T,
    ) -> TxResult<()> {
        self.slot(index)
            .set(tx, self, index as u64, self.history.is_some(), value);
        Ok(())
    }

    /// Replaces element `index` with `f(old)`.
    #[inline]
    pub fn modify<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        index: usize,
        f: impl FnOnce(T) -> T,
    ) -> TxResult<()> {
        self.slot(index)
            .modify(tx, self, index as u64, self.history.is_some(), |old| {
                (f(old), ())
            })
    }

    /// Reads element `index` outside any transaction.
    pub fn load(&self, index: usize) -> T {
        self.slot(index).load()
    }

    /// Writes element `index` as a transaction of its own (see
    /// [`TBox::store`](crate::TBox::store)). Panics inside a transaction.
    pub fn store(&self, index: usize, value: T) {
        self.slot(index)
            .store_now(self.addr(), self.previous(index), value)
    }

    /// Replaces element `index` with `f(&element)` as a transaction of its
    /// own and returns the new value (see [`TBox::update`](crate::TBox::update)).
    ///
    /// ```
    /// use txmem::TArray;
    /// let hits = TArray::new(4, 0u32);
    /// hits.update(2, |h| h + 1);
    /// assert_eq!(hits.load(2), 1);
    /// ```
    pub fn update(&self, index: usize, f: impl FnMut(&T) -> T) -> T {
        self.slot(index)
            .update_now(self.addr(), self.previous(index), f)
    }

    /// The address transactions know this object by (for wake-ups).
    #[inline]
    fn addr(&self) -> usize {
        self as *const Self as usize
    }

    /// Mutable access to element `index` when the array is not shared.
    #[cfg(not(txmem_loom))]
    pub fn get_mut(&mut self, index: usize) -> &mut T {
        let len = self.slots.len();
        self.slots
            .get_mut(index)
            .unwrap_or_else(|| panic!("TArray index {index} out of bounds (len {len})"))
            .cell
            .get_mut()
    }
}

impl<T: Clone + Send + Sync + 'static> TObject for TArray<T> {
    fn lock(&self, item: &mut Item, commit: &Commit<'_>) -> LockOutcome {
        self.slots[item.key() as usize].lock(item, commit)
    }
    fn check(&self, item: &Item, _: &Commit<'_>) -> bool {
        self.slots[item.key() as usize].check(item)
    }
    fn install(&self, item: &mut Item, commit: &Commit<'_>) {
        let index = item.key() as usize;
        self.slots[index].install(item, commit, self.previous(index))
    }
    fn unlock(&self, item: &mut Item) {
        self.slots[item.key() as usize].unlock(item)
    }
}

impl<T: Clone + Send + Sync + fmt::Debug + 'static> fmt::Debug for TArray<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries((0..self.len()).map(|i| self.load(i)))
            .finish()
    }
}

/// The panic of an index past the end, out of line: a closure capturing the
/// index and length kept both on the stack in every read's loop.
#[cold]
#[inline(never)]
fn out_of_bounds(index: usize, len: usize) -> ! {
    panic!("TArray index {index} out of bounds (len {len})")
}
