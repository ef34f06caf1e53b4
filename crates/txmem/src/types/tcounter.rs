//! `TCounter`: a counter whose increments commute.

use std::fmt;
use std::sync::atomic::Ordering;

use crate::error::TxResult;
use crate::item::Item;
use crate::object::{Commit, LockOutcome, TObject};
use crate::sync::AtomicI64;
use crate::tx::{commit_single, ReadVia, Transaction};
use crate::version::TVersion;

/// A transactional counter whose increments never conflict with each other.
///
/// [`add`](Self::add) records a delta without reading the counter, so
/// concurrent transactions that only add never abort each other; the deltas
/// are applied at commit. A transaction conflicts with concurrent adds only
/// if it *observes* the value with [`get`](Self::get) (which sees its own
/// pending delta too).
///
/// ```
/// use txmem::{atomically, TCounter};
/// let hits = TCounter::new(0);
/// atomically(|tx| { hits.add(tx, 2)?; hits.add(tx, 3) });
/// assert_eq!(hits.load(), 5);
/// assert_eq!(atomically(|tx| { hits.add(tx, 1)?; hits.get(tx) }), 6);
/// ```
pub struct TCounter {
    version: TVersion,
    value: AtomicI64,
}

impl TCounter {
    /// A counter starting at `value`.
    pub fn new(value: i64) -> Self {
        TCounter {
            version: TVersion::new(),
            value: AtomicI64::new(value),
        }
    }

    /// Adds `delta` (negative to subtract) without observing the value.
    #[inline]
    pub fn add<'env>(&'env self, tx: &mut Transaction<'env>, delta: i64) -> TxResult<()> {
        let id = tx.item(self, 0);
        let item = tx.item_mut(id);
        let pending = item.write_value::<i64>().copied().unwrap_or(0);
        item.set_write(pending.wrapping_add(delta));
        Ok(())
    }

    /// Adds one.
    #[inline]
    pub fn increment<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<()> {
        self.add(tx, 1)
    }

    /// Subtracts one.
    #[inline]
    pub fn decrement<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<()> {
        self.add(tx, -1)
    }

    /// Observes the value, including this transaction's pending delta. This
    /// makes the transaction conflict with concurrent adds.
    #[inline]
    pub fn get<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<i64> {
        let via = tx.read_via(self, 0);
        let committed =
            tx.observe_via(via, &self.version, || self.value.load(Ordering::Acquire))?;
        let pending = match via {
            ReadVia::Item(id) => tx.item_ref(id).write_value::<i64>().copied(),
            ReadVia::Log(..) => None,
        };
        Ok(committed.wrapping_add(pending.unwrap_or(0)))
    }

    /// Reads the committed value outside any transaction.
    pub fn load(&self) -> i64 {
        self.value.load(Ordering::Acquire)
    }

    /// Adds `delta` as a transaction of its own (see
    /// [`TBox::store`](crate::TBox::store)) and returns the new value.
    /// Panics inside a transaction: there, use [`add`](Self::add).
    ///
    /// ```
    /// use txmem::TCounter;
    /// let c = TCounter::new(5);
    /// assert_eq!(c.add_now(2), 7);
    /// ```
    pub fn add_now(&self, delta: i64) -> i64 {
        commit_single(
            self as *const Self as usize,
            &self.version,
            || (),
            |(), _| {
                // The lock is held: no installer runs concurrently.
                let v = self.value.load(Ordering::Relaxed).wrapping_add(delta);
                self.value.store(v, Ordering::Release);
                v
            },
        )
    }
}

impl TObject for TCounter {
    fn lock(&self, item: &mut Item, commit: &Commit<'_>) -> LockOutcome {
        commit.lock_version(&self.version, item)
    }
    fn check(&self, item: &Item, _: &Commit<'_>) -> bool {
        self.version
            .still_valid(item.read_version(), item.is_locked())
    }
    fn install(&self, item: &mut Item, commit: &Commit<'_>) {
        let delta = item.write_value::<i64>().copied().unwrap_or(0);
        // We hold the lock: no other installer runs, so load + store is exact.
        let v = self.value.load(Ordering::Relaxed);
        self.value.store(v.wrapping_add(delta), Ordering::Release);
        self.version
            .unlock_to(TVersion::next_after(item.read_version(), commit.version()));
    }
    fn unlock(&self, item: &mut Item) {
        self.version.unlock_unchanged(item.read_version());
    }
}

impl Default for TCounter {
    fn default() -> Self {
        TCounter::new(0)
    }
}

impl fmt::Debug for TCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TCounter").field(&self.load()).finish()
    }
}
