//! `TMVar<T>`: a one-slot transactional cell (Haskell's `TMVar`).

use std::fmt;
use std::future::Future;

use crate::error::TxResult;
use crate::tx::Transaction;

use super::queue::TQueue;

/// A cell that is either empty or holds one value: [`take`](Self::take)
/// blocks while it is empty, [`put`](Self::put) blocks while it is full.
///
/// It is a [`TQueue`] bounded to one element, so it inherits the queue's
/// conflict rules: a `put` into an empty cell reads nothing (it re-checks
/// that the cell is still empty at commit, under the push lock); a `take`
/// reads the pop version (two takes conflict), and a `take` of an empty
/// cell reads the push version too, so that the waiting transaction wakes
/// when a `put` commits. A transaction may `take` and `put` in any order:
/// `take` then `put` swaps the value.
///
/// ```
/// use txmem::{atomically, TMVar};
/// let m = TMVar::new_empty();
/// atomically(|tx| m.put(tx, 5));
/// assert_eq!(atomically(|tx| m.try_put(tx, 6)), Some(6)); // full
/// assert_eq!(atomically(|tx| m.take(tx)), 5);
/// assert!(atomically(|tx| m.is_empty(tx)));
/// ```
pub struct TMVar<T> {
    queue: TQueue<T>,
}

impl<T: Clone + Send + Sync + 'static> TMVar<T> {
    /// An empty cell.
    pub fn new_empty() -> Self {
        TMVar {
            queue: TQueue::bounded(1),
        }
    }

    /// A cell holding `value`. It runs no transaction, so it may be called
    /// anywhere, inside a transaction too:
    ///
    /// ```
    /// use txmem::{atomically, TBox, TMVar};
    /// let seed = TBox::new(7);
    /// // Built inside a transaction, from a value the transaction read:
    /// let m = atomically(|tx| Ok(TMVar::new(seed.get(tx)?)));
    /// assert_eq!(m.load(), Some(7));
    /// assert_eq!(atomically(|tx| m.take(tx)), 7);
    /// ```
    pub fn new(value: T) -> Self {
        let mut m = Self::new_empty();
        m.queue.push_unshared(value);
        m
    }

    /// Takes the value out, blocking (`retry`) while the cell is empty.
    pub fn take<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<T> {
        self.queue.pop(tx)
    }

    /// [`take`](Self::take) as an async transaction of its own: the task
    /// waits (without blocking its thread) while the cell is empty.
    pub fn take_async(&self) -> impl Future<Output = T> + Send + '_ {
        self.queue.pop_async()
    }

    /// [`put`](Self::put) as an async transaction of its own: the task waits
    /// (without blocking its thread) while the cell is full.
    pub fn put_async(&self, value: T) -> impl Future<Output = ()> + Send + '_ {
        self.queue.push_async(value)
    }

    /// Takes the value out if there is one.
    pub fn try_take<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Option<T>> {
        self.queue.try_pop(tx)
    }

    /// Puts `value` in, blocking (`retry`) while the cell is full.
    pub fn put<'env>(&'env self, tx: &mut Transaction<'env>, value: T) -> TxResult<()> {
        self.queue.push(tx, value)
    }

    /// Puts `value` in if the cell is empty; otherwise returns it.
    pub fn try_put<'env>(&'env self, tx: &mut Transaction<'env>, value: T) -> TxResult<Option<T>> {
        Ok(self.queue.try_push(tx, value)?.err())
    }

    /// The value without taking it, blocking (`retry`) while empty.
    pub fn read<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<T> {
        match self.queue.peek(tx)? {
            Some(v) => Ok(v),
            None => Err(tx.retry()),
        }
    }

    /// True if the cell is empty (for this transaction).
    pub fn is_empty<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<bool> {
        self.queue.is_empty(tx)
    }

    /// The committed value, outside any transaction.
    pub fn load(&self) -> Option<T> {
        self.queue.load_vec().into_iter().next()
    }
}

impl<T: Clone + Send + Sync + fmt::Debug + 'static> fmt::Debug for TMVar<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TMVar").field(&self.load()).finish()
    }
}
