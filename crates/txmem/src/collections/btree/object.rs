//! The map as a node collection: its entries' states and values, the
//! check of a leaf read at commit, and unlinking a removed entry from its
//! leaf; the [`TObject`](crate::TObject) impl is the shared node protocol's
//! (`node_tobject!`).

use std::ptr;

use crossbeam_epoch::Guard;

use crate::collections::node::map::MapNodes;
use crate::collections::node::{node_tobject, NodeCollection};
use crate::collections::size::SizeCounter;
use crate::collections::struct_wait;
use crate::item::Item;
use crate::object::Commit;
use crate::types::cell::ValueCell;
use crate::version::TVersion;

use super::storage::{deref, EPtr, Entry, Leaf, LeafData};
use super::TBTreeMap;

impl<K, V> NodeCollection for TBTreeMap<K, V>
where
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    type Node = Entry<K, V>;

    #[inline]
    fn size(&self) -> &SizeCounter {
        &self.size
    }

    #[inline]
    fn state(node: &Entry<K, V>) -> &TVersion {
        &node.state
    }

    #[inline]
    fn check_structure(&self, item: &Item, _: &Commit<'_>) -> bool {
        // SAFETY: structure items are keyed by leaf handles (address | 1),
        // which live as long as the map.
        let leaf = unsafe { deref((item.key() & !1) as *const Leaf<K, V>) };
        leaf.version.still_valid(item.read_version(), false)
    }

    #[inline]
    fn store_value(node: &Entry<K, V>, item: &mut Item, commit: &Commit<'_>) {
        Self::store_pending(node, item, commit)
    }

    /// Takes `np` out of its leaf (locking only that leaf); with a commit
    /// version, bumps the leaf's version to at least that version.
    fn unlink(&self, np: EPtr<K, V>, cv: Option<u64>, guard: &Guard) {
        // SAFETY: the caller owns the entry's removal and it is still in
        // its leaf (only its owner takes it out).
        let key = &unsafe { deref(np) }.key;
        let mut spins = 0;
        let stored = loop {
            let pos = self.locate(|k| k <= key);
            // SAFETY: read while pinned.
            let d = unsafe { deref(pos.data) };
            let (dkeys, dentries) = (d.keys(), d.entries());
            let i = dkeys
                .binary_search(key)
                .expect("txmem: TBTreeMap entry missing from its leaf");
            assert!(
                ptr::eq(dentries[i], np),
                "txmem: TBTreeMap entry missing from its leaf"
            );
            let new_data = LeafData::boxed(
                (&dkeys[..i], None, &dkeys[i + 1..]),
                (&dentries[..i], None, &dentries[i + 1..]),
                d.high.clone(),
                d.next,
            );
            let new = match cv {
                Some(cv) => TVersion::next_after(pos.word, cv),
                None => pos.word,
            };
            if Self::try_replace(&pos, new_data, new, guard) {
                break dentries[i];
            }
            struct_wait(&mut spins);
        };
        // SAFETY: the entry is unreachable for new readers now and only the
        // owner of its removal (our caller) retires it. Entries are boxed;
        // `K, V: Send` let the collector drop them elsewhere. The leaf's
        // own pointer is freed, not `np`: a pointer re-derived from a
        // shared reference may read the entry but not deallocate it.
        unsafe { crate::collections::node::retire::<Self>(guard, stored) };
    }
}

impl<K, V> MapNodes for TBTreeMap<K, V>
where
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    type Value = V;

    #[inline]
    fn cell(node: &Entry<K, V>) -> &ValueCell<V> {
        &node.value
    }
}

node_tobject!(impl[K, V] for TBTreeMap<K, V>
where
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
);
