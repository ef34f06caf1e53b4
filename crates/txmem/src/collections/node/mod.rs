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
//! [`NodeCollection`] (here) holds what is common: the [`TObject`] steps for node
//! and size items (the collections' own `TObject` impls delegate to them),
//! the cleanup of abandoned placeholders, the bookkeeping of an insert or a
//! remove in the transaction, and epoch retirement. [`MapNodes`]
//! (`map.rs`) adds the nodes' values for the maps: reads, blind writes and
//! upserts; `single.rs` holds what the maps' single-operation writes
//! (`insert_now`, `remove_now`, …) do to a committed node. [`GapChain`]
//! (`gaps.rs`) adds the gap versions of a sorted
//! chain (the sorted lists): searching, scanning, and linking and unlinking
//! under per-gap locks.
//!
//! Everything is static dispatch: the provided methods are monomorphized
//! for each collection and inline into its `TObject` methods.
//!
//! [`THashMap`]: super::THashMap
//! [`TListSet`]: super::TListSet
//! [`TList`]: super::TList
//! [`TBTreeMap`]: super::TBTreeMap
//! [`MapNodes`]: map::MapNodes
//! [`GapChain`]: gaps::GapChain

use crossbeam_epoch::Guard;

use crate::error::TxResult;
use crate::item::{Item, NEEDS_CLEANUP, READ, USER_FLAG0};
use crate::object::{Commit, LockOutcome, TObject};
use crate::tx::{ItemId, Transaction};
use crate::version::TVersion;

use super::size::SizeCounter;

pub(super) mod gaps;
pub(super) mod map;
pub(super) mod single;

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
    ///
    /// `node` only names the node: callers may hold it through a shared
    /// reference, whose pointer Miri's aliasing model lets read but not
    /// free, so the pointer retired is the one the structure held.
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
            tx.check_unrecorded(self, read_key, old)?;
        }
        tx.note_own_word(self, read_key, new);
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

/// Frees `np` through the epoch once no pinned thread can still hold it.
///
/// # Safety
///
/// `np` is a boxed node of collection type `C` (every node collection
/// allocates its nodes with `Box`), unreachable from its collection now,
/// and retired only once. The collection must be `Send` for its nodes'
/// contents (the collector may drop the node on another thread).
pub(super) unsafe fn retire<C: NodeCollection>(guard: &Guard, np: *const C::Node) {
    let np = np.cast_mut();
    // SAFETY: per this function's contract; pinned readers may still hold
    // the node, which is why it is deferred. (The closure keeps the pointer
    // itself, not its address, so that Miri checks the free against the
    // pointer's own provenance.)
    unsafe { guard.defer_unchecked(move || drop(Box::from_raw(np))) }
}
