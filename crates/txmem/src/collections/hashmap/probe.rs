//! Finding a key: the unrecorded, bucket-consistent chain traversal
//! (`probe`) and the recording of what makes its answer valid (the node's
//! state or the bucket's word).

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};
use std::ptr;
use std::sync::atomic::Ordering;

use crate::collections::node::map::MapNodes;
use crate::collections::node::{DELETED, INSERTING};
use crate::collections::{still_current, struct_wait};
use crate::error::TxResult;
use crate::tx::Transaction;
use crate::version::TVersion;

use super::table::{bucket_key, Node, Table, MOVED};
use super::THashMap;

/// Where a key lives (or would live), found by an unrecorded traversal.
pub(super) struct Probe<K, V> {
    pub(super) table: *const Table<K, V>,
    pub(super) idx: u64,
    /// The bucket word the traversal was consistent with.
    pub(super) word: u64,
    pub(super) node: *const Node<K, V>,
    /// How many nodes the traversal passed (the whole chain when it found
    /// no committed node); inserts use it to notice long chains.
    pub(super) walked: u32,
}

impl<K, V, S> THashMap<K, V, S>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    S: BuildHasher + Send + Sync + 'static,
{
    #[inline]
    pub(super) fn hash<Q: Hash + ?Sized>(&self, key: &Q) -> u64 {
        self.hasher.hash_one(key)
    }

    #[inline]
    pub(super) fn current(&self) -> &Table<K, V> {
        // SAFETY: the table pointer is never null; a replaced table is
        // retired through the epoch, and every caller is pinned.
        unsafe { &*self.table.load(Ordering::Acquire) }
    }

    /// Finds the node for `key` (any state but deleted) by a traversal that
    /// is consistent with the bucket word it reports. Records nothing.
    ///
    /// With `settle` (transactional reads, and inserts that report an
    /// absence), waits out a committed removal
    /// of the key that is not unlinked yet, unless a committed node of the
    /// key answers anyway. Such a node is marked deleted at commit and
    /// unlinked right after, and only the unlink moves the bucket word past
    /// the commit version: an "absent" answer recorded at the older word
    /// would pass the snapshot check although the removal is newer than the
    /// snapshot (a reader could see the key gone next to another key's
    /// value from before the same commit).
    // Always inlined: each caller passes a constant `settle`, and the call
    // would cost about as much as the common one- or two-node walk.
    #[inline(always)]
    pub(super) fn probe<Q>(&self, h: u64, key: &Q, settle: bool) -> Probe<K, V>
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        let mut t = self.current();
        let mut spins = 0;
        loop {
            let b = t.bucket(h);
            let w = b.version.load();
            if TVersion::is_locked(w) {
                struct_wait(&mut spins);
                continue;
            }
            if w & MOVED != 0 {
                t = t.next_table();
                continue;
            }
            let mut found: *const Node<K, V> = ptr::null();
            let mut unlinking = false;
            let mut walked = 0;
            let mut cur = b.head.load(Ordering::Acquire) as *const Node<K, V>;
            while !cur.is_null() {
                walked += 1;
                // SAFETY: reached from a bucket of a table we hold a pin for;
                // nodes are freed only through the epoch after unlinking.
                let n = unsafe { &*cur };
                if n.hash == h && n.key.borrow() == key {
                    let st = n.state.load();
                    if st & DELETED != 0 {
                        unlinking = true;
                    } else if found.is_null() {
                        found = cur;
                        if st & INSERTING == 0 {
                            // Committed: the answer is this node, whatever
                            // removals of the key wait to be unlinked.
                            unlinking = false;
                            break;
                        }
                    }
                }
                cur = n.next.load(Ordering::Acquire);
            }
            if b.version.load() == w {
                if settle && unlinking {
                    struct_wait(&mut spins);
                    continue;
                }
                return Probe {
                    table: t,
                    idx: h & t.mask,
                    word: w,
                    node: found,
                    walked,
                };
            }
        }
    }

    /// Records the bucket read of a key that a settling
    /// [`probe`](Self::probe) found absent, at the word the probe saw.
    ///
    /// No re-check is needed here: nothing ran between the probe and the
    /// record. If the word's version is within the snapshot, the key was
    /// absent at the snapshot (removals move the word to their commit
    /// version when they unlink, and the probe waited for pending unlinks;
    /// inserts link before they commit, so the probe would have found them).
    /// If it is newer, `record_read` revalidates the read set, this read
    /// included, before it moves the snapshot.
    #[inline]
    pub(super) fn record_absent<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        p: &Probe<K, V>,
    ) -> TxResult<()> {
        // SAFETY: `p.table` came from `probe` under the transaction's pin.
        let table = unsafe { &*p.table };
        let id = tx.item(self, bucket_key(p.idx, table.log2));
        tx.record_read(id, p.word)
    }

    /// Records the bucket read of an absent key, after other reads.
    pub(super) fn record_bucket<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        p: &Probe<K, V>,
    ) -> TxResult<()> {
        self.record_absent(tx, p)?;
        // SAFETY: `p.table` came from `probe` under the transaction's pin.
        let table = unsafe { &*p.table };
        // (In the same table: a resize since the probe also shows as a
        // change of the bucket's word.)
        still_current(tx, p.word, table.bucket(p.idx).version.load())
    }

    /// The transaction's view of the key found by `p`: `Some(f(value))` if
    /// present, recording what makes the answer valid. A probe that found no
    /// node must be a settling one.
    pub(super) fn view<'env, R>(
        &'env self,
        tx: &mut Transaction<'env>,
        p: &Probe<K, V>,
        f: impl FnOnce(&V) -> R,
    ) -> TxResult<Option<R>> {
        if p.node.is_null() {
            self.record_absent(tx, p)?;
            return Ok(None);
        }
        // A foreign placeholder, or a removal that just committed: the key
        // is absent; keep it so through the bucket as well.
        self.view_value(tx, p.node, f, |tx| self.record_bucket(tx, p))
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicBool, Ordering};

    use crate::collections::node::{NodeCollection, DELETED};
    use crate::version::TVersion;
    use crate::{atomically, clock};

    use super::super::table::Node;
    use super::super::THashMap;

    /// A removal that has committed but is not unlinked yet (its committer
    /// is between marking the node deleted and unlinking it) must not make
    /// the key look absent to a reader whose snapshot predates the removal:
    /// here the reader has already read the other key of the same commit at
    /// its old value. Reading the key waits for the unlink instead, and then
    /// finds its snapshot stale, so the reader ends up after the commit.
    #[test]
    fn a_pending_unlink_does_not_hide_a_key_from_an_older_snapshot() {
        let m: THashMap<u64, u64> = THashMap::new();
        atomically(|tx| {
            m.insert_if_absent(tx, 1, 10)?;
            m.insert_if_absent(tx, 2, 20)
        });
        let node_of = |k: u64| {
            let _g = crossbeam_epoch::pin();
            m.probe(m.hash(&k), &k, false).node
        };
        let (a, b) = (node_of(1), node_of(2));
        // (Addresses, to hand the node to the unlinking thread.)
        let b_addr = b as usize;
        let attempts = Cell::new(0);
        let unlinked = AtomicBool::new(false);
        let seen = std::thread::scope(|sc| {
            atomically(|tx| {
                attempts.set(attempts.get() + 1);
                let va = m.get(tx, &1)?;
                if attempts.get() == 1 {
                    let g = crossbeam_epoch::pin();
                    // SAFETY: both nodes stay linked until the unlink below,
                    // which retires node 2 through the epoch.
                    let (na, nb) = unsafe { (&*a, &*b) };
                    // Another transaction commits {1 → 11, remove 2}, and
                    // stops after installing both, before it unlinks 2's node.
                    let wa = na.state.load();
                    let wb = nb.state.load();
                    assert!(na.state.try_lock_at(wa) && nb.state.try_lock_at(wb));
                    let cv = clock::tick().time();
                    na.value.store(11, || &g);
                    na.state.unlock_to(TVersion::next_after(wa, cv));
                    nb.state.unlock_to(TVersion::next_after(wb, cv) | DELETED);
                    // It unlinks a while later, from its own thread.
                    let (m, unlinked) = (&m, &unlinked);
                    sc.spawn(move || {
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        unlinked.store(true, Ordering::SeqCst);
                        let g = crossbeam_epoch::pin();
                        m.unlink(b_addr as *const Node<u64, u64>, Some(cv), &g);
                    });
                }
                let vb = m.get(tx, &2)?;
                // The read of key 2 returned only after the unlink.
                assert!(unlinked.load(Ordering::SeqCst));
                Ok((va, vb))
            })
        });
        assert_eq!(seen, (Some(11), None), "a torn read of one commit");
        assert_eq!(attempts.get(), 2);
    }
}
