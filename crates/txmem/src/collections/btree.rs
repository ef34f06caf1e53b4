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
//! node is ever modified in place:
//!
//! * **Leaves** are *handles* that live as long as the map: a version word
//!   and an `AtomicPtr` to immutable *contents* (up to [`DEFAULT_FANOUT`]
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
//!   frees what it built and looks again. So updates of different leaves
//!   run in parallel, and no thread waits on a writer for longer than two
//!   stores. **Splits** also hold one map-wide structure lock, which
//!   serializes the copies of inner nodes and the swaps of the root (so a
//!   splitter descends through current inner nodes). A split locks the
//!   left leaf before the new right leaf becomes reachable and keeps it
//!   locked until the left leaf's new contents are published, so no reader
//!   can see the moved keys in both leaves. Lock order: structure lock,
//!   then a leaf; a leaf's lock is never held while waiting.
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
//!   outrun the collector during insert-heavy phases).

//! # Item keys
//!
//! An entry's state is keyed by its address, a leaf's version by
//! `leaf address | 1`, the size counter by 2.

use std::cell::Cell;
use std::fmt;
use std::mem::MaybeUninit;
use std::ops::{Bound, RangeBounds};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use crossbeam_epoch::Guard;
use crossbeam_utils::CachePadded;
use parking_lot::{Mutex, MutexGuard};

use crate::error::TxResult;
use crate::item::Item;
use crate::object::Commit;
use crate::tx::Transaction;
use crate::types::cell::ValueCell;
use crate::version::TVersion;

use super::node::{node_tobject, MapNodes, NodeCollection, Upserted, DELETED, INSERTING};
use super::size::SizeCounter;
use super::{below_start, still_current, struct_wait, within_end};

/// The most keys a leaf holds and the most children an inner node has
/// (node contents are fixed-size arrays of this many slots).
pub const DEFAULT_FANOUT: usize = 32;
const CAP: usize = DEFAULT_FANOUT;

/// A key's entry: what a sorted list's node holds, without links.
pub(super) struct Entry<K, V> {
    state: TVersion,
    key: K,
    value: ValueCell<V>,
}

type EPtr<K, V> = *const Entry<K, V>;

/// Up to [`CAP`] values stored inline (so that a node's keys are one
/// allocation with the node): a fixed-capacity vector, filled once when
/// the immutable contents are built.
struct Slots<T> {
    len: usize,
    items: [MaybeUninit<T>; CAP],
}

impl<T> Slots<T> {
    /// The values of `iter` (at most [`CAP`]).
    fn new(iter: impl IntoIterator<Item = T>) -> Self {
        let mut s = Slots {
            len: 0,
            items: [const { MaybeUninit::uninit() }; CAP],
        };
        for v in iter {
            assert!(s.len < CAP, "txmem: TBTreeMap node overflow");
            s.items[s.len].write(v);
            s.len += 1;
        }
        s
    }

    /// Fills the uninitialized `dst` with clones of `a`, then `mid` (if
    /// any), then clones of `b`, in place (no copy of the whole array).
    ///
    /// # Safety
    ///
    /// `dst` is valid for writes and uninitialized (nothing is dropped). If
    /// a clone panics, the values written so far are leaked, not dropped.
    unsafe fn init(dst: *mut Self, a: &[T], mid: Option<T>, b: &[T])
    where
        T: Clone,
    {
        let n = a.len() + mid.is_some() as usize + b.len();
        assert!(n <= CAP, "txmem: TBTreeMap node overflow");
        // SAFETY: per the contract `dst` is writable; `items` has room for
        // `CAP >= n` values, written once each, and `len` is set last.
        unsafe {
            let mut p = ptr::addr_of_mut!((*dst).items) as *mut T;
            for v in a {
                p.write(v.clone());
                p = p.add(1);
            }
            if let Some(m) = mid {
                p.write(m);
                p = p.add(1);
            }
            for v in b {
                p.write(v.clone());
                p = p.add(1);
            }
            ptr::addr_of_mut!((*dst).len).write(n);
        }
    }

    #[inline]
    fn as_slice(&self) -> &[T] {
        // SAFETY: the first `len` slots are initialized (`new` writes them
        // in order and counts them) and never change afterwards.
        unsafe { std::slice::from_raw_parts(self.items.as_ptr() as *const T, self.len) }
    }
}

impl<T> Drop for Slots<T> {
    fn drop(&mut self) {
        // SAFETY: the first `len` slots are initialized and dropped once,
        // here.
        unsafe {
            ptr::drop_in_place(ptr::slice_from_raw_parts_mut(
                self.items.as_mut_ptr() as *mut T,
                self.len,
            ))
        }
    }
}

/// The immutable contents of a leaf.
struct LeafData<K, V> {
    /// Sorted, distinct keys (`keys[i]` is the key of `entries[i]`).
    keys: Slots<K>,
    entries: Slots<EPtr<K, V>>,
    /// The exclusive upper end of the leaf's interval (none: unbounded).
    high: Option<K>,
    /// The leaf to the right (null at the right edge).
    next: *const Leaf<K, V>,
}

/// A prefix, an optional middle value and a suffix (of a node's array).
type Spliced<'a, T> = (&'a [T], Option<T>, &'a [T]);

impl<K: Clone, V> LeafData<K, V> {
    /// New boxed contents, built in place: the keys `ka`, `km`, `kb` and the
    /// entries `ea`, `em`, `eb` (each a prefix, an optional middle value and
    /// a suffix), the high key and the right link.
    fn boxed(
        (ka, km, kb): Spliced<'_, K>,
        (ea, em, eb): Spliced<'_, EPtr<K, V>>,
        high: Option<K>,
        next: *const Leaf<K, V>,
    ) -> *mut Self {
        let mut b = Box::<Self>::new_uninit();
        let p = b.as_mut_ptr();
        // SAFETY: `p` is a fresh allocation for a `LeafData`; every field is
        // written exactly once before `assume_init`.
        unsafe {
            Slots::init(ptr::addr_of_mut!((*p).keys), ka, km, kb);
            Slots::init(ptr::addr_of_mut!((*p).entries), ea, em, eb);
            ptr::addr_of_mut!((*p).high).write(high);
            ptr::addr_of_mut!((*p).next).write(next);
            Box::into_raw(b.assume_init())
        }
    }
}

impl<K, V> LeafData<K, V> {
    #[inline]
    fn keys(&self) -> &[K] {
        self.keys.as_slice()
    }

    #[inline]
    fn entries(&self) -> &[EPtr<K, V>] {
        self.entries.as_slice()
    }
}

/// A leaf handle: its version and its current contents. Its interval
/// starts at `low` (none: unbounded), which never changes.
struct Leaf<K, V> {
    version: TVersion,
    data: AtomicPtr<LeafData<K, V>>,
    low: Option<K>,
}

/// An inner node: immutable once published (a change copies the path from
/// the changed node to the root and swaps the root pointer).
struct InnerData<K> {
    /// 1: the children are leaves; otherwise inner nodes one level lower.
    level: u32,
    /// Separators: child `i` covers keys in `[keys[i-1], keys[i])`.
    keys: Slots<K>,
    /// `*const Leaf` (level 1) or `*const InnerData` (higher levels).
    children: Slots<*const ()>,
}

thread_local! {
    /// Contents this thread retired since it last flushed its epoch bag.
    static RETIRED: Cell<u32> = const { Cell::new(0) };
}

/// Defers dropping the boxed contents `p` (replaced, unreachable for new
/// readers) until no pinned thread can hold them. Every insert retires a
/// leaf's contents, faster than the epoch collector's background pace (a
/// few bags per hundred pins), so every 64 retirements the thread hands its
/// bag over and collects (`Guard::flush`).
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
    let n = RETIRED.with(|r| {
        let n = r.get() + 1;
        r.set(n % 64);
        n
    });
    if n == 64 {
        guard.flush();
    }
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
    split: Option<(*const Leaf<K, V>, u64)>,
}

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

/// Contents are reached only while pinned (inner nodes also under the
/// structure lock, which every change of them holds), or with `&mut` to the
/// map.
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
        assert!(
            (3..=CAP).contains(&fanout),
            "TBTreeMap fanout must be in 3..={CAP}"
        );
        let leaf = Box::into_raw(Box::new(Leaf {
            version: TVersion::new(),
            data: AtomicPtr::new(Box::into_raw(Box::new(LeafData {
                keys: Slots::new([]),
                entries: Slots::new([]),
                high: None,
                next: ptr::null(),
            }))),
            low: None,
        }));
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

    /// Lock-free descent to the leaf covering the keys just after those
    /// satisfying `go_right` (a predicate true for a prefix of the key
    /// order: `k <= key` finds the leaf of `key`, `k < key` the leaf of the
    /// keys just below `key`), with that leaf's contents and version word
    /// read consistently. The caller is pinned. Waits out a structural
    /// change that holds the leaf's lock.
    #[inline]
    fn locate(&self, go_right: impl Fn(&K) -> bool) -> LeafPos<K, V> {
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
    fn record_leaf<'env>(
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
    /// reused while the caller is pinned, so an unchanged pointer means
    /// unchanged contents; the version alone would not do, as dropping an
    /// aborted placeholder changes the contents and not the version.) False
    /// if the leaf changed: the caller reads it again.
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
    fn try_replace(
        pos: &LeafPos<K, V>,
        new_data: *mut LeafData<K, V>,
        new: u64,
        guard: &Guard,
    ) -> bool {
        if !Self::lock_as_read(pos) {
            // SAFETY: built by the caller and never published.
            drop(unsafe { Box::from_raw(new_data) });
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
    fn place(&self, pos: &LeafPos<K, V>, e: EPtr<K, V>, guard: &Guard) -> Option<Linked<K, V>> {
        // SAFETY: read while pinned.
        let d = unsafe { deref(pos.data) };
        // SAFETY: `e` is our fresh entry.
        let key = &unsafe { deref(e) }.key;
        let (dkeys, dentries) = (d.keys(), d.entries());
        let i = dkeys
            .binary_search(key)
            .expect_err("txmem: TBTreeMap placeholder for a present key");
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
        let new_data = LeafData::boxed(
            (&dkeys[..i], Some(key.clone()), &dkeys[i..]),
            (&dentries[..i], Some(e), &dentries[i..]),
            d.high.clone(),
            d.next,
        );
        Self::try_replace(pos, new_data, new, guard).then_some(Linked {
            leaf: pos.leaf,
            old: pos.word,
            new,
            split: None,
        })
    }

    /// [`place`](Self::place) into a full leaf, at index `i` of its keys:
    /// the lower half stays, the upper half moves to a new leaf on the
    /// right. The caller holds the structure lock, so no other split runs
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
        let mid = n / 2;
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
        let right = Box::into_raw(Box::new(Leaf {
            version: TVersion::with_version(right_version),
            data: AtomicPtr::new(LeafData::boxed(
                (&keys[mid..], None, &[]),
                (&entries[mid..], None, &[]),
                d.high.clone(),
                d.next,
            )),
            low: Some(sep.clone()),
        })) as *const Leaf<K, V>;
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
        mut key: K,
        mut value: V,
        overwrite: bool,
    ) -> TxResult<bool> {
        let _ = tx.guard();
        let mut spins = 0;
        loop {
            let pos = self.locate(|k| k <= &key);
            // SAFETY: reached while pinned.
            let d = unsafe { deref(pos.data) };
            if let Ok(i) = d.keys().binary_search(&key) {
                match self.upsert_existing(
                    tx,
                    d.entries()[i],
                    value,
                    overwrite,
                    true,
                    &mut spins,
                )? {
                    Upserted::Done(inserted) => return Ok(inserted),
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
            let e = Box::into_raw(Box::new(Entry {
                state: TVersion::new(),
                key,
                value: ValueCell::new(value),
            })) as EPtr<K, V>;
            // SAFETY: not shared yet.
            unsafe { deref(e) }.state.set_flags_locked(INSERTING);
            if let Some(linked) = self.place(&pos, e, tx.guard()) {
                self.adopt(tx, e, &linked)?;
                return Ok(true);
            }
            // SAFETY: `place` did not publish `e`: it is still ours alone.
            let entry = unsafe { Box::from_raw(e as *mut Entry<K, V>) };
            key = entry.key;
            value = entry.value.into_inner();
            struct_wait(&mut spins);
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
            let (right, word) = linked.split.expect("had_read implies a split");
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

    /// Reads the contents and version of `leaf` consistently (a seqlock
    /// read), waiting out a structural change that holds its lock.
    #[inline]
    fn read_leaf(&self, leaf: *const Leaf<K, V>) -> LeafPos<K, V> {
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
            Bound::Included(lo) | Bound::Excluded(lo) => self.locate(|k| k <= lo),
            Bound::Unbounded => self.read_leaf(self.first),
        };
        let mut first = true;
        loop {
            self.record_leaf(tx, pos.leaf, pos.word)?;
            // SAFETY: reached while pinned.
            let d = unsafe { deref(pos.data) };
            let from = if first {
                d.keys().partition_point(&below)
            } else {
                0
            };
            first = false;
            for i in from..d.keys().len() {
                if !end(&d.keys()[i]) {
                    return Ok(());
                }
                if let Some(go_on) = self.entry_view(tx, d.entries()[i], &mut f)? {
                    if !go_on {
                        return Ok(());
                    }
                }
            }
            match &d.high {
                Some(h) if end(h) => pos = self.read_leaf(d.next),
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
            Bound::Included(hi) => self.locate(|k| k <= hi),
            Bound::Excluded(hi) => self.locate(|k| k < hi),
            Bound::Unbounded => self.locate(|_| true),
        };
        // The low end of the leaf visited before (keys from there on are
        // done, whatever a later leaf holds).
        let mut done_from: Option<&K> = None;
        loop {
            self.record_leaf(tx, pos.leaf, pos.word)?;
            // SAFETY: reached while pinned.
            let d = unsafe { deref(pos.data) };
            let upto = d
                .keys()
                .partition_point(|k| end(k) && done_from.is_none_or(|l| k < l));
            for i in (0..upto).rev() {
                if below(&d.keys()[i]) {
                    return Ok(());
                }
                if let Some(go_on) = self.entry_view(tx, d.entries()[i], &mut f)? {
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
            pos = self.locate(|k| k < low);
        }
    }

    /// The entries with keys in `range`, ascending (clones); see [`scan`](Self::scan).
    pub fn range<'env, R: RangeBounds<K>>(
        &'env self,
        tx: &mut Transaction<'env>,
        range: R,
    ) -> TxResult<Vec<(K, V)>> {
        super::collect_scan(|visit| self.scan(tx, range, visit))
    }

    /// The entries with keys in `range`, descending (clones); see [`scan_rev`](Self::scan_rev).
    pub fn range_rev<'env, R: RangeBounds<K>>(
        &'env self,
        tx: &mut Transaction<'env>,
        range: R,
    ) -> TxResult<Vec<(K, V)>> {
        super::collect_scan(|visit| self.scan_rev(tx, range, visit))
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

    /// Takes `np` out of its leaf (locking only that leaf); with a commit
    /// version, bumps the leaf's version to at least that version.
    fn unlink(&self, np: EPtr<K, V>, cv: Option<u64>, guard: &Guard) {
        // SAFETY: the caller owns the entry's removal and it is still in
        // its leaf (only its owner takes it out).
        let key = &unsafe { deref(np) }.key;
        let mut spins = 0;
        loop {
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
                break;
            }
            struct_wait(&mut spins);
        }
        // SAFETY: the entry is unreachable for new readers now and only the
        // owner of its removal (our caller) retires it. Entries are boxed
        // (the default `free_node`); `K, V: Send` let the collector drop
        // them elsewhere.
        unsafe { super::node::retire::<Self>(guard, np) };
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

/// Frees the inner node `node` and the inner nodes below it (not the
/// leaves).
///
/// # Safety
///
/// The map is being dropped: `node` is part of its current tree, which no
/// one else can reach, and each inner node there has exactly one parent.
unsafe fn free_inner<K>(node: *mut InnerData<K>) {
    // SAFETY: per the contract; the node came from `Box::into_raw`.
    let d = unsafe { Box::from_raw(node) };
    if d.level > 1 {
        for &c in d.children.as_slice() {
            // SAFETY: children of a node above level 1 are inner nodes of
            // the same tree.
            unsafe { free_inner(c as *mut InnerData<K>) };
        }
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
