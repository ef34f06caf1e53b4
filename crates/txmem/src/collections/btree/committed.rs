//! Committed (non-transactional) reads: a key's value, the size and the
//! keys in order, read outside any transaction under an epoch pin, and the
//! tree's depth for tests and measurements.

use std::sync::atomic::Ordering;

use crate::collections::node::{DELETED, INSERTING};
use crate::collections::struct_wait;
use crate::version::TVersion;

use super::storage::deref;
use super::TBTreeMap;

impl<K, V> TBTreeMap<K, V>
where
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// The committed value of `key`, outside any transaction.
    pub fn load(&self, key: &K) -> Option<V> {
        let _g = crossbeam_epoch::pin();
        let pos = self.locate(|k| k <= key);
        // SAFETY: reached while pinned.
        let d = unsafe { deref(pos.data) };
        let i = d.keys().binary_search(key).ok()?;
        // SAFETY: reached while pinned.
        let e = unsafe { deref(d.entries()[i]) };
        let mut spins = 0;
        loop {
            let w = e.state.load();
            if TVersion::is_locked(w) {
                struct_wait(&mut spins);
                continue;
            }
            if w & (INSERTING | DELETED) != 0 {
                return None;
            }
            let v = e.value.with(V::clone);
            if e.state.load() == w {
                return Some(v);
            }
        }
    }

    /// True if `key` is committed, outside any transaction.
    pub fn load_contains_key(&self, key: &K) -> bool {
        self.load(key).is_some()
    }

    /// The committed number of keys, outside any transaction.
    pub fn load_len(&self) -> usize {
        self.size.load().max(0) as usize
    }

    /// The committed keys in order, outside any transaction (each key's
    /// presence is read atomically, but not the whole map at once).
    pub fn load_keys(&self) -> Vec<K> {
        let _g = crossbeam_epoch::pin();
        let mut out = Vec::new();
        let mut leaf = self.first;
        while !leaf.is_null() {
            // SAFETY: handles live as long as the map; contents while pinned.
            let d = unsafe { deref(deref(leaf).data.load(Ordering::Acquire)) };
            for (k, &e) in d.keys().iter().zip(d.entries()) {
                // SAFETY: reached while pinned.
                if unsafe { deref(e) }.state.load() & (INSERTING | DELETED) == 0 {
                    out.push(k.clone());
                }
            }
            leaf = d.next;
        }
        out
    }

    /// The depth of the tree (1: the root's children are leaves), for tests
    /// and measurements.
    #[doc(hidden)]
    pub fn depth(&self) -> usize {
        let _g = crossbeam_epoch::pin();
        // SAFETY: the root is live while pinned.
        unsafe { deref(self.root.load(Ordering::Acquire)) }.level as usize
    }

    /// The number of leaves, for tests and measurements.
    #[doc(hidden)]
    pub fn leaf_count(&self) -> usize {
        let _g = crossbeam_epoch::pin();
        let (mut leaf, mut n) = (self.first, 0);
        while !leaf.is_null() {
            n += 1;
            // SAFETY: handles live as long as the map; contents while pinned.
            leaf = unsafe { deref(deref(leaf).data.load(Ordering::Acquire)) }.next;
        }
        n
    }
}
