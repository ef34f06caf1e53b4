//! Transactions: the tracking set, the read protocol and the public API that
//! datatypes and programs use inside `atomically`.

pub(crate) mod commit;
mod index;
mod run;
mod savepoint;
mod single;

pub use run::{atomically, try_atomically};
pub(crate) use single::commit_single;

use std::cell::{Cell, OnceCell};
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use crossbeam_epoch::Guard;

use crate::clock;
use crate::error::{Abort, AbortCause, TxResult};
use crate::item::Item;
use crate::object::{Commit, TObject};
use crate::options::Opacity;
use crate::version::{TVersion, LOCK_SPINS};
use index::ItemIndex;
pub use index::{set_item_index_cutoff, HASH_CUTOFF};
use savepoint::Savepoint;

/// How many times `become_irrevocable` re-checks a read that fails (a
/// writer past the gate may still hold its lock) before it restarts the
/// attempt irrevocably. Small under loom, whose models bound their branches.
#[cfg(not(txmem_loom))]
const UPGRADE_WAITS: u32 = 1000;
#[cfg(txmem_loom)]
const UPGRADE_WAITS: u32 = 2;

/// A handle to an item of the current transaction (its position in the
/// tracking set), returned by [`Transaction::item`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemId(usize);

type Handler = Box<dyn FnOnce()>;

/// One entry of the tracking set: an item and the object it belongs to.
///
/// The object pointer is the runtime's (it calls the object's commit steps
/// through it); the item is the object's. The entry derefs to its item, so
/// the protocol reads an entry's flags as the item's.
//
// The item comes first, so that a pointer to the entry is a pointer to its
// item: the commit steps and checks get the item without an offset added.
#[repr(C)]
pub(crate) struct Entry {
    item: Item,
    pub(crate) object: NonNull<dyn TObject>,
}

// One cache line per entry.
const _: () = assert!(std::mem::size_of::<Entry>() == 64);

impl Entry {
    #[inline]
    fn new(object: NonNull<dyn TObject>, key: u64) -> Self {
        Entry {
            item: Item::new(key),
            object,
        }
    }

    /// The address identifying the entry's object.
    #[inline]
    pub(crate) fn object_addr(&self) -> usize {
        self.object.as_ptr() as *const () as usize
    }
}

impl Deref for Entry {
    type Target = Item;
    #[inline(always)]
    fn deref(&self) -> &Item {
        &self.item
    }
}

impl DerefMut for Entry {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Item {
        &mut self.item
    }
}

crate::sync::protocol_static! {
    /// Serializes irrevocable transactions: at most one runs at a time.
    static IRREVOCABLE_TOKEN: crate::sync::TokenLock = crate::sync::TokenLock::new(());
}

/// The state of one thread's transaction, reused across transactions so that
/// a steady-state transaction allocates nothing.
pub(crate) struct TxState {
    items: Vec<Entry>,
    index: ItemIndex,
    indexed: bool,
    /// True once `item_mut` handed out an item: until then the transaction
    /// holds no write and no item needs cleanup (the read-only fast path).
    pub(crate) mutated: bool,
    /// True once the attempt used anything rare that `finish` must undo: the
    /// item index, a savepoint, a handler, irrevocability. One flag, so that
    /// an ordinary attempt ends with one test.
    rare: bool,
    /// Snapshot bound for TL2 opacity, kept from one attempt to the next
    /// (see [`begin`](Self::begin)).
    start: u64,
    /// The kept bound proved stale (an attempt had to extend its snapshot,
    /// or aborted): the next attempt takes its bound from the clock.
    pub(crate) stale_start: bool,
    pub(crate) opacity: Opacity,
    irrevocable: Option<crate::sync::Token>,
    /// Set by `become_irrevocable` when the attempt must restart irrevocably.
    wants_irrevocable: bool,
    /// True once the program itself asked for irrevocability in this
    /// attempt (as opposed to the runtime serializing a starving transaction).
    pub(crate) user_irrevocable: bool,
    guard: OnceCell<Guard>,
    on_commit: Vec<Handler>,
    on_abort: Vec<Handler>,
    /// The handlers `finish` kept for the attempt's outcome, to run once the
    /// transaction is left.
    ready: Vec<Handler>,
    savepoints: Vec<Savepoint>,
}

impl TxState {
    pub(crate) const fn new() -> Self {
        TxState {
            items: Vec::new(),
            index: ItemIndex::new(),
            indexed: false,
            mutated: false,
            rare: false,
            start: 0,
            stale_start: true,
            opacity: Opacity::Tl2,
            irrevocable: None,
            wants_irrevocable: false,
            user_irrevocable: false,
            guard: OnceCell::new(),
            on_commit: Vec::new(),
            on_abort: Vec::new(),
            ready: Vec::new(),
            savepoints: Vec::new(),
        }
    }

    #[inline]
    fn commit_ctx(&self, version: u64) -> Commit<'_> {
        Commit {
            version,
            irrevocable: self.irrevocable.is_some(),
            guard: &self.guard,
        }
    }

    #[inline]
    fn key_of(items: &[Entry]) -> impl Fn(usize) -> (usize, u64) + '_ {
        move |p| (items[p].object_addr(), items[p].key())
    }

    #[inline(always)]
    fn find(&self, addr: usize, key: u64) -> Option<usize> {
        if self.indexed {
            self.index.find(addr, key, Self::key_of(&self.items))
        } else {
            self.items
                .iter()
                .position(|it| it.object_addr() == addr && it.key() == key)
        }
    }

    /// The position of the item for (`object`, `key`), created if missing.
    ///
    /// The common case, a small unindexed set with room to grow, is a short
    /// scan and a push; creating the index, growing the vector and indexed
    /// lookups are out of line.
    #[inline(always)]
    fn find_or_insert(&mut self, object: NonNull<dyn TObject>, key: u64) -> usize {
        if self.indexed {
            return self.find_or_insert_indexed(object, key);
        }
        let addr = object.as_ptr() as *const () as usize;
        if let Some(p) = self
            .items
            .iter()
            .position(|it| it.object_addr() == addr && it.key() == key)
        {
            return p;
        }
        let pos = self.items.len();
        if pos == self.items.capacity() || pos >= index::item_index_cutoff() {
            return self.insert_slow(object, key);
        }
        self.items.push(Entry::new(object, key));
        pos
    }

    /// [`find_or_insert`](Self::find_or_insert) once the items are indexed.
    #[inline(never)]
    fn find_or_insert_indexed(&mut self, object: NonNull<dyn TObject>, key: u64) -> usize {
        let addr = object.as_ptr() as *const () as usize;
        if let Some(p) = self.index.find(addr, key, Self::key_of(&self.items)) {
            return p;
        }
        let pos = self.items.len();
        self.items.push(Entry::new(object, key));
        self.index.insert(addr, key, pos, Self::key_of(&self.items));
        pos
    }

    /// Appends a new item when the vector must grow or the set crosses the
    /// index cutoff (then indexes it).
    #[cold]
    #[inline(never)]
    fn insert_slow(&mut self, object: NonNull<dyn TObject>, key: u64) -> usize {
        let pos = self.items.len();
        self.items.push(Entry::new(object, key));
        if self.items.len() > index::item_index_cutoff() {
            self.index
                .build(self.items.len(), Self::key_of(&self.items));
            self.indexed = true;
            self.rare = true;
        }
        pos
    }

    /// True if the attempt's view is still consistent: always for an
    /// irrevocable attempt (see [`acquire_irrevocability`](Self::acquire_irrevocability)),
    /// otherwise if every read is still current.
    pub(crate) fn view_holds(&self) -> bool {
        self.irrevocable.is_some() || self.validate_reads()
    }

    /// Validates every read item; true if all reads are still current.
    pub(crate) fn validate_reads(&self) -> bool {
        let ctx = self.commit_ctx(0);
        self.items.iter().all(|it| {
            !it.is_read() || {
                // SAFETY: objects outlive the transaction (`Transaction<'env>`).
                let obj = unsafe { it.object.as_ref() };
                obj.check(it, &ctx)
            }
        })
    }

    /// Prepares an attempt: hourglass, irrevocability, snapshot bound.
    /// `irrevocable`: run this attempt irrevocably; `requested`: because the
    /// program asked (not because the runtime serialized a starving one);
    /// `holds_hourglass`: this transaction holds the hourglass, so it does not
    /// wait for it.
    ///
    /// The TL2 snapshot bound is usually not read from the clock here: the
    /// attempt keeps the last clock value this thread saw (its last commit
    /// version or snapshot extension). Any clock value read before the
    /// attempt's first read is a sound bound; an older one only makes a read
    /// of a newer version extend the snapshot (which reads the clock then).
    /// Most transactions of a large working set read nothing that changed
    /// since, and skip a read of the clock's cache line, which moves to every
    /// committing writer's core. Once a kept bound proves stale (the last
    /// attempt extended its snapshot or aborted), the next attempt reads the
    /// clock, so that transactions over fast-changing data do not extend
    /// (and revalidate) in every attempt.
    #[inline]
    pub(crate) fn begin(
        &mut self,
        opacity: Opacity,
        irrevocable: bool,
        requested: bool,
        holds_hourglass: bool,
    ) {
        if clock::hourglass_held() && !holds_hourglass {
            clock::wait_hourglass_released();
        }
        if self.stale_start {
            self.stale_start = false;
            self.start = clock::now().time();
        }
        self.opacity = opacity;
        self.wants_irrevocable = false;
        self.user_irrevocable = requested;
        if irrevocable && self.irrevocable.is_none() {
            self.acquire_irrevocability();
            // The snapshot must not predate the commits that finished
            // before the gate closed.
            self.start = clock::now().time();
        }
    }

    pub(crate) fn release_irrevocability(&mut self) {
        if let Some(token) = self.irrevocable.take() {
            // Open the gate before handing the token on, or the next holder
            // could find the gate still closed and then see it opened.
            clock::open_irrevocable();
            drop(token);
        }
    }

    /// Closes the irrevocability gate: from now on no other transaction
    /// commits until [`release_irrevocability`](Self::release_irrevocability).
    ///
    /// So an irrevocable attempt never validates its reads (nor does a
    /// collection re-check the structure words it records): what it reads
    /// stays current until it commits. A writer that passed the gate before
    /// it closed had locked everything it changes first, and an irrevocable
    /// reader waits for such locks (without a bound), so it sees those
    /// writes installed. Reads made before the gate closed are checked once,
    /// by `become_irrevocable`. Structure words (a leaf's or bucket's
    /// version, a gap) still change while the gate is closed, as running
    /// transactions place placeholders and committers already past the gate
    /// unlink what they removed, but neither changes a committed key: the
    /// placeholders' inserts commit after this transaction, and the removals
    /// were already visible to it. Validating such words would fail an
    /// attempt that must not fail.
    fn acquire_irrevocability(&mut self) {
        self.hold_irrevocability(crate::sync::take_token(&IRREVOCABLE_TOKEN));
    }

    /// [`acquire_irrevocability`](Self::acquire_irrevocability) if no other
    /// transaction is irrevocable; false (nothing done) otherwise.
    fn try_acquire_irrevocability(&mut self) -> bool {
        match crate::sync::try_take_token(&IRREVOCABLE_TOKEN) {
            Some(token) => {
                self.hold_irrevocability(token);
                true
            }
            None => false,
        }
    }

    fn hold_irrevocability(&mut self, token: crate::sync::Token) {
        let closed = clock::try_close_irrevocable();
        assert!(
            closed,
            "txmem: the irrevocable gate is only closed by the token holder"
        );
        self.irrevocable = Some(token);
        self.rare = true;
    }

    /// Ends an attempt: drops items (running cleanups), releases the guard
    /// and irrevocability, and keeps the handlers for the outcome, if any
    /// (take them with `take_ready_handlers`).
    #[inline]
    pub(crate) fn finish(&mut self, committed: bool) {
        if self.mutated {
            // Unrolled for one item, as in `commit`.
            if self.items.len() == 1 {
                self.drop_items(1, committed);
            } else {
                self.drop_all_items(committed);
            }
        } else {
            debug_assert!(self
                .items
                .iter()
                .all(|it| !it.value.is_set() && !it.has(crate::item::NEEDS_CLEANUP)));
        }
        // SAFETY: every item's value is empty (read-only attempts never set
        // one; `drop_items` cleared them) and `Item` has no other drop glue,
        // so forgetting the items drops nothing.
        unsafe { self.items.set_len(0) };
        // Collections pin the epoch in most transactions: unpin inline.
        if self.guard.get().is_some() {
            self.unpin();
        }
        if self.rare {
            self.finish_extras(committed);
        }
    }

    #[inline(never)]
    fn unpin(&mut self) {
        drop(self.guard.take());
    }

    #[cold]
    fn finish_extras(&mut self, committed: bool) {
        self.rare = false;
        if self.indexed {
            self.index.clear();
            self.indexed = false;
        }
        self.savepoints.clear();
        self.release_irrevocability();
        if self.on_commit.is_empty() && self.on_abort.is_empty() {
            return;
        }
        let (keep, discard) = if committed {
            (&mut self.on_commit, &mut self.on_abort)
        } else {
            (&mut self.on_abort, &mut self.on_commit)
        };
        discard.clear();
        std::mem::swap(&mut self.ready, keep);
    }

    /// The handlers `finish` kept, if any.
    #[inline]
    pub(crate) fn take_ready_handlers(&mut self) -> Option<Vec<Handler>> {
        if self.ready.is_empty() {
            None
        } else {
            Some(std::mem::take(&mut self.ready))
        }
    }

    #[inline(never)]
    fn drop_all_items(&mut self, committed: bool) {
        self.drop_items(self.items.len(), committed);
    }

    /// Runs the cleanups and drops the pending values of the first `n`
    /// items (the items themselves are forgotten by the caller).
    #[inline(always)]
    fn drop_items(&mut self, n: usize, committed: bool) {
        for it in self.items[..n].iter_mut() {
            if it.has(crate::item::NEEDS_CLEANUP) {
                // SAFETY: objects outlive the transaction.
                let obj = unsafe { it.object.as_ref() };
                obj.cleanup(it, committed);
            }
            it.value.clear();
        }
        self.mutated = false;
    }

    /// Runs the cleanups of an aborted attempt ahead of its blocking wait:
    /// a placeholder its inserts left in a collection would otherwise stay
    /// in the way of every inserter of the same key until the sleeper
    /// wakes (which may need one of them to commit first).
    pub(crate) fn clean_up_before_wait(&mut self) {
        for it in self.items.iter_mut() {
            if it.has(crate::item::NEEDS_CLEANUP) {
                // SAFETY: objects outlive the transaction.
                let obj = unsafe { it.object.as_ref() };
                obj.cleanup(it, false);
                it.clear_flags(crate::item::NEEDS_CLEANUP);
            }
        }
    }

    pub(crate) fn item_count(&self) -> usize {
        self.items.len()
    }
}

/// A running transaction, handed to the closure of [`atomically`].
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
        self.st
            .find(object as *const O as *const () as usize, key)
            .map(ItemId)
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
        mut load: impl FnMut() -> R,
    ) -> TxResult<R> {
        let mut spins = 0u32;
        let (word, value) = loop {
            // SeqCst: an irrevocable reader pairs this load with a no-clock
            // committer's SeqCst read of the gate (Dekker). Every reader
            // uses it, since it costs what an acquire load costs on x86 and
            // Arm (`mov`, `ldar`) and saves a test on the read path.
            let w1 = version.load_seqcst();
            if TVersion::is_locked(w1) {
                if self.st.irrevocable.is_none() && spins >= LOCK_SPINS {
                    return Err(Abort::new(AbortCause::LockBusy));
                }
                spins += 1;
                crate::sync::spin_hint();
                continue;
            }
            let value = load();
            if version.load() == w1 {
                break (w1, value);
            }
        };
        self.record_read(id, word)?;
        Ok(value)
    }

    /// Records a read of item `id` at a version word the caller obtained
    /// itself (for objects with their own read protocol), with the same
    /// repeated-read and opacity checks as [`observe`](Self::observe).
    #[inline(always)]
    pub fn record_read(&mut self, id: ItemId, word: u64) -> TxResult<()> {
        let item = &mut self.st.items[id.0];
        if item.is_read() {
            return if item.read_version() == word || self.st.irrevocable.is_some() {
                Ok(())
            } else {
                Err(Abort::new(AbortCause::Opacity))
            };
        }
        item.observe(word);
        match self.st.opacity {
            Opacity::Tl2 => {
                // The first item needs no check against the snapshot bound:
                // nothing read before it can disagree with it. The bound
                // stays, so a later read newer than the bound revalidates
                // this one.
                let version = TVersion::version_of(word);
                if version > self.st.start && self.st.items.len() > 1 {
                    self.extend_snapshot(version)?;
                }
            }
            Opacity::Revalidate => {
                if !self.st.view_holds() {
                    return Err(Abort::new(AbortCause::Opacity));
                }
            }
            Opacity::None => {}
        }
        Ok(())
    }

    /// STO's extended check: instead of aborting on a version newer than
    /// the snapshot, move the snapshot to now if every read is still valid.
    ///
    /// A version can be ahead of the clock (structure versions bumped at
    /// execution time, commit versions of the no-clock modes); the clock is
    /// then moved up to it first, or every later read of it would extend the
    /// snapshot again (and revalidate the whole read set). Moving the clock
    /// forward is safe: a commit whose version the new snapshot covers
    /// locked its items before reading or advancing the clock, so this
    /// transaction's validation, which comes after, sees them.
    #[cold]
    fn extend_snapshot(&mut self, seen: u64) -> TxResult<()> {
        self.st.stale_start = true;
        let mut now = clock::now().time();
        if seen > now {
            now = clock::advance_to(seen).time();
        }
        if self.st.view_holds() {
            self.st.start = now;
            Ok(())
        } else {
            Err(Abort::new(AbortCause::Opacity))
        }
    }

    /// Aborts the attempt: return the value with `?` or `Err(..)`. The
    /// runtime retries the transaction (counted as [`AbortCause::Explicit`]).
    /// To give up instead, use [`try_atomically`] with your own error.
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
        self.st.user_irrevocable = true;
        if self.st.irrevocable.is_some() {
            return Ok(());
        }
        if !self.st.try_acquire_irrevocability() {
            // Another transaction is irrevocable, and it may be waiting for
            // a placeholder of ours: never wait for it holding anything.
            // Restart irrevocably (the restart waits for the token after the
            // cleanup has unlinked our placeholders).
            self.st.wants_irrevocable = true;
            return Err(Abort::new(AbortCause::Irrevocable));
        }
        // Writers that passed the gate before it closed hold their locks
        // until they install; wait for them, then check our reads.
        for it in &self.st.items {
            if it.is_read() {
                // SAFETY: objects outlive the transaction.
                let obj = unsafe { it.object.as_ref() };
                let ctx = self.st.commit_ctx(0);
                let mut tries = 0;
                while !obj.check(it, &ctx) {
                    tries += 1;
                    if tries > UPGRADE_WAITS {
                        self.st.wants_irrevocable = true;
                        return Err(Abort::new(AbortCause::Opacity));
                    }
                    crate::sync::yield_now();
                }
            }
        }
        self.st.start = clock::now().time();
        Ok(())
    }

    /// True if the transaction runs irrevocably.
    pub fn is_irrevocable(&self) -> bool {
        self.st.irrevocable.is_some()
    }

    /// The opacity mode of this transaction.
    pub fn opacity(&self) -> Opacity {
        self.st.opacity
    }

    /// The number of items (distinct subobjects touched) so far.
    pub fn len(&self) -> usize {
        self.st.items.len()
    }

    /// True if the transaction has touched nothing yet.
    pub fn is_empty(&self) -> bool {
        self.st.items.is_empty()
    }

    /// An epoch guard pinned for the rest of the transaction, for objects
    /// that hand out references to epoch-managed memory.
    #[inline]
    pub fn guard(&self) -> &Guard {
        self.st.guard.get_or_init(crossbeam_epoch::pin)
    }
}

fn erase_handler<'env>(f: Box<dyn FnOnce() + 'env>) -> Handler {
    // SAFETY: handlers are run or dropped before `atomically` returns (or
    // unwinds), so nothing they borrow from 'env is used after 'env ends.
    unsafe { std::mem::transmute::<Box<dyn FnOnce() + 'env>, Box<dyn FnOnce() + 'static>>(f) }
}
