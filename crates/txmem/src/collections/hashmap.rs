//! `THashMap<K, V>`: a resizable transactional hash map.
//!
//! # Structure
//!
//! A table of buckets, each a version word and a singly linked chain of
//! nodes. Every node carries its own *state* version (its commit lock, and
//! two flag bits: *inserting* for a placeholder that is not committed yet,
//! *deleted* for a node whose removal committed) and its value in an
//! epoch-managed cell. Readers traverse chains without locks (pinned in the
//! epoch) and validate against the bucket word; structural changes (linking
//! a placeholder, unlinking a node, migrating a bucket) hold the bucket
//! word's lock bit for a pointer splice.
//!
//! # Growing
//!
//! When the number of keys exceeds half the number of buckets (a load factor
//! of at most 1/2, between 1/4 and 1/2 after a resize), the inserter that
//! notices allocates a table twice as large and migrates the
//! old buckets one by one: it locks an old bucket, splits its chain between
//! the two new buckets that replace it (nodes are relinked, never copied, so
//! transactions' node items stay valid), gives both new buckets the old
//! bucket's version word, and unlocks the old bucket with a *moved* flag.
//! Every operation that meets a moved bucket follows the old table's `next`
//! pointer. A transaction that read a bucket (an absent key, or an
//! iteration) recorded the bucket's index, the table size and the word;
//! its check finds the bucket or buckets that now cover that index range
//! and compares their words with the one recorded. Because migration copies
//! words unchanged, **a resize by itself invalidates no read**: transactions
//! touching unrelated keys never abort because of it. Only the structural
//! lock of the bucket being migrated is held, for the few pointer moves.
//!
//! The load factor is a time/memory trade: every node a lookup passes is a
//! likely cache miss and a hard-to-predict branch, and below 1/2 a lookup
//! passes about half as many as below 1 (the `intset` mix on 4096 keys, 2
//! threads: about 10% less time per operation) for 16 more bytes of bucket
//! array per key.
//!
//! The number of keys is estimated from the size counter (the committed
//! count, read without a snapshot) plus the inserting transaction's own
//! pending change, so counting costs an insert or a removal nothing beyond
//! the size update it makes anyway. The estimate is taken on about one
//! insert in 16 (chosen by bits of the key's hash) and on every insert into
//! a chain already four nodes long, so a table overshoots its load
//! factor by a few keys (or, with a hasher whose sampled bits never match,
//! until chains get that long). Placeholders of other transactions still in
//! flight are not counted; they are at most a few per thread.
//!
//! # Item keys
//!
//! Node items are keyed by the node's address (a multiple of 8); bucket
//! items by `index << 9 | log2(table size) << 3 | 1`; the size counter by 2.

use std::borrow::Borrow;
use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use crossbeam_epoch::Guard;

use crate::error::TxResult;
use crate::item::Item;
use crate::object::Commit;
use crate::tx::Transaction;
use crate::types::cell::ValueCell;
use crate::version::{TVersion, LOCK_BIT, USER_BITS};

use super::node::{
    node_tobject, retire, MapNodes, NodeCollection, Upserted, DELETED, INSERTING, SIZE_KEY,
};
use super::size::SizeCounter;
use super::{still_current, struct_wait};

/// Bucket flag: the bucket was migrated to the next table.
const MOVED: u64 = 0b010;

const INITIAL_LOG2: u32 = 4;

/// The table grows once it holds more than `buckets >> LOAD_SHIFT` keys
/// (see the module docs).
const LOAD_SHIFT: u32 = 1;

/// An insert into a chain of at least this many nodes always checks the
/// load factor (see the module docs).
const LONG_CHAIN: u32 = 4;

pub(super) struct Node<K, V> {
    state: TVersion,
    hash: u64,
    key: K,
    value: ValueCell<V>,
    next: AtomicPtr<Node<K, V>>,
}

struct Bucket<K, V> {
    version: TVersion,
    head: AtomicPtr<Node<K, V>>,
}

struct Table<K, V> {
    log2: u32,
    mask: u64,
    buckets: Box<[Bucket<K, V>]>,
    /// The table this one is being migrated to (null until a resize starts).
    next: AtomicPtr<Table<K, V>>,
}

impl<K, V> Table<K, V> {
    fn new(log2: u32) -> Box<Self> {
        let n = 1usize << log2;
        Box::new(Table {
            log2,
            mask: (n as u64) - 1,
            buckets: (0..n)
                .map(|_| Bucket {
                    version: TVersion::new(),
                    head: AtomicPtr::new(ptr::null_mut()),
                })
                .collect(),
            next: AtomicPtr::new(ptr::null_mut()),
        })
    }

    #[inline]
    fn bucket(&self, idx: u64) -> &Bucket<K, V> {
        let i = (idx & self.mask) as usize;
        debug_assert!(i < self.buckets.len());
        // SAFETY: `buckets` has `1 << log2` entries and `mask` is
        // `(1 << log2) - 1` (both set in `new`, never changed), so
        // `idx & mask` is in bounds.
        unsafe { self.buckets.get_unchecked(i) }
    }

    #[inline]
    fn next_table(&self) -> &Table<K, V> {
        let p = self.next.load(Ordering::Acquire);
        assert!(!p.is_null(), "txmem: moved bucket without a next table");
        // SAFETY: a bucket is flagged moved only after `next` is published,
        // and tables are retired only after the map stops pointing to them;
        // callers are pinned.
        unsafe { &*p }
    }
}

#[inline]
fn bucket_key(idx: u64, log2: u32) -> u64 {
    (idx << 9) | ((log2 as u64) << 3) | 1
}

#[inline]
fn decode_bucket_key(key: u64) -> (u64, u32) {
    (key >> 9, ((key >> 3) & 63) as u32)
}

/// Where a key lives (or would live), found by an unrecorded traversal.
struct Probe<K, V> {
    table: *const Table<K, V>,
    idx: u64,
    /// The bucket word the traversal was consistent with.
    word: u64,
    node: *const Node<K, V>,
    /// How many nodes the traversal passed (the whole chain when it found
    /// no committed node); counted by non-settling probes only (inserts).
    walked: u32,
}

/// A transactional hash map with conflict-free inserts of distinct keys,
/// protected absent-key reads, iteration, a commutative size, and online
/// growth.
///
/// What each operation adds to the transaction (STO thesis ch. 6, with
/// iteration, a size and resizing added):
///
/// | operation | read set | write set |
/// |---|---|---|
/// | [`get`](Self::get) / [`contains_key`](Self::contains_key), key present | the key's node | — |
/// | `get` / `contains_key`, key absent | the key's bucket | — |
/// | [`insert`](Self::insert) of an absent key | nothing | the new node (a placeholder linked now, published at commit), +1 size |
/// | `insert` of a present key (returns `false`) | the key's node | — |
/// | [`put`](Self::put) of an absent key | nothing | as `insert` |
/// | `put` of a present key | nothing | the key's node (blind write) |
/// | [`remove`](Self::remove), key present | the key's node | the node (marked deleted and unlinked at commit), −1 size |
/// | `remove`, key absent | the key's bucket | — |
/// | [`len`](Self::len) | the size counter | — |
/// | [`iter`](Self::iter) | every bucket and every node | — |
///
/// Hence: inserts of distinct keys never conflict, even in the same bucket
/// (linking a placeholder bumps the bucket version, which only invalidates
/// *absent-key reads* of that bucket — phantom protection). Two inserts of
/// the same key: the second meets the first's placeholder and aborts
/// (lock-busy) until the first commits or aborts. Reads of a key conflict
/// with committed writes or removes of that key. Blind `put`s never abort
/// each other (the last commit wins). `len` conflicts only with committed
/// inserts and removes that commit while it is observed; inserts and
/// removes alone never conflict over the size. A transaction that reads a
/// key as absent and then inserts it (in the same bucket) updates its own
/// bucket read instead of aborting itself.
///
/// Removal marks the node deleted at commit, unlinks it and frees it through
/// the epoch scheme once no transaction can still see it.
///
/// ```
/// use txmem::{atomically, THashMap};
/// let m = THashMap::new();
/// atomically(|tx| { m.insert(tx, "a", 1)?; m.insert(tx, "b", 2)?; Ok(()) });
/// assert_eq!(atomically(|tx| m.get(tx, "a")), Some(1));
/// assert!(!atomically(|tx| m.insert(tx, "a", 9))); // present: unchanged
/// atomically(|tx| m.put(tx, "a", 3));                 // upsert
/// assert_eq!(atomically(|tx| m.remove(tx, "b")), Some(2));
/// assert_eq!(atomically(|tx| m.len(tx)), 1);
/// assert_eq!(m.load("a"), Some(3));
/// ```
pub struct THashMap<K, V, S = RandomState> {
    table: AtomicPtr<Table<K, V>>,
    /// The element count (striped: updates write their thread's stripe);
    /// also the resize trigger's estimate of the number of keys.
    size: SizeCounter,
    resizing: AtomicBool,
    hasher: S,
}

// SAFETY: the map owns keys and values in heap nodes. Threads read them by
// reference (`K, V: Sync`) and the epoch collector may drop them on another
// thread (`K, V: Send`); all shared state is atomics.
unsafe impl<K: Send + Sync, V: Send + Sync, S: Sync> Sync for THashMap<K, V, S> {}
// SAFETY: as above; moving the map moves the owned keys and values.
unsafe impl<K: Send, V: Send, S: Send> Send for THashMap<K, V, S> {}

impl<K, V> THashMap<K, V, RandomState>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// An empty map.
    pub fn new() -> Self {
        Self::with_hasher(RandomState::new())
    }

    /// An empty map with room for about `capacity` keys before it grows.
    pub fn with_capacity(capacity: usize) -> Self {
        Self::with_capacity_and_hasher(capacity, RandomState::new())
    }
}

impl<K, V> Default for THashMap<K, V, RandomState>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V, S> THashMap<K, V, S>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    S: BuildHasher + Send + Sync + 'static,
{
    /// An empty map using `hasher`.
    pub fn with_hasher(hasher: S) -> Self {
        Self::with_capacity_and_hasher(0, hasher)
    }

    /// An empty map with room for about `capacity` keys, using `hasher`.
    pub fn with_capacity_and_hasher(capacity: usize, hasher: S) -> Self {
        let log2 = capacity
            .max(1)
            .saturating_mul(1 << LOAD_SHIFT)
            .next_power_of_two()
            .trailing_zeros()
            .max(INITIAL_LOG2);
        THashMap {
            table: AtomicPtr::new(Box::into_raw(Table::new(log2))),
            size: SizeCounter::new(0),
            resizing: AtomicBool::new(false),
            hasher,
        }
    }

    /// The number of buckets of the current table (grows with the map).
    pub fn bucket_count(&self) -> usize {
        let _g = crossbeam_epoch::pin();
        let mut t = self.current();
        while !t.next.load(Ordering::Acquire).is_null() {
            t = t.next_table();
        }
        t.buckets.len()
    }

    #[inline]
    fn hash<Q: Hash + ?Sized>(&self, key: &Q) -> u64 {
        self.hasher.hash_one(key)
    }

    #[inline]
    fn current(&self) -> &Table<K, V> {
        // SAFETY: the table pointer is never null; a replaced table is
        // retired through the epoch, and every caller is pinned.
        unsafe { &*self.table.load(Ordering::Acquire) }
    }

    /// Finds the node for `key` (any state but deleted) by a traversal that
    /// is consistent with the bucket word it reports. Records nothing.
    ///
    /// With `settle` (transactional reads), waits out a committed removal
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
    fn probe<Q>(&self, h: u64, key: &Q, settle: bool) -> Probe<K, V>
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
                if !settle {
                    // (Only inserts use the count; see `Probe::walked`.)
                    walked += 1;
                }
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
    fn record_absent<'env>(
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
    fn record_bucket<'env>(
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
    fn view<'env, R>(
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

    /// The value of `key` (a clone), or `None`.
    pub fn get<'env, Q>(&'env self, tx: &mut Transaction<'env>, key: &Q) -> TxResult<Option<V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.get_with(tx, key, V::clone)
    }

    /// Calls `f` with a reference to the value of `key`, if present.
    pub fn get_with<'env, Q, R>(
        &'env self,
        tx: &mut Transaction<'env>,
        key: &Q,
        f: impl FnOnce(&V) -> R,
    ) -> TxResult<Option<R>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        // Hash first: the hash needs no pin, and the pin's locked
        // instruction then overlaps with the hash's long dependency chain
        // instead of holding up its loads.
        let h = self.hash(key);
        let _ = tx.guard();
        let p = self.probe(h, key, true);
        self.view(tx, &p, f)
    }

    /// True if `key` is present.
    pub fn contains_key<'env, Q>(&'env self, tx: &mut Transaction<'env>, key: &Q) -> TxResult<bool>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        Ok(self.get_with(tx, key, |_| ())?.is_some())
    }

    /// Inserts `key → value` if `key` is absent; returns whether it did.
    /// An insert of an absent key reads nothing (see the type docs).
    pub fn insert<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        key: K,
        value: V,
    ) -> TxResult<bool> {
        self.upsert(tx, key, value, false)
    }

    /// Sets `key → value`, inserting or overwriting, without reading the
    /// old value (a blind write: concurrent puts of one key never abort each
    /// other).
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
        let h = self.hash(&key); // before the pin, as in `get_with`
        let _ = tx.guard();
        let mut spins = 0;
        loop {
            let p = self.probe(h, &key, false);
            if !p.node.is_null() {
                match self.upsert_existing(tx, p.node, value, overwrite, false, &mut spins)? {
                    Upserted::Done(inserted) => return Ok(inserted),
                    // (`Deleted` is not returned here: deletions show in the read.)
                    Upserted::Retry(v) | Upserted::Deleted(v) => {
                        value = v;
                        continue;
                    }
                }
            }
            // Absent: link a placeholder if the bucket is still as probed.
            // SAFETY: `p.table` came from `probe` under the pin.
            let t = unsafe { &*p.table };
            let b = t.bucket(p.idx);
            if !b.version.try_lock_at(p.word) {
                struct_wait(&mut spins);
                continue;
            }
            let node = Box::into_raw(Box::new(Node {
                state: TVersion::new(),
                hash: h,
                key,
                value: ValueCell::new(value),
                next: AtomicPtr::new(b.head.load(Ordering::Relaxed)),
            }));
            // SAFETY: not yet shared.
            unsafe { &*node }.state.set_flags_locked(INSERTING);
            b.head.store(node, Ordering::Release);
            let new_word = TVersion::next_after(p.word, 0);
            b.version.unlock_to(new_word);
            // Our own read of this bucket (an absent key we now insert) stays
            // valid: the version changed because of us alone.
            self.adopt_placeholder(tx, node, bucket_key(p.idx, t.log2), p.word, new_word);
            // The load factor, on a sample of inserts (see the module docs).
            if ((h ^ (h >> 32)) & 15 == 0 || p.walked >= LONG_CHAIN) && self.over_loaded(tx, t) {
                self.grow(t);
            }
            return Ok(true);
        }
    }

    /// Removes `key`, returning its value if it was present.
    pub fn remove<'env, Q>(&'env self, tx: &mut Transaction<'env>, key: &Q) -> TxResult<Option<V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let h = self.hash(key); // before the pin, as in `get_with`
        let _ = tx.guard();
        let p = self.probe(h, key, true);
        if p.node.is_null() {
            self.record_absent(tx, &p)?;
            return Ok(None);
        }
        // As `view`, keeping the node's item for the removal.
        let id = tx.item(self, p.node as u64);
        let old = self.view_item(tx, id, p.node, V::clone, |tx| self.record_bucket(tx, &p))?;
        if old.is_some() {
            self.mark_removed_item(tx, id);
        }
        Ok(old)
    }

    /// The number of keys, as this transaction sees them. Reads the size
    /// counter: conflicts with inserts and removes that commit meanwhile.
    pub fn len<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<usize> {
        self.tx_len(tx)
    }

    /// True if the map has no key (for this transaction).
    pub fn is_empty<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<bool> {
        Ok(self.len(tx)? == 0)
    }

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
    pub fn iter<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Vec<(K, V)>> {
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

    // ---- non-transactional reads ----

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
    pub fn contains_key_committed<Q>(&self, key: &Q) -> bool
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

    // ---- structure maintenance ----

    /// Locks the bucket that currently holds hash `h` (following moved
    /// buckets), waiting as long as needed. Returns it and its word.
    fn lock_bucket_for(&self, h: u64) -> (&Bucket<K, V>, u64) {
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
            if b.version.try_lock_at(w) {
                return (b, w);
            }
        }
    }

    /// Whether the table `t` holds more keys than its load factor allows
    /// (and no resize of it has started), by the estimate of the module
    /// docs: the committed count plus this transaction's pending change.
    #[inline(never)]
    fn over_loaded<'env>(&'env self, tx: &Transaction<'env>, t: &Table<K, V>) -> bool {
        let room = (t.buckets.len() >> LOAD_SHIFT) as i64;
        let committed = self.size.estimate();
        // The pending change is at most the number of items (each key the
        // transaction added has its own node item): look it up only when
        // that bound does not already settle the question.
        if committed + tx.len() as i64 <= room {
            return false;
        }
        let pending = tx
            .find_item(self, SIZE_KEY)
            .map_or(0, |id| SizeCounter::pending(tx.item_ref(id)));
        committed + pending > room && t.next.load(Ordering::Relaxed).is_null()
    }

    /// Doubles the table `t` (if no other resize runs). Migrates every
    /// bucket, then publishes the new table and retires the old one.
    fn grow(&self, t: &Table<K, V>) {
        if self
            .resizing
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        if !ptr::eq(self.current(), t) || !t.next.load(Ordering::Acquire).is_null() {
            self.resizing.store(false, Ordering::Release);
            return;
        }
        let new = Box::into_raw(Table::<K, V>::new(t.log2 + 1));
        t.next.store(new, Ordering::Release);
        // SAFETY: just allocated; published through `t.next` but its
        // buckets are reached only through moved old buckets, which we set
        // after filling them.
        let nt = unsafe { &*new };
        let half = 1u64 << t.log2;
        for idx in 0..half {
            let b = t.bucket(idx);
            let w = loop {
                if let Some(w) = b.version.lock_bounded() {
                    break w;
                }
                std::thread::yield_now();
            };
            let (lo, hi) = (nt.bucket(idx), nt.bucket(idx + half));
            let mut cur = b.head.load(Ordering::Relaxed);
            while !cur.is_null() {
                // SAFETY: chain nodes are live while the bucket is locked.
                let n = unsafe { &*cur };
                let next = n.next.load(Ordering::Relaxed);
                let dst = if n.hash & half == 0 { lo } else { hi };
                n.next
                    .store(dst.head.load(Ordering::Relaxed), Ordering::Release);
                dst.head.store(cur, Ordering::Release);
                cur = next;
            }
            let plain = w & !(LOCK_BIT | USER_BITS);
            lo.version.unlock_to(plain);
            hi.version.unlock_to(plain);
            b.version.unlock_to(plain | MOVED);
        }
        self.table.store(new, Ordering::Release);
        let old = t as *const Table<K, V> as usize;
        let guard = crossbeam_epoch::pin();
        // SAFETY: the map no longer points to the old table; operations
        // pinned earlier may still follow it (to its `next`), so free it
        // through the epoch. Dropping a table frees its bucket array only,
        // never nodes (they were all moved).
        unsafe {
            guard.defer_unchecked(move || drop(Box::from_raw(old as *mut Table<K, V>)));
        }
        self.resizing.store(false, Ordering::Release);
    }

    /// Checks a bucket read: every bucket that now covers the recorded
    /// index range must still hold the recorded word.
    fn check_range(t: &Table<K, V>, idx: u64, log2: u32, recorded: u64) -> bool {
        if t.log2 <= log2 {
            let w = t.bucket(idx).version.load_seqcst();
            if w & MOVED != 0 && !TVersion::is_locked(w) {
                return Self::check_range(t.next_table(), idx, log2, recorded);
            }
            return w == recorded;
        }
        // The table grew since the read: the range covers several buckets.
        let step = 1u64 << log2;
        let mut j = idx & (step - 1);
        while j <= t.mask {
            if !Self::check_range(t, j, t.log2, recorded) {
                return false;
            }
            j += step;
        }
        true
    }
}

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
        loop {
            let cur = link.load(Ordering::Relaxed);
            assert!(
                !cur.is_null(),
                "txmem: THashMap node missing from its bucket"
            );
            if ptr::eq(cur, np) {
                link.store(n.next.load(Ordering::Relaxed), Ordering::Release);
                break;
            }
            // SAFETY: chain nodes stay valid while we hold the bucket lock.
            link = &unsafe { &*cur }.next;
        }
        match commit_version {
            Some(cv) => b.version.unlock_to(TVersion::next_after(w, cv)),
            None => b.version.unlock_unchanged(w),
        }
        // SAFETY: the node is unreachable from the table now and its removal
        // is ours (see above); nodes are boxed, and `K, V: Send` let the
        // collector drop it on another thread.
        unsafe { retire::<Self>(guard, np) };
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

impl<K, V, S> Drop for THashMap<K, V, S> {
    fn drop(&mut self) {
        let t = *self.table.get_mut();
        // SAFETY: `&mut self` is exclusive: no resize runs (a resize
        // finishes inside the operation that started it), so `t` is the only
        // table and owns every node in its chains.
        let table = unsafe { Box::from_raw(t) };
        debug_assert!(table.next.load(Ordering::Relaxed).is_null());
        for b in table.buckets.iter() {
            let mut cur = b.head.load(Ordering::Relaxed);
            while !cur.is_null() {
                // SAFETY: each linked node is owned by the chain exactly once.
                let node = unsafe { Box::from_raw(cur) };
                cur = node.next.load(Ordering::Relaxed);
            }
        }
    }
}

impl<K, V, S> fmt::Debug for THashMap<K, V, S>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    S: BuildHasher + Send + Sync + 'static,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("THashMap")
            .field("len", &self.load_len())
            .field("buckets", &self.bucket_count())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::{atomically, clock};

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
            m.insert(tx, 1, 10)?;
            m.insert(tx, 2, 20)
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
            assert!(m.insert(tx, 7, v)?);
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

    /// A hasher whose bits that sample the load factor never match (the
    /// low four bits of `h ^ (h >> 32)` are always 1), so that only inserts
    /// into long chains check it.
    #[derive(Default)]
    struct NeverSampled(u64);

    impl std::hash::Hasher for NeverSampled {
        fn finish(&self) -> u64 {
            self.0
        }
        fn write(&mut self, _: &[u8]) {
            unreachable!("u64 keys only")
        }
        fn write_u64(&mut self, k: u64) {
            self.0 = (k << 4) | 1;
        }
    }

    /// Growth does not depend on the hash sample alone: inserts into long
    /// chains check the load factor too.
    #[test]
    fn a_map_grows_when_the_hash_sample_never_fires() {
        let m: THashMap<u64, u64, std::hash::BuildHasherDefault<NeverSampled>> =
            THashMap::with_hasher(Default::default());
        for k in 0..1000 {
            assert!(atomically(|tx| m.insert(tx, k, k)));
        }
        // (This hasher leaves most buckets of a small table empty; chains
        // reach four nodes long before the load factor would.)
        assert!(m.bucket_count() >= 256, "{} buckets", m.bucket_count());
        assert_eq!(m.load(&999), Some(999));
    }

    /// One transaction's own inserts count towards the load factor before
    /// it commits.
    #[test]
    fn a_map_grows_inside_one_large_transaction() {
        let m: THashMap<u64, u64> = THashMap::new();
        let start = m.bucket_count();
        atomically(|tx| {
            for k in 0..2048 {
                m.insert(tx, k, k)?;
            }
            Ok(())
        });
        assert!(m.bucket_count() >= 1024, "{} buckets", m.bucket_count());
        assert!(start < 1024);
        assert_eq!(m.load_len(), 2048);
    }
}
