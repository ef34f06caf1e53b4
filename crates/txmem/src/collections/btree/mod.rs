//! `TBTreeMap<K, V>`: a transactional ordered map (a B+ tree).
//!
//! # Why a B+ tree
//!
//! A linked structure (a sorted list, a skip list) follows one pointer per
//! step to a node somewhere in the heap, and at a million keys nearly every
//! step misses the cache. This map keeps the keys in sorted arrays of up to
//! [`DEFAULT_FANOUT`] keys per node, so a lookup is a few binary searches
//! over contiguous memory and one final step to the key's *entry*. Every
//! key lives in a heap entry with a state version and a value cell (the
//! node protocol of `node.rs` that the sorted lists share: placeholders,
//! deleted marks, epoch retirement), and the tree only indexes the entries.
//! Phantom protection is per **leaf**: each leaf has a version covering its
//! key interval, as in the thesis' Masstree, so a scan reads one version
//! per leaf instead of one per key.
//!
//! # Concurrency design: copy-on-write nodes, stable leaf handles
//!
//! Generic keys cannot be read while another thread writes them (that is a
//! data race in Rust's memory model, whatever the hardware does), so no
//! key or entry a reader may read is ever modified in place. The one change
//! made in place writes only beyond what readers read: an **append** after
//! a leaf's last key (a table's new rows arrive in key order) writes the
//! free slot past the end under the leaf's lock, then publishes the longer
//! length (release; readers load it with acquire and read only below it)
//! and a new version, instead of copying the contents.
//!
//! * **Leaves** are *handles* that live as long as the map: a version word
//!   and an `AtomicPtr` to *contents*, immutable but for appends (up to [`DEFAULT_FANOUT`]
//!   sorted keys and entry pointers in inline arrays, a **high key** — the
//!   exclusive upper end of the leaf's interval, none on the right edge —
//!   and a **right link** to the next leaf). A change builds new contents
//!   and swaps the pointer while the version is locked; the old contents
//!   are retired through `crossbeam-epoch`. Leaf handles are stable, so
//!   transactions can key their phantom-protection reads by them.
//! * **Inner nodes** are immutable values (separator keys and child
//!   pointers in inline arrays) reached from one `AtomicPtr` root. A leaf
//!   split copies the path from the leaf's parent to the root (splitting
//!   inner nodes that overflow, adding a root when the root splits) and
//!   publishes the new root; replaced inner nodes are retired through the
//!   epoch. Splits are rare (one per `fanout / 2` inserts at most), and in
//!   exchange a reader's descent is a plain walk through an immutable
//!   snapshot: one pointer and one binary search per level, no versions.
//!
//! Contents are published with release stores and read with acquire loads,
//! so a reader sees either the old or the new contents, each fully built.
//!
//! * **Readers never lock.** A reader descends through the inner nodes of
//!   the root it loaded; the leaf it reaches may have split since that root
//!   was replaced, in which case the key is at or past the leaf's high key
//!   and the reader moves right along the right link (a B-link leaf level).
//!   Splits only move keys to a new leaf on the right and leaves never
//!   merge, so a leaf's low end never changes and a stale descent plus right
//!   moves always reaches the leaf that covers the key. At the leaf, the
//!   reader reads the leaf's version, its contents pointer and the version
//!   again (a seqlock) to pair the contents with the version it records for
//!   phantom protection.
//! * **Writers lock one leaf.** Placing a placeholder in a leaf with room,
//!   or unlinking a removed entry, builds the leaf's new contents from the
//!   contents a lock-free descent read, then locks the leaf's version word
//!   only if the leaf is still exactly as read (same word, same contents
//!   pointer), for the two stores that publish; if it changed, the writer
//!   frees what it built and looks again. (A placeholder after the last
//!   key is appended in place instead, under the same lock and check.) So
//!   updates of different leaves run in parallel, and no thread waits on a
//!   writer for longer than two stores. A reader that paired the contents
//!   with an older version may see an appended placeholder: it is
//!   invisible (inserting), and the version it recorded has moved, as for
//!   any placeholder placed after its read. **Splits** also hold one map-wide structure lock, which
//!   serializes the copies of inner nodes and the swaps of the root (so a
//!   splitter descends through current inner nodes). A split locks the
//!   left leaf before the new right leaf becomes reachable and keeps it
//!   locked until the left leaf's new contents are published, so no reader
//!   can see the moved keys in both leaves. A split halves the leaf,
//!   unless keys reach it in ascending order (its last placement went just
//!   before the new key, in the upper half): then it splits just after the
//!   new key, so the stream goes on at the end of the left leaf, by
//!   appends, and leaves fill instead of staying half empty. Lock order:
//!   structure lock, then a leaf; a leaf's lock is never held while
//!   waiting.
//! * **Leaf versions.** Placing a placeholder (with or without a split)
//!   bumps the leaf version to a fresh value that follows the commit clock
//!   (a new right leaf starts at the left leaf's new version); unlinking a
//!   committed removal bumps it to at least the removal's commit version
//!   (so a reader whose snapshot predates the removal goes through the
//!   opacity check, as with a sorted list's gaps); dropping an aborted
//!   placeholder changes no version (the placeholder was invisible). A
//!   second change of a leaf within one clock period puts its version a
//!   step past the clock; the first opaque reader that meets it moves the
//!   clock up while extending its snapshot (the runtime's rule for any
//!   version ahead of the clock), so later readers of the leaf do not
//!   revalidate their read sets again.
//! * **Recording a leaf read.** A lookup reads the leaf's version before it
//!   reads the key's entry, and that entry read may move the transaction's
//!   snapshot forward; the leaf version is therefore re-checked when it is
//!   recorded (a stale version at or below the new snapshot would otherwise
//!   pass the opacity check).
//! * **No merges.** Removals shrink leaves; an emptied leaf stays in the
//!   tree (a later insert into its interval refills it). Leaf handles are
//!   freed only when the map is dropped; entries and replaced contents and
//!   inner nodes are freed through the epoch (the thread that retires them
//!   flushes its epoch bag every 64 retirements, so that garbage does not
//!   outrun the collector during insert-heavy phases). Freed contents go
//!   to a per-thread cache of blocks (`blocks.rs`) that the next copies
//!   reuse.
//! * **Single-operation writes** (`insert_now`, `remove_now`, …) run the
//!   commit of a one-key transaction directly (`single.rs`): an absent
//!   key's entry is placed as a placeholder would be, but with its state
//!   locked, and published past a commit version drawn once it is in its
//!   leaf; a present key is overwritten or removed at the state read.

//! # Item keys
//!
//! An entry's state is keyed by its address, a leaf's version by
//! `leaf address | 1`, the size counter by 2.

mod blocks;
mod committed;
mod object;
mod scan;
mod single;
mod storage;
mod structure;

pub use storage::DEFAULT_FANOUT;

use std::fmt;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use crossbeam_utils::CachePadded;

use crate::error::TxResult;
use crate::sync::Mutex;
use crate::tx::Transaction;
use crate::version::TVersion;

use super::node::map::{MapNodes, Upserted, WriteMode};
use super::node::NodeCollection;
use super::size::SizeCounter;
use super::struct_wait;
use storage::{deref, free_inner, EPtr, Entry, InnerData, Leaf, LeafData, Linked, Slots, CAP};

/// A transactional ordered map with point operations, range scans in both
/// directions, phantom protection and conflict-free inserts of distinct
/// keys: a B+ tree whose leaves index heap entries, one per key. See the
/// [module docs](self) for the design.
///
/// What each operation adds to the transaction:
///
/// | operation | read set | write set |
/// |---|---|---|
/// | [`get`](Self::get) / [`contains_key`](Self::contains_key), key present | the key's entry | — |
/// | `get` / `contains_key` / [`remove`](Self::remove), key absent | the leaf covering the key | — |
/// | [`insert`](Self::insert) / [`insert_if_absent`](Self::insert_if_absent) / [`set`](Self::set) of an absent key | nothing | the new entry (placeholder placed now), +1 size |
/// | `insert` of a present key (returns the old value) | the key's entry | the key's entry |
/// | `insert_if_absent` of a present key (returns `false`) | the key's entry | — |
/// | `set` of a present key | nothing | the key's entry (blind write) |
/// | `remove`, key present | the key's entry | the entry (deleted and unlinked at commit), −1 size |
/// | [`scan`](Self::scan) / [`range`](Self::range) / [`to_vec`](Self::to_vec) (either direction) | every entry met and every leaf whose interval meets the part of the range scanned | — |
/// | [`len`](Self::len) | the size counter | — |
///
/// Hence: inserts of distinct keys never conflict with each other; placing
/// a placeholder bumps its leaf's version, which invalidates concurrent
/// scans and absent reads of that leaf (no phantoms; also of other keys in
/// the same leaf, a false conflict that per-key gaps would avoid). A
/// transaction that read a leaf and then inserts into it updates its own
/// read instead of aborting itself (thesis §5), also when its insert splits
/// the leaf (it then also reads the new right leaf at its first version).
/// Writes and removes conflict with reads of the same key. Removal marks
/// the entry deleted at commit, takes it out of its leaf (bumping the
/// leaf's version) and frees it through the epoch scheme.
///
/// ```
/// use txmem::{atomically, TBTreeMap};
/// let m = TBTreeMap::new();
/// atomically(|tx| { for k in [5, 1, 3, 9] { m.insert(tx, k, k * 10)?; } Ok(()) });
/// let up: Vec<_> = atomically(|tx| m.range(tx, 2..=9));
/// assert_eq!(up, vec![(3, 30), (5, 50), (9, 90)]);
/// let down: Vec<_> = atomically(|tx| m.range_rev(tx, ..5));
/// assert_eq!(down, vec![(3, 30), (1, 10)]);
/// assert_eq!(atomically(|tx| m.remove(tx, &3)), Some(30));
/// assert_eq!(m.load(&3), None);
/// ```
pub struct TBTreeMap<K, V> {
    /// The root inner node (its children may be leaves).
    root: AtomicPtr<InnerData<K>>,
    /// The leftmost leaf (never changes: nodes split to the right).
    first: *const Leaf<K, V>,
    /// Maximum keys per leaf and children per inner node.
    fanout: usize,
    /// Held by splits (see the module docs). Kept off the line every
    /// reader uses (`root`).
    structure: CachePadded<Mutex<()>>,
    /// The element count (striped: updates write their thread's stripe).
    size: SizeCounter,
}

// SAFETY: the map owns keys and values in heap entries and contents, read
// by reference from many threads (`K, V: Sync`) and dropped by the epoch
// collector, possibly on another thread (`K, V: Send`). Raw pointers inside
// point only at the map's own allocations.
unsafe impl<K: Send + Sync, V: Send + Sync> Sync for TBTreeMap<K, V> {}
// SAFETY: as above.
unsafe impl<K: Send + Sync, V: Send + Sync> Send for TBTreeMap<K, V> {}

impl<K, V> Default for TBTreeMap<K, V>
where
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V> TBTreeMap<K, V>
where
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// An empty map.
    pub fn new() -> Self {
        Self::with_fanout(DEFAULT_FANOUT)
    }

    /// An empty map whose nodes hold at most `fanout` keys (at least 3).
    /// Small fanouts make deep trees with few keys, for tests.
    #[doc(hidden)]
    pub fn with_fanout(fanout: usize) -> Self {
        assert!(
            (3..=CAP).contains(&fanout),
            "TBTreeMap fanout must be in 3..={CAP}"
        );
        let leaf = Box::into_raw(Box::new(Leaf::new(
            TVersion::new(),
            Box::into_raw(Box::new(LeafData {
                keys: Slots::new([]),
                entries: Slots::new([]),
                high: None,
                next: ptr::null(),
            })),
            None,
        )));
        let root = Box::into_raw(Box::new(InnerData {
            level: 1,
            keys: Slots::new([]),
            children: Slots::new([leaf as *const ()]),
        }));
        TBTreeMap {
            root: AtomicPtr::new(root),
            first: leaf,
            fanout,
            structure: CachePadded::new(Mutex::new(())),
            size: SizeCounter::new(0),
        }
    }

    /// The entry of `key` visible to this transaction, with `f` applied to
    /// it; if none, records the read of the leaf covering the key.
    fn find<'env, R>(
        &'env self,
        tx: &mut Transaction<'env>,
        key: &K,
        f: impl FnOnce(&V) -> R,
    ) -> TxResult<Option<(EPtr<K, V>, R)>> {
        let pos = self.locate(|k| k <= key);
        // SAFETY: reached while pinned.
        let d = unsafe { deref(pos.data) };
        if let Ok(i) = d.keys().binary_search(key) {
            let e = d.entries()[i];
            let leaf = pos.leaf;
            let word = pos.word;
            let r = self.view_value(tx, e, f, |tx| self.record_leaf(tx, leaf, word))?;
            return Ok(r.map(|r| (e, r)));
        }
        self.record_leaf(tx, pos.leaf, pos.word)?;
        Ok(None)
    }

    /// The value of `key` (a clone), or `None`.
    pub fn get<'env>(&'env self, tx: &mut Transaction<'env>, key: &K) -> TxResult<Option<V>> {
        self.get_with(tx, key, V::clone)
    }

    /// Calls `f` with a reference to the value of `key`, if present.
    pub fn get_with<'env, R>(
        &'env self,
        tx: &mut Transaction<'env>,
        key: &K,
        f: impl FnOnce(&V) -> R,
    ) -> TxResult<Option<R>> {
        let _ = tx.guard();
        Ok(self.find(tx, key, f)?.map(|(_, r)| r))
    }

    /// True if `key` is present.
    pub fn contains_key<'env>(&'env self, tx: &mut Transaction<'env>, key: &K) -> TxResult<bool> {
        let _ = tx.guard();
        Ok(self.find(tx, key, |_| ())?.is_some())
    }

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

    fn upsert<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        mut key: K,
        mut value: V,
        mode: WriteMode,
    ) -> TxResult<Upserted<V>> {
        let _ = tx.guard();
        let mut spins = 0;
        loop {
            let pos = self.locate(|k| k <= &key);
            // SAFETY: reached while pinned.
            let d = unsafe { deref(pos.data) };
            if let Ok(i) = d.keys().binary_search(&key) {
                match self.upsert_existing(tx, d.entries()[i], value, mode, true, &mut spins)? {
                    done @ (Upserted::Inserted | Upserted::Present(_)) => return Ok(done),
                    Upserted::Retry(v) => value = v,
                    Upserted::Deleted(v) => {
                        // A committed removal about to take the entry out
                        // of its leaf: wait for it.
                        value = v;
                        struct_wait(&mut spins);
                    }
                }
                continue;
            }
            // Absent: place a placeholder in the leaf as read. If the leaf
            // changed meanwhile, take the key and value back and look again.
            let e = Entry::placeholder(key, value) as EPtr<K, V>;
            if let Some(linked) = self.place(&pos, e, tx.guard()) {
                // Unless the write is blind, it reports the key absent.
                self.adopt(tx, e, &linked, mode != WriteMode::Blind)?;
                return Ok(Upserted::Inserted);
            }
            // SAFETY: `place` did not publish `e`: it is still ours alone.
            (key, value) = unsafe { Entry::take_back(e) };
            struct_wait(&mut spins);
        }
    }

    /// Records a placeholder this transaction placed (see
    /// [`adopt_placeholder`](NodeCollection::adopt_placeholder)); if the
    /// leaf split and the transaction reads the leaf, it also reads the new
    /// right leaf at its first version (the split is its own doing).
    fn adopt<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        e: EPtr<K, V>,
        linked: &Linked<K, V>,
        absent: bool,
    ) -> TxResult<()> {
        let read_key = linked.leaf as u64 | 1;
        let reads = self.adopt_placeholder(tx, e, read_key, (linked.old, linked.new), absent)?;
        if let (true, Some((right, word))) = (reads, linked.split) {
            self.record_leaf(tx, right, word)?;
        }
        Ok(())
    }

    /// Removes `key`, returning its value if it was present.
    pub fn remove<'env>(&'env self, tx: &mut Transaction<'env>, key: &K) -> TxResult<Option<V>> {
        let _ = tx.guard();
        match self.find(tx, key, V::clone)? {
            Some((e, v)) => {
                self.mark_removed(tx, e);
                Ok(Some(v))
            }
            None => Ok(None),
        }
    }

    /// The number of keys, as this transaction sees them (reads the size
    /// counter: conflicts with inserts and removes committing meanwhile).
    pub fn len<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<usize> {
        self.tx_len(tx)
    }

    /// True if the map is empty (reads the size counter).
    pub fn is_empty<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<bool> {
        Ok(self.len(tx)? == 0)
    }
}

impl<K, V> Drop for TBTreeMap<K, V> {
    fn drop(&mut self) {
        // SAFETY: `&mut self` is exclusive: no reader or writer is left, and
        // the current tree (inner nodes reachable from the root, each with
        // one parent), the leaf handles (on the leaf chain from `first`,
        // each once), their current contents and the entries in them are
        // owned by the map. Retired contents and entries belong to the
        // epoch collector, not to us.
        unsafe {
            free_inner(*self.root.get_mut());
            let mut leaf = self.first as *mut Leaf<K, V>;
            while !leaf.is_null() {
                let d = Box::from_raw((*leaf).data.load(Ordering::Relaxed));
                for &e in d.entries() {
                    drop(Box::from_raw(e as *mut Entry<K, V>));
                }
                let next = d.next as *mut Leaf<K, V>;
                drop(d);
                drop(Box::from_raw(leaf));
                leaf = next;
            }
        }
    }
}

impl<K, V> fmt::Debug for TBTreeMap<K, V>
where
    K: Ord + Clone + Send + Sync + fmt::Debug + 'static,
    V: Clone + Send + Sync + 'static,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TBTreeMap")
            .field("len", &self.load_len())
            .field("depth", &self.depth())
            .finish()
    }
}
