//! `TList<T>` and `TListSet<T>`: sorted singly linked lists (thesis ch. 6).
//!
//! Each node has a *state* version (commit lock; *inserting* and *deleted*
//! flags) and a *gap* version covering the interval between it and its
//! successor. The list head has a gap version too. Structural changes take
//! one short list-wide lock (a list is O(n) to search anyway); readers
//! traverse without locks and validate against gap versions. The element
//! count lives in a share-locked size counter (`collections::size`), whose version
//! doubles as the *list version* that iteration and `len` read.
//!
//! Item keys: a node's state is keyed by its address, the gap after a node
//! by `address | 1` (the head's gap by 1), the size counter by 2.

use std::fmt;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use crossbeam_epoch::Guard;
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;

use crate::error::TxResult;
use crate::item::Item;
use crate::object::Commit;
use crate::tx::Transaction;
use crate::version::TVersion;

use super::node::{
    node_tobject, GapChain, NodeCollection, Pos, DELETED, F_INSERT, F_REMOVE, INSERTING,
};
use super::size::SizeCounter;
use super::{placeholder_in_the_way, struct_wait};

pub(super) struct LNode<T> {
    state: TVersion,
    gap: TVersion,
    value: T,
    next: AtomicPtr<LNode<T>>,
}

/// The shared implementation of [`TList`] and [`TListSet`].
pub(crate) struct SortedList<T> {
    head_gap: TVersion,
    head_next: AtomicPtr<LNode<T>>,
    structure: CachePadded<Mutex<()>>,
    size: SizeCounter,
    dups: bool,
}

// SAFETY: the list owns values of type `T` in heap nodes, read by reference
// from many threads (`T: Sync`) and dropped by the epoch collector possibly
// on another thread (`T: Send`).
unsafe impl<T: Send + Sync> Sync for SortedList<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for SortedList<T> {}

impl<T: Ord + Clone + Send + Sync + 'static> SortedList<T> {
    fn new(dups: bool) -> Self {
        SortedList {
            head_gap: TVersion::new(),
            head_next: AtomicPtr::new(ptr::null_mut()),
            structure: CachePadded::new(Mutex::new(())),
            size: SizeCounter::new(0),
            dups,
        }
    }

    /// Finds the last node with a value below `x` (by a traversal consistent
    /// with that node's gap word). The caller is pinned.
    #[inline]
    fn locate_value(&self, x: &T) -> Pos<LNode<T>> {
        self.locate(ptr::null, |n| n.value < *x)
    }

    /// The first node equal to `x` visible to this transaction, starting at
    /// `pos.next`. Invisible nodes met on the way (other transactions'
    /// placeholders, removals in flight) are added to the read set.
    fn first_visible<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        pos: &Pos<LNode<T>>,
        x: &T,
    ) -> TxResult<Option<*const LNode<T>>> {
        let mut cur = pos.next;
        while !cur.is_null() {
            // SAFETY: reached from `locate`'s result while pinned.
            let n = unsafe { &*cur };
            if n.value != *x {
                break;
            }
            match tx.find_item(self, cur as u64) {
                Some(id) => {
                    let it = tx.item_ref(id);
                    if it.has(F_INSERT) && !it.has(F_REMOVE) {
                        return Ok(Some(cur));
                    }
                    if !it.has(F_INSERT) && !it.has(F_REMOVE) {
                        let word = tx
                            .observe(id, &n.state, || ())
                            .map(|()| tx.item_ref(id).read_version())?;
                        if word & (INSERTING | DELETED) == 0 {
                            return Ok(Some(cur));
                        }
                    }
                }
                None => {
                    let id = tx.item(self, cur as u64);
                    tx.observe(id, &n.state, || ())?;
                    if tx.item_ref(id).read_version() & (INSERTING | DELETED) == 0 {
                        return Ok(Some(cur));
                    }
                }
            }
            cur = n.next.load(Ordering::Acquire);
        }
        Ok(None)
    }

    fn contains<'env>(&'env self, tx: &mut Transaction<'env>, x: &T) -> TxResult<bool> {
        let _ = tx.guard();
        let pos = self.locate_value(x);
        if self.first_visible(tx, &pos, x)?.is_some() {
            return Ok(true);
        }
        self.record_gap(tx, pos.pred, pos.gap)?;
        Ok(false)
    }

    /// Inserts `x`; for sets only if absent. Returns whether it inserted.
    fn insert<'env>(&'env self, tx: &mut Transaction<'env>, x: T) -> TxResult<bool> {
        let _ = tx.guard();
        let mut spins = 0;
        'look: loop {
            let pos = self.locate_value(&x);
            if !self.dups {
                // Revive our own removal, or report presence.
                let mut cur = pos.next;
                while !cur.is_null() {
                    // SAFETY: as in `first_visible`.
                    let n = unsafe { &*cur };
                    if n.value != x {
                        break;
                    }
                    if let Some(id) = tx.find_item(self, cur as u64) {
                        if tx.item_ref(id).has(F_REMOVE) {
                            let item = tx.item_mut(id);
                            item.clear_flags(F_REMOVE);
                            if item.has(F_INSERT) {
                                item.mark_write();
                            } else {
                                // A committed node: back to a plain read.
                                item.clear_write();
                            }
                            self.size_delta(tx, 1);
                            return Ok(true);
                        }
                    } else if n.state.load() & INSERTING != 0 {
                        placeholder_in_the_way(tx, &mut spins)?;
                        continue 'look;
                    }
                    cur = n.next.load(Ordering::Acquire);
                }
                if self.first_visible(tx, &pos, &x)?.is_some() {
                    return Ok(false);
                }
            }
            // Link a placeholder after `pos.pred` if nothing changed there.
            let guard = self.structure.lock();
            if self.gap(pos.pred).load() != pos.gap {
                drop(guard);
                struct_wait(&mut spins);
                continue;
            }
            let node = Box::into_raw(Box::new(LNode {
                state: TVersion::new(),
                gap: TVersion::new(),
                value: x,
                next: AtomicPtr::new(self.link0(pos.pred).load(Ordering::Relaxed)),
            }));
            // SAFETY: not shared yet.
            unsafe { &*node }.state.set_flags_locked(INSERTING);
            let new_gap = self.link_after(&pos, node);
            drop(guard);
            // Our own read of this gap stays valid (thesis §5).
            self.adopt_placeholder(tx, node, pos.pred as u64 | 1, pos.gap, new_gap);
            return Ok(true);
        }
    }

    fn remove<'env>(&'env self, tx: &mut Transaction<'env>, x: &T) -> TxResult<bool> {
        let _ = tx.guard();
        let pos = self.locate_value(x);
        match self.first_visible(tx, &pos, x)? {
            Some(np) => {
                self.mark_removed(tx, np);
                Ok(true)
            }
            None => {
                self.record_gap(tx, pos.pred, pos.gap)?;
                Ok(false)
            }
        }
    }

    /// Every element visible to the transaction, in order. Reads only the
    /// list version.
    fn to_vec<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Vec<T>> {
        let _ = tx.guard();
        let id = tx.item(self, super::node::SIZE_KEY);
        let (_, nodes) = self.size.observe_with(tx, id, || {
            let mut v = Vec::new();
            let mut cur = self.head_next.load(Ordering::Acquire) as *const LNode<T>;
            while !cur.is_null() {
                // SAFETY: reached from the head while pinned.
                let n = unsafe { &*cur };
                v.push((cur, n.state.load()));
                cur = n.next.load(Ordering::Acquire);
            }
            v
        })?;
        let mut out = Vec::with_capacity(nodes.len());
        for (np, word) in nodes {
            let visible = match tx.find_item(self, np as u64) {
                Some(id) => {
                    let it = tx.item_ref(id);
                    if it.has(F_REMOVE) {
                        false
                    } else {
                        it.has(F_INSERT) || word & (INSERTING | DELETED) == 0
                    }
                }
                None => word & (INSERTING | DELETED) == 0,
            };
            if visible {
                // SAFETY: collected while pinned.
                out.push(unsafe { &*np }.value.clone());
            }
        }
        Ok(out)
    }

    /// Committed elements, outside any transaction (consistent snapshot).
    fn snapshot(&self) -> Vec<T> {
        let _g = crossbeam_epoch::pin();
        let mut spins = 0;
        loop {
            // The list version is stable and unshared around the traversal.
            let w1 = self.size.load_word();
            if w1.is_some() {
                let mut out = Vec::new();
                let mut cur = self.head_next.load(Ordering::Acquire) as *const LNode<T>;
                while !cur.is_null() {
                    // SAFETY: reached from the head while pinned.
                    let n = unsafe { &*cur };
                    if n.state.load() & (INSERTING | DELETED) == 0 {
                        out.push(n.value.clone());
                    }
                    cur = n.next.load(Ordering::Acquire);
                }
                if self.size.load_word() == w1 {
                    return out;
                }
            }
            struct_wait(&mut spins);
        }
    }

    fn contains_committed(&self, x: &T) -> bool {
        let _g = crossbeam_epoch::pin();
        let mut cur = self.head_next.load(Ordering::Acquire) as *const LNode<T>;
        while !cur.is_null() {
            // SAFETY: reached from the head while pinned.
            let n = unsafe { &*cur };
            if n.value > *x {
                break;
            }
            if n.value == *x && n.state.load() & (INSERTING | DELETED) == 0 {
                return true;
            }
            cur = n.next.load(Ordering::Acquire);
        }
        false
    }
}

impl<T: Ord + Clone + Send + Sync + 'static> NodeCollection for SortedList<T> {
    type Node = LNode<T>;

    #[inline]
    fn size(&self) -> &SizeCounter {
        &self.size
    }

    #[inline]
    fn state(node: &LNode<T>) -> &TVersion {
        &node.state
    }

    #[inline]
    fn check_structure(&self, item: &Item, _: &Commit<'_>) -> bool {
        self.gap((item.key() & !1) as *const LNode<T>)
            .still_valid(item.read_version(), false)
    }

    /// Unlinks `np` under the structure lock. With a commit version, the
    /// gaps around it are bumped to at least that version.
    fn unlink(&self, np: *const LNode<T>, cv: Option<u64>, guard: &Guard) {
        let _s = self.structure.lock();
        let mut pred: *const LNode<T> = ptr::null();
        loop {
            let nx = self.link0(pred).load(Ordering::Relaxed) as *const LNode<T>;
            assert!(!nx.is_null(), "txmem: list node missing from its list");
            if ptr::eq(nx, np) {
                break;
            }
            pred = nx;
        }
        // SAFETY: `np` is linked right after `pred` (found above), we hold
        // the structure lock, the caller owns its removal, and list nodes
        // are boxed; `T: Send` lets the collector drop it elsewhere.
        unsafe { self.splice_out(pred, np, cv, guard) };
    }
}

impl<T: Ord + Clone + Send + Sync + 'static> GapChain for SortedList<T> {
    #[inline]
    fn gap(&self, n: *const LNode<T>) -> &TVersion {
        if n.is_null() {
            &self.head_gap
        } else {
            // SAFETY: callers pass nodes reached while pinned (or under the
            // structure lock).
            &unsafe { &*n }.gap
        }
    }

    #[inline]
    fn link0(&self, n: *const LNode<T>) -> &AtomicPtr<LNode<T>> {
        if n.is_null() {
            &self.head_next
        } else {
            // SAFETY: as in `gap`.
            &unsafe { &*n }.next
        }
    }
}

node_tobject!(impl[T] for SortedList<T> where T: Ord + Clone + Send + Sync + 'static);

impl<T> Drop for SortedList<T> {
    fn drop(&mut self) {
        let mut cur = *self.head_next.get_mut();
        while !cur.is_null() {
            // SAFETY: `&mut self` is exclusive; linked nodes are owned by
            // the list exactly once (unlinked ones by the epoch).
            let node = unsafe { Box::from_raw(cur) };
            cur = node.next.load(Ordering::Relaxed);
        }
    }
}

/// A transactional sorted set (a sorted linked list without duplicates).
///
/// | operation | read set | write set |
/// |---|---|---|
/// | [`insert`](Self::insert) of an absent element | nothing | the new node (a placeholder linked now), +1 size |
/// | `insert` of a present element (returns `false`) | the element's node | — |
/// | [`remove`](Self::remove) of a present element | the element's node | the node (unlinked at commit), −1 size |
/// | [`contains`](Self::contains) / `remove`, element present | the element's node | — |
/// | `contains` / `remove`, element absent | the gap before where it would be | — |
/// | [`len`](Self::len), [`to_vec`](Self::to_vec) | the list version | — |
///
/// Inserts of distinct elements never conflict (the thesis' placeholder
/// technique: the insert links its node at execution time and reads
/// nothing). Linking bumps the gap version of the preceding node, which
/// invalidates concurrent absent reads of that interval (no phantoms). A
/// transaction that read an interval and then inserts into it updates its
/// own read instead of aborting. Iteration and `len` read one list-wide
/// version that every committed insert or remove changes: cheap to track,
/// at the price of conflicting with any concurrent committed update (the
/// thesis' trade-off for whole-list traversals).
///
/// ```
/// use txmem::{atomically, TListSet};
/// let s = TListSet::new();
/// atomically(|tx| { s.insert(tx, 3)?; s.insert(tx, 1)?; s.insert(tx, 2) });
/// assert!(!atomically(|tx| s.insert(tx, 2)));
/// assert_eq!(atomically(|tx| s.to_vec(tx)), vec![1, 2, 3]);
/// assert!(atomically(|tx| s.remove(tx, &1)));
/// assert_eq!(s.snapshot(), vec![2, 3]);
/// ```
pub struct TListSet<T> {
    inner: SortedList<T>,
}

impl<T: Ord + Clone + Send + Sync + 'static> Default for TListSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Ord + Clone + Send + Sync + 'static> TListSet<T> {
    /// An empty set.
    pub fn new() -> Self {
        TListSet {
            inner: SortedList::new(false),
        }
    }
    /// Inserts `x` if absent; returns whether it did.
    pub fn insert<'env>(&'env self, tx: &mut Transaction<'env>, x: T) -> TxResult<bool> {
        self.inner.insert(tx, x)
    }
    /// Removes `x`; returns whether it was present.
    pub fn remove<'env>(&'env self, tx: &mut Transaction<'env>, x: &T) -> TxResult<bool> {
        self.inner.remove(tx, x)
    }
    /// True if `x` is present.
    pub fn contains<'env>(&'env self, tx: &mut Transaction<'env>, x: &T) -> TxResult<bool> {
        self.inner.contains(tx, x)
    }
    /// The number of elements (reads the list version).
    pub fn len<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<usize> {
        self.inner.tx_len(tx)
    }
    /// True if the set is empty (reads the list version).
    pub fn is_empty<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<bool> {
        Ok(self.inner.tx_len(tx)? == 0)
    }
    /// The elements in order (reads the list version).
    pub fn to_vec<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Vec<T>> {
        self.inner.to_vec(tx)
    }
    /// The committed elements, outside any transaction (consistent).
    pub fn snapshot(&self) -> Vec<T> {
        self.inner.snapshot()
    }
    /// True if `x` is committed, outside any transaction.
    pub fn contains_committed(&self, x: &T) -> bool {
        self.inner.contains_committed(x)
    }
    /// The committed number of elements, outside any transaction.
    pub fn load_len(&self) -> usize {
        self.inner.size.load().max(0) as usize
    }
}

/// A transactional sorted list that may hold equal elements (a sorted
/// multiset).
///
/// Same machinery and conflict rules as [`TListSet`], except that
/// [`insert`](Self::insert) never checks for presence, so it reads nothing
/// at all and never fails: any two inserts commute. [`remove`](Self::remove)
/// removes one occurrence.
///
/// ```
/// use txmem::{atomically, TList};
/// let l = TList::new();
/// atomically(|tx| { l.insert(tx, 2)?; l.insert(tx, 1)?; l.insert(tx, 2) });
/// assert_eq!(atomically(|tx| l.to_vec(tx)), vec![1, 2, 2]);
/// assert!(atomically(|tx| l.remove(tx, &2)));
/// assert_eq!(atomically(|tx| l.len(tx)), 2);
/// ```
pub struct TList<T> {
    inner: SortedList<T>,
}

impl<T: Ord + Clone + Send + Sync + 'static> Default for TList<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Ord + Clone + Send + Sync + 'static> TList<T> {
    /// An empty list.
    pub fn new() -> Self {
        TList {
            inner: SortedList::new(true),
        }
    }
    /// Inserts `x` in order (before any equal elements).
    pub fn insert<'env>(&'env self, tx: &mut Transaction<'env>, x: T) -> TxResult<()> {
        self.inner.insert(tx, x).map(|_| ())
    }
    /// Removes one occurrence of `x`; returns whether there was one.
    pub fn remove<'env>(&'env self, tx: &mut Transaction<'env>, x: &T) -> TxResult<bool> {
        self.inner.remove(tx, x)
    }
    /// True if `x` occurs.
    pub fn contains<'env>(&'env self, tx: &mut Transaction<'env>, x: &T) -> TxResult<bool> {
        self.inner.contains(tx, x)
    }
    /// The number of elements (reads the list version).
    pub fn len<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<usize> {
        self.inner.tx_len(tx)
    }
    /// True if the list is empty (reads the list version).
    pub fn is_empty<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<bool> {
        Ok(self.inner.tx_len(tx)? == 0)
    }
    /// The elements in order (reads the list version).
    pub fn to_vec<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Vec<T>> {
        self.inner.to_vec(tx)
    }
    /// The committed elements, outside any transaction (consistent).
    pub fn snapshot(&self) -> Vec<T> {
        self.inner.snapshot()
    }
}

impl<T: Ord + Clone + Send + Sync + fmt::Debug + 'static> fmt::Debug for TListSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.snapshot()).finish()
    }
}

impl<T: Ord + Clone + Send + Sync + fmt::Debug + 'static> fmt::Debug for TList<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.snapshot()).finish()
    }
}
