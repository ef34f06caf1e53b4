//! [`Transaction`], the handle a transaction's closure gets: the public API
//! that programs and datatypes use inside `atomically`.
//!
//! Each method is the public face of a step defined elsewhere in `tx`: the
//! tracking set (`state`), the read protocol (`read`), irrevocability
//! (`irrevocable`), `or_else` (`savepoint`), handlers (`handlers`). The
//! wrappers on the read path are `#[inline(always)]`, like the steps they
//! call, so a datatype's read compiles to one inlined sequence.

use std::cell::Cell;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr::NonNull;

use crossbeam_epoch::Guard;

use super::handlers::erase_handler;
use super::savepoint;
use super::state::{TxState, WordWrite};
use crate::error::{Abort, AbortCause, TxResult};
use crate::item::Item;
use crate::object::TObject;
use crate::options::Opacity;
use crate::version::TVersion;
use crate::word::AtomicWord;

/// A handle to an item of the current transaction (its position in the
/// tracking set), returned by [`Transaction::item`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemId(usize);

/// Where a read is recorded: see [`Transaction::read_via`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum ReadVia {
    /// The subobject's item (which may hold this transaction's write).
    Item(ItemId),
    /// The read log: (object address, key) of a subobject not written.
    Log(usize, u64),
}

/// A running transaction, handed to the closure of [`atomically`](crate::atomically).
///
/// Datatype operations take `&mut Transaction` and return [`TxResult`];
/// propagate aborts with `?`. The lifetime `'env` is the environment of the
/// `atomically` call: every transactional object the transaction touches must
/// outlive the whole call, which the borrow checker enforces.
#[repr(transparent)]
pub struct Transaction<'env> {
    st: TxState,
    _env: PhantomData<Cell<&'env ()>>,
}

impl<'env> Transaction<'env> {
    #[inline]
    pub(crate) fn from_state(st: &mut TxState) -> &mut Transaction<'env> {
        // SAFETY: `Transaction` is a transparent wrapper around `TxState`;
        // the lifetime only restricts what the caller may register.
        unsafe { &mut *(st as *mut TxState as *mut Transaction<'env>) }
    }

    /// Returns the item for (`object`, `key`), creating it if the
    /// transaction has not touched that subobject yet. There is exactly one
    /// item per (object, key).
    #[inline(always)]
    pub fn item<O: TObject + 'env>(&mut self, object: &'env O, key: u64) -> ItemId {
        let dynref: &'env (dyn TObject + 'env) = object;
        // SAFETY: only the lifetime bound of the trait object is erased; the
        // item never outlives 'env because `atomically` clears the tracking
        // set before it returns (and on unwind).
        let erased: NonNull<dyn TObject> = unsafe {
            std::mem::transmute::<NonNull<dyn TObject + 'env>, NonNull<dyn TObject + 'static>>(
                NonNull::from(dynref),
            )
        };
        ItemId(self.st.find_or_insert(erased, key))
    }

    /// Looks up the item for (`object`, `key`) without creating it.
    #[inline]
    pub fn find_item<O: TObject>(&self, object: &O, key: u64) -> Option<ItemId> {
        self.st.find(object_addr(object), key).map(ItemId)
    }

    /// The item behind `id`.
    #[inline(always)]
    pub fn item_ref(&self, id: ItemId) -> &Item {
        &self.st.items[id.0]
    }

    /// The item behind `id`, mutably.
    #[inline(always)]
    pub fn item_mut(&mut self, id: ItemId) -> &mut Item {
        self.st.mutated = true;
        if !self.st.savepoints.is_empty() {
            savepoint::log_before_change(&mut self.st, id.0);
        }
        &mut self.st.items[id.0]
    }

    /// Records a read of item `id` at `word` that a rollback of the
    /// enclosing [`or_else`](Self::or_else) branches keeps (see
    /// `savepoint::keep_read`): for a read the attempt's own structural
    /// change moved, and for an absence an insert reports inside a branch.
    // (Only the collections use it, and the loom build has none.)
    #[cfg_attr(txmem_loom, allow(dead_code))]
    pub(crate) fn keep_read(&mut self, id: ItemId, word: u64) {
        self.st.mutated = true;
        if self.st.savepoints.is_empty() {
            self.st.items[id.0].observe(word);
        } else {
            savepoint::keep_read(&mut self.st, id.0, word);
        }
    }

    /// True inside a branch of [`or_else`](Self::or_else) (a branch that
    /// may still be rolled back).
    // (Only the collections use it, and the loom build has none.)
    #[cfg_attr(txmem_loom, allow(dead_code))]
    #[inline]
    pub(crate) fn in_branch(&self) -> bool {
        !self.st.savepoints.is_empty()
    }

    /// The standard transactional read of a value protected by `version`.
    ///
    /// Calls `load` between two reads of the version word until both agree
    /// and the word is unlocked (a lock held past a bounded spin aborts with
    /// [`AbortCause::LockBusy`]), records the read in item `id`, and applies
    /// the transaction's opacity check. A second read of the same item must
    /// see the same version, or the attempt aborts.
    #[inline(always)]
    pub fn observe<R>(
        &mut self,
        id: ItemId,
        version: &TVersion,
        load: impl FnMut() -> R,
    ) -> TxResult<R> {
        self.st.observe(id.0, version, load)
    }

    /// How a datatype reads subobject `key` of `object`: through its item
    /// if the transaction may have written it (so the read sees the write),
    /// else through the read log (see [`observe_via`](Self::observe_via)).
    #[inline(always)]
    pub(crate) fn read_via<O: TObject + 'env>(&mut self, object: &'env O, key: u64) -> ReadVia {
        let addr = object_addr(object);
        if self.st.may_have_written(addr, key) {
            ReadVia::Item(self.item(object, key))
        } else {
            ReadVia::Log(addr, key)
        }
    }

    /// True if this attempt buffers writes of inline word values in the
    /// word log rather than in items (see `tx::words`): unless its options
    /// turn untracked reads off, where every access goes through items. A
    /// slot whose writes go to the log reads through
    /// [`pending_word`](Self::pending_word) and the read log, never an item.
    #[inline(always)]
    pub(crate) fn uses_word_log(&self) -> bool {
        !self.st.tracked_only
    }

    /// The encoded value this attempt wrote to subobject `key` of `object`
    /// through the word log, if it did (and its reads see its writes).
    #[inline(always)]
    pub(crate) fn pending_word<O: TObject>(
        &self,
        object: &O,
        key: u64,
    ) -> Option<MaybeUninit<u64>> {
        self.st.pending_word(object_addr(object), key)
    }

    /// The read log, for a read of subobject `key` of `object` that
    /// [`pending_word`](Self::pending_word) did not answer.
    #[inline(always)]
    pub(crate) fn log_via<O: TObject>(&self, object: &O, key: u64) -> ReadVia {
        ReadVia::Log(object_addr(object), key)
    }

    /// Buffers a write of subobject `key` of `object` in the word log (see
    /// [`uses_word_log`](Self::uses_word_log)): `bits`, the encoded value,
    /// to be stored in `word` under `version`'s lock at commit. Every write
    /// to the subobject in this attempt must come here, and `bits` must
    /// encode a value of the type `word` holds, since a read of the
    /// subobject decodes them as that type.
    #[inline(always)]
    pub(crate) fn write_word<O: TObject>(
        &mut self,
        object: &'env O,
        key: u64,
        version: &'env TVersion,
        word: &'env AtomicWord,
        bits: MaybeUninit<u64>,
    ) {
        self.st.write_word(
            object_addr(object),
            key,
            version,
            word,
            bits,
            WordWrite::NOT_READ,
        )
    }

    /// A read-modify-write of a word-log subobject that
    /// [`pending_word`](Self::pending_word) found unwritten: reads it
    /// consistently under `version` (with the opacity check of any read),
    /// then buffers `update(value)` as [`write_word`](Self::write_word)
    /// does, the write taking the read over (it is validated by locking at
    /// the version read). Returns what `update` returned beside the new
    /// bits.
    #[inline(always)]
    pub(crate) fn update_word<O: TObject, V, R>(
        &mut self,
        object: &'env O,
        key: u64,
        version: &'env TVersion,
        word: &'env AtomicWord,
        load: impl FnMut() -> V,
        update: impl FnOnce(V) -> (MaybeUninit<u64>, R),
    ) -> TxResult<R> {
        let (seen, value) = self.st.observe_for_write(version, load)?;
        let (bits, out) = update(value);
        self.st
            .write_word(object_addr(object), key, version, word, bits, seen);
        Ok(out)
    }

    /// [`observe_via`](Self::observe_via), also returning the version word
    /// the read recorded (for objects that keep flags in it).
    // (Only the collections use it, and the loom build has none.)
    #[cfg_attr(txmem_loom, allow(dead_code))]
    #[inline(always)]
    pub(crate) fn observe_via_word<R>(
        &mut self,
        via: ReadVia,
        version: &'env TVersion,
        load: impl FnMut() -> R,
    ) -> TxResult<(u64, R)> {
        match via {
            ReadVia::Item(id) => {
                let v = self.st.observe(id.0, version, load)?;
                Ok((self.st.items[id.0].read_version(), v))
            }
            ReadVia::Log(addr, key) => self.st.observe_logged(addr, key, version, load, |_| None),
        }
    }

    /// [`observe`](Self::observe) through the item or the read log, as
    /// [`read_via`](Self::read_via) chose; `version` must be the word the
    /// object's item for the key locks at commit, and the object's check of
    /// that item the plain version comparison ([`TVersion::still_valid`]).
    #[inline(always)]
    pub(crate) fn observe_via<R>(
        &mut self,
        via: ReadVia,
        version: &'env TVersion,
        load: impl FnMut() -> R,
    ) -> TxResult<R> {
        self.observe_via_or_previous(via, version, load, |_| None)
    }

    /// [`observe_via`](Self::observe_via) for an object that keeps each
    /// subobject's value before its last write: `previous(word)` returns it
    /// with its version word and the replacing commit's version if the
    /// subobject's version is still `word`
    /// (see `types::history`). A snapshot attempt reads it when the current
    /// version is past its snapshot.
    #[inline(always)]
    pub(crate) fn observe_via_or_previous<R>(
        &mut self,
        via: ReadVia,
        version: &'env TVersion,
        load: impl FnMut() -> R,
        previous: impl FnOnce(u64) -> Option<(u64, u64, R)>,
    ) -> TxResult<R> {
        match via {
            ReadVia::Item(id) => self.st.observe(id.0, version, load),
            ReadVia::Log(addr, key) => Ok(self
                .st
                .observe_logged(addr, key, version, load, previous)?
                .1),
        }
    }

    /// The snapshot bound of a snapshot attempt that has written nothing
    /// (see [`TxOptions::read_only`](crate::TxOptions::read_only)): such an
    /// attempt may read a subobject whose version is unlocked and at most
    /// the bound without recording anything. `None` in any other attempt.
    #[inline(always)]
    pub(crate) fn snapshot_bound(&self) -> Option<u64> {
        (self.st.snapshot && !self.st.mutated).then_some(self.st.start)
    }

    /// Records a read of item `id` at a version word the caller obtained
    /// itself (for objects with their own read protocol), with the same
    /// repeated-read and opacity checks as [`observe`](Self::observe).
    #[inline(always)]
    pub fn record_read(&mut self, id: ItemId, word: u64) -> TxResult<()> {
        self.st.record_read(id.0, word)
    }

    /// The opacity check for the word of `object`'s structure item `key`
    /// that the attempt acted on without recording a read (an insert that
    /// reports its key was absent); see `TxState::check_unrecorded`.
    #[inline]
    // (Only the collections use it, and the loom build has none.)
    #[cfg_attr(txmem_loom, allow(dead_code))]
    pub(crate) fn check_unrecorded<O: TObject>(
        &mut self,
        object: &O,
        key: u64,
        word: u64,
    ) -> TxResult<()> {
        self.st.check_unrecorded(object_addr(object), key, word)
    }

    /// Notes that the attempt itself moved the word of `object`'s structure
    /// item `key` to `word` (it linked a placeholder there), so that a later
    /// [`check_unrecorded`](Self::check_unrecorded) of that very word passes
    /// without revalidating.
    #[inline]
    // (Only the collections use it, and the loom build has none.)
    #[cfg_attr(txmem_loom, allow(dead_code))]
    pub(crate) fn note_own_word<O: TObject>(&mut self, object: &O, key: u64, word: u64) {
        debug_assert!(self.st.mutated, "a structure change comes with a write");
        self.st.own_word = Some((object_addr(object), key, word));
    }

    /// Aborts the attempt: return the value with `?` or `Err(..)`. The
    /// runtime retries the transaction (counted as [`AbortCause::Explicit`]).
    /// To give up instead, use [`try_atomically`](crate::try_atomically) with
    /// your own error.
    pub fn abort(&self) -> Abort {
        Abort::new(AbortCause::Explicit)
    }

    /// Blocks until something this transaction read changes, then reruns it
    /// (Haskell STM's `retry`): `return Err(tx.retry())`. The thread sleeps
    /// without spinning and is woken by the commit that changes one of the
    /// objects read. Panics in an irrevocable transaction, and if nothing
    /// was read (the wait could never end).
    pub fn retry(&self) -> Abort {
        Abort::new(AbortCause::Retry)
    }

    /// `retry` unless `condition` holds (Haskell's `check`/`guard`).
    ///
    /// ```
    /// # use txmem::{atomically, TBox};
    /// let stock = TBox::new(3u32);
    /// let left = atomically(|tx| {
    ///     let n = stock.get(tx)?;
    ///     tx.check(n > 0)?; // waits for stock instead of going negative
    ///     stock.set(tx, n - 1)?;
    ///     Ok(n - 1)
    /// });
    /// assert_eq!(left, 2);
    /// ```
    #[inline]
    pub fn check(&self, condition: bool) -> TxResult<()> {
        if condition {
            Ok(())
        } else {
            Err(self.retry())
        }
    }

    /// Runs `first`; if it calls [`retry`](Self::retry), undoes its effects
    /// and runs `second` instead (Haskell's `orElse`). If both retry, the
    /// transaction waits for a change to anything either branch read.
    /// Handlers registered inside a rolled-back branch are discarded.
    ///
    /// What the first branch read stays part of the transaction, which
    /// commits only if it still holds: the choice of `second` depends on
    /// it. That includes a key an insert found absent: the insert is undone
    /// for this transaction, but the key stays reserved (other inserts of
    /// it wait) until the transaction ends.
    ///
    /// ```
    /// # use txmem::{atomically, TBox};
    /// let a = TBox::new(0u32);
    /// let b = TBox::new(5u32);
    /// let taken = atomically(|tx| {
    ///     tx.or_else(
    ///         |tx| { let n = a.get(tx)?; tx.check(n > 0)?; a.set(tx, n - 1)?; Ok("a") },
    ///         |tx| { let n = b.get(tx)?; tx.check(n > 0)?; b.set(tx, n - 1)?; Ok("b") },
    ///     )
    /// });
    /// assert_eq!(taken, "b");
    /// ```
    pub fn or_else<R>(
        &mut self,
        first: impl FnOnce(&mut Self) -> TxResult<R>,
        second: impl FnOnce(&mut Self) -> TxResult<R>,
    ) -> TxResult<R> {
        savepoint::push(&mut self.st);
        match first(self) {
            Err(a) if a.cause() == AbortCause::Retry => {
                savepoint::roll_back(&mut self.st);
                second(self)
            }
            other => {
                savepoint::release(&mut self.st);
                other
            }
        }
    }

    /// Registers `f` to run once, after this transaction commits (after its
    /// locks are released). Use it for I/O and wake-ups that must not happen
    /// if the transaction aborts.
    pub fn on_commit(&mut self, f: impl FnOnce() + 'env) {
        self.st.rare = true;
        self.st.on_commit.push(erase_handler(Box::new(f)));
    }

    /// Registers `f` to run once if this attempt aborts (after the abort is
    /// final; the transaction is then retried and may register it again).
    pub fn on_abort(&mut self, f: impl FnOnce() + 'env) {
        self.st.rare = true;
        self.st.on_abort.push(erase_handler(Box::new(f)));
    }

    /// Makes the transaction irrevocable: from now on it cannot abort, so it
    /// may perform actions that cannot be undone. No other transaction
    /// commits a write while it runs. If reads made before this call are no
    /// longer valid, or another transaction is irrevocable at the moment
    /// (waiting for it here could deadlock with it), the attempt aborts and
    /// restarts irrevocably from the beginning (so code before this call
    /// must not have done anything irreversible).
    pub fn become_irrevocable(&mut self) -> TxResult<()> {
        self.st.become_irrevocable()
    }

    /// True if the transaction runs irrevocably.
    pub fn is_irrevocable(&self) -> bool {
        self.st.irrevocable.is_some()
    }

    /// The opacity mode of this transaction.
    pub fn opacity(&self) -> Opacity {
        self.st.opacity
    }

    /// The number of distinct subobjects the transaction holds an item or
    /// a buffered word write for so far (reads of subobjects it has not
    /// written are logged apart and not counted).
    pub fn len(&self) -> usize {
        self.st.item_count()
    }

    /// True if the transaction holds no item and no word write yet.
    pub fn is_empty(&self) -> bool {
        self.st.item_count() == 0
    }

    /// An epoch guard pinned for the rest of the transaction, for objects
    /// that hand out references to epoch-managed memory.
    #[inline]
    pub fn guard(&self) -> &Guard {
        self.st.guard.get_or_init(crossbeam_epoch::pin)
    }
}

/// The address that identifies `object` in the tracking set (the data
/// pointer of the `dyn TObject` its items hold).
#[inline(always)]
fn object_addr<O: TObject>(object: &O) -> usize {
    object as *const O as *const () as usize
}
