//! # txmem — typed software transactional memory
//!
//! txmem runs closures as atomic, isolated transactions over *transactional
//! objects*. It follows the STO design: a transaction tracks abstract
//! operations on datatypes ([`TBox`], [`TArray`], [`TCounter`], and types you
//! write yourself through [`TObject`]), not individual memory words, so its
//! tracking sets are small and operations conflict only when their meaning
//! does.
//!
//! ```
//! use txmem::{atomically, TArray};
//!
//! let accounts = TArray::new(8, 100i64);
//! atomically(|tx| {
//!     let a = accounts.get(tx, 0)?;
//!     let b = accounts.get(tx, 1)?;
//!     accounts.set(tx, 0, a - 25)?;
//!     accounts.set(tx, 1, b + 25)
//! });
//! let total: i64 = atomically(|tx| (0..8).map(|i| accounts.get(tx, i)).sum());
//! assert_eq!(total, 800);
//! ```
//!
//! ## Guarantees
//!
//! * Committed transactions are serializable, in every mode.
//! * In the default [`Opacity::Tl2`] mode no transaction — not even one that
//!   will abort — observes an inconsistent state (opacity).
//! * A transaction reads its own writes; a read-only transaction writes no
//!   shared memory.
//! * Memory replaced or removed by a commit is reclaimed through
//!   `crossbeam-epoch` once no running transaction can read it.
//!
//! ## The protocol
//!
//! Every subobject has a [`TVersion`] (a version number with a lock bit).
//! A transaction buffers writes in its items and records the versions it
//! reads. At commit it locks its write set (bounded spinning: no ordering
//! needed, no deadlock), takes a commit version, validates its read set,
//! installs, and unlocks. In TL2 mode the commit version comes from a global
//! clock (a commit that writes one item reads it without advancing it), and
//! a read of a version newer than the transaction's snapshot revalidates and
//! extends the snapshot instead of aborting (STO's extended check). A read of
//! a subobject the transaction has not written goes to a compact read log
//! rather than an item (STO's read-only items), and a write of a value
//! stored inline in one word (a `TBox<u64>`, a `TArray<f64>` element) to a
//! word log, whose entries the commit locks and stores directly, as a word
//! STM does, instead of calling the object for each.
//!
//! ## Collections
//!
//! The [`collections`] module builds on the same protocol (each type's
//! rustdoc says what every operation reads, writes and conflicts with):
//!
//! * [`THashMap`]: a resizable hash map; inserts of distinct keys never
//!   conflict, absent keys are protected by bucket versions.
//! * [`TBTreeMap`]: an ordered map (a B+ tree) with range scans in both
//!   directions and phantom protection.
//! * [`TListSet`] / [`TList`]: sorted linked sets and lists.
//! * [`TQueue`] (unbounded or bounded), [`TMVar`], [`TSem`]: queues and the
//!   blocking conveniences built on them.
//! * [`TWords`]: an untyped word STM over an arena (the baseline for typed
//!   versus untyped comparisons, and the engine for C callers).
//!
//! ## Beyond reads and writes
//!
//! * Read-only transactions ([`read_only`], [`TxOptions::read_only`]) read
//!   from a snapshot without logging their reads; with
//!   [`TArray::with_snapshot_history`] a long one survives writers, and
//!   [`TArray::fold`] reads a range of elements as one operation.
//! * Blocking [`retry`](Transaction::retry), [`check`](Transaction::check)
//!   and [`or_else`](Transaction::or_else) for condition synchronization.
//! * [`on_commit`](Transaction::on_commit) / [`on_abort`](Transaction::on_abort)
//!   handlers for deferred I/O and wake-ups.
//! * Irrevocable transactions ([`Transaction::become_irrevocable`],
//!   [`TxOptions::irrevocable`]) for work that cannot be undone; they cost
//!   ordinary transactions nothing while none runs (the gate shares the
//!   clock word).
//! * Contention management policies ([`ContentionPolicy`]) and
//!   serialization after N consecutive aborts.
//! * [`stats`]: commits, aborts by cause, and a per-call-site profile.
//! * Single-operation transactions outside `atomically`:
//!   [`TBox::store`], [`TBox::swap`], [`TBox::update`], [`TArray::update`],
//!   [`TCounter::add_now`] commit one write as a transaction of their own
//!   (serializable with all others) at about the cost of a mutex; `load()`
//!   reads a committed value.
//!
//! ## Writing your own transactional object
//!
//! Implement [`TObject`]. This reservation counter (the `vacation`
//! benchmark's resource in the STO thesis, §7.4) lets concurrent reservations
//! of the same resource commit together: a reservation does not read the
//! remaining count as a version, it only checks at commit that enough units
//! are left.
//!
//! ```
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use txmem::{atomically, Commit, Item, LockOutcome, TObject, Transaction, TVersion, TxResult};
//!
//! /// Units of a resource (rooms, seats) that transactions reserve.
//! struct Reservable {
//!     version: TVersion,
//!     remaining: AtomicU32,
//! }
//!
//! impl Reservable {
//!     /// Reserves one unit; the transaction aborts at commit only if none
//!     /// are left by then.
//!     fn reserve<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<()> {
//!         let id = tx.item(self, 0);
//!         let item = tx.item_mut(id);
//!         let n = item.write_value::<u32>().copied().unwrap_or(0);
//!         item.set_write(n + 1);
//!         Ok(())
//!     }
//! }
//!
//! impl TObject for Reservable {
//!     fn lock(&self, item: &mut Item, commit: &Commit<'_>) -> LockOutcome {
//!         match commit.lock_version(&self.version, item) {
//!             LockOutcome::Acquired => {
//!                 // Under the lock the count is exact: refuse (as a stale
//!                 // read, so the transaction aborts) if too few are left.
//!                 let wanted = *item.write_value::<u32>().unwrap();
//!                 if self.remaining.load(Ordering::Acquire) < wanted {
//!                     self.version.unlock_unchanged(item.read_version());
//!                     LockOutcome::Stale
//!                 } else {
//!                     LockOutcome::Acquired
//!                 }
//!             }
//!             other => other,
//!         }
//!     }
//!     fn check(&self, _item: &Item, _commit: &Commit<'_>) -> bool {
//!         true // reservations keep no read to validate
//!     }
//!     fn install(&self, item: &mut Item, commit: &Commit<'_>) {
//!         let wanted = *item.write_value::<u32>().unwrap();
//!         // `lock` has checked, under the lock, that `wanted` units remain.
//!         let left = self.remaining.load(Ordering::Relaxed);
//!         self.remaining.store(left - wanted, Ordering::Release);
//!         self.version.unlock_to(TVersion::next_after(item.read_version(), commit.version()));
//!     }
//!     fn unlock(&self, item: &mut Item) {
//!         self.version.unlock_unchanged(item.read_version());
//!     }
//! }
//!
//! let rooms = Reservable { version: TVersion::new(), remaining: AtomicU32::new(2) };
//! atomically(|tx| rooms.reserve(tx));
//! atomically(|tx| rooms.reserve(tx));
//! assert_eq!(rooms.remaining.load(Ordering::Relaxed), 0);
//! ```
//!
//! A transaction that reserves more units than remain is refused at commit
//! and re-runs, so a caller checks the count first and gives up with a user
//! error through [`try_atomically`]; `tests/custom_object.rs` does that and
//! runs reservations from several threads.

#![warn(missing_docs)]

mod clock;
#[cfg(not(txmem_loom))]
pub mod collections;
pub mod contention;
mod error;
pub mod item;
mod object;
mod options;
pub mod stats;
mod sync;
#[cfg(test)]
mod test_hook;
mod tx;
mod types;
mod version;
mod wait;
mod word;

#[cfg(not(txmem_loom))]
pub use collections::{
    DefaultHashBuilder, TBTreeMap, THashMap, TList, TListSet, TMVar, TMap, TQueue, TSem, TSet,
    TWords, WordAddr,
};
pub use contention::{Backoff, ContentionPolicy};
pub use error::{Abort, AbortCause, TxError, TxResult};
pub use item::Item;
pub use object::TObject;
pub use options::{set_default_options, Opacity, TxOptions, DEFAULT_SERIALIZE_AFTER};
pub use tx::commit::lock::{Commit, LockOutcome};
pub use tx::{
    atomically, atomically_async, read_only, read_only_async, try_atomically, ItemId, Transaction,
    TxFuture,
};

/// Knobs for measuring the runtime's internal thresholds (not needed in
/// normal use).
#[doc(hidden)]
pub mod tuning {
    pub use crate::tx::{item_index_cutoff, set_item_index_cutoff, HASH_CUTOFF};
}
pub use types::{TArray, TBox, TCounter};
pub use version::TVersion;

/// The workspace README's Rust examples, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
