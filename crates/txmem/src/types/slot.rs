//! A versioned value slot: the building block of `TBox` and `TArray`.
//!
//! One [`TVersion`] guards one [`ValueCell`]. The functions here implement the
//! slot's side of every transactional operation and of the commit protocol,
//! so each datatype made of slots only maps its keys to slots.

use crate::error::TxResult;
use crate::item::Item;
use crate::object::{Commit, LockOutcome, TObject};
use crate::tx::{commit_single, ReadVia, Transaction};
use crate::version::TVersion;

use super::cell::ValueCell;
use super::history::Previous;

pub(crate) struct Slot<T> {
    pub version: TVersion,
    pub cell: ValueCell<T>,
}

impl<T: Clone + Send + Sync + 'static> Slot<T> {
    pub fn new(value: T) -> Self {
        Slot {
            version: TVersion::new(),
            cell: ValueCell::new(value),
        }
    }

    /// True if this attempt writes the slot through the word log
    /// (`tx::words`) rather than an item: for values stored inline, in
    /// objects that keep no history, unless the attempt's options route
    /// everything through items. Fixed for the attempt, so that a slot's
    /// writes all go one way.
    #[inline(always)]
    fn in_word_log(tx: &Transaction<'_>, keeps_history: bool) -> bool {
        ValueCell::<T>::INLINE && !keeps_history && tx.uses_word_log()
    }

    /// The value this attempt wrote to the slot through the word log, if it
    /// did (for a slot [`in_word_log`](Self::in_word_log)).
    #[inline(always)]
    fn pending_word<O: TObject>(
        tx: &Transaction<'_>,
        object: &O,
        key: u64,
    ) -> Option<std::mem::ManuallyDrop<T>> {
        let bits = tx.pending_word(object, key)?;
        // SAFETY: the word log's writes to this subobject all come from
        // `set` and `modify`, which encode a `T` (an object's address and
        // key name one slot of one type), and an inline `T` has no drop
        // glue, so the copy owns nothing.
        Some(std::mem::ManuallyDrop::new(unsafe {
            ValueCell::<T>::decode_inline(bits)
        }))
    }

    /// Transactional read by reference of the slot that is subobject `key`
    /// of `object`: the pending write if this transaction wrote the slot,
    /// else the committed value (recorded in the read set), or, for a
    /// snapshot older than the last write, the value before it if the
    /// object keeps it (`keeps_history`; `history` is called only then).
    #[inline(always)]
    pub fn read_with<'env, O: TObject, R>(
        &'env self,
        tx: &mut Transaction<'env>,
        object: &'env O,
        key: u64,
        keeps_history: bool,
        history: impl FnOnce() -> Option<&'env Previous>,
        f: impl FnOnce(&T) -> R,
    ) -> TxResult<R> {
        let via = if Self::in_word_log(tx, keeps_history) {
            if let Some(v) = Self::pending_word(tx, object, key) {
                return Ok(f(&v));
            }
            tx.log_via(object, key)
        } else {
            tx.read_via(object, key)
        };
        self.read_via_with(tx, via, history, f)
    }

    /// [`read_with`](Self::read_with) once the item or the read log is
    /// chosen (`via`).
    #[inline(always)]
    fn read_via_with<'env, R>(
        &'env self,
        tx: &mut Transaction<'env>,
        via: ReadVia,
        history: impl FnOnce() -> Option<&'env Previous>,
        f: impl FnOnce(&T) -> R,
    ) -> TxResult<R> {
        if let ReadVia::Item(id) = via {
            if let Some(v) = tx.item_ref(id).write_value::<T>() {
                return Ok(f(v));
            }
        }
        if ValueCell::<T>::INLINE {
            // Copying an inline value is a register move: read it under the
            // version check, then call `f` outside the retry loop.
            let copy = tx.observe_via_or_previous(
                via,
                &self.version,
                || self.cell.with(|v| std::mem::ManuallyDrop::new(v_copy(v))),
                |seen| {
                    let (word, overwritten, v) = history()?.read::<T>(&self.version, seen)?;
                    Some((word, overwritten, std::mem::ManuallyDrop::new(v)))
                },
            )?;
            Ok(f(&*copy))
        } else {
            // Heap values: pin, then borrow. The allocation a validated read
            // saw stays live while the transaction's guard is pinned.
            debug_assert!(
                history().is_none(),
                "history is kept for inline values only"
            );
            let _pinned = tx.guard();
            let ptr = tx.observe_via(via, &self.version, || self.cell.with(|v| v as *const T))?;
            // SAFETY: `ptr` was published by a committed write observed under
            // a stable version; the transaction's epoch guard (pinned above,
            // before the read) keeps it from being freed until the
            // transaction ends, and published values are never mutated.
            Ok(f(unsafe { &*ptr }))
        }
    }

    /// The snapshot read of an inline value at most `bound` (see
    /// [`TArray::fold`](crate::TArray::fold)): the value if the slot is
    /// unlocked, unchanged across the read and its version within the
    /// bound; `None` (nothing decided) otherwise.
    #[inline(always)]
    pub fn read_within(&self, bound: u64) -> Option<std::mem::ManuallyDrop<T>> {
        debug_assert!(ValueCell::<T>::INLINE);
        let w1 = self.version.load();
        if TVersion::is_locked(w1) || TVersion::version_of(w1) > bound {
            return None;
        }
        let v = self.cell.with(|v| std::mem::ManuallyDrop::new(v_copy(v)));
        (self.version.load() == w1).then_some(v)
    }

    /// Transactional read returning a clone (see [`read_with`](Self::read_with)).
    #[inline(always)]
    pub fn get<'env, O: TObject>(
        &'env self,
        tx: &mut Transaction<'env>,
        object: &'env O,
        key: u64,
        keeps_history: bool,
        history: impl FnOnce() -> Option<&'env Previous>,
    ) -> TxResult<T> {
        self.read_with(tx, object, key, keeps_history, history, T::clone)
    }

    /// Buffers a write of the slot that is subobject `key` of `object`.
    #[inline(always)]
    pub fn set<'env, O: TObject>(
        &'env self,
        tx: &mut Transaction<'env>,
        object: &'env O,
        key: u64,
        keeps_history: bool,
        value: T,
    ) {
        if Self::in_word_log(tx, keeps_history) {
            tx.write_word(
                object,
                key,
                &self.version,
                self.cell.word(),
                ValueCell::encode(value),
            );
        } else {
            let id = tx.item(object, key);
            tx.item_mut(id).set_write(value);
        }
    }

    /// Replaces the value with the first of `f(old)`'s results, and returns
    /// the second: a read and a write of the slot, through one item lookup
    /// where the slot goes through an item.
    #[inline(always)]
    pub fn modify<'env, O: TObject, R>(
        &'env self,
        tx: &mut Transaction<'env>,
        object: &'env O,
        key: u64,
        keeps_history: bool,
        f: impl FnOnce(T) -> (T, R),
    ) -> TxResult<R> {
        if Self::in_word_log(tx, keeps_history) {
            if let Some(pending) = Self::pending_word(tx, object, key) {
                let (new, out) = f(T::clone(&pending));
                self.set(tx, object, key, keeps_history, new);
                return Ok(out);
            }
            tx.update_word(
                object,
                key,
                &self.version,
                self.cell.word(),
                || self.cell.with(T::clone),
                |old| {
                    let (new, out) = f(old);
                    (ValueCell::encode(new), out)
                },
            )
        } else {
            let id = tx.item(object, key);
            let (new, out) = f(self.read_via_with(tx, ReadVia::Item(id), || None, T::clone)?);
            tx.item_mut(id).set_write(new);
            Ok(out)
        }
    }

    /// A consistent non-transactional read (a seqlock-style snapshot).
    pub fn load(&self) -> T {
        loop {
            let w1 = self.version.load();
            if TVersion::is_locked(w1) {
                std::hint::spin_loop();
                continue;
            }
            let v = self.cell.with(T::clone);
            if self.version.load() == w1 {
                return v;
            }
        }
    }

    // ---- single-operation transactions (see `tx::commit_single`); `object`
    // is the address of the owning object, for wake-ups, and `history` the
    // slot's previous value where the object keeps one ----

    /// Replaces the value with `f(&current)`; returns the new value.
    pub fn update_now(
        &self,
        object: usize,
        history: Option<&Previous>,
        mut f: impl FnMut(&T) -> T,
    ) -> T {
        commit_single(
            object,
            &self.version,
            || self.cell.with(&mut f),
            |new, commit_version| {
                let out = new.clone();
                self.install_now(new, history, commit_version);
                out
            },
        )
    }

    /// Replaces the value with `value`; returns the previous value.
    pub fn swap_now(&self, object: usize, value: T) -> T {
        commit_single(
            object,
            &self.version,
            || (),
            |(), commit_version| {
                // The lock is held: the committed value cannot change.
                let old = self.cell.with(T::clone);
                self.install_now(value, None, commit_version);
                old
            },
        )
    }

    /// Replaces the value with `value`.
    pub fn store_now(&self, object: usize, history: Option<&Previous>, value: T) {
        commit_single(
            object,
            &self.version,
            || (),
            |(), commit_version| self.install_now(value, history, commit_version),
        )
    }

    /// Stores a value under the lock of a single-operation transaction of
    /// commit version `commit_version`.
    fn install_now(&self, value: T, history: Option<&Previous>, commit_version: u64) {
        if let Some(h) = history {
            h.save(&self.version, &self.cell, commit_version);
        }
        // Only heap values need a guard (to retire the old allocation).
        let guard = std::cell::OnceCell::new();
        self.cell
            .store(value, || guard.get_or_init(crossbeam_epoch::pin));
    }

    // ---- the commit protocol for one slot ----

    #[inline]
    pub fn lock(&self, item: &mut Item, commit: &Commit<'_>) -> LockOutcome {
        commit.lock_version(&self.version, item)
    }

    #[inline]
    pub fn check(&self, item: &Item) -> bool {
        self.version
            .still_valid(item.read_version(), item.is_locked())
    }

    #[inline]
    pub fn install(&self, item: &mut Item, commit: &Commit<'_>, history: Option<&Previous>) {
        if let Some(h) = history {
            h.save(&self.version, &self.cell, commit.version());
        }
        let stored = self.cell.store_pending(&mut item.value, || commit.guard());
        assert!(
            stored,
            "a written slot item holds a value of the slot's type"
        );
        self.version
            .unlock_to(TVersion::next_after(item.read_version(), commit.version()));
    }

    #[inline]
    pub fn unlock(&self, item: &mut Item) {
        self.version.unlock_unchanged(item.read_version());
    }
}

/// Bitwise copy of an inline value (which has no drop glue and so owns nothing).
#[inline]
fn v_copy<T>(v: &T) -> T {
    // SAFETY: only called for `ValueCell::<T>::INLINE` types, which have no
    // drop glue; the copy is wrapped in ManuallyDrop by the caller and only
    // lent out by reference.
    unsafe { std::ptr::read(v) }
}
