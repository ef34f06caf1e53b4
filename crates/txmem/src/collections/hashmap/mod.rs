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
//! # The default hasher
//!
//! Maps built by [`THashMap::new`] hash with foldhash's `fast::RandomState`
//! ([`DefaultHashBuilder`]), the hasher `hashbrown` defaults to: a few
//! instructions per integer key where SipHash-1-3 (std's `RandomState`) takes
//! about 85, which is a fifth of a one-lookup transaction. Each map draws its
//! own random seed, so the layout is not predictable from outside the
//! process, but foldhash makes no cryptographic promise: a map whose keys an
//! adversary chooses can opt into SipHash with
//! `THashMap::with_hasher(std::collections::hash_map::RandomState::new())`.
//!
//! # Item keys
//!
//! Node items are keyed by the node's address (a multiple of 8); bucket
//! items by `index << 9 | log2(table size) << 3 | 1`; the size counter by 2.

mod committed;
mod iterate;
mod object;
mod probe;
mod resize;
mod single;
mod table;

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use crate::error::TxResult;
use crate::tx::Transaction;
use crate::types::cell::ValueCell;
use crate::version::TVersion;

use super::node::map::{MapNodes, Upserted, WriteMode};
use super::node::{NodeCollection, INSERTING};
use super::size::SizeCounter;
use super::struct_wait;
use table::{bucket_key, Node, Table, INITIAL_LOG2, LOAD_SHIFT};

/// The hasher builder of a [`THashMap`] built by [`THashMap::new`]:
/// foldhash's `fast::RandomState`, seeded per map (see the module docs for
/// why, and how to choose SipHash instead).
pub type DefaultHashBuilder = foldhash::fast::RandomState;

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
/// | [`insert`](Self::insert) / [`insert_if_absent`](Self::insert_if_absent) / [`set`](Self::set) of an absent key | nothing | the new node (a placeholder linked now, published at commit), +1 size |
/// | `insert` of a present key (returns the old value) | the key's node | the key's node |
/// | `insert_if_absent` of a present key (returns `false`) | the key's node | — |
/// | `set` of a present key | nothing | the key's node (blind write) |
/// | [`remove`](Self::remove), key present | the key's node | the node (marked deleted and unlinked at commit), −1 size |
/// | `remove`, key absent | the key's bucket | — |
/// | [`len`](Self::len) | the size counter | — |
/// | [`to_vec`](Self::to_vec) / [`for_each`](Self::for_each) | every bucket and every node | — |
///
/// Hence: inserts of distinct keys never conflict, even in the same bucket
/// (linking a placeholder bumps the bucket version, which only invalidates
/// *absent-key reads* of that bucket — phantom protection). Two inserts of
/// the same key: the second meets the first's placeholder and aborts
/// (lock-busy) until the first commits or aborts. Reads of a key conflict
/// with committed writes or removes of that key. Blind `set`s never abort
/// each other (the last commit wins). `len` conflicts only with committed
/// inserts and removes that commit while it is observed; inserts and
/// removes alone never conflict over the size. A transaction that reads a
/// key as absent and then inserts it (in the same bucket) updates its own
/// bucket read instead of aborting itself.
///
/// Removal marks the node deleted at commit, unlinks it and frees it through
/// the epoch scheme once no transaction can still see it.
///
/// Outside any transaction, [`load`](Self::load) reads one key's committed
/// value, and [`insert_now`](Self::insert_now),
/// [`insert_if_absent_now`](Self::insert_if_absent_now),
/// [`remove_now`](Self::remove_now) and [`update_now`](Self::update_now)
/// commit one key's change as a transaction of its own, without the
/// transaction machinery (they conflict as the same write in a transaction
/// would).
///
/// ```
/// use txmem::{atomically, THashMap};
/// let m = THashMap::new();
/// atomically(|tx| { m.insert(tx, "a", 1)?; m.insert(tx, "b", 2)?; Ok(()) });
/// assert_eq!(atomically(|tx| m.get(tx, "a")), Some(1));
/// assert_eq!(atomically(|tx| m.insert(tx, "a", 2)), Some(1)); // overwrites
/// assert!(!atomically(|tx| m.insert_if_absent(tx, "a", 9)));  // present: unchanged
/// atomically(|tx| m.set(tx, "a", 3));                        // blind write
/// assert_eq!(atomically(|tx| m.remove(tx, "b")), Some(2));
/// assert_eq!(atomically(|tx| m.len(tx)), 1);
/// assert_eq!(m.load("a"), Some(3));
/// ```
pub struct THashMap<K, V, S = DefaultHashBuilder> {
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

impl<K, V> THashMap<K, V, DefaultHashBuilder>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// An empty map, hashing with the [`DefaultHashBuilder`].
    pub fn new() -> Self {
        Self::with_hasher(DefaultHashBuilder::default())
    }

    /// An empty map with room for about `capacity` keys before it grows.
    pub fn with_capacity(capacity: usize) -> Self {
        Self::with_capacity_and_hasher(capacity, DefaultHashBuilder::default())
    }
}

impl<K, V> Default for THashMap<K, V, DefaultHashBuilder>
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
        key: K,
        mut value: V,
        mode: WriteMode,
    ) -> TxResult<Upserted<V>> {
        let h = self.hash(&key); // before the pin, as in `get_with`
        let _ = tx.guard();
        let mut spins = 0;
        loop {
            // Reporting the key absent needs what a read of an absent key
            // needs (see `probe`); a blind write reports nothing.
            let p = self.probe(h, &key, mode != WriteMode::Blind);
            if !p.node.is_null() {
                match self.upsert_existing(tx, p.node, value, mode, false, &mut spins)? {
                    done @ (Upserted::Inserted | Upserted::Present(_)) => return Ok(done),
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
            // valid: the version changed because of us alone. Unless the
            // write is blind, the insert reports the key absent.
            let bucket = bucket_key(p.idx, t.log2);
            let reports = mode != WriteMode::Blind;
            self.adopt_placeholder(tx, node, bucket, (p.word, new_word), reports)?;
            // The load factor, on a sample of inserts (see the module docs).
            if Self::samples_load(h, p.walked) && self.over_loaded(tx, t) {
                self.grow(t);
            }
            return Ok(Upserted::Inserted);
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
}

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
