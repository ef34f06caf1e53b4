//! Iteration: `for_each` and `to_vec` visit every bucket of the table,
//! following migrated buckets into the next table, and record every bucket
//! word and node they pass.

use std::hash::{BuildHasher, Hash};
use std::sync::atomic::Ordering;

use crate::collections::struct_wait;
use crate::error::TxResult;
use crate::tx::Transaction;
use crate::version::TVersion;

use super::probe::Probe;
use super::table::{bucket_key, Node, Table, MOVED};
use super::THashMap;

impl<K, V, S> THashMap<K, V, S>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    S: BuildHasher + Send + Sync + 'static,
{
    /// Calls `f` on every entry, in no particular order. Reads every bucket
    /// and every node: any committed insert, remove or write into the map
    /// conflicts with the iteration.
    pub fn for_each<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        mut f: impl FnMut(&K, &V),
    ) -> TxResult<()> {
        let _ = tx.guard();
        let t = self.current();
        for idx in 0..t.buckets.len() as u64 {
            self.visit_bucket(tx, t, idx, &mut f)?;
        }
        Ok(())
    }

    /// All entries (clones), in no particular order; see [`for_each`](Self::for_each).
    pub fn to_vec<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Vec<(K, V)>> {
        let mut out = Vec::new();
        self.for_each(tx, |k, v| out.push((k.clone(), v.clone())))?;
        Ok(out)
    }

    fn visit_bucket<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        t: &Table<K, V>,
        idx: u64,
        f: &mut impl FnMut(&K, &V),
    ) -> TxResult<()> {
        let b = t.bucket(idx);
        let mut spins = 0;
        let mut nodes: Vec<*const Node<K, V>> = Vec::new();
        let word = loop {
            let w = b.version.load();
            if TVersion::is_locked(w) {
                struct_wait(&mut spins);
                continue;
            }
            if w & MOVED != 0 {
                let next = t.next_table();
                self.visit_bucket(tx, next, idx, f)?;
                return self.visit_bucket(tx, next, idx + (1u64 << t.log2), f);
            }
            nodes.clear();
            let mut cur = b.head.load(Ordering::Acquire) as *const Node<K, V>;
            while !cur.is_null() {
                nodes.push(cur);
                // SAFETY: as in `probe`.
                cur = unsafe { &*cur }.next.load(Ordering::Acquire);
            }
            if b.version.load() == w {
                break w;
            }
        };
        let bid = tx.item(self, bucket_key(idx, t.log2));
        tx.record_read(bid, word)?;
        for &np in &nodes {
            // SAFETY: collected under a stable bucket word while pinned.
            let n = unsafe { &*np };
            let probe = Probe {
                table: t,
                idx,
                word,
                node: np,
                walked: 0,
            };
            let key = &n.key;
            self.view(tx, &probe, |v| f(key, v))?;
        }
        Ok(())
    }
}
