//! Committed (non-transactional) reads: a key's value, its presence and
//! the number of keys, read outside any transaction.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};

use crate::collections::node::{DELETED, INSERTING};
use crate::collections::struct_wait;
use crate::version::TVersion;

use super::THashMap;

impl<K, V, S> THashMap<K, V, S>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    S: BuildHasher + Send + Sync + 'static,
{
    /// The committed value of `key`, outside any transaction (a consistent
    /// read of that one key; never blocks for long).
    pub fn load<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let h = self.hash(key);
        let _g = crossbeam_epoch::pin();
        let mut spins = 0;
        loop {
            let p = self.probe(h, key, false);
            if p.node.is_null() {
                return None;
            }
            // SAFETY: found while pinned (`_g`).
            let n = unsafe { &*p.node };
            let w = n.state.load();
            if TVersion::is_locked(w) {
                struct_wait(&mut spins);
                continue;
            }
            if w & (INSERTING | DELETED) != 0 {
                return None;
            }
            let v = n.value.with(V::clone);
            if n.state.load() == w {
                return Some(v);
            }
        }
    }

    /// True if `key` is committed, outside any transaction.
    pub fn load_contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.load(key).is_some()
    }

    /// The committed number of keys, outside any transaction.
    pub fn load_len(&self) -> usize {
        self.size.load().max(0) as usize
    }
}
