//! Navigation and structure changes: the lock-free descent to a leaf
//! (`locate`, `read_leaf`), recording a leaf read, the per-leaf
//! copy-on-write replacement (`try_replace`), and placing a placeholder,
//! with the leaf split (`split_place`) and the inner-node path copy
//! (`add_child`) it may need.

use std::ptr;
use std::sync::atomic::Ordering;

use crossbeam_epoch::Guard;

use crate::collections::{still_current, struct_wait};
use crate::error::TxResult;
use crate::sync::MutexGuard;
use crate::tx::Transaction;
use crate::version::TVersion;

use super::blocks;
use super::storage::{deref, retire_box, EPtr, InnerData, Leaf, LeafData, LeafPos, Linked, Slots};
use super::TBTreeMap;

impl<K, V> TBTreeMap<K, V>
where
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// Lock-free descent to the leaf covering the keys just after those
    /// satisfying `go_right` (a predicate true for a prefix of the key
    /// order: `k <= key` finds the leaf of `key`, `k < key` the leaf of the
    /// keys just below `key`), with that leaf's contents and version word
    /// read consistently. The caller is pinned. Waits out a structural
    /// change that holds the leaf's lock.
    #[inline]
    pub(super) fn locate(&self, go_right: impl Fn(&K) -> bool) -> LeafPos<K, V> {
        let mut node = self.root.load(Ordering::Acquire) as *const InnerData<K>;
        let mut leaf = loop {
            // SAFETY: inner nodes are immutable and reached from the root
            // loaded while pinned; replaced ones are retired through the
            // epoch, so they stay live while we are pinned.
            let d = unsafe { deref(node) };
            let i = d.keys.as_slice().partition_point(&go_right);
            // SAFETY: an inner node always has `keys.len() + 1` children.
            let child = unsafe { *d.children.as_slice().get_unchecked(i) };
            if d.level == 1 {
                break child as *const Leaf<K, V>;
            }
            node = child as *const InnerData<K>;
        };
        loop {
            let pos = self.read_leaf(leaf);
            // SAFETY: contents loaded from a handle stay live while we are
            // pinned (they are retired through the epoch once replaced).
            let d = unsafe { deref(pos.data) };
            match &d.high {
                // The leaf split after our inner node was built.
                Some(h) if go_right(h) => leaf = d.next,
                _ => return pos,
            }
        }
    }

    /// The leaf of `key` and the inner nodes on the way (root first) with
    /// the child index taken at each, under the structure lock (no split
    /// runs, so the inner nodes are current and no right moves are needed).
    fn descend_locked(
        &self,
        key: &K,
        path: &mut Vec<(*const InnerData<K>, usize)>,
    ) -> *const Leaf<K, V> {
        let mut node = self.root.load(Ordering::Acquire) as *const InnerData<K>;
        loop {
            // SAFETY: under the structure lock, the current tree is live.
            let d = unsafe { deref(node) };
            let i = d.keys.as_slice().partition_point(|s| s <= key);
            path.push((node, i));
            let child = d.children.as_slice()[i];
            if d.level == 1 {
                return child as *const Leaf<K, V>;
            }
            node = child as *const InnerData<K>;
        }
    }

    /// Records a read of `leaf` at version `word`.
    #[inline]
    pub(super) fn record_leaf<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        leaf: *const Leaf<K, V>,
        word: u64,
    ) -> TxResult<()> {
        let id = tx.item(self, leaf as u64 | 1);
        tx.record_read(id, word)?;
        // SAFETY: handles live as long as the map.
        still_current(tx, word, unsafe { deref(leaf) }.version.load())
    }

    /// Locks the leaf of `pos` if it is still exactly as `pos` read it: the
    /// same version word and the same contents. (A contents pointer is not
    /// reused while the caller is pinned, and an append in place always
    /// moves the version, so an unchanged pointer and word mean unchanged
    /// contents; the version alone would not do, as dropping an aborted
    /// placeholder changes the contents and not the version.) False if the
    /// leaf changed: the caller reads it again.
    fn lock_as_read(pos: &LeafPos<K, V>) -> bool {
        // SAFETY: handles live as long as the map.
        let l = unsafe { deref(pos.leaf) };
        if !l.version.try_lock_at(pos.word) {
            return false;
        }
        if ptr::eq(l.data.load(Ordering::Acquire), pos.data) {
            return true;
        }
        l.version.unlock_unchanged(pos.word);
        false
    }

    /// Replaces the contents of the leaf of `pos` by `new_data` and moves
    /// its version word to `new` (`pos.word` keeps it), if the leaf is still
    /// as `pos` read it. The leaf's lock is held for the two stores only.
    /// If the leaf changed, frees `new_data` (never shared) and returns
    /// false: the caller reads the leaf again.
    pub(super) fn try_replace(
        pos: &LeafPos<K, V>,
        new_data: *mut LeafData<K, V>,
        new: u64,
        guard: &Guard,
    ) -> bool {
        if !Self::lock_as_read(pos) {
            // SAFETY: built by the caller (`LeafData::boxed`) and never
            // published.
            unsafe { blocks::free(new_data) };
            return false;
        }
        // SAFETY: handles live as long as the map.
        let l = unsafe { deref(pos.leaf) };
        l.data.store(new_data, Ordering::Release);
        l.version.unlock_to(new);
        // SAFETY: replaced and unreachable for new readers; retired once
        // (only the thread that swapped it out retires it).
        unsafe { retire_box(guard, pos.data as *mut LeafData<K, V>) };
        true
    }

    /// Places the placeholder `e` into the leaf of `pos` (which covers its
    /// key and does not hold it), splitting the leaf if it is full. `None`
    /// if the leaf changed since `pos` was read: the caller looks again.
    ///
    /// An insert that fits its leaf locks only that leaf, for two stores;
    /// a split also holds the map's structure lock, which serializes the
    /// copies of inner nodes and the swaps of the root.
    pub(super) fn place(
        &self,
        pos: &LeafPos<K, V>,
        e: EPtr<K, V>,
        guard: &Guard,
    ) -> Option<Linked<K, V>> {
        // SAFETY: read while pinned.
        let d = unsafe { deref(pos.data) };
        // SAFETY: `e` is our fresh entry.
        let key = &unsafe { deref(e) }.key;
        let (dkeys, dentries) = (d.keys(), d.entries());
        // The keys may have grown since `pos` was read (an append in place
        // of another insert); if the key is among them now, the leaf
        // changed: look again.
        let Err(i) = dkeys.binary_search(key) else {
            return None;
        };
        if dkeys.len() >= self.fanout {
            let structure = self.structure.lock();
            return self.split_place(&structure, pos, e, i, guard);
        }
        // The new version follows the commit clock (a placeholder is
        // invisible, so any fresh version will do). A second change of the
        // leaf within one clock period puts it one step ahead of the clock;
        // the first opaque reader to meet it moves the clock up (the
        // runtime's snapshot extension), so readers revalidate once, not at
        // every read of the leaf.
        let new = TVersion::next_after(pos.word, crate::clock::now().time());
        let placed = if i == dkeys.len() {
            // After the last key (sequential keys: a table's new rows):
            // append in place, without copying the contents.
            Self::lock_as_read(pos) && {
                // SAFETY: the leaf is locked at the word and contents `pos`
                // read, so these are its current contents and no other
                // append runs; `key` sorts after every key (`i` is the end)
                // and the leaf has room (checked above; `fanout <= CAP`).
                unsafe { d.append(key.clone(), e) };
                // SAFETY: handles live as long as the map.
                unsafe { deref(pos.leaf) }.version.unlock_to(new);
                true
            }
        } else {
            let new_data = LeafData::boxed(
                (&dkeys[..i], Some(key.clone()), &dkeys[i..]),
                (&dentries[..i], Some(e), &dentries[i..]),
                d.high.clone(),
                d.next,
            );
            Self::try_replace(pos, new_data, new, guard)
        };
        if !placed {
            return None;
        }
        // SAFETY: handles live as long as the map.
        unsafe { deref(pos.leaf) }.placed_at(i);
        Some(Linked {
            leaf: pos.leaf,
            old: pos.word,
            new,
            split: None,
        })
    }

    /// Where a full leaf of `n - 1` keys splits when a key joins at index
    /// `i`: the index, among the `n` keys, of the right leaf's first.
    ///
    /// Halves, unless keys arrive in ascending order (`follows`: the last
    /// placement went just before `i`) in the upper half: then the split
    /// falls just after the new key, so the keys still to come land at the
    /// end of a leaf (appends, without copies) and leaves fill up instead
    /// of staying half empty. (TPC-C's new orders, lines and queue entries
    /// each arrive in order per district, between two districts' keys.)
    fn split_point(n: usize, i: usize, follows: bool) -> usize {
        if follows && i >= n / 2 {
            (i + 1).min(n - 1)
        } else {
            n / 2
        }
    }

    /// [`place`](Self::place) into a full leaf, at index `i` of its keys:
    /// the keys below the [`split_point`](Self::split_point) stay, the rest
    /// move to a new leaf on the right. The caller holds the structure lock, so no other split runs
    /// and the inner nodes are current.
    fn split_place(
        &self,
        _structure: &MutexGuard<'_, ()>,
        pos: &LeafPos<K, V>,
        e: EPtr<K, V>,
        i: usize,
        guard: &Guard,
    ) -> Option<Linked<K, V>> {
        // Locked from here to the end: readers of the leaf wait for the new
        // contents, and no reader that meets the new right leaf and then
        // this one can see the keys that moved right twice.
        if !Self::lock_as_read(pos) {
            return None;
        }
        let (leaf, old) = (pos.leaf, pos.word);
        // SAFETY: handles live as long as the map; the contents are the
        // leaf's current ones (locked as read), live while we are pinned.
        let (l, d) = unsafe { (deref(leaf), deref(pos.data)) };
        // SAFETY: `e` is our fresh entry.
        let key = &unsafe { deref(e) }.key;
        let (dkeys, dentries) = (d.keys(), d.entries());
        let new = TVersion::next_after(old, crate::clock::now().time());
        let n = dkeys.len() + 1;
        let mid = Self::split_point(n, i, l.follows_last_place(i));
        let mut keys: Vec<K> = Vec::with_capacity(n);
        keys.extend_from_slice(&dkeys[..i]);
        keys.push(key.clone());
        keys.extend_from_slice(&dkeys[i..]);
        let mut entries: Vec<EPtr<K, V>> = Vec::with_capacity(n);
        entries.extend_from_slice(&dentries[..i]);
        entries.push(e);
        entries.extend_from_slice(&dentries[i..]);
        let sep = keys[mid].clone();
        // The new leaf starts at the left leaf's new version: no reader has
        // seen it, and that version is at least the commit version of every
        // removal unlinked from its interval (each bumped the left leaf, in
        // every opacity mode) and at least the clock, so a reader whose
        // snapshot predates such a removal still sees a version past it.
        let right_version = TVersion::version_of(new);
        let right = Leaf::new(
            TVersion::with_version(right_version),
            LeafData::boxed(
                (&keys[mid..], None, &[]),
                (&entries[mid..], None, &[]),
                d.high.clone(),
                d.next,
            ),
            Some(sep.clone()),
        );
        if i >= mid {
            right.placed_at(i - mid);
        }
        let right = Box::into_raw(Box::new(right)) as *const Leaf<K, V>;
        let left_data = LeafData::boxed(
            (&keys[..mid], None, &[]),
            (&entries[..mid], None, &[]),
            Some(sep.clone()),
            right,
        );
        let mut path = Vec::new();
        let found = self.descend_locked(key, &mut path);
        debug_assert!(ptr::eq(found, leaf));
        let (root, replaced) = self.add_child(&path, sep, right as *const ());
        self.root.store(root, Ordering::Release);
        l.data.store(left_data, Ordering::Release);
        if i < mid {
            l.placed_at(i);
        }
        l.version.unlock_to(new);
        // SAFETY: replaced and unreachable for new readers; each retired
        // once.
        unsafe {
            retire_box(guard, pos.data as *mut LeafData<K, V>);
            for node in replaced {
                retire_box(guard, node as *mut InnerData<K>);
            }
        }
        Some(Linked {
            leaf,
            old,
            new,
            split: Some((right, right_version)),
        })
    }

    /// Adds separator `sep` with the new node `right` (the right half of a
    /// split child) at the bottom of `path`: copies the path from there to
    /// the root (splitting nodes that overflow, and adding a root when the
    /// root splits). Returns the new root, to publish, and the inner nodes
    /// it replaces, to retire once it is published. Under the structure
    /// lock.
    fn add_child(
        &self,
        path: &[(*const InnerData<K>, usize)],
        sep: K,
        right: *const (),
    ) -> (*mut InnerData<K>, Vec<*const InnerData<K>>) {
        // What the level below hands up: the copy replacing the child
        // taken there, and a separator with a new right sibling.
        let mut copy: Option<*const ()> = None;
        let mut carry = Some((sep, right));
        let mut level = 1;
        for &(node, i) in path.iter().rev() {
            // SAFETY: under the structure lock, the current tree is live.
            let d = unsafe { deref(node) };
            level = d.level;
            let (dkeys, dchildren) = (d.keys.as_slice(), d.children.as_slice());
            let mut keys: Vec<K> = dkeys.to_vec();
            let mut children: Vec<*const ()> = dchildren.to_vec();
            if let Some(c) = copy {
                children[i] = c;
            }
            if let Some((sep, r)) = carry.take() {
                keys.insert(i, sep);
                children.insert(i + 1, r);
            }
            if children.len() <= self.fanout {
                copy = Some(Box::into_raw(Box::new(InnerData {
                    level,
                    keys: Slots::new(keys),
                    children: Slots::new(children),
                })) as *const ());
            } else {
                let mid = children.len() / 2;
                let rchildren = children.split_off(mid);
                let rkeys = keys.split_off(mid);
                let up = keys.pop().expect("separator of the split");
                let rnode = Box::into_raw(Box::new(InnerData {
                    level,
                    keys: Slots::new(rkeys),
                    children: Slots::new(rchildren),
                }));
                copy = Some(Box::into_raw(Box::new(InnerData {
                    level,
                    keys: Slots::new(keys),
                    children: Slots::new(children),
                })) as *const ());
                carry = Some((up, rnode as *const ()));
            }
        }
        let top = copy.expect("the path has a root");
        let root = match carry {
            None => top as *mut InnerData<K>,
            Some((up, r)) => Box::into_raw(Box::new(InnerData {
                level: level + 1,
                keys: Slots::new([up]),
                children: Slots::new([top, r]),
            })),
        };
        (root, path.iter().map(|&(node, _)| node).collect())
    }

    /// Reads the contents and version of `leaf` consistently (a seqlock
    /// read), waiting out a structural change that holds its lock.
    #[inline]
    pub(super) fn read_leaf(&self, leaf: *const Leaf<K, V>) -> LeafPos<K, V> {
        // SAFETY: handles live as long as the map.
        let l = unsafe { deref(leaf) };
        let mut spins = 0;
        loop {
            let w = l.version.load();
            if TVersion::is_locked(w) {
                struct_wait(&mut spins);
                continue;
            }
            let data = l.data.load(Ordering::Acquire);
            if l.version.load() == w {
                return LeafPos {
                    leaf,
                    word: w,
                    data,
                };
            }
        }
    }
}
