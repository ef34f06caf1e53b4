//! `TBTreeMap<K, V>`: a transactional ordered map (a B+ tree).
//!
//! # Why a B+ tree next to the skiplist
//!
//! [`TSkipMap`](super::TSkipMap) follows one pointer per level to a node
//! somewhere in the heap: at a million keys a lookup misses the cache on
//! almost every step (about 1.7 µs, ten times a `RwLock<BTreeMap>`). This
//! map keeps the keys in sorted arrays of up to [`DEFAULT_FANOUT`] keys per
//! node, so a lookup is a few binary searches over contiguous memory and one
//! final step to the key's *entry*. The transactional part is the same as
//! the skiplist's: every key lives in a heap entry with a state version and
//! a value cell (the shared node protocol of `node.rs`: placeholders,
//! deleted marks, epoch retirement), and the tree only indexes the entries.
//! What differs is phantom protection: instead of one gap version per node,
//! each **leaf** has a version covering its key interval, as in the thesis'
//! Masstree. A scan reads one version per leaf instead of one per key.
//!
//! # Concurrency design: copy-on-write contents behind stable handles
//!
//! Generic keys cannot be read while another thread writes them (that is a
//! data race in Rust's memory model, whatever the hardware does), so nodes
//! are never modified in place. Each tree node is a *handle* that lives as
//! long as the map, pointing (an `AtomicPtr`) at immutable *contents*:
//! sorted keys and entry pointers for a leaf, separator keys and child
//! handles for an inner node, plus, for both, a **high key** (the exclusive
//! upper end of the interval the node covers; none on the right edge) and a
//! **right link** to the next handle on the same level (a B-link tree).
//! A change builds new contents and swaps the pointer; the old contents are
//! retired through `crossbeam-epoch`. Contents are published with release
//! stores and read with acquire loads, so a reader sees either the old or
//! the new contents, each fully built.
//!
//! * **Readers never lock.** A reader descends from the root loading
//!   contents; at every node, a key at or past the high key means the node
//!   split after the reader's parent was read, and it moves right along the
//!   right link. Splits only move keys to a new node on the right and
//!   nodes never merge, so a node's low end never changes and following
//!   a stale parent followed by right links always reaches the node that
//!   covers the key. At the leaf, the reader reads the leaf's version,
//!   its contents and the version again (a seqlock) to pair the contents
//!   with the version it records for phantom protection.
//! * **Writers** (placing a placeholder, unlinking a removed entry,
//!   splitting) hold one short map-wide structure lock, as the skiplist's
//!   splices do; under it nothing moves, so they descend exactly. A leaf's
//!   contents are swapped while its version is locked, and the version is
//!   bumped when the leaf's key set or interval changes, so that readers
//!   validating the leaf see the change.
//! * **Leaf versions.** Linking a placeholder and splitting bump the leaf
//!   version (the new right leaf starts at the left leaf's new version, so
//!   versions never go back for the keys it covers); unlinking a committed
//!   removal bumps it to at least the removal's commit version (for the
//!   opacity check, as the skiplist's gaps); dropping an aborted
//!   placeholder changes no version (the placeholder was invisible).
//! * **No merges.** Removals shrink leaves; an emptied leaf stays in the
//!   tree (a later insert into its interval refills it). Handles are freed
//!   only when the map is dropped; entries and replaced contents are freed
//!   through the epoch.
//!
//! # Item keys
//!
//! An entry's state is keyed by its address, a leaf's version by
//! `leaf address | 1`, the size counter by 2.

use std::fmt;
use std::ops::{Bound, RangeBounds};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use crossbeam_epoch::Guard;
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;

use crate::error::TxResult;
use crate::item::Item;
use crate::object::Commit;
use crate::tx::Transaction;
use crate::types::cell::ValueCell;
use crate::version::TVersion;

use super::node::{node_tobject, MapNodes, NodeCollection, Upserted, DELETED, INSERTING};
use super::size::SizeCounter;
use super::{struct_wait, struct_wait_forever};

/// The default maximum number of keys in a leaf and of children of an
/// inner node.
pub const DEFAULT_FANOUT: usize = 32;

/// A key's entry: exactly what a skiplist node holds, without links.
pub(super) struct Entry<K, V> {
    state: TVersion,
    key: K,
    value: ValueCell<V>,
}

type EPtr<K, V> = *const Entry<K, V>;

/// The immutable contents of a leaf.
struct LeafData<K, V> {
    /// Sorted, distinct keys (`keys[i]` is the key of `entries[i]`).
    keys: Vec<K>,
    entries: Vec<EPtr<K, V>>,
    /// The exclusive upper end of the leaf's interval (none: unbounded).
    high: Option<K>,
    /// The leaf to the right (null at the right edge).
    next: *const Leaf<K, V>,
}

/// A leaf handle: its version and its current contents. Its interval
/// starts at `low` (none: unbounded), which never changes.
struct Leaf<K, V> {
    version: TVersion,
    low: Option<K>,
    data: AtomicPtr<LeafData<K, V>>,
}

/// The immutable contents of an inner node.
struct InnerData<K, V> {
    /// 1: the children are leaves; otherwise inner nodes one level lower.
    level: u32,
    /// Separators: child `i` covers keys in `[keys[i-1], keys[i])`.
    keys: Vec<K>,
    /// `*const Leaf` (level 1) or `*const Inner` (higher levels).
    children: Vec<*const ()>,
    /// The exclusive upper end of the node's interval (none: unbounded).
    high: Option<K>,
    /// The node to the right on the same level (null at the right edge).
    next: *const Inner<K, V>,
}

/// An inner node handle.
struct Inner<K, V> {
    data: AtomicPtr<InnerData<K, V>>,
}

/// Defers dropping the boxed contents `p` (replaced, unreachable for new
/// readers) until no pinned thread can hold them.
///
/// # Safety
///
/// `p` came from `Box::into_raw`, is no longer reachable from the map, and
/// is retired once. `T` may be dropped on another thread (`T: Send` in
/// effect: contents hold keys and entry pointers of a `Send` map).
unsafe fn retire_box<T>(guard: &Guard, p: *mut T) {
    let addr = p as usize;
    // SAFETY: per the contract; pinned readers may still hold `p`.
    unsafe { guard.defer_unchecked(move || drop(Box::from_raw(addr as *mut T))) }
}

/// A position found by a descent: a leaf, the version word at which its
/// contents `data` were read, and those contents.
struct LeafPos<K, V> {
    leaf: *const Leaf<K, V>,
    word: u64,
    data: *const LeafData<K, V>,
}

/// What a structural insert did: the leaf's version change, and the new
/// right leaf (with its initial version) if the leaf split.
struct Linked<K, V> {
    leaf: *const Leaf<K, V>,
    old: u64,
    new: u64,
    split: Option<*const Leaf<K, V>>,
}

/// A transactional ordered map with point operations, range scans in both
/// directions, phantom protection and conflict-free inserts of distinct
/// keys: a B+ tree over the same entries as [`TSkipMap`](super::TSkipMap),
/// with the same API and semantics and much better cache behaviour for
/// large maps. See the [module docs](self) for the design.
///
/// What each operation adds to the transaction:
///
/// | operation | read set | write set |
/// |---|---|---|
/// | [`get`](Self::get) / [`contains_key`](Self::contains_key), key present | the key's entry | — |
/// | `get` / `contains_key` / [`remove`](Self::remove), key absent | the leaf covering the key | — |
/// | [`insert`](Self::insert) of an absent key | nothing | the new entry (placeholder placed now), +1 size |
/// | `insert` of a present key (returns `false`) | the key's entry | — |
/// | [`put`](Self::put) | nothing | the new entry, or the existing entry (blind write) |
/// | `remove`, key present | the key's entry | the entry (deleted and unlinked at commit), −1 size |
/// | [`scan`](Self::scan) / [`range`](Self::range) (either direction) | every entry met and every leaf whose interval meets the part of the range scanned | — |
/// | [`len`](Self::len) | the size counter | — |
///
/// Hence: inserts of distinct keys never conflict with each other; placing
/// a placeholder bumps its leaf's version, which invalidates concurrent
/// scans and absent reads of that leaf (no phantoms; also of other keys in
/// the same leaf, a false conflict the skiplist's per-key gaps avoid). A
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
    root: AtomicPtr<Inner<K, V>>,
    /// The leftmost leaf (never changes: nodes split to the right).
    first: *const Leaf<K, V>,
    /// Maximum keys per leaf and children per inner node.
    fanout: usize,
    // Written by updates: kept off the line every reader uses (`root`).
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

fn below_start<K: Ord>(bound: Bound<&K>) -> impl Fn(&K) -> bool + '_ {
    // Keys strictly before the start of a range.
    move |k: &K| match bound {
        Bound::Included(lo) => k < lo,
        Bound::Excluded(lo) => k <= lo,
        Bound::Unbounded => false,
    }
}

fn within_end<K: Ord>(bound: Bound<&K>) -> impl Fn(&K) -> bool + '_ {
    move |k: &K| match bound {
        Bound::Included(hi) => k <= hi,
        Bound::Excluded(hi) => k < hi,
        Bound::Unbounded => true,
    }
}

/// Contents are reached only while pinned (or under the structure lock, or
/// with `&mut` to the map).
///
/// # Safety
///
/// `p` points at live contents for the caller's chosen lifetime.
#[inline]
unsafe fn deref<'a, T>(p: *const T) -> &'a T {
    // SAFETY: per the contract.
    unsafe { &*p }
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
        assert!(fanout >= 3, "TBTreeMap fanout must be at least 3");
        let leaf = Box::into_raw(Box::new(Leaf {
            version: TVersion::new(),
            low: None,
            data: AtomicPtr::new(Box::into_raw(Box::new(LeafData {
                keys: Vec::new(),
                entries: Vec::new(),
                high: None,
                next: ptr::null(),
            }))),
        }));
        let root = Box::into_raw(Box::new(Inner {
            data: AtomicPtr::new(Box::into_raw(Box::new(InnerData {
                level: 1,
                keys: Vec::new(),
                children: vec![leaf as *const ()],
                high: None,
                next: ptr::null(),
            }))),
        }));
        TBTreeMap {
            root: AtomicPtr::new(root),
            first: leaf,
            fanout,
            structure: CachePadded::new(Mutex::new(())),
            size: SizeCounter::new(0),
        }
    }

    /// Lock-free descent to the leaf covering the keys just after those
    /// satisfying `go_right` (a predicate true for a prefix of the key
    /// order: `k <= key` finds the leaf of `key`, `k < key` the leaf of the
    /// keys just below `key`), with that leaf's contents and version word
    /// read consistently. The caller is pinned. `wait` is called while the
    /// leaf is locked by a structural change.
    #[inline]
    fn locate_with(
        &self,
        go_right: impl Fn(&K) -> bool,
        mut wait: impl FnMut(&mut u32) -> TxResult<()>,
    ) -> TxResult<LeafPos<K, V>> {
        let mut node = self.root.load(Ordering::Acquire) as *const Inner<K, V>;
        let mut leaf: *const Leaf<K, V>;
        loop {
            // SAFETY: handles live as long as the map; contents loaded from
            // a handle stay live while we are pinned (they are retired
            // through the epoch after being replaced).
            let d = unsafe { deref(deref(node).data.load(Ordering::Acquire)) };
            if let Some(h) = &d.high {
                if go_right(h) {
                    node = d.next;
                    continue;
                }
            }
            let i = d.keys.partition_point(&go_right);
            // SAFETY: an inner node always has `keys.len() + 1` children.
            let child = unsafe { *d.children.get_unchecked(i) };
            if d.level == 1 {
                leaf = child as *const Leaf<K, V>;
                break;
            }
            node = child as *const Inner<K, V>;
        }
        let mut spins = 0;
        loop {
            // SAFETY: as above.
            let l = unsafe { deref(leaf) };
            let w = l.version.load();
            if TVersion::is_locked(w) {
                wait(&mut spins)?;
                continue;
            }
            let dp = l.data.load(Ordering::Acquire);
            if l.version.load() != w {
                continue;
            }
            // SAFETY: as above.
            let d = unsafe { deref(dp) };
            if let Some(h) = &d.high {
                if go_right(h) {
                    leaf = d.next;
                    continue;
                }
            }
            return Ok(LeafPos {
                leaf,
                word: w,
                data: dp,
            });
        }
    }

    /// [`locate_with`](Self::locate_with) for transactional operations.
    #[inline]
    fn locate(&self, go_right: impl Fn(&K) -> bool) -> TxResult<LeafPos<K, V>> {
        self.locate_with(go_right, struct_wait)
    }

    /// The leaf of `key` and the inner nodes on the way (root first), under
    /// the structure lock (nothing moves, so no right moves are needed).
    fn descend_locked(&self, key: &K, path: &mut Vec<*const Inner<K, V>>) -> *const Leaf<K, V> {
        let mut node = self.root.load(Ordering::Acquire) as *const Inner<K, V>;
        loop {
            path.push(node);
            // SAFETY: under the structure lock, current contents are live.
            let d = unsafe { deref(deref(node).data.load(Ordering::Acquire)) };
            debug_assert!(d.high.as_ref().is_none_or(|h| key < h));
            let child = d.children[d.keys.partition_point(|s| s <= key)];
            if d.level == 1 {
                return child as *const Leaf<K, V>;
            }
            node = child as *const Inner<K, V>;
        }
    }

    /// Records a read of `leaf` at version `word`.
    #[inline]
    fn record_leaf<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        leaf: *const Leaf<K, V>,
        word: u64,
    ) -> TxResult<()> {
        let id = tx.item(self, leaf as u64 | 1);
        tx.record_read(id, word)
    }

    /// Places the placeholder `e` into the leaf of its key, splitting as
    /// needed. The caller holds the structure lock and has checked that the
    /// key is absent from that leaf (passed with its path).
    fn link_locked(
        &self,
        path: &mut Vec<*const Inner<K, V>>,
        leaf: *const Leaf<K, V>,
        e: EPtr<K, V>,
        guard: &Guard,
    ) -> Linked<K, V> {
        // SAFETY: handles live as long as the map; under the structure lock
        // the leaf's current contents are live and cannot change.
        let l = unsafe { deref(leaf) };
        let dp = l.data.load(Ordering::Acquire);
        // SAFETY: as above.
        let d = unsafe { deref(dp) };
        // SAFETY: `e` is our fresh entry.
        let key = &unsafe { deref(e) }.key;
        let i = match d.keys.binary_search(key) {
            Err(i) => i,
            Ok(_) => unreachable!("txmem: TBTreeMap placeholder for a present key"),
        };
        let mut keys = Vec::with_capacity(d.keys.len() + 1);
        keys.extend_from_slice(&d.keys[..i]);
        keys.push(key.clone());
        keys.extend_from_slice(&d.keys[i..]);
        let mut entries = Vec::with_capacity(d.entries.len() + 1);
        entries.extend_from_slice(&d.entries[..i]);
        entries.push(e);
        entries.extend_from_slice(&d.entries[i..]);
        // Lock the leaf before anything is published: a reader that meets
        // the new right leaf and then this one waits for the new contents
        // (it must not see the keys that moved right twice).
        let old = l.version.load();
        let locked = l.version.try_lock_at(old);
        debug_assert!(locked, "leaf versions change only under the structure lock");
        let new = TVersion::next_after(old, 0);
        let mut split = None;
        let new_data = if keys.len() <= self.fanout {
            LeafData {
                keys,
                entries,
                high: d.high.clone(),
                next: d.next,
            }
        } else {
            let mid = keys.len() / 2;
            let rkeys = keys.split_off(mid);
            let rentries = entries.split_off(mid);
            let sep = rkeys[0].clone();
            let right = Box::into_raw(Box::new(Leaf {
                // Starts at the left leaf's new version: no reader can have
                // seen an older state of its keys at a larger version.
                version: TVersion::with_version(TVersion::version_of(new)),
                low: Some(sep.clone()),
                data: AtomicPtr::new(Box::into_raw(Box::new(LeafData {
                    keys: rkeys,
                    entries: rentries,
                    high: d.high.clone(),
                    next: d.next,
                }))),
            })) as *const Leaf<K, V>;
            split = Some(right);
            self.insert_separator(path, sep.clone(), right as *const (), guard);
            LeafData {
                keys,
                entries,
                high: Some(sep),
                next: right,
            }
        };
        l.data
            .store(Box::into_raw(Box::new(new_data)), Ordering::Release);
        l.version.unlock_to(new);
        // SAFETY: replaced and unreachable for new readers; retired once.
        unsafe { retire_box(guard, dp) };
        Linked {
            leaf,
            old,
            new,
            split,
        }
    }

    /// Adds separator `sep` with `right` (a new node, the right half of a
    /// split child) to the parent at the end of `path`, splitting upwards as
    /// needed. Under the structure lock.
    fn insert_separator(
        &self,
        path: &mut Vec<*const Inner<K, V>>,
        sep: K,
        right: *const (),
        guard: &Guard,
    ) {
        let node = path.pop().expect("txmem: TBTreeMap path to a leaf");
        // SAFETY: handles live as long as the map; current contents under
        // the structure lock.
        let h = unsafe { deref(node) };
        let dp = h.data.load(Ordering::Acquire);
        // SAFETY: as above.
        let d = unsafe { deref(dp) };
        let i = d.keys.partition_point(|s| s <= &sep);
        let mut keys = Vec::with_capacity(d.keys.len() + 1);
        keys.extend_from_slice(&d.keys[..i]);
        keys.push(sep);
        keys.extend_from_slice(&d.keys[i..]);
        let mut children = Vec::with_capacity(d.children.len() + 1);
        children.extend_from_slice(&d.children[..=i]);
        children.push(right);
        children.extend_from_slice(&d.children[i + 1..]);
        let new_data = if children.len() <= self.fanout {
            InnerData {
                level: d.level,
                keys,
                children,
                high: d.high.clone(),
                next: d.next,
            }
        } else {
            let mid = children.len() / 2;
            let rchildren = children.split_off(mid);
            let rkeys = keys.split_off(mid);
            let up = keys.pop().expect("separator of the split");
            let rnode = Box::into_raw(Box::new(Inner {
                data: AtomicPtr::new(Box::into_raw(Box::new(InnerData {
                    level: d.level,
                    keys: rkeys,
                    children: rchildren,
                    high: d.high.clone(),
                    next: d.next,
                }))),
            })) as *const Inner<K, V>;
            if path.is_empty() {
                // The root split: a new root above both halves.
                let new_root = Box::into_raw(Box::new(Inner {
                    data: AtomicPtr::new(Box::into_raw(Box::new(InnerData {
                        level: d.level + 1,
                        keys: vec![up.clone()],
                        children: vec![node as *const (), rnode as *const ()],
                        high: None,
                        next: ptr::null(),
                    }))),
                }));
                // Publish the left half first: a reader still starting at
                // the old root then moves right along its link.
                h.data.store(
                    Box::into_raw(Box::new(InnerData {
                        level: d.level,
                        keys,
                        children,
                        high: Some(up),
                        next: rnode,
                    })),
                    Ordering::Release,
                );
                self.root.store(new_root, Ordering::Release);
                // SAFETY: replaced; retired once.
                unsafe { retire_box(guard, dp) };
                return;
            }
            self.insert_separator(path, up.clone(), rnode as *const (), guard);
            InnerData {
                level: d.level,
                keys,
                children,
                high: Some(up),
                next: rnode,
            }
        };
        h.data
            .store(Box::into_raw(Box::new(new_data)), Ordering::Release);
        // SAFETY: replaced and unreachable for new readers; retired once.
        unsafe { retire_box(guard, dp) };
    }

    /// This transaction's view of entry `e`: `Some(f(key, value))` if
    /// visible. Records the entry's state read (except for the
    /// transaction's own placeholders and removals, which need none).
    #[inline]
    fn entry_view<'env, R>(
        &'env self,
        tx: &mut Transaction<'env>,
        e: EPtr<K, V>,
        f: impl FnOnce(&K, &V) -> R,
    ) -> TxResult<Option<R>> {
        // SAFETY: reached while pinned.
        let key = &unsafe { deref(e) }.key;
        self.view_value(tx, e, |v| f(key, v), |_| Ok(()))
    }

    /// The entry of `key` visible to this transaction, with `f` applied to
    /// it; if none, records the read of the leaf covering the key.
    fn find<'env, R>(
        &'env self,
        tx: &mut Transaction<'env>,
        key: &K,
        f: impl FnOnce(&V) -> R,
    ) -> TxResult<Option<(EPtr<K, V>, R)>> {
        let pos = self.locate(|k| k <= key)?;
        // SAFETY: reached while pinned.
        let d = unsafe { deref(pos.data) };
        if let Ok(i) = d.keys.binary_search(key) {
            let e = d.entries[i];
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

    /// Inserts `key → value` if `key` is absent; returns whether it did.
    /// An insert of an absent key reads nothing.
    pub fn insert<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        key: K,
        value: V,
    ) -> TxResult<bool> {
        self.upsert(tx, key, value, false)
    }

    /// Sets `key → value`, inserting or overwriting, without reading.
    pub fn put<'env>(&'env self, tx: &mut Transaction<'env>, key: K, value: V) -> TxResult<()> {
        self.upsert(tx, key, value, true).map(|_| ())
    }

    fn upsert<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        key: K,
        mut value: V,
        overwrite: bool,
    ) -> TxResult<bool> {
        let _ = tx.guard();
        let mut spins = 0;
        let mut path = Vec::new();
        loop {
            let pos = self.locate(|k| k <= &key)?;
            // SAFETY: reached while pinned.
            let d = unsafe { deref(pos.data) };
            if let Ok(i) = d.keys.binary_search(&key) {
                match self.upsert_existing(tx, d.entries[i], value, overwrite, true, &mut spins)? {
                    Upserted::Done(inserted) => return Ok(inserted),
                    Upserted::Retry(v) => value = v,
                    Upserted::Deleted(v) => {
                        // A committed removal about to take the entry out
                        // of its leaf: wait for it.
                        value = v;
                        struct_wait(&mut spins)?;
                    }
                }
                continue;
            }
            // Absent: place a placeholder, under the structure lock.
            let guard = self.structure.lock();
            path.clear();
            let leaf = self.descend_locked(&key, &mut path);
            // SAFETY: under the structure lock, current contents are live.
            let cur = unsafe { deref(deref(leaf).data.load(Ordering::Acquire)) };
            if cur.keys.binary_search(&key).is_ok() {
                // Placed by someone else meanwhile: look at it.
                drop(guard);
                struct_wait(&mut spins)?;
                continue;
            }
            let e = Box::into_raw(Box::new(Entry {
                state: TVersion::new(),
                key,
                value: ValueCell::new(value),
            })) as EPtr<K, V>;
            // SAFETY: not shared yet.
            unsafe { deref(e) }.state.set_flags_locked(INSERTING);
            let linked = self.link_locked(&mut path, leaf, e, tx.guard());
            drop(guard);
            self.adopt(tx, e, &linked)?;
            return Ok(true);
        }
    }

    /// Records a placeholder this transaction placed (see
    /// [`adopt_placeholder`](NodeCollection::adopt_placeholder)); if the
    /// leaf split and the transaction had read it, it also reads the new
    /// right leaf at its first version (the split is its own doing).
    fn adopt<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        e: EPtr<K, V>,
        linked: &Linked<K, V>,
    ) -> TxResult<()> {
        let read_key = linked.leaf as u64 | 1;
        let had_read = linked.split.is_some()
            && tx.find_item(self, read_key).is_some_and(|id| {
                let it = tx.item_ref(id);
                it.is_read() && it.read_version() == linked.old
            });
        self.adopt_placeholder(tx, e, read_key, linked.old, linked.new);
        if had_read {
            let right = linked.split.expect("had_read implies a split");
            self.record_leaf(tx, right, linked.new)?;
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

    /// Reads the contents and version of `leaf` consistently.
    #[inline]
    fn read_leaf(&self, leaf: *const Leaf<K, V>) -> TxResult<LeafPos<K, V>> {
        // SAFETY: handles live as long as the map.
        let l = unsafe { deref(leaf) };
        let mut spins = 0;
        loop {
            let w = l.version.load();
            if TVersion::is_locked(w) {
                struct_wait(&mut spins)?;
                continue;
            }
            let data = l.data.load(Ordering::Acquire);
            if l.version.load() == w {
                return Ok(LeafPos {
                    leaf,
                    word: w,
                    data,
                });
            }
        }
    }

    /// Visits the entries with keys in `range` in ascending order, calling
    /// `f` on each until it returns `false`. The read set covers every key
    /// in the range up to where the scan stopped, present or not (the
    /// leaves covering them): a concurrent insert into that part of the
    /// range conflicts (phantom protection).
    pub fn scan<'env, R: RangeBounds<K>>(
        &'env self,
        tx: &mut Transaction<'env>,
        range: R,
        mut f: impl FnMut(&K, &V) -> bool,
    ) -> TxResult<()> {
        let _ = tx.guard();
        let below = below_start(range.start_bound());
        let end = within_end(range.end_bound());
        let mut pos = match range.start_bound() {
            Bound::Included(lo) | Bound::Excluded(lo) => self.locate(|k| k <= lo)?,
            Bound::Unbounded => self.read_leaf(self.first)?,
        };
        let mut first = true;
        loop {
            self.record_leaf(tx, pos.leaf, pos.word)?;
            // SAFETY: reached while pinned.
            let d = unsafe { deref(pos.data) };
            let from = if first {
                d.keys.partition_point(&below)
            } else {
                0
            };
            first = false;
            for i in from..d.keys.len() {
                if !end(&d.keys[i]) {
                    return Ok(());
                }
                if let Some(go_on) = self.entry_view(tx, d.entries[i], &mut f)? {
                    if !go_on {
                        return Ok(());
                    }
                }
            }
            match &d.high {
                Some(h) if end(h) => pos = self.read_leaf(d.next)?,
                _ => return Ok(()),
            }
        }
    }

    /// Visits the entries with keys in `range` in descending order, calling
    /// `f` on each until it returns `false`; same protection as
    /// [`scan`](Self::scan). Each step to the previous leaf is a descent
    /// (O(log n) per leaf, not per key).
    pub fn scan_rev<'env, R: RangeBounds<K>>(
        &'env self,
        tx: &mut Transaction<'env>,
        range: R,
        mut f: impl FnMut(&K, &V) -> bool,
    ) -> TxResult<()> {
        let _ = tx.guard();
        let below = below_start(range.start_bound());
        let end = within_end(range.end_bound());
        let mut pos = match range.end_bound() {
            Bound::Included(hi) => self.locate(|k| k <= hi)?,
            Bound::Excluded(hi) => self.locate(|k| k < hi)?,
            Bound::Unbounded => self.locate(|_| true)?,
        };
        // The low end of the leaf visited before (keys from there on are
        // done, whatever a later leaf holds).
        let mut done_from: Option<&K> = None;
        loop {
            self.record_leaf(tx, pos.leaf, pos.word)?;
            // SAFETY: reached while pinned.
            let d = unsafe { deref(pos.data) };
            let upto = d
                .keys
                .partition_point(|k| end(k) && done_from.is_none_or(|l| k < l));
            for i in (0..upto).rev() {
                if below(&d.keys[i]) {
                    return Ok(());
                }
                if let Some(go_on) = self.entry_view(tx, d.entries[i], &mut f)? {
                    if !go_on {
                        return Ok(());
                    }
                }
            }
            // SAFETY: handles live as long as the map.
            let low = match &unsafe { deref(pos.leaf) }.low {
                None => return Ok(()),
                Some(low) => low,
            };
            // Keys below `low` are all out of range once `low` is at or
            // below the start bound.
            let done = match range.start_bound() {
                Bound::Included(lo) | Bound::Excluded(lo) => low <= lo,
                Bound::Unbounded => false,
            };
            if done {
                return Ok(());
            }
            done_from = Some(low);
            pos = self.locate(|k| k < low)?;
        }
    }

    /// The entries with keys in `range`, ascending (clones); see [`scan`](Self::scan).
    pub fn range<'env, R: RangeBounds<K>>(
        &'env self,
        tx: &mut Transaction<'env>,
        range: R,
    ) -> TxResult<Vec<(K, V)>> {
        let mut out = Vec::new();
        self.scan(tx, range, |k, v| {
            out.push((k.clone(), v.clone()));
            true
        })?;
        Ok(out)
    }

    /// The entries with keys in `range`, descending (clones); see [`scan_rev`](Self::scan_rev).
    pub fn range_rev<'env, R: RangeBounds<K>>(
        &'env self,
        tx: &mut Transaction<'env>,
        range: R,
    ) -> TxResult<Vec<(K, V)>> {
        let mut out = Vec::new();
        self.scan_rev(tx, range, |k, v| {
            out.push((k.clone(), v.clone()));
            true
        })?;
        Ok(out)
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

    // ---- non-transactional reads ----

    /// The committed value of `key`, outside any transaction.
    pub fn load(&self, key: &K) -> Option<V> {
        let _g = crossbeam_epoch::pin();
        let pos = match self.locate_with(
            |k| k <= key,
            |s| {
                struct_wait_forever(s);
                Ok(())
            },
        ) {
            Ok(pos) => pos,
            Err(_) => unreachable!("the wait never fails"),
        };
        // SAFETY: reached while pinned.
        let d = unsafe { deref(pos.data) };
        let i = d.keys.binary_search(key).ok()?;
        // SAFETY: reached while pinned.
        let e = unsafe { deref(d.entries[i]) };
        let mut spins = 0;
        loop {
            let w = e.state.load();
            if TVersion::is_locked(w) {
                struct_wait_forever(&mut spins);
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

    /// The committed number of keys, outside any transaction.
    pub fn load_len(&self) -> usize {
        self.size.load().max(0) as usize
    }

    /// The committed keys in order, outside any transaction (each key's
    /// presence is read atomically, but not the whole map at once).
    pub fn keys_committed(&self) -> Vec<K> {
        let _g = crossbeam_epoch::pin();
        let mut out = Vec::new();
        let mut leaf = self.first;
        while !leaf.is_null() {
            // SAFETY: handles live as long as the map; contents while pinned.
            let d = unsafe { deref(deref(leaf).data.load(Ordering::Acquire)) };
            for (k, &e) in d.keys.iter().zip(&d.entries) {
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
        // SAFETY: the root handle lives as long as the map; contents while
        // pinned.
        let d = unsafe {
            deref(
                deref(self.root.load(Ordering::Acquire))
                    .data
                    .load(Ordering::Acquire),
            )
        };
        d.level as usize
    }
}

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

    /// Takes `np` out of its leaf under the structure lock; with a commit
    /// version, bumps the leaf's version to at least that version.
    fn unlink(&self, np: EPtr<K, V>, cv: Option<u64>, guard: &Guard) {
        let _s = self.structure.lock();
        // SAFETY: the caller owns the entry's removal and it is still in
        // its leaf.
        let key = &unsafe { deref(np) }.key;
        let mut path = Vec::new();
        let leaf = self.descend_locked(key, &mut path);
        // SAFETY: handles live as long as the map; under the structure lock
        // the current contents are live.
        let l = unsafe { deref(leaf) };
        let dp = l.data.load(Ordering::Acquire);
        // SAFETY: as above.
        let d = unsafe { deref(dp) };
        let i = d
            .keys
            .binary_search(key)
            .expect("txmem: TBTreeMap entry missing from its leaf");
        assert!(
            ptr::eq(d.entries[i], np),
            "txmem: TBTreeMap entry missing from its leaf"
        );
        let mut keys = Vec::with_capacity(d.keys.len() - 1);
        keys.extend_from_slice(&d.keys[..i]);
        keys.extend_from_slice(&d.keys[i + 1..]);
        let mut entries = Vec::with_capacity(d.entries.len() - 1);
        entries.extend_from_slice(&d.entries[..i]);
        entries.extend_from_slice(&d.entries[i + 1..]);
        let new_data = Box::into_raw(Box::new(LeafData {
            keys,
            entries,
            high: d.high.clone(),
            next: d.next,
        }));
        let w = l.version.load();
        let locked = l.version.try_lock_at(w);
        debug_assert!(locked, "leaf versions change only under the structure lock");
        l.data.store(new_data, Ordering::Release);
        match cv {
            Some(cv) => l.version.unlock_to(TVersion::next_after(w, cv)),
            None => l.version.unlock_unchanged(w),
        }
        // SAFETY: the old contents and the entry are unreachable for new
        // readers now; the contents are retired once here, and the entry
        // only by the owner of its removal (our caller). Entries are boxed
        // (the default `free_node`); `K, V: Send` let the collector drop
        // them elsewhere.
        unsafe {
            retire_box(guard, dp);
            super::node::retire::<Self>(guard, np);
        }
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

impl<K, V> Drop for TBTreeMap<K, V> {
    fn drop(&mut self) {
        // SAFETY: `&mut self` is exclusive: no reader or writer is left, and
        // every handle, current contents and entry below the root is owned
        // by the map and reachable exactly once (leaves along the leaf
        // chain, inner nodes along each level's chain). Retired contents
        // and entries belong to the epoch collector, not to us.
        unsafe {
            let mut level_first = *self.root.get_mut();
            loop {
                let first_data = &*(*level_first).data.load(Ordering::Relaxed);
                let first_child = first_data.children[0];
                let leaves_below = first_data.level == 1;
                let mut node = level_first;
                while !node.is_null() {
                    let d = Box::from_raw((*node).data.load(Ordering::Relaxed));
                    let next = d.next as *mut Inner<K, V>;
                    drop(d);
                    drop(Box::from_raw(node));
                    node = next;
                }
                if leaves_below {
                    break;
                }
                level_first = first_child as *mut Inner<K, V>;
            }
            let mut leaf = self.first as *mut Leaf<K, V>;
            while !leaf.is_null() {
                let d = Box::from_raw((*leaf).data.load(Ordering::Relaxed));
                for &e in &d.entries {
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
