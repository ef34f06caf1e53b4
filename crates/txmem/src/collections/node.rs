//! The node protocol shared by the node-based collections ([`THashMap`],
//! [`TBTreeMap`]'s entries and [`TListSet`]/[`TList`]).
//!
//! Each of them keeps its elements in heap nodes that carry a *state*
//! version: the node's commit lock plus two flag bits, [`INSERTING`] (a
//! placeholder linked by a transaction that has not committed) and
//! [`DELETED`] (a node whose removal committed). A transaction's item for a
//! node is keyed by the node's address and carries [`F_INSERT`] (this
//! transaction linked the placeholder) and [`F_REMOVE`] (this transaction
//! removes the node). The element count lives in a share-locked
//! [`SizeCounter`] under the item key [`SIZE_KEY`]; the structure around the
//! nodes (a hash bucket, the gap after a list node) is read through items
//! whose key has bit 0 set.
//!
//! [`NodeCollection`] holds what is common: the [`TObject`] steps for node
//! and size items (the collections' own `TObject` impls delegate to them),
//! the cleanup of abandoned placeholders, the bookkeeping of an insert or a
//! remove in the transaction, and epoch retirement. [`GapChain`] adds the
//! gap versions of a sorted chain (the sorted lists):
//! searching, scanning, and linking and unlinking under per-gap locks.
//!
//! Everything is static dispatch: the provided methods are monomorphized
//! for each collection and inline into its `TObject` methods.
//!
//! [`THashMap`]: super::THashMap
//! [`TListSet`]: super::TListSet
//! [`TList`]: super::TList
//! [`TBTreeMap`]: super::TBTreeMap

use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use crossbeam_epoch::Guard;

use crate::error::TxResult;
use crate::item::{Item, NEEDS_CLEANUP, READ, USER_FLAG0};
use crate::object::{Commit, LockOutcome, TObject};
use crate::tx::{ItemId, ReadVia, Transaction};
use crate::types::cell::ValueCell;
use crate::version::TVersion;

use super::size::SizeCounter;
use super::{inconsistent, placeholder_in_the_way, still_current, struct_wait};

/// Node state flag: placeholder of an uncommitted insert.
pub(super) const INSERTING: u64 = 0b010;
/// Node state flag: the node's removal committed.
pub(super) const DELETED: u64 = 0b100;

/// Item flag (node items): this transaction linked the node (placeholder).
pub(super) const F_INSERT: u32 = USER_FLAG0;
/// Item flag (node items): this transaction removes the node.
pub(super) const F_REMOVE: u32 = USER_FLAG0 << 1;

/// The item key of the size counter (node keys are multiples of 8 and
/// structure keys are odd).
pub(super) const SIZE_KEY: u64 = 2;

/// A collection of heap nodes with state versions and a size counter (see
/// the module docs). Implementors provide access to their parts; the
/// provided methods are the shared protocol.
pub(super) trait NodeCollection: TObject + Sized {
    /// The node type; items keyed by a node's address refer to one.
    type Node;

    /// The element counter.
    fn size(&self) -> &SizeCounter;

    /// The state version of `node`.
    fn state(node: &Self::Node) -> &TVersion;

    /// True if the read of the structure item `item` (key bit 0 set) is
    /// still valid.
    fn check_structure(&self, item: &Item, commit: &Commit<'_>) -> bool;

    /// Unlinks `node` from the structure and retires it. With a commit
    /// version, the structure versions around it are bumped to at least that
    /// version; without one (an abandoned placeholder) they move past the
    /// versions of the structure the node covered (see `GapChain`).
    fn unlink(&self, node: *const Self::Node, cv: Option<u64>, guard: &Guard);

    /// Publishes the item's pending value into `node` before the state is
    /// unlocked at commit (collections with values).
    #[inline]
    fn store_value(_node: &Self::Node, _item: &mut Item, _commit: &Commit<'_>) {}

    /// The node an item is keyed by.
    #[inline]
    fn node_of<'a>(item: &Item) -> &'a Self::Node {
        // SAFETY: node items are keyed by addresses of nodes that the
        // transaction reached while pinned; a node is freed only through the
        // epoch after it is unlinked, and the transaction (or the commit
        // holding its items) stays pinned until it ends.
        unsafe { &*(item.key() as *const Self::Node) }
    }

    /// [`TObject::lock`]: the size counter's share/exclusive lock, or the
    /// node's state lock. A node read as deleted cannot take a write (a
    /// blind set or a stale remove of a key removed meanwhile): stale.
    #[inline]
    fn lock_item(&self, item: &mut Item, commit: &Commit<'_>) -> LockOutcome {
        if item.key() == SIZE_KEY {
            return self.size().lock(item, commit);
        }
        let state = Self::state(Self::node_of(item));
        let outcome = commit.lock_version(state, item);
        if outcome == LockOutcome::Acquired
            && !item.has(F_INSERT)
            && item.read_version() & DELETED != 0
        {
            state.unlock_unchanged(item.read_version());
            return LockOutcome::Stale;
        }
        outcome
    }

    /// [`TObject::check`]: size, structure or node read.
    #[inline]
    fn check_item(&self, item: &Item, commit: &Commit<'_>) -> bool {
        match item.key() {
            SIZE_KEY => self.size().check(item),
            k if k & 1 == 1 => self.check_structure(item, commit),
            _ => {
                Self::state(Self::node_of(item)).still_valid(item.read_version(), item.is_locked())
            }
        }
    }

    /// [`TObject::install`]: a removal marks the node deleted and unlinks
    /// it; anything else publishes the pending value (if any) and clears the
    /// inserting flag.
    #[inline]
    fn install_item(&self, item: &mut Item, commit: &Commit<'_>) {
        if item.key() == SIZE_KEY {
            return self.size().install(item, commit);
        }
        let n = Self::node_of(item);
        let next = TVersion::next_after(item.read_version(), commit.version());
        if item.has(F_REMOVE) {
            // (Own placeholders removed again are never written.)
            Self::state(n).unlock_to(next | DELETED);
            self.unlink(n, Some(commit.version()), commit.guard());
            return;
        }
        Self::store_value(n, item, commit);
        Self::state(n).unlock_to(next & !INSERTING);
        // A placeholder just published needs no cleanup any more (cleanup
        // only unlinks placeholders whose insert did not commit, or that
        // their own transaction removed again, and those are never
        // installed: they are not writes). Dropping the flag saves the
        // cleanup call when the transaction ends.
        item.clear_flags(NEEDS_CLEANUP);
    }

    /// [`TObject::unlock`].
    #[inline]
    fn unlock_item(&self, item: &mut Item) {
        if item.key() == SIZE_KEY {
            return self.size().unlock(item);
        }
        Self::state(Self::node_of(item)).unlock_unchanged(item.read_version());
    }

    /// [`TObject::cleanup`]: an abandoned placeholder (the inserter aborted,
    /// or removed its own insert again) is unlinked. Its state keeps the
    /// inserting flag, so readers that saw it stay valid.
    #[inline]
    fn cleanup_item(&self, item: &mut Item, committed: bool) {
        if item.has(F_INSERT) && (!committed || item.has(F_REMOVE)) {
            let guard = crossbeam_epoch::pin();
            self.unlink(Self::node_of(item), None, &guard);
        }
    }

    /// Adds `delta` to this transaction's pending change of the size.
    #[inline]
    fn size_delta<'env>(&'env self, tx: &mut Transaction<'env>, delta: i64) {
        let id = tx.item(self, SIZE_KEY);
        SizeCounter::add_pending(tx.item_mut(id), delta);
    }

    /// The number of elements as the transaction sees them (reads the size
    /// counter).
    fn tx_len<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<usize> {
        let id = tx.item(self, SIZE_KEY);
        let (committed, ()) = self.size().observe_with(tx, id, || ())?;
        let pending = SizeCounter::pending(tx.item_ref(id));
        Ok((committed + pending).max(0) as usize)
    }

    /// Records in the transaction a placeholder it has just linked: the
    /// structure word under key `read_key` went from `old` to `new` because
    /// of this link alone, so the transaction's own read of it (if it read
    /// `old`) stays valid (thesis §5); the node becomes a write that cleanup
    /// must see, and the size grows by one. Returns whether the transaction
    /// now reads the structure word (at `new`).
    ///
    /// `absent`: the insert reports the key absent. It records no read
    /// for that (inserts of distinct keys never conflict): its placeholder
    /// keeps the key absent for others until the transaction ends, and
    /// `check_unrecorded` gives the absence the opacity check a read would
    /// get. Inside an `or_else` branch it does record the read, at `new`:
    /// a rollback keeps the placeholder linked (`roll_back_item`), and a
    /// transaction blocked in `retry` must wake when the key appears.
    ///
    /// The moved read and the recorded absence outlive a rollback of the
    /// branch (`Transaction::keep_read`): the structure keeps the version
    /// this link gave it.
    fn adopt_placeholder<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        node: *const Self::Node,
        read_key: u64,
        (old, new): (u64, u64),
        absent: bool,
    ) -> TxResult<bool> {
        let read = if absent && tx.in_branch() {
            Some(tx.item(self, read_key))
        } else {
            tx.find_item(self, read_key)
        };
        let mut reads = false;
        if let Some(rid) = read {
            let it = tx.item_ref(rid);
            if it.is_read() {
                if it.read_version() == old {
                    tx.keep_read(rid, new);
                    reads = true;
                }
            } else if absent {
                // (Created just above: inside a branch.)
                tx.keep_read(rid, new);
                reads = true;
            }
        }
        let id = tx.item(self, node as u64);
        let item = tx.item_mut(id);
        item.set_flags(F_INSERT | NEEDS_CLEANUP);
        item.mark_write();
        self.size_delta(tx, 1);
        if absent {
            tx.check_unrecorded(old)?;
        }
        Ok(reads)
    }

    /// [`TObject::roll_back`]: the placeholder of an insert made in a
    /// rolled-back branch stays linked until the transaction ends, as if
    /// the transaction had removed its own insert again (cleanup unlinks
    /// it). It keeps the key absent for others, as the insert may have
    /// reported to the branch; and the structure version its link moved,
    /// under reads the transaction keeps, stays where it is (unlinking a
    /// list node would move its predecessor's gap again). The size change
    /// is undone with the size item.
    #[inline]
    fn roll_back_item(&self, item: &mut Item) {
        if item.has(F_INSERT) {
            item.set_flags(F_REMOVE);
            item.clear_write();
        } else {
            item.restore_flags(item.flags() & READ);
        }
    }

    /// Records the removal of a node visible to the transaction: its own
    /// placeholder is simply dropped from the write set (cleanup unlinks
    /// it); a committed node becomes a write (deleted and unlinked at
    /// commit). The size shrinks by one.
    fn mark_removed<'env>(&'env self, tx: &mut Transaction<'env>, node: *const Self::Node) {
        let id = tx.item(self, node as u64);
        self.mark_removed_item(tx, id);
    }

    /// [`mark_removed`](Self::mark_removed) for a caller that already holds
    /// the node's item `id` (it just read the node through it).
    #[inline]
    fn mark_removed_item<'env>(&'env self, tx: &mut Transaction<'env>, id: ItemId) {
        let item = tx.item_mut(id);
        item.set_flags(F_REMOVE);
        let own_insert = item.has(F_INSERT);
        item.clear_write();
        if !own_insert {
            item.mark_write();
        }
        self.size_delta(tx, -1);
    }
}

/// Implements [`TObject`] for a [`NodeCollection`] by delegating each step
/// to the shared protocol (`lock_item`, `check_item`, ...):
/// `node_tobject!(impl[K, V] for Map<K, V> where K: Bounds, V: Bounds);`
macro_rules! node_tobject {
    (impl[$($gen:tt)*] for $ty:ty where $($bounds:tt)*) => {
        impl<$($gen)*> $crate::object::TObject for $ty
        where
            $($bounds)*
        {
            fn lock(
                &self,
                item: &mut $crate::item::Item,
                commit: &$crate::object::Commit<'_>,
            ) -> $crate::object::LockOutcome {
                self.lock_item(item, commit)
            }

            fn check(&self, item: &$crate::item::Item, commit: &$crate::object::Commit<'_>) -> bool {
                self.check_item(item, commit)
            }

            fn install(&self, item: &mut $crate::item::Item, commit: &$crate::object::Commit<'_>) {
                self.install_item(item, commit)
            }

            fn unlock(&self, item: &mut $crate::item::Item) {
                self.unlock_item(item)
            }

            fn cleanup(&self, item: &mut $crate::item::Item, committed: bool) {
                self.cleanup_item(item, committed)
            }

            fn roll_back(&self, item: &mut $crate::item::Item) {
                self.roll_back_item(item)
            }
        }
    };
}
pub(super) use node_tobject;

/// The write methods both maps offer, over their `upsert` (the insert and
/// write rules of `std`'s maps plus a blind write; see [`WriteMode`]).
macro_rules! map_write_api {
    () => {
        /// Inserts `key → value`, returning the old value if `key` was
        /// present (which it then overwrites), as `std`'s `insert` does.
        /// Reads the old value; an insert of an absent key reads nothing.
        pub fn insert<'env>(
            &'env self,
            tx: &mut Transaction<'env>,
            key: K,
            value: V,
        ) -> TxResult<Option<V>> {
            Ok(match self.upsert(tx, key, value, WriteMode::Swap)? {
                Upserted::Present(old) => old,
                _ => None,
            })
        }

        /// Inserts `key → value` if `key` is absent; returns whether it did.
        /// Reads the key's presence only if it is there.
        pub fn insert_if_absent<'env>(
            &'env self,
            tx: &mut Transaction<'env>,
            key: K,
            value: V,
        ) -> TxResult<bool> {
            let done = self.upsert(tx, key, value, WriteMode::IfAbsent)?;
            Ok(matches!(done, Upserted::Inserted))
        }

        /// Sets `key → value`, inserting or overwriting, without reading the
        /// old value (a blind write, as [`TBox::set`](crate::TBox::set):
        /// concurrent sets of one key never abort each other).
        pub fn set<'env>(&'env self, tx: &mut Transaction<'env>, key: K, value: V) -> TxResult<()> {
            self.upsert(tx, key, value, WriteMode::Blind).map(|_| ())
        }
    };
}
pub(super) use map_write_api;

/// How a map write treats a key that is already present.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WriteMode {
    /// Insert only if absent (reads the key's presence when it is there).
    IfAbsent,
    /// Overwrite without reading: a blind write.
    Blind,
    /// Overwrite and hand back the old value (reads it), as std's `insert`.
    Swap,
}

/// What [`MapNodes::upsert_existing`] (and a map's upsert) did.
pub(super) enum Upserted<V> {
    /// The key was absent for the transaction and now holds the value.
    Inserted,
    /// The key was present: its old value under [`WriteMode::Swap`],
    /// `None` otherwise.
    Present(Option<V>),
    /// The node turned out deleted and its read was dropped: look the key
    /// up again; the value is handed back.
    Retry(V),
    /// The node is deleted (a committed removal not unlinked yet); the value
    /// is handed back to try the next node.
    Deleted(V),
}

/// A [`NodeCollection`] whose nodes hold a value in a [`ValueCell`] (the
/// maps): reads, blind writes and upserts of node values.
pub(super) trait MapNodes: NodeCollection {
    /// The value type.
    type Value: Clone + Send + 'static;

    /// The value cell of `node`.
    fn cell(node: &Self::Node) -> &ValueCell<Self::Value>;

    /// [`NodeCollection::store_value`] for maps: publishes the pending
    /// write value, if any.
    #[inline]
    fn store_pending(node: &Self::Node, item: &mut Item, commit: &Commit<'_>) {
        Self::cell(node).store_pending(&mut item.value, || commit.guard());
    }

    /// The transaction's view of node `np`: `Some(f(value))` if it is
    /// visible. Reads the node's state, except for the transaction's own
    /// placeholders and removals. `absent` is called when a read of the
    /// state finds the node invisible (a foreign placeholder or a committed
    /// removal).
    fn view_value<'env, R>(
        &'env self,
        tx: &mut Transaction<'env>,
        np: *const Self::Node,
        f: impl FnOnce(&Self::Value) -> R,
        absent: impl FnOnce(&mut Transaction<'env>) -> TxResult<()>,
    ) -> TxResult<Option<R>> {
        match tx.read_via(self, np as u64) {
            ReadVia::Item(id) => self.view_item(tx, id, np, f, absent),
            via => {
                // Untouched by this attempt: no own write, placeholder or
                // removal to look for.
                // SAFETY: callers pass nodes reached while pinned.
                let n = unsafe { &*np };
                let r = observe_value(tx, via, Self::state(n), Self::cell(n), f)?;
                if r.is_none() {
                    absent(tx)?;
                }
                Ok(r)
            }
        }
    }

    /// [`view_value`](Self::view_value) through the node's item `id`
    /// (already created by the caller, who may use it again).
    #[inline]
    fn view_item<'env, R>(
        &'env self,
        tx: &mut Transaction<'env>,
        id: ItemId,
        np: *const Self::Node,
        f: impl FnOnce(&Self::Value) -> R,
        absent: impl FnOnce(&mut Transaction<'env>) -> TxResult<()>,
    ) -> TxResult<Option<R>> {
        // SAFETY: callers pass nodes reached while pinned.
        let n = unsafe { &*np };
        let (flags, has_value) = {
            let it = tx.item_ref(id);
            (it.flags(), it.value.is_set())
        };
        if flags & F_REMOVE != 0 {
            return Ok(None);
        }
        if flags & F_INSERT != 0 {
            let it = tx.item_ref(id);
            return Ok(Some(match it.write_value::<Self::Value>() {
                Some(v) => f(v),
                None => Self::cell(n).with(f),
            }));
        }
        if has_value {
            // A blind set: presence still has to be read.
            if observe_value(tx, ReadVia::Item(id), Self::state(n), Self::cell(n), |_| ())?
                .is_none()
            {
                return Err(inconsistent());
            }
            return Ok(tx.item_ref(id).write_value::<Self::Value>().map(f));
        }
        let r = observe_value(tx, ReadVia::Item(id), Self::state(n), Self::cell(n), f)?;
        if r.is_none() {
            absent(tx)?;
        }
        Ok(r)
    }

    /// Writes `value` at node `np`, which holds the key, as `mode` says:
    /// revives the transaction's own removal, keeps its own placeholder
    /// (present), aborts on another transaction's placeholder, and
    /// otherwise reads the node's presence (the old value under
    /// [`WriteMode::Swap`]; nothing under [`WriteMode::Blind`]). A deleted
    /// node is handed back as [`Upserted::Deleted`] if `skip_deleted`;
    /// otherwise a deletion is only noticed by the read, which then asks for
    /// a retry (after a wait counted in `spins`).
    fn upsert_existing<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        np: *const Self::Node,
        value: Self::Value,
        mode: WriteMode,
        skip_deleted: bool,
        spins: &mut u32,
    ) -> TxResult<Upserted<Self::Value>> {
        // SAFETY: callers pass nodes reached while pinned.
        let n = unsafe { &*np };
        let own = tx.find_item(self, np as u64);
        let flags = own.map_or(0, |id| tx.item_ref(id).flags());
        if flags & F_REMOVE != 0 {
            // Removed earlier by this transaction: revive it.
            let item = tx.item_mut(own.expect("flags came from the item"));
            item.clear_flags(F_REMOVE);
            item.set_write(value);
            self.size_delta(tx, 1);
            return Ok(Upserted::Inserted);
        }
        if flags & F_INSERT != 0 {
            // Our own placeholder: present for us, holding our value.
            let item = tx.item_mut(own.expect("flags came from the item"));
            let old = match mode {
                WriteMode::IfAbsent => return Ok(Upserted::Present(None)),
                WriteMode::Blind => None,
                WriteMode::Swap => Some(match item.write_value::<Self::Value>() {
                    Some(v) => v.clone(),
                    None => Self::cell(n).with(Self::Value::clone),
                }),
            };
            item.set_write(value);
            return Ok(Upserted::Present(old));
        }
        let w = Self::state(n).load();
        if w & INSERTING != 0 {
            // Another transaction is inserting this key.
            placeholder_in_the_way(tx, spins)?;
            return Ok(Upserted::Retry(value));
        }
        if skip_deleted && w & DELETED != 0 {
            return Ok(Upserted::Deleted(value));
        }
        let id = tx.item(self, np as u64);
        if mode == WriteMode::Blind {
            tx.item_mut(id).set_write(value);
            return Ok(Upserted::Present(None));
        }
        let swap = mode == WriteMode::Swap;
        let seen = observe_value(tx, ReadVia::Item(id), Self::state(n), Self::cell(n), |v| {
            swap.then(|| v.clone())
        })?;
        match seen {
            Some(committed) if swap => {
                // Read-my-writes: an earlier write of ours is the old value.
                let item = tx.item_mut(id);
                let old = item.write_value::<Self::Value>().cloned().or(committed);
                item.set_write(value);
                Ok(Upserted::Present(old))
            }
            Some(_) => Ok(Upserted::Present(None)),
            None if own.is_some() => Err(inconsistent()),
            None => {
                // Deleted under us: its unlink is imminent. Drop the read
                // and look again.
                tx.item_mut(id).forget_read();
                struct_wait(spins);
                Ok(Upserted::Retry(value))
            }
        }
    }
}

/// Reads the committed value in `value` under the node state `state`,
/// recording the read where `via` says (the node's item or the read log).
/// `None` if the node is a placeholder or deleted.
#[inline(always)]
fn observe_value<'env, V: Clone, R>(
    tx: &mut Transaction<'env>,
    via: ReadVia,
    state: &'env TVersion,
    value: &'env ValueCell<V>,
    f: impl FnOnce(&V) -> R,
) -> TxResult<Option<R>> {
    if ValueCell::<V>::INLINE {
        // Small values: copy under the version check.
        let (word, v) = tx.observe_via_word(via, state, || value.with(V::clone))?;
        if word & (DELETED | INSERTING) != 0 {
            return Ok(None);
        }
        return Ok(Some(f(&v)));
    }
    let _ = tx.guard();
    let (word, p) = tx.observe_via_word(via, state, || value.with(|v| v as *const V as usize))?;
    if word & (DELETED | INSERTING) != 0 {
        return Ok(None);
    }
    // SAFETY: heap values are replaced by swapping the pointer and retiring
    // the old allocation through the epoch; this transaction is pinned, so
    // the value observed stays live.
    Ok(Some(f(unsafe { &*(p as *const V) })))
}

/// Frees `np` through the epoch once no pinned thread can still hold it.
///
/// # Safety
///
/// `np` is a boxed node of collection type `C` (every node collection
/// allocates its nodes with `Box`), unreachable from its collection now,
/// and retired only once. The collection must be `Send` for its nodes'
/// contents (the collector may drop the node on another thread).
pub(super) unsafe fn retire<C: NodeCollection>(guard: &Guard, np: *const C::Node) {
    let addr = np as usize;
    // SAFETY: per this function's contract; pinned readers may still hold
    // the node, which is why it is deferred.
    unsafe {
        guard.defer_unchecked(move || drop(Box::from_raw(addr as *mut C::Node)));
    }
}

/// Gap flag: the node was unlinked (its gap no longer means anything).
pub(super) const UNLINKED: u64 = 0b010;

/// A position in a [`GapChain`]: the last node before a searched key (null
/// for the head), its gap word, and its successor at that word.
pub(super) struct Pos<N> {
    pub pred: *const N,
    pub gap: u64,
    pub next: *const N,
}

/// A sorted chain of nodes in which every node (and the head) has a *gap*
/// version covering the interval up to its successor. Gap items are keyed
/// by `address | 1` (the head's by 1). Readers search without locks and
/// validate against gap words.
///
/// # The gap lock
///
/// A node's link changes only while its gap word is locked (the
/// word's own lock bit, taken with [`TVersion::try_lock_at`]): linking a
/// node after `p` locks `p`'s gap; unlinking `n` locks its predecessor's
/// gap, then its own. Whoever holds a gap lock holds it for a pointer
/// splice and never waits for anything while holding it (a second lock that
/// is busy makes it release the first and start over), so waiting for a
/// gap lock always ends, and two structural changes cannot deadlock.
///
/// # What a gap word means
///
/// * A link bumps the predecessor's gap (`next_after(word, 0)`): a read of
///   that interval made before the link is invalid after it. The new node's
///   gap starts at the predecessor's new version.
/// * Unlinking a removed node bumps its predecessor's gap to at least the
///   removal's commit version, and the node's own gap too, flagged
///   [`UNLINKED`]; a search standing on such a node starts again.
/// * Unlinking an abandoned placeholder (whose insert never committed)
///   bumps its predecessor's gap past the placeholder's own gap version.
///   No transaction saw the placeholder as present, but while it was linked
///   its gap took the changes committed in the interval after it (a
///   removal of its successor bumps the placeholder's gap, not the
///   predecessor's); the predecessor's gap now covers that interval and
///   must not look older than those changes.
///
/// So a gap's version is never older than a committed removal in its
/// interval. That is what lets an opaque reader accept a gap word at or
/// below its snapshot bound without revalidating: a removal committed after
/// the snapshot shows up as a newer word.
///
/// # Reaching nodes safely
///
/// Every node a search reaches was linked, and before the node it is
/// looking for, at some moment after the search started: the head is
/// always linked; the successor of a linked node is linked; and an unlinked
/// node keeps the successor it had when it was unlinked (no link after it
/// is possible: its gap is flagged). Nodes are retired through the epoch
/// only once unlinked, so a search that is pinned from its start never
/// reaches freed memory.
pub(super) trait GapChain: NodeCollection {
    /// The gap version after `n` (the head's for null).
    fn gap(&self, n: *const Self::Node) -> &TVersion;

    /// The link after `n` (the head's for null).
    fn link(&self, n: *const Self::Node) -> &AtomicPtr<Self::Node>;

    /// The last node satisfying `before`, by a traversal from the head
    /// consistent with that node's gap word; the search starts again if the
    /// node it stands on is unlinked. The caller is pinned.
    #[inline]
    fn locate(&self, before: impl Fn(&Self::Node) -> bool) -> Pos<Self::Node> {
        let mut spins = 0;
        'restart: loop {
            let mut pred: *const Self::Node = ptr::null();
            loop {
                // Walk by links alone: any path of links is sorted and
                // leads back into the chain (see "Reaching nodes safely"),
                // so only the node the walk stops at needs its gap read.
                // (An inner loop, so that the compiler sees `pred` is a
                // node, not the head, on every step after the first.)
                let mut nx = self.link(pred).load(Ordering::Acquire) as *const Self::Node;
                // SAFETY: reached through published links while pinned.
                while !nx.is_null() && before(unsafe { &*nx }) {
                    pred = nx;
                    nx = self.link(pred).load(Ordering::Acquire);
                }
                let g = self.gap(pred);
                let w = g.load();
                if TVersion::is_locked(w) {
                    struct_wait(&mut spins);
                    continue;
                }
                if w & UNLINKED != 0 {
                    continue 'restart;
                }
                // The successor again, now that the gap word is known.
                let nx = self.link(pred).load(Ordering::Acquire) as *const Self::Node;
                // SAFETY: as above.
                if !nx.is_null() && before(unsafe { &*nx }) {
                    pred = nx;
                    continue;
                }
                if g.load() == w {
                    return Pos {
                        pred,
                        gap: w,
                        next: nx,
                    };
                }
            }
        }
    }

    /// Records a read of the gap after `pred` at `word`.
    #[inline]
    fn record_gap<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        pred: *const Self::Node,
        word: u64,
    ) -> TxResult<()> {
        let id = tx.item(self, pred as u64 | 1);
        tx.record_read(id, word)?;
        still_current(tx, word, self.gap(pred).load())
    }

    /// Reads the gap after `n` consistently with its successor, records it
    /// and returns the successor: one step of a scan. The caller is pinned
    /// and reached `n` while pinned.
    ///
    /// A node unlinked since the scan stepped onto it is passed over only
    /// in an irrevocable scan (which relies on no gap). Any other unlink,
    /// even of an abandoned placeholder, moved the predecessor's gap that
    /// the scan recorded, and the frozen link may skip changes committed
    /// after the scan's snapshot: the attempt aborts.
    fn record_gap_after<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        n: *const Self::Node,
    ) -> TxResult<*const Self::Node> {
        let g = self.gap(n);
        let mut spins = 0;
        loop {
            let w = g.load();
            if TVersion::is_locked(w) {
                struct_wait(&mut spins);
                continue;
            }
            if w & UNLINKED != 0 {
                if tx.is_irrevocable() {
                    return Ok(self.link(n).load(Ordering::Acquire) as *const Self::Node);
                }
                return Err(inconsistent());
            }
            let nx = self.link(n).load(Ordering::Acquire) as *const Self::Node;
            if g.load() == w {
                self.record_gap(tx, n, w)?;
                return Ok(nx);
            }
        }
    }

    /// Links `node` after `pos.pred` if that gap still holds `pos.gap`
    /// (which `locate` returned, so it is neither locked nor unlinked), and
    /// bumps the gap; returns the predecessor's new gap word, or `None` (and
    /// changes nothing) if the gap moved. The new node's link and gap word
    /// are set here; `node` must not be shared yet.
    ///
    /// Every change of a node's link moves its gap word (see the trait
    /// docs), so a gap locked at `pos.gap` still leads to `pos.next`.
    #[inline]
    fn link_after(&self, pos: &Pos<Self::Node>, node: *mut Self::Node) -> Option<u64> {
        let g = self.gap(pos.pred);
        if !g.try_lock_at(pos.gap) {
            return None;
        }
        let new_gap = TVersion::next_after(pos.gap, 0);
        debug_assert!(ptr::eq(
            self.link(pos.pred).load(Ordering::Relaxed),
            pos.next
        ));
        self.link(node)
            .store(pos.next as *mut Self::Node, Ordering::Relaxed);
        // The new node's gap takes over part of the predecessor's interval,
        // and must not look older than the removals committed in it (see
        // the trait docs): a fresh gap at version 0 would let a reader whose
        // snapshot predates such a removal read the gap without the opacity
        // check noticing. The predecessor's new gap is at least every such
        // commit version (the clock is not: no-clock modes commit at
        // versions above it). When gaps run ahead of the clock, the first
        // reader to extend its snapshot over one moves the clock up
        // (`Transaction::record_read`).
        self.gap(node).unlock_to(TVersion::version_of(new_gap));
        // Release: a reader that loads the link sees the node initialized.
        self.link(pos.pred).store(node, Ordering::Release);
        g.unlock_to(new_gap);
        Some(new_gap)
    }

    /// Records in the transaction a placeholder it has just linked with
    /// [`link_after`](Self::link_after) (which returned `new_gap`), as
    /// [`adopt_placeholder`](NodeCollection::adopt_placeholder) does, and
    /// keeps the transaction's phantom protection: if it had read the
    /// predecessor's gap, the read moves to the new word and a read of the
    /// new node's gap is recorded at its first word. The two gaps together
    /// cover the interval the transaction read; without the second, another
    /// transaction could commit an insert after the new node, inside that
    /// interval, unnoticed.
    fn adopt_link<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        pos: &Pos<Self::Node>,
        node: *const Self::Node,
        new_gap: u64,
        absent: bool,
    ) -> TxResult<()> {
        let key = pos.pred as u64 | 1;
        if self.adopt_placeholder(tx, node, key, (pos.gap, new_gap), absent)? {
            let id = tx.item(self, node as u64 | 1);
            // No opacity check needed: while the predecessor's gap was
            // locked, the new node's interval was part of an interval this
            // transaction had read at the current version. If another link
            // after the node came in since, this read is stale and fails
            // validation.
            tx.keep_read(id, TVersion::version_of(new_gap));
        }
        Ok(())
    }

    /// Unlinks `np` if it is linked right after `pred` and both gap locks
    /// can be taken at once, and retires it; false (nothing changed) otherwise.
    /// With a commit version the gap before it is bumped to at least that
    /// version; its own gap is bumped and flagged [`UNLINKED`].
    ///
    /// Never waits: a busy lock makes it release what it took and fail, so
    /// that the caller waits holding nothing.
    ///
    /// # Safety
    ///
    /// The caller owns the removal of `np` (a committed removal, or its own
    /// abandoned placeholder), which is linked, and nobody else unlinks it;
    /// `pred` was reached while pinned (or is null: the head); the caller
    /// is pinned by `guard`.
    unsafe fn try_splice_out(
        &self,
        pred: *const Self::Node,
        np: *const Self::Node,
        cv: Option<u64>,
        guard: &Guard,
    ) -> bool {
        let pgap = self.gap(pred);
        let pw = pgap.load();
        if TVersion::is_locked(pw) || pw & UNLINKED != 0 || !pgap.try_lock_at(pw) {
            return false;
        }
        // Under `pred`'s gap lock its link is stable; and `pred` is linked
        // (its gap is not flagged), so `np` following it is linked too.
        if !ptr::eq(self.link(pred).load(Ordering::Relaxed), np) {
            pgap.unlock_unchanged(pw);
            return false;
        }
        let ngap = self.gap(np);
        let nw = ngap.load();
        debug_assert_eq!(nw & UNLINKED, 0, "only the owner unlinks a node");
        if TVersion::is_locked(nw) || !ngap.try_lock_at(nw) {
            pgap.unlock_unchanged(pw);
            return false;
        }
        // `np`'s link is stable too now (its gap is locked).
        self.link(pred)
            .store(self.link(np).load(Ordering::Relaxed), Ordering::Release);
        ngap.unlock_to(TVersion::next_after(nw, cv.unwrap_or(0)) | UNLINKED);
        // The predecessor's gap now covers `np`'s interval too, so it must
        // move past every change that interval saw. For a committed removal
        // the commit version does that. An abandoned placeholder changed no
        // committed contents itself, but while it was linked, commits may
        // have changed the interval after it (a removal of its successor
        // bumps *its* gap): a reader that recorded the predecessor's gap
        // and the placeholder's could otherwise find the predecessor's gap
        // unchanged and miss them. So its unlink bumps the predecessor's
        // gap past its own gap's version as well.
        let past = match cv {
            Some(cv) => cv,
            None => TVersion::version_of(nw),
        };
        pgap.unlock_to(TVersion::next_after(pw, past));
        // SAFETY: unreachable from the chain now, and retired only by the
        // owner of its removal (per the contract).
        unsafe { retire::<Self>(guard, np) };
        true
    }
}
