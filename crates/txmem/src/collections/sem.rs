//! `TSem`: a transactional counting semaphore.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicI64, Ordering};

use crate::error::TxResult;
use crate::item::Item;
use crate::object::{Commit, LockOutcome, TObject};
use crate::tx::{atomically_async, Transaction};
use crate::version::TVersion;

/// A counting semaphore: [`acquire`](Self::acquire) takes a permit, blocking
/// (`retry`) while none is available; [`release`](Self::release) returns one.
///
/// It uses the bounded queue's machinery: operations record a pending change
/// of the permit count without reading it, and the count is checked at
/// commit, under the semaphore's lock. So:
///
/// | operation | read set | write set |
/// |---|---|---|
/// | `release` | nothing | +1 permit |
/// | `acquire` while permits seem available | nothing | −1 permit, checked at commit |
/// | `acquire` with no permit available | the version (exact count) | `retry` |
/// | [`available`](Self::available) | the version | — |
///
/// Concurrent acquires of available permits and concurrent releases never
/// conflict (they serialize for an instant at commit). An acquire that
/// loses the last permit to another at commit aborts, re-executes, reads
/// the exact count and waits.
///
/// ```
/// use txmem::{atomically, TSem};
/// let s = TSem::new(1);
/// atomically(|tx| s.acquire(tx));
/// assert!(!atomically(|tx| s.try_acquire(tx)));
/// atomically(|tx| s.release(tx));
/// assert_eq!(s.load(), 1);
/// ```
pub struct TSem {
    version: TVersion,
    permits: AtomicI64,
}

impl TSem {
    /// A semaphore with `permits` permits.
    pub fn new(permits: u32) -> Self {
        TSem {
            version: TVersion::new(),
            permits: AtomicI64::new(permits as i64),
        }
    }

    fn pending(&self, tx: &Transaction<'_>) -> i64 {
        tx.find_item(self, 0)
            .and_then(|id| tx.item_ref(id).write_value::<i64>().copied())
            .unwrap_or(0)
    }

    fn add<'env>(&'env self, tx: &mut Transaction<'env>, delta: i64) {
        let id = tx.item(self, 0);
        let item = tx.item_mut(id);
        let cur = item.write_value::<i64>().copied().unwrap_or(0);
        item.set_write(cur + delta);
    }

    /// Takes a permit if one is available; returns whether it did. A `false`
    /// result reads the exact count (a concurrent release aborts this
    /// transaction).
    pub fn try_acquire<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<bool> {
        let pending = self.pending(tx);
        if self.permits.load(Ordering::Acquire) + pending < 1 {
            // Looks exhausted: read the exact count.
            let id = tx.item(self, 0);
            let committed =
                tx.observe(id, &self.version, || self.permits.load(Ordering::Acquire))?;
            if committed + pending < 1 {
                return Ok(false);
            }
        }
        self.add(tx, -1);
        Ok(true)
    }

    /// Takes a permit, blocking (`retry`) until one is available.
    pub fn acquire<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<()> {
        if self.try_acquire(tx)? {
            Ok(())
        } else {
            Err(tx.retry())
        }
    }

    /// [`acquire`](Self::acquire) as an async transaction of its own: the
    /// task waits (without blocking its thread) until a permit is available.
    pub fn acquire_async(&self) -> impl Future<Output = ()> + Send + '_ {
        atomically_async(move |tx| self.acquire(tx))
    }

    /// Returns a permit (never conflicts).
    pub fn release<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<()> {
        self.add(tx, 1);
        Ok(())
    }

    /// The number of permits available to this transaction (reads the count).
    pub fn available<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<i64> {
        let id = tx.item(self, 0);
        let committed = tx.observe(id, &self.version, || self.permits.load(Ordering::Acquire))?;
        Ok(committed + self.pending(tx))
    }

    /// The committed number of permits, outside any transaction.
    pub fn load(&self) -> i64 {
        self.permits.load(Ordering::Acquire)
    }
}

impl TObject for TSem {
    fn lock(&self, item: &mut Item, commit: &Commit<'_>) -> LockOutcome {
        let outcome = commit.lock_version(&self.version, item);
        if outcome == LockOutcome::Acquired {
            let delta = item.write_value::<i64>().copied().unwrap_or(0);
            if self.permits.load(Ordering::Acquire) + delta < 0 {
                self.version.unlock_unchanged(item.read_version());
                return LockOutcome::Stale;
            }
        }
        outcome
    }
    fn check(&self, item: &Item, _: &Commit<'_>) -> bool {
        self.version
            .still_valid(item.read_version(), item.is_locked())
    }
    fn install(&self, item: &mut Item, commit: &Commit<'_>) {
        let delta = item.write_value::<i64>().copied().unwrap_or(0);
        // Under the lock no other installer runs: load + store is exact.
        let v = self.permits.load(Ordering::Relaxed);
        self.permits.store(v + delta, Ordering::Release);
        self.version
            .unlock_to(TVersion::next_after(item.read_version(), commit.version()));
    }
    fn unlock(&self, item: &mut Item) {
        self.version.unlock_unchanged(item.read_version());
    }
}

impl fmt::Debug for TSem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TSem").field(&self.load()).finish()
    }
}
