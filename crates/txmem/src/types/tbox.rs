//! `TBox<T>`: one transactional value.

use std::fmt;

use crate::error::TxResult;
use crate::item::Item;
use crate::object::{Commit, LockOutcome, TObject};
use crate::tx::Transaction;

use super::slot::Slot;

/// A transactional box holding one value of type `T`.
///
/// Small values without drop glue (integers, floats, `bool`, small `Copy`
/// structs — up to 8 bytes) are stored inline and read with one atomic load;
/// other values live in an epoch-managed allocation and can be read by
/// reference ([`read_with`](Self::read_with)) without cloning.
///
/// Conflicts: a read conflicts with a concurrent committed write; two writes
/// without reads (blind writes) never abort each other (the later commit wins).
///
/// ```
/// use txmem::{atomically, TBox};
/// let name = TBox::new(String::from("txmem"));
/// let len = atomically(|tx| name.read_with(tx, |s| s.len()));
/// assert_eq!(len, 5);
/// atomically(|tx| name.modify(tx, |s| s + "!"));
/// assert_eq!(name.load(), "txmem!");
/// ```
pub struct TBox<T> {
    slot: Slot<T>,
}

impl<T: Clone + Send + Sync + 'static> TBox<T> {
    /// A box holding `value`.
    pub fn new(value: T) -> Self {
        TBox {
            slot: Slot::new(value),
        }
    }

    /// Reads the value (a clone of it) inside a transaction.
    #[inline(always)]
    pub fn get<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<T> {
        self.slot.get(tx, self, 0, false, || None)
    }

    /// Calls `f` with a reference to the value, without cloning it.
    #[inline(always)]
    pub fn read_with<'env, R>(
        &'env self,
        tx: &mut Transaction<'env>,
        f: impl FnOnce(&T) -> R,
    ) -> TxResult<R> {
        self.slot.read_with(tx, self, 0, false, || None, f)
    }

    /// Writes `value` (visible to this transaction at once, to others at commit).
    #[inline(always)]
    pub fn set<'env>(&'env self, tx: &mut Transaction<'env>, value: T) -> TxResult<()> {
        self.slot.set(tx, self, 0, false, value);
        Ok(())
    }

    /// Replaces the value with `f(old)`.
    #[inline(always)]
    pub fn modify<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        f: impl FnOnce(T) -> T,
    ) -> TxResult<()> {
        self.slot.modify(tx, self, 0, false, |old| (f(old), ()))
    }

    /// Writes `value` and returns the previous value.
    #[inline]
    pub fn replace<'env>(&'env self, tx: &mut Transaction<'env>, value: T) -> TxResult<T> {
        self.slot.modify(tx, self, 0, false, |old| (value, old))
    }

    /// Reads the committed value outside any transaction (a consistent
    /// snapshot; never blocks for long).
    pub fn load(&self) -> T {
        self.slot.load()
    }

    /// Writes `value` as a transaction of its own (a *single-operation
    /// transaction*: it commits at once and serializes with every
    /// transaction, without the cost of `atomically`).
    ///
    /// Panics inside a transaction: there, use [`set`](Self::set).
    /// Single-operation transactions are not counted in the statistics.
    ///
    /// ```
    /// use txmem::TBox;
    /// let flag = TBox::new(false);
    /// flag.store(true);
    /// assert!(flag.load());
    /// ```
    pub fn store(&self, value: T) {
        self.slot.store_now(self.addr(), None, value)
    }

    /// Writes `value` and returns the previous value, as a transaction of its
    /// own (see [`store`](Self::store)).
    ///
    /// ```
    /// use txmem::TBox;
    /// let slot = TBox::new(String::from("old"));
    /// assert_eq!(slot.swap(String::from("new")), "old");
    /// assert_eq!(slot.load(), "new");
    /// ```
    pub fn swap(&self, value: T) -> T {
        self.slot.swap_now(self.addr(), value)
    }

    /// Replaces the value with `f(&value)` as a transaction of its own (see
    /// [`store`](Self::store)) and returns the new value.
    ///
    /// `f` runs before the box is locked and runs again if another writer
    /// commits first, so it should be a pure function of its argument (like
    /// the closure of `AtomicU64::fetch_update`).
    ///
    /// ```
    /// use txmem::{atomically, TBox};
    /// let next_id = TBox::new(0u64);
    /// assert_eq!(next_id.update(|n| n + 1), 1);
    /// // It serializes with ordinary transactions on the same box.
    /// atomically(|tx| next_id.modify(tx, |n| n + 10));
    /// assert_eq!(next_id.update(|n| n + 1), 12);
    /// ```
    pub fn update(&self, f: impl FnMut(&T) -> T) -> T {
        self.slot.update_now(self.addr(), None, f)
    }

    /// The address transactions know this object by (for wake-ups).
    #[inline]
    fn addr(&self) -> usize {
        self as *const Self as usize
    }

    /// Mutable access when the box is not shared.
    #[cfg(not(txmem_loom))]
    pub fn get_mut(&mut self) -> &mut T {
        self.slot.cell.get_mut()
    }

    /// Consumes the box, returning the value.
    #[cfg(not(txmem_loom))]
    pub fn into_inner(self) -> T {
        self.slot.cell.into_inner()
    }
}

impl<T: Clone + Send + Sync + 'static> TObject for TBox<T> {
    fn lock(&self, item: &mut Item, commit: &Commit<'_>) -> LockOutcome {
        self.slot.lock(item, commit)
    }
    fn check(&self, item: &Item, _: &Commit<'_>) -> bool {
        self.slot.check(item)
    }
    fn install(&self, item: &mut Item, commit: &Commit<'_>) {
        self.slot.install(item, commit, None)
    }
    fn unlock(&self, item: &mut Item) {
        self.slot.unlock(item)
    }
}

impl<T: Clone + Send + Sync + Default + 'static> Default for TBox<T> {
    fn default() -> Self {
        TBox::new(T::default())
    }
}

impl<T: Clone + Send + Sync + fmt::Debug + 'static> fmt::Debug for TBox<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TBox").field(&self.load()).finish()
    }
}
