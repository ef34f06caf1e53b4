//! `TSkipMap<K, V>`: a transactional ordered map (a skiplist).
//!
//! # Why a skiplist rather than a B+ tree
//!
//! The thesis' ordered map (TMasstree) is a B+ tree whose leaf versions give
//! phantom protection; a leaf split changes versions, which readers of the
//! leaf see as a conflict, and the thesis needs special item surgery to keep
//! a transaction from aborting itself when it splits a leaf it has scanned.
//! A skiplist gives the same protection with *node-level* versions and no
//! splits at all: every node has a **gap version** covering the interval up
//! to its successor, and an insert bumps exactly one gap (its predecessor's).
//! Nodes never move, so node items stay valid forever; a scan's read set is
//! two words per node visited (its state and its gap) instead of one per
//! leaf, which is the price. Lookups, inserts and removes are O(log n)
//! expected, and nodes carry a variable-height tower inline (1.33 links on
//! average), so millions of keys cost about 40 bytes each plus key, value and
//! the allocator's overhead (65 bytes per `u64 → u64` entry resident, with
//! two million keys: `examples/skipmap_scale.rs`).
//! Readers never lock; structural changes (linking a placeholder, unlinking
//! a removed node) hold one short map-wide lock for the pointer splice, so
//! they serialize with each other but never with readers or commits of
//! other keys.
//!
//! # Item keys
//!
//! A node's state is keyed by its address, the gap after a node by
//! `address | 1` (the head's gap by 1), the size counter by 2.

use std::alloc::{self, Layout};
use std::cell::Cell;
use std::fmt;
use std::mem;
use std::ops::RangeBounds;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use crossbeam_epoch::Guard;
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;

use crate::error::TxResult;
use crate::item::Item;
use crate::object::Commit;
use crate::tx::Transaction;
use crate::types::cell::ValueCell;
use crate::version::TVersion;

use super::node::{
    node_tobject, GapChain, MapNodes, NodeCollection, Pos, Upserted, DELETED, INSERTING, UNLINKED,
};
use super::size::SizeCounter;
use super::{below_start, inconsistent, struct_wait, within_end};

const MAX_HEIGHT: usize = 16;

/// A skiplist node. The links of levels `1..height` follow the struct in the
/// same allocation (a tower of `height - 1` pointers), so that a step on an
/// upper level touches the node's own memory instead of a second
/// allocation; three nodes in four have height 1 and no tower at all.
/// Nodes are created by [`SNode::alloc`] and freed by [`SNode::free`];
/// the tower is reached only through raw node pointers (which carry the
/// whole allocation's provenance), never through a `&SNode`.
#[repr(C)]
pub(super) struct SNode<K, V> {
    state: TVersion,
    gap: TVersion,
    key: K,
    value: ValueCell<V>,
    /// The level-0 link: every traversal ends on level 0.
    next0: AtomicPtr<SNode<K, V>>,
    /// Levels linked (1 + the tower's length).
    height: usize,
}

impl<K, V> SNode<K, V> {
    /// The layout of a node of `height` levels: the struct, then the tower.
    /// `SNode` contains `u64`s, so its size is a multiple of the links'
    /// alignment and the tower starts right at `size_of::<SNode>()`.
    #[inline]
    fn layout(height: usize) -> Layout {
        const { assert!(mem::size_of::<Self>().is_multiple_of(mem::align_of::<AtomicPtr<Self>>())) };
        let size = mem::size_of::<Self>() + (height - 1) * mem::size_of::<AtomicPtr<Self>>();
        Layout::from_size_align(size, mem::align_of::<Self>()).expect("skiplist node layout")
    }

    /// A new unlinked node of `height` levels whose links are null except
    /// level 0, which points at `next0`.
    fn alloc(key: K, value: V, height: usize, next0: *mut Self) -> *mut Self {
        debug_assert!((1..=MAX_HEIGHT).contains(&height));
        let layout = Self::layout(height);
        // SAFETY: the layout has a non-zero size (it holds the struct).
        let np = unsafe { alloc::alloc(layout) } as *mut Self;
        if np.is_null() {
            alloc::handle_alloc_error(layout);
        }
        // SAFETY: `np` is a fresh allocation of `layout`: the struct fits at
        // its start and `height - 1` links right after it.
        unsafe {
            np.write(SNode {
                state: TVersion::new(),
                gap: TVersion::new(),
                key,
                value: ValueCell::new(value),
                next0: AtomicPtr::new(next0),
                height,
            });
            for level in 1..height {
                (Self::tower(np).add(level - 1) as *mut AtomicPtr<Self>)
                    .write(AtomicPtr::new(ptr::null_mut()));
            }
        }
        np
    }

    /// Drops and deallocates a node made by [`alloc`](Self::alloc).
    ///
    /// # Safety
    ///
    /// `np` came from `alloc`, is unreachable, and nobody uses it any more.
    unsafe fn free(np: *mut Self) {
        // SAFETY: per the contract; the height is read before the drop.
        unsafe {
            let layout = Self::layout((*np).height);
            ptr::drop_in_place(np);
            alloc::dealloc(np as *mut u8, layout);
        }
    }

    /// The first link of the tower (level 1).
    ///
    /// # Safety
    ///
    /// `np` is a live node from [`alloc`](Self::alloc), with the
    /// allocation's provenance.
    #[inline]
    unsafe fn tower(np: *const Self) -> *const AtomicPtr<Self> {
        // SAFETY: the tower starts right after the struct (see `layout`).
        unsafe { (np as *const u8).add(mem::size_of::<Self>()) as *const AtomicPtr<Self> }
    }

    /// The link of `level` (below the node's height).
    ///
    /// # Safety
    ///
    /// As for [`tower`](Self::tower), and `level < height`.
    #[inline]
    unsafe fn link<'a>(np: *const Self, level: usize) -> &'a AtomicPtr<Self> {
        // SAFETY: per the contract, the link exists and lives as long as the
        // node (callers are pinned or hold the structure lock).
        unsafe {
            debug_assert!(level < (*np).height);
            if level == 0 {
                &(*np).next0
            } else {
                &*Self::tower(np).add(level - 1)
            }
        }
    }

    /// The links of levels `1..height`.
    ///
    /// # Safety
    ///
    /// As for [`tower`](Self::tower).
    #[inline]
    unsafe fn upper<'a>(np: *const Self) -> &'a [AtomicPtr<Self>] {
        // SAFETY: `height - 1` initialized links follow the struct.
        unsafe { std::slice::from_raw_parts(Self::tower(np), (*np).height - 1) }
    }
}

type NodePtr<K, V> = *const SNode<K, V>;

/// Seeds of the per-thread height generators: threads take consecutive
/// seeds in the order they first insert, so a single-threaded program builds
/// the same towers on every run (repeatable instruction counts).
static RNG_SEEDS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static RNG: Cell<u64> = Cell::new({
        // splitmix64 of the thread's seed: well-mixed and never zero.
        let mut z = RNG_SEEDS
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) | 1
    });
}

fn random_height() -> usize {
    RNG.with(|r| {
        let mut x = r.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        r.set(x);
        // Each extra level with probability 1/4.
        let h = 1 + (x.trailing_zeros() / 2) as usize;
        h.min(MAX_HEIGHT)
    })
}

/// A transactional ordered map with point operations, range scans in both
/// directions, phantom protection and conflict-free inserts of distinct
/// keys. See the [module docs](self) for why it is a skiplist.
///
/// What each operation adds to the transaction:
///
/// | operation | read set | write set |
/// |---|---|---|
/// | [`get`](Self::get) / [`contains_key`](Self::contains_key), key present | the key's node | — |
/// | `get` / `contains_key` / [`remove`](Self::remove), key absent | the gap before the key | — |
/// | [`insert`](Self::insert) of an absent key | nothing | the new node (placeholder linked now), +1 size |
/// | `insert` of a present key (returns `false`) | the key's node | — |
/// | [`put`](Self::put) | nothing | the new node, or the existing node (blind write) |
/// | `remove`, key present | the key's node | the node (deleted and unlinked at commit), −1 size |
/// | [`scan`](Self::scan) / [`range`](Self::range) (either direction) | every node met and every gap between the bounds (or up to where the scan stopped) | — |
/// | [`len`](Self::len) | the size counter | — |
///
/// Hence: inserts of distinct keys never conflict with each other; an insert
/// bumps the gap version of its predecessor, which invalidates concurrent
/// scans and absent reads covering the new key (no phantoms) and nothing
/// else. A transaction that scanned a range and then inserts into it
/// updates its own gap read instead of aborting itself (thesis §5). Writes
/// and removes conflict with reads of the same key. Removal marks the node
/// deleted at commit, unlinks it and frees it through the epoch scheme.
///
/// ```
/// use txmem::{atomically, TSkipMap};
/// let m = TSkipMap::new();
/// atomically(|tx| { for k in [5, 1, 3, 9] { m.insert(tx, k, k * 10)?; } Ok(()) });
/// let up: Vec<_> = atomically(|tx| m.range(tx, 2..=9));
/// assert_eq!(up, vec![(3, 30), (5, 50), (9, 90)]);
/// let down: Vec<_> = atomically(|tx| m.range_rev(tx, ..5));
/// assert_eq!(down, vec![(3, 30), (1, 10)]);
/// assert_eq!(atomically(|tx| m.remove(tx, &3)), Some(30));
/// assert_eq!(m.load(&3), None);
/// ```
pub struct TSkipMap<K, V> {
    head: Box<[AtomicPtr<SNode<K, V>>]>,
    /// The number of levels in use: no node is taller. Only grows, only
    /// under the structure lock, and is raised before a taller node is
    /// linked; searches start there instead of at `MAX_HEIGHT`. Any value
    /// a reader sees is safe (a stale one only skips a shortcut level).
    levels: AtomicUsize,
    head_gap: TVersion,
    // Written by updates: kept off the line every reader uses (`head`).
    structure: CachePadded<Mutex<()>>,
    /// The element count (striped: updates write their thread's stripe).
    size: SizeCounter,
}

// SAFETY: the map owns keys and values in heap nodes, read by reference
// from many threads (`K, V: Sync`) and dropped by the epoch collector,
// possibly on another thread (`K, V: Send`).
unsafe impl<K: Send + Sync, V: Send + Sync> Sync for TSkipMap<K, V> {}
// SAFETY: as above.
unsafe impl<K: Send, V: Send> Send for TSkipMap<K, V> {}

impl<K, V> Default for TSkipMap<K, V>
where
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V> TSkipMap<K, V>
where
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// An empty map.
    pub fn new() -> Self {
        TSkipMap {
            head: (0..MAX_HEIGHT)
                .map(|_| AtomicPtr::new(ptr::null_mut()))
                .collect(),
            levels: AtomicUsize::new(1),
            head_gap: TVersion::new(),
            structure: CachePadded::new(Mutex::new(())),
            size: SizeCounter::new(0),
        }
    }

    #[inline]
    fn next(&self, n: NodePtr<K, V>, level: usize) -> &AtomicPtr<SNode<K, V>> {
        if n.is_null() {
            &self.head[level]
        } else {
            // SAFETY: callers pass nodes reached while pinned (raw pointers
            // loaded from links) and levels the node is linked on.
            unsafe { SNode::link(n, level) }
        }
    }

    /// The last node whose key satisfies `before` (null = head) at every
    /// level in use (`preds` above them are left as they are). Lock-free;
    /// the caller is pinned.
    fn search(&self, before: &impl Fn(&K) -> bool, preds: &mut [NodePtr<K, V>; MAX_HEIGHT]) {
        let mut x: NodePtr<K, V> = ptr::null();
        for level in (0..self.levels.load(Ordering::Relaxed)).rev() {
            loop {
                let nx = self.next(x, level).load(Ordering::Acquire) as NodePtr<K, V>;
                // SAFETY: reached through published links while pinned.
                if !nx.is_null() && before(&unsafe { &*nx }.key) {
                    x = nx;
                } else {
                    break;
                }
            }
            preds[level] = x;
        }
    }

    /// The last node whose key satisfies `before` (null = head) on level 0
    /// only: [`search`](Self::search) without recording the upper levels.
    #[inline]
    fn search0(&self, before: &impl Fn(&K) -> bool) -> NodePtr<K, V> {
        let mut x: NodePtr<K, V> = ptr::null();
        // The links of levels 1.. of `x` (the head's, then a node's).
        let mut upper: &[AtomicPtr<SNode<K, V>>] = &self.head[1..];
        let mut level = self.levels.load(Ordering::Relaxed).min(MAX_HEIGHT);
        while level > 1 {
            // SAFETY: `x` is the head (whose `upper` has `MAX_HEIGHT - 1`
            // links, and `level <= MAX_HEIGHT`) or a node reached through a
            // link of level `level - 1` or higher; a node is linked on a
            // level only if its tower has that level, so `upper` (levels
            // `1..height`) has index `level - 2`.
            let nx =
                unsafe { upper.get_unchecked(level - 2) }.load(Ordering::Acquire) as NodePtr<K, V>;
            // SAFETY: reached through published links while pinned.
            if !nx.is_null() && before(&unsafe { &*nx }.key) {
                x = nx;
                // SAFETY: as above.
                upper = unsafe { SNode::upper(nx) };
            } else {
                level -= 1;
            }
        }
        let mut link = self.next(x, 0);
        loop {
            let nx = link.load(Ordering::Acquire) as NodePtr<K, V>;
            if nx.is_null() {
                return x;
            }
            // SAFETY: reached through published links while pinned.
            let n = unsafe { &*nx };
            if !before(&n.key) {
                return x;
            }
            x = nx;
            link = &n.next0;
        }
    }

    /// The last node whose key satisfies `before`, with its gap word and
    /// successor, consistent with each other.
    #[inline]
    fn seek(&self, before: impl Fn(&K) -> bool) -> Pos<SNode<K, V>> {
        self.locate(|| self.search0(&before), |n| before(&n.key))
    }

    /// Reads the gap of `n` consistently with its successor, records it and
    /// returns the successor.
    fn record_gap_after<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        n: NodePtr<K, V>,
    ) -> TxResult<NodePtr<K, V>> {
        let g = self.gap(n);
        let mut spins = 0;
        loop {
            let w = g.load();
            if TVersion::is_locked(w) {
                struct_wait(&mut spins);
                continue;
            }
            if w & UNLINKED != 0 {
                if !tx.is_irrevocable() {
                    // Unlinked while we walked: our earlier gap reads are
                    // stale.
                    return Err(inconsistent());
                }
                // An irrevocable scan records no gaps it relies on (see
                // `still_current`) and just walks on: an unlinked node keeps
                // the successor it had when it was unlinked (nothing links
                // after it since), and the chain leads back into the list
                // past nothing committed.
                return Ok(self.next(n, 0).load(Ordering::Acquire) as NodePtr<K, V>);
            }
            let nx = self.next(n, 0).load(Ordering::Acquire) as NodePtr<K, V>;
            if g.load() == w {
                self.record_gap(tx, n, w)?;
                return Ok(nx);
            }
        }
    }

    /// This transaction's view of node `np`: `Some(f(value))` if visible.
    /// Records the node's state read (except for the transaction's own
    /// placeholders and removals, which need none).
    #[inline]
    fn node_view<'env, R>(
        &'env self,
        tx: &mut Transaction<'env>,
        np: NodePtr<K, V>,
        f: impl FnOnce(&K, &V) -> R,
    ) -> TxResult<Option<R>> {
        // SAFETY: reached while pinned.
        let key = &unsafe { &*np }.key;
        self.view_value(tx, np, |v| f(key, v), |_| Ok(()))
    }

    /// The first node of the run of `key` (starting at `pos.next`) visible
    /// to this transaction; records what it reads. `None`: absent.
    fn find_visible<'env, R>(
        &'env self,
        tx: &mut Transaction<'env>,
        pos: &Pos<SNode<K, V>>,
        key: &K,
        mut f: impl FnMut(&K, &V) -> R,
    ) -> TxResult<Option<(NodePtr<K, V>, R)>> {
        let mut cur = pos.next;
        while !cur.is_null() {
            // SAFETY: reached while pinned.
            let n = unsafe { &*cur };
            if n.key != *key {
                break;
            }
            if let Some(r) = self.node_view(tx, cur, &mut f)? {
                return Ok(Some((cur, r)));
            }
            cur = n.next0.load(Ordering::Acquire);
        }
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
        let pos = self.seek(|k| k < key);
        let mut f = Some(f);
        let found = self.find_visible(tx, &pos, key, |_, v| f.take().map(|f| f(v)))?;
        match found {
            Some((_, r)) => Ok(r),
            None => {
                self.record_gap(tx, pos.pred, pos.gap)?;
                Ok(None)
            }
        }
    }

    /// True if `key` is present.
    pub fn contains_key<'env>(&'env self, tx: &mut Transaction<'env>, key: &K) -> TxResult<bool> {
        let _ = tx.guard();
        let pos = self.seek(|k| k < key);
        if self.find_visible(tx, &pos, key, |_, _| ())?.is_some() {
            return Ok(true);
        }
        self.record_gap(tx, pos.pred, pos.gap)?;
        Ok(false)
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
        'retry: loop {
            let pos = self.seek(|k| k < &key);
            let mut cur = pos.next;
            while !cur.is_null() {
                // SAFETY: reached while pinned.
                let n = unsafe { &*cur };
                if n.key != key {
                    break;
                }
                match self.upsert_existing(tx, cur, value, overwrite, true, &mut spins)? {
                    Upserted::Done(inserted) => return Ok(inserted),
                    Upserted::Retry(v) => {
                        value = v;
                        continue 'retry;
                    }
                    Upserted::Deleted(v) => value = v,
                }
                cur = n.next0.load(Ordering::Acquire);
            }
            // Absent: link a placeholder after `pos.pred`.
            let guard = self.structure.lock();
            if self.gap(pos.pred).load() != pos.gap {
                drop(guard);
                struct_wait(&mut spins);
                continue;
            }
            // The successor as it is now, not `pos.next`: an unchanged gap
            // means no committed change in the interval, but an abandoned
            // placeholder (`pos.next`, maybe) can have been unlinked since
            // without changing it (see `GapChain::link_after`).
            let next = self.link0(pos.pred).load(Ordering::Relaxed);
            let height = random_height();
            let node = SNode::alloc(key, value, height, next);
            // SAFETY: not shared yet.
            let nref = unsafe { &*node };
            nref.state.set_flags_locked(INSERTING);
            let mut preds = [ptr::null(); MAX_HEIGHT];
            if height > 1 {
                // Under the structure lock nothing moves: search the upper
                // levels for this key (level 0 is `pos.pred`: its gap is
                // unchanged, so no node was linked after it). Levels not in use
                // yet have the head as predecessor (`preds` is null-filled).
                if height > self.levels.load(Ordering::Relaxed) {
                    self.levels.store(height, Ordering::Relaxed);
                }
                let before = |k: &K| k < &nref.key;
                self.search(&before, &mut preds);
                for (level, &p) in preds.iter().enumerate().take(height).skip(1) {
                    let nx = self.next(p, level).load(Ordering::Relaxed);
                    // SAFETY: `node` is ours, fresh from `alloc`, `level < height`.
                    unsafe { SNode::link(node, level) }.store(nx, Ordering::Relaxed);
                }
            }
            let new_gap = self
                .link_after(&pos, node)
                .expect("gap words change only under the structure lock");
            for (level, &p) in preds.iter().enumerate().take(height).skip(1) {
                self.next(p, level).store(node, Ordering::Release);
            }
            drop(guard);
            self.adopt_placeholder(tx, node, pos.pred as u64 | 1, pos.gap, new_gap);
            return Ok(true);
        }
    }

    /// Removes `key`, returning its value if it was present.
    pub fn remove<'env>(&'env self, tx: &mut Transaction<'env>, key: &K) -> TxResult<Option<V>> {
        let _ = tx.guard();
        let pos = self.seek(|k| k < key);
        match self.find_visible(tx, &pos, key, |_, v| v.clone())? {
            Some((np, v)) => {
                self.mark_removed(tx, np);
                Ok(Some(v))
            }
            None => {
                self.record_gap(tx, pos.pred, pos.gap)?;
                Ok(None)
            }
        }
    }

    /// Visits the entries with keys in `range` in ascending order, calling
    /// `f` on each until it returns `false`. The read set covers every key
    /// in the range up to where the scan stopped, present or not: a
    /// concurrent insert into that part of the range conflicts (phantom
    /// protection).
    pub fn scan<'env, R: RangeBounds<K>>(
        &'env self,
        tx: &mut Transaction<'env>,
        range: R,
        mut f: impl FnMut(&K, &V) -> bool,
    ) -> TxResult<()> {
        let _ = tx.guard();
        let start = below_start(range.start_bound());
        let pos = self.seek(&start);
        self.record_gap(tx, pos.pred, pos.gap)?;
        let end = within_end(range.end_bound());
        let mut cur = pos.next;
        while !cur.is_null() {
            // SAFETY: reached while pinned.
            let n = unsafe { &*cur };
            if !end(&n.key) {
                break;
            }
            if let Some(go_on) = self.node_view(tx, cur, &mut f)? {
                if !go_on {
                    return Ok(());
                }
            }
            cur = self.record_gap_after(tx, cur)?;
        }
        Ok(())
    }

    /// Visits the entries with keys in `range` in descending order, calling
    /// `f` on each until it returns `false`; same protection as
    /// [`scan`](Self::scan). Each step is a search (O(log n)).
    pub fn scan_rev<'env, R: RangeBounds<K>>(
        &'env self,
        tx: &mut Transaction<'env>,
        range: R,
        mut f: impl FnMut(&K, &V) -> bool,
    ) -> TxResult<()> {
        let _ = tx.guard();
        let lower = below_start(range.start_bound());
        let mut pos = self.seek(within_end(range.end_bound()));
        loop {
            if pos.pred.is_null() {
                // Nothing below: the head's gap covers the rest.
                return self.record_gap(tx, pos.pred, pos.gap);
            }
            // SAFETY: reached while pinned.
            let last = unsafe { &*pos.pred };
            if lower(&last.key) {
                // Past the start of the range: this node's gap covers the
                // part of the range between it and where we were.
                return self.record_gap(tx, pos.pred, pos.gap);
            }
            // Examine the whole run of nodes holding `last.key` (normally
            // one node; more while placeholders or removals are in flight).
            let key = last.key.clone();
            let run = self.seek(|k| k < &key);
            self.record_gap(tx, run.pred, run.gap)?;
            let mut cur = run.next;
            let mut stop = false;
            let mut seen_visible = false;
            while !cur.is_null() {
                // SAFETY: reached while pinned.
                let n = unsafe { &*cur };
                if n.key != key {
                    break;
                }
                if !seen_visible {
                    if let Some(go_on) = self.node_view(tx, cur, &mut f)? {
                        seen_visible = true;
                        stop = !go_on;
                    }
                }
                cur = self.record_gap_after(tx, cur)?;
            }
            if stop {
                return Ok(());
            }
            pos = run;
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
        let pred = self.search0(&|k: &K| k < key);
        let mut cur = self.next(pred, 0).load(Ordering::Acquire) as NodePtr<K, V>;
        while !cur.is_null() {
            // SAFETY: reached while pinned.
            let n = unsafe { &*cur };
            if n.key != *key {
                break;
            }
            let mut spins = 0;
            loop {
                let w = n.state.load();
                if TVersion::is_locked(w) {
                    struct_wait(&mut spins);
                    continue;
                }
                if w & (INSERTING | DELETED) != 0 {
                    break;
                }
                let v = n.value.with(V::clone);
                if n.state.load() == w {
                    return Some(v);
                }
            }
            cur = n.next0.load(Ordering::Acquire);
        }
        None
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
        let mut cur = self.head[0].load(Ordering::Acquire) as NodePtr<K, V>;
        while !cur.is_null() {
            // SAFETY: reached while pinned.
            let n = unsafe { &*cur };
            if n.state.load() & (INSERTING | DELETED) == 0 {
                out.push(n.key.clone());
            }
            cur = n.next0.load(Ordering::Acquire);
        }
        out
    }
}

impl<K, V> NodeCollection for TSkipMap<K, V>
where
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    type Node = SNode<K, V>;

    #[inline]
    fn size(&self) -> &SizeCounter {
        &self.size
    }

    #[inline]
    fn state(node: &SNode<K, V>) -> &TVersion {
        &node.state
    }

    #[inline]
    fn check_structure(&self, item: &Item, _: &Commit<'_>) -> bool {
        self.gap((item.key() & !1) as NodePtr<K, V>)
            .still_valid(item.read_version(), false)
    }

    #[inline]
    fn store_value(node: &SNode<K, V>, item: &mut Item, commit: &Commit<'_>) {
        Self::store_pending(node, item, commit)
    }

    unsafe fn free_node(np: *mut SNode<K, V>) {
        // SAFETY: skiplist nodes come from `SNode::alloc`; the caller
        // guarantees the node is unreachable and freed once.
        unsafe { SNode::free(np) }
    }

    /// Unlinks `np` at every level under the structure lock; with a commit
    /// version, bumps the surrounding gaps to at least that version.
    fn unlink(&self, np: NodePtr<K, V>, cv: Option<u64>, guard: &Guard) {
        let _s = self.structure.lock();
        // SAFETY: the caller owns the node's removal and it is still linked.
        let n = unsafe { &*np };
        let mut preds: [Option<NodePtr<K, V>>; MAX_HEIGHT] = [None; MAX_HEIGHT];
        let mut x: NodePtr<K, V> = ptr::null();
        for level in (0..self.levels.load(Ordering::Relaxed)).rev() {
            // The last node before the run of equal keys at this level...
            loop {
                let nx = self.next(x, level).load(Ordering::Relaxed) as NodePtr<K, V>;
                // SAFETY: linked nodes are live under the structure lock.
                if !nx.is_null() && unsafe { &*nx }.key < n.key {
                    x = nx;
                } else {
                    break;
                }
            }
            // ...then the node linking to `np` within that run, if any.
            let mut p = x;
            loop {
                let nx = self.next(p, level).load(Ordering::Relaxed) as NodePtr<K, V>;
                if ptr::eq(nx, np) {
                    preds[level] = Some(p);
                    break;
                }
                // SAFETY: as above.
                if nx.is_null() || unsafe { &*nx }.key != n.key {
                    break;
                }
                p = nx;
            }
        }
        for level in (1..n.height).rev() {
            let p = preds[level].expect("txmem: skiplist node missing from an upper level");
            // SAFETY: `np` is linked on every level below its height.
            let after = unsafe { SNode::link(np, level) }.load(Ordering::Relaxed);
            self.next(p, level).store(after, Ordering::Release);
        }
        let pred0 = preds[0].expect("txmem: skiplist node missing from its map");
        // SAFETY: `np` follows `pred0` on level 0 (found above), its upper
        // levels are unlinked, we hold the structure lock, the caller owns
        // its removal, and nodes come from `SNode::alloc` (freed by
        // `free_node`); `K, V: Send` let the collector
        // drop it elsewhere.
        let done = unsafe { self.try_splice_out(pred0, np, cv, guard) };
        assert!(done, "gap words change only under the structure lock");
    }
}

impl<K, V> MapNodes for TSkipMap<K, V>
where
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    type Value = V;

    #[inline]
    fn cell(node: &SNode<K, V>) -> &ValueCell<V> {
        &node.value
    }
}

impl<K, V> GapChain for TSkipMap<K, V>
where
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    #[inline]
    fn gap(&self, n: NodePtr<K, V>) -> &TVersion {
        if n.is_null() {
            &self.head_gap
        } else {
            // SAFETY: callers pass nodes reached while pinned (or under the
            // structure lock).
            &unsafe { &*n }.gap
        }
    }

    #[inline]
    fn link0(&self, n: NodePtr<K, V>) -> &AtomicPtr<SNode<K, V>> {
        if n.is_null() {
            &self.head[0]
        } else {
            // SAFETY: as in `gap`.
            &unsafe { &*n }.next0
        }
    }
}

node_tobject!(impl[K, V] for TSkipMap<K, V>
where
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
);

impl<K, V> Drop for TSkipMap<K, V> {
    fn drop(&mut self) {
        let mut cur = *self.head[0].get_mut();
        while !cur.is_null() {
            // SAFETY: `&mut self` is exclusive; every linked node is on
            // level 0 exactly once, owned by the map and made by `alloc`.
            unsafe {
                let next = (*cur).next0.load(Ordering::Relaxed);
                SNode::free(cur);
                cur = next;
            }
        }
    }
}

impl<K, V> fmt::Debug for TSkipMap<K, V>
where
    K: Ord + Clone + Send + Sync + fmt::Debug + 'static,
    V: Clone + Send + Sync + 'static,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TSkipMap")
            .field("len", &self.load_len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{atomically, try_atomically, TxError};

    impl<K: Ord, V> TSkipMap<K, V> {
        /// Walks level 0 under the structure lock: the keys are in order and
        /// no unlinked node is reachable. Returns the number of nodes.
        fn check_chain(&self) -> Result<usize, String> {
            let _s = self.structure.lock();
            let _g = crossbeam_epoch::pin();
            let mut n = 0;
            let mut prev: NodePtr<K, V> = ptr::null();
            let mut cur = self.head[0].load(Ordering::Acquire) as NodePtr<K, V>;
            while !cur.is_null() {
                // SAFETY: linked nodes are live (we hold the structure lock
                // and are pinned).
                let node = unsafe { &*cur };
                if node.gap.load() & UNLINKED != 0 {
                    return Err(format!("an unlinked node is reachable at position {n}"));
                }
                // SAFETY: as above.
                if !prev.is_null() && unsafe { &*prev }.key > node.key {
                    return Err(format!("keys out of order at position {n}"));
                }
                n += 1;
                prev = cur;
                cur = node.next0.load(Ordering::Acquire);
            }
            Ok(n)
        }
    }

    /// An insert that found its position next to another transaction's
    /// placeholder, and takes the structure lock after that placeholder was
    /// abandoned and unlinked, must link to the current successor: the
    /// predecessor's gap is unchanged by the unlink (no transaction ever
    /// saw the placeholder), so the gap alone does not tell that the
    /// successor changed.
    #[test]
    fn an_insert_never_links_to_an_abandoned_placeholder() {
        let m: TSkipMap<u64, u64> = TSkipMap::new();
        atomically(|tx| {
            m.insert(tx, 10, 10)?;
            m.insert(tx, 30, 30)
        });
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                // Links a placeholder for 20 and abandons it, over and over.
                while !stop.load(Ordering::Relaxed) {
                    let r: Result<(), ()> = try_atomically(|tx| {
                        m.insert(tx, 20, 20)?;
                        Err(TxError::User(()))
                    });
                    assert!(r.is_err());
                }
            });
            let result = (|| {
                for _ in 0..20_000 {
                    atomically(|tx| m.insert(tx, 15, 15));
                    atomically(|tx| m.remove(tx, &15));
                    m.check_chain()?;
                }
                Ok::<(), String>(())
            })();
            stop.store(true, Ordering::Relaxed);
            if let Err(e) = result {
                panic!("{e}");
            }
        });
        assert_eq!(m.keys_committed(), vec![10, 30]);
        assert_eq!(m.check_chain(), Ok(2));
    }
}
