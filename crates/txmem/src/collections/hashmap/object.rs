//! The map as a node collection: its nodes' states and values, the check
//! of a bucket read at commit, and unlinking a removed node from its chain;
//! the [`TObject`](crate::TObject) impl is the shared node protocol's
//! (`node_tobject!`).

use std::hash::{BuildHasher, Hash};
use std::ptr;
use std::sync::atomic::Ordering;

use crossbeam_epoch::Guard;

use crate::collections::node::map::MapNodes;
use crate::collections::node::{node_tobject, retire, NodeCollection};
use crate::collections::size::SizeCounter;
use crate::item::Item;
use crate::object::Commit;
use crate::types::cell::ValueCell;
use crate::version::TVersion;

use super::table::{decode_bucket_key, Node};
use super::THashMap;

impl<K, V, S> NodeCollection for THashMap<K, V, S>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    S: BuildHasher + Send + Sync + 'static,
{
    type Node = Node<K, V>;

    #[inline]
    fn size(&self) -> &SizeCounter {
        &self.size
    }

    #[inline]
    fn state(node: &Node<K, V>) -> &TVersion {
        &node.state
    }

    #[inline]
    fn check_structure(&self, item: &Item, commit: &Commit<'_>) -> bool {
        let _ = commit.guard();
        let (idx, log2) = decode_bucket_key(item.key());
        Self::check_range(self.current(), idx, log2, item.read_version())
    }

    #[inline]
    fn store_value(node: &Node<K, V>, item: &mut Item, commit: &Commit<'_>) {
        Self::store_pending(node, item, commit)
    }

    /// Unlinks node `np` from its chain. `commit_version` (if any) is
    /// published in the bucket word, so that absent reads of the removed key
    /// taken after this point see a version no older than the removal.
    fn unlink(&self, np: *const Node<K, V>, commit_version: Option<u64>, guard: &Guard) {
        // SAFETY: the caller owns the node's removal (it holds the node's
        // commit lock or is the inserter cleaning up its placeholder); the
        // node is linked, and we are pinned (`guard`).
        let n = unsafe { &*np };
        let (b, w) = self.lock_bucket_for(n.hash);
        let mut link = &b.head;
        let stored = loop {
            let cur = link.load(Ordering::Relaxed);
            assert!(
                !cur.is_null(),
                "txmem: THashMap node missing from its bucket"
            );
            if ptr::eq(cur, np) {
                link.store(n.next.load(Ordering::Relaxed), Ordering::Release);
                break cur;
            }
            // SAFETY: chain nodes stay valid while we hold the bucket lock.
            link = &unsafe { &*cur }.next;
        };
        match commit_version {
            Some(cv) => b.version.unlock_to(TVersion::next_after(w, cv)),
            None => b.version.unlock_unchanged(w),
        }
        // SAFETY: the node is unreachable from the table now and its removal
        // is ours (see above); nodes are boxed, and `K, V: Send` let the
        // collector drop it on another thread. The chain's own pointer is
        // freed, not `np` (see `NodeCollection::unlink`).
        unsafe { retire::<Self>(guard, stored) };
    }
}

impl<K, V, S> MapNodes for THashMap<K, V, S>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    S: BuildHasher + Send + Sync + 'static,
{
    type Value = V;

    #[inline]
    fn cell(node: &Node<K, V>) -> &ValueCell<V> {
        &node.value
    }
}

node_tobject!(impl[K, V, S] for THashMap<K, V, S>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    S: BuildHasher + Send + Sync + 'static,
);

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::sync::atomic::Ordering;

    use crate::atomically;
    use crate::collections::node::{DELETED, INSERTING};
    use crate::version::LOCK_BIT;

    use super::super::table::{Node, MOVED};
    use super::super::THashMap;

    /// The nodes of `key`'s chain that hold `key`, with their state words.
    fn chain_of(m: &THashMap<u64, u64>, key: u64) -> Vec<u64> {
        let _g = crossbeam_epoch::pin();
        let h = m.hash(&key);
        let mut t = m.current();
        while t.bucket(h).version.load() & MOVED != 0 {
            t = t.next_table();
        }
        let mut out = Vec::new();
        let mut cur = t.bucket(h).head.load(Ordering::Acquire) as *const Node<u64, u64>;
        while !cur.is_null() {
            // SAFETY: pinned (`_g`), and nothing unlinks concurrently here.
            let n = unsafe { &*cur };
            if n.key == key {
                out.push(n.state.load());
            }
            cur = n.next.load(Ordering::Acquire);
        }
        out
    }

    /// An insert whose commit fails after its items are locked (validation
    /// of another read fails) leaves no placeholder behind: cleanup unlinks
    /// it, and the retry links and publishes a fresh one. (Guards the
    /// dropping of the cleanup flag, which only an installed placeholder
    /// may lose.)
    #[test]
    fn a_placeholder_whose_commit_fails_validation_is_unlinked() {
        let m: THashMap<u64, u64> = THashMap::new();
        let x = crate::TBox::new(0u64);
        let attempts = Cell::new(0);
        atomically(|tx| {
            attempts.set(attempts.get() + 1);
            assert!(
                attempts.get() < 10,
                "the key stays blocked by a stale placeholder"
            );
            let v = x.get(tx)?;
            assert!(m.insert_if_absent(tx, 7, v)?);
            if attempts.get() == 1 {
                // Another thread commits a write to what this attempt read:
                // its validation fails after the placeholder is locked.
                std::thread::scope(|s| {
                    s.spawn(|| atomically(|tx| x.set(tx, 1)));
                });
            }
            Ok(())
        });
        assert_eq!(attempts.get(), 2);
        let states = chain_of(&m, 7);
        assert_eq!(states.len(), 1, "one node for the key");
        assert_eq!(states[0] & (INSERTING | DELETED | LOCK_BIT), 0, "published");
        assert_eq!(m.load(&7), Some(1));
        assert_eq!(atomically(|tx| m.len(tx)), 1);
    }
}
