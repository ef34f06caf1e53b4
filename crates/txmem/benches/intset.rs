//! The classic integer-set workloads (linked list, hash set, ordered set)
//! over txmem's typed collections, side by side with lock-based std
//! collections, `dashmap`, `crossbeam-skiplist`, and the same sets built
//! from untyped `TWords` (typed versus untyped STM).
//!
//! Workload: a set pre-filled with `size` random keys from `0..2*size`;
//! each operation picks a random key in that range and is an insert (with
//! probability update/2), a remove (update/2) or a lookup (the rest), so the
//! size stays near `size`. Every txmem operation is one transaction, except
//! the lookups of the hash set's `txmem-direct` row, which read outside any
//! transaction.
//!
//! `cargo bench -p txmem --bench intset -- --warm-up-time 1 --measurement-time 2`
//! (add a filter such as `ordered/n4096/u20/t2` to run one configuration;
//! `TXMEM_BENCH_THREADS=1,2,4,8` measures other thread counts).
//! Criterion reports time per operation over all threads (the inverse of
//! throughput); `COLLECTIONS.md` explains how the ratios were computed.

use std::collections::{BTreeSet, HashSet};
use std::sync::{Mutex, RwLock};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use txmem::{atomically, TBTreeMap, THashMap, TListSet, TWords, WordAddr};

mod common;
use common::Rng;

/// The operations the driver needs from a set.
trait IntSet: Sync {
    fn contains(&self, k: u64) -> bool;
    fn insert(&self, k: u64) -> bool;
    fn remove(&self, k: u64) -> bool;
}

// ---------- txmem typed collections ----------

struct TxHash<S = std::collections::hash_map::RandomState>(THashMap<u64, (), S>);
impl<S: std::hash::BuildHasher + Send + Sync + 'static> IntSet for TxHash<S> {
    fn contains(&self, k: u64) -> bool {
        atomically(|tx| self.0.contains_key(tx, &k))
    }
    fn insert(&self, k: u64) -> bool {
        atomically(|tx| self.0.insert(tx, k, ()))
    }
    fn remove(&self, k: u64) -> bool {
        atomically(|tx| self.0.remove(tx, &k)).is_some()
    }
}

/// The hash set with lookups outside any transaction
/// ([`THashMap::contains_key_committed`], a consistent read of one key) and
/// updates as transactions: what a program that needs no multi-key
/// atomicity for its reads pays.
struct TxHashDirect(THashMap<u64, ()>);
impl IntSet for TxHashDirect {
    fn contains(&self, k: u64) -> bool {
        self.0.contains_key_committed(&k)
    }
    fn insert(&self, k: u64) -> bool {
        atomically(|tx| self.0.insert(tx, k, ()))
    }
    fn remove(&self, k: u64) -> bool {
        atomically(|tx| self.0.remove(tx, &k)).is_some()
    }
}

struct TxBTree(TBTreeMap<u64, ()>);
impl IntSet for TxBTree {
    fn contains(&self, k: u64) -> bool {
        atomically(|tx| self.0.contains_key(tx, &k))
    }
    fn insert(&self, k: u64) -> bool {
        atomically(|tx| self.0.insert(tx, k, ()))
    }
    fn remove(&self, k: u64) -> bool {
        atomically(|tx| self.0.remove(tx, &k)).is_some()
    }
}

struct TxList(TListSet<u64>);
impl IntSet for TxList {
    fn contains(&self, k: u64) -> bool {
        atomically(|tx| self.0.contains(tx, &k))
    }
    fn insert(&self, k: u64) -> bool {
        atomically(|tx| self.0.insert(tx, k))
    }
    fn remove(&self, k: u64) -> bool {
        atomically(|tx| self.0.remove(tx, &k))
    }
}

// ---------- peers ----------

/// A std set behind one coarse lock: `$read`/`$write` name the lock's
/// shared and exclusive accessors (both `lock` for a mutex).
macro_rules! locked_std_set {
    ($ty:ty, $read:ident, $write:ident) => {
        impl IntSet for $ty {
            fn contains(&self, k: u64) -> bool {
                self.$read().unwrap().contains(&k)
            }
            fn insert(&self, k: u64) -> bool {
                self.$write().unwrap().insert(k)
            }
            fn remove(&self, k: u64) -> bool {
                self.$write().unwrap().remove(&k)
            }
        }
    };
}
locked_std_set!(Mutex<HashSet<u64>>, lock, lock);
locked_std_set!(RwLock<HashSet<u64>>, read, write);
locked_std_set!(Mutex<BTreeSet<u64>>, lock, lock);
locked_std_set!(RwLock<BTreeSet<u64>>, read, write);
/// A sorted `Vec` (the std sorted sequence) for the list workload.
impl IntSet for RwLock<Vec<u64>> {
    fn contains(&self, k: u64) -> bool {
        self.read().unwrap().binary_search(&k).is_ok()
    }
    fn insert(&self, k: u64) -> bool {
        let mut v = self.write().unwrap();
        match v.binary_search(&k) {
            Ok(_) => false,
            Err(i) => {
                v.insert(i, k);
                true
            }
        }
    }
    fn remove(&self, k: u64) -> bool {
        let mut v = self.write().unwrap();
        match v.binary_search(&k) {
            Ok(i) => {
                v.remove(i);
                true
            }
            Err(_) => false,
        }
    }
}
impl IntSet for dashmap::DashSet<u64> {
    fn contains(&self, k: u64) -> bool {
        dashmap::DashSet::contains(self, &k)
    }
    fn insert(&self, k: u64) -> bool {
        dashmap::DashSet::insert(self, k)
    }
    fn remove(&self, k: u64) -> bool {
        dashmap::DashSet::remove(self, &k).is_some()
    }
}
impl IntSet for crossbeam_skiplist::SkipSet<u64> {
    fn contains(&self, k: u64) -> bool {
        crossbeam_skiplist::SkipSet::contains(self, &k)
    }
    fn insert(&self, k: u64) -> bool {
        if crossbeam_skiplist::SkipSet::contains(self, &k) {
            return false;
        }
        crossbeam_skiplist::SkipSet::insert(self, k);
        true
    }
    fn remove(&self, k: u64) -> bool {
        crossbeam_skiplist::SkipSet::remove(self, &k).is_some()
    }
}

// ---------- the same sets from untyped words ----------

const NIL: u64 = 0;
const KEY: usize = 0;
const NEXT: usize = 1;

fn words_arena(size: usize) -> TWords {
    // Room for the churn of a short benchmark run (freed nodes are reused).
    TWords::new(64 * size + (1 << 16))
}

/// A sorted linked list of `[key, next]` nodes; the head word is at 1.
struct WordsList {
    mem: TWords,
    head: WordAddr,
}
impl WordsList {
    fn new(size: usize) -> Self {
        let mem = words_arena(size);
        let _nil = mem.alloc(1); // address 0 is never a node
        let head = mem.alloc(1);
        WordsList { mem, head }
    }
    /// (address of the link to follow, node it holds) for the first key >= k.
    fn find<'e>(
        &'e self,
        tx: &mut txmem::Transaction<'e>,
        k: u64,
    ) -> txmem::TxResult<(WordAddr, u64)> {
        let mut link = self.head;
        loop {
            let n = self.mem.read(tx, link)?;
            if n == NIL || self.mem.read(tx, WordAddr(n as usize + KEY))? >= k {
                return Ok((link, n));
            }
            link = WordAddr(n as usize + NEXT);
        }
    }
}
impl IntSet for WordsList {
    fn contains(&self, k: u64) -> bool {
        atomically(|tx| {
            let (_, n) = self.find(tx, k)?;
            Ok(n != NIL && self.mem.read(tx, WordAddr(n as usize + KEY))? == k)
        })
    }
    fn insert(&self, k: u64) -> bool {
        atomically(|tx| {
            let (link, n) = self.find(tx, k)?;
            if n != NIL && self.mem.read(tx, WordAddr(n as usize + KEY))? == k {
                return Ok(false);
            }
            let node = self.mem.alloc(2);
            let mem = &self.mem;
            tx.on_abort(move || mem.free(node, 2));
            self.mem.write(tx, node.offset(KEY), k)?;
            self.mem.write(tx, node.offset(NEXT), n)?;
            self.mem.write(tx, link, node.0 as u64)?;
            Ok(true)
        })
    }
    fn remove(&self, k: u64) -> bool {
        atomically(|tx| {
            let (link, n) = self.find(tx, k)?;
            if n == NIL || self.mem.read(tx, WordAddr(n as usize + KEY))? != k {
                return Ok(false);
            }
            let next = self.mem.read(tx, WordAddr(n as usize + NEXT))?;
            self.mem.write(tx, link, next)?;
            let mem = &self.mem;
            tx.on_commit(move || mem.free(WordAddr(n as usize), 2));
            Ok(true)
        })
    }
}

/// A chained hash set: `buckets` head words, nodes `[key, next]`.
struct WordsHash {
    mem: TWords,
    buckets: WordAddr,
    mask: u64,
}
impl WordsHash {
    fn new(size: usize) -> Self {
        let mem = words_arena(size);
        let _nil = mem.alloc(1);
        let n = size.next_power_of_two();
        let buckets = mem.alloc(n);
        WordsHash {
            mem,
            buckets,
            mask: n as u64 - 1,
        }
    }
    fn bucket(&self, k: u64) -> WordAddr {
        let h = k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20;
        self.buckets.offset((h & self.mask) as usize)
    }
    fn find<'e>(
        &'e self,
        tx: &mut txmem::Transaction<'e>,
        k: u64,
    ) -> txmem::TxResult<(WordAddr, u64)> {
        let mut link = self.bucket(k);
        loop {
            let n = self.mem.read(tx, link)?;
            if n == NIL || self.mem.read(tx, WordAddr(n as usize + KEY))? == k {
                return Ok((link, n));
            }
            link = WordAddr(n as usize + NEXT);
        }
    }
}
impl IntSet for WordsHash {
    fn contains(&self, k: u64) -> bool {
        atomically(|tx| Ok(self.find(tx, k)?.1 != NIL))
    }
    fn insert(&self, k: u64) -> bool {
        atomically(|tx| {
            if self.find(tx, k)?.1 != NIL {
                return Ok(false);
            }
            let b = self.bucket(k);
            let first = self.mem.read(tx, b)?;
            let node = self.mem.alloc(2);
            let mem = &self.mem;
            tx.on_abort(move || mem.free(node, 2));
            self.mem.write(tx, node.offset(KEY), k)?;
            self.mem.write(tx, node.offset(NEXT), first)?;
            self.mem.write(tx, b, node.0 as u64)?;
            Ok(true)
        })
    }
    fn remove(&self, k: u64) -> bool {
        atomically(|tx| {
            let (link, n) = self.find(tx, k)?;
            if n == NIL {
                return Ok(false);
            }
            let next = self.mem.read(tx, WordAddr(n as usize + NEXT))?;
            self.mem.write(tx, link, next)?;
            let mem = &self.mem;
            tx.on_commit(move || mem.free(WordAddr(n as usize), 2));
            Ok(true)
        })
    }
}

/// A skip list of `[key, height, next_0 .. next_{h-1}]` nodes.
struct WordsSkip {
    mem: TWords,
    head: WordAddr,
}
const SKIP_MAX: usize = 16;
const HEIGHT: usize = 1;
const TOWER: usize = 2;
impl WordsSkip {
    fn new(size: usize) -> Self {
        let mem = words_arena(size);
        let _nil = mem.alloc(1);
        let head = mem.alloc(TOWER + SKIP_MAX);
        WordsSkip { mem, head }
    }
    fn preds<'e>(
        &'e self,
        tx: &mut txmem::Transaction<'e>,
        k: u64,
    ) -> txmem::TxResult<([u64; SKIP_MAX], u64)> {
        let mut preds = [0u64; SKIP_MAX];
        let mut x = self.head.0 as u64;
        for l in (0..SKIP_MAX).rev() {
            loop {
                let nx = self.mem.read(tx, WordAddr(x as usize + TOWER + l))?;
                if nx != NIL && self.mem.read(tx, WordAddr(nx as usize + KEY))? < k {
                    x = nx;
                } else {
                    break;
                }
            }
            preds[l] = x;
        }
        let n = self.mem.read(tx, WordAddr(preds[0] as usize + TOWER))?;
        let found = if n != NIL && self.mem.read(tx, WordAddr(n as usize + KEY))? == k {
            n
        } else {
            NIL
        };
        Ok((preds, found))
    }
}
thread_local! {
    static HRNG: std::cell::Cell<u64> = const { std::cell::Cell::new(0x9E37_79B9_7F4A_7C15) };
}
fn height() -> usize {
    HRNG.with(|r| {
        let mut x = r.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        r.set(x);
        (1 + (x.trailing_zeros() / 2) as usize).min(SKIP_MAX)
    })
}
impl IntSet for WordsSkip {
    fn contains(&self, k: u64) -> bool {
        atomically(|tx| Ok(self.preds(tx, k)?.1 != NIL))
    }
    fn insert(&self, k: u64) -> bool {
        let h = height();
        atomically(|tx| {
            let (preds, found) = self.preds(tx, k)?;
            if found != NIL {
                return Ok(false);
            }
            let node = self.mem.alloc(TOWER + h);
            let mem = &self.mem;
            tx.on_abort(move || mem.free(node, TOWER + h));
            self.mem.write(tx, node.offset(KEY), k)?;
            self.mem.write(tx, node.offset(HEIGHT), h as u64)?;
            for (l, &p) in preds.iter().enumerate().take(h) {
                let link = WordAddr(p as usize + TOWER + l);
                let succ = self.mem.read(tx, link)?;
                self.mem.write(tx, node.offset(TOWER + l), succ)?;
                self.mem.write(tx, link, node.0 as u64)?;
            }
            Ok(true)
        })
    }
    fn remove(&self, k: u64) -> bool {
        atomically(|tx| {
            let (preds, n) = self.preds(tx, k)?;
            if n == NIL {
                return Ok(false);
            }
            let h = self.mem.read(tx, WordAddr(n as usize + HEIGHT))? as usize;
            for (l, &p) in preds.iter().enumerate().take(h) {
                let link = WordAddr(p as usize + TOWER + l);
                if self.mem.read(tx, link)? == n {
                    let next = self.mem.read(tx, WordAddr(n as usize + TOWER + l))?;
                    self.mem.write(tx, link, next)?;
                }
            }
            let mem = &self.mem;
            tx.on_commit(move || mem.free(WordAddr(n as usize), TOWER + h));
            Ok(true)
        })
    }
}

// ---------- the driver ----------

/// A multiplicative (Fibonacci) hasher for integer keys: not HashDoS-safe,
/// only for the `txmem-mulhash` row, which shows what `THashMap` costs
/// without SipHash. The headline `txmem` row keeps `RandomState`, the hasher
/// `dashmap` and the std sets use too, so that comparison stays fair.
#[derive(Default)]
struct MulHasher(u64);
impl std::hash::Hasher for MulHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, k: u64) {
        self.0 = (self.0 ^ k)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(32);
    }
}
type MulState = std::hash::BuildHasherDefault<MulHasher>;

fn fill(set: &dyn IntSet, size: usize) {
    let mut rng = Rng(0xDEAD_BEEF_1234_5678);
    let mut n = 0;
    while n < size {
        if set.insert(rng.next() % (2 * size as u64)) {
            n += 1;
        }
    }
}

/// Runs `iters` operations of the mix over `threads` threads (see
/// [`common::run_shared`]); returns the wall time.
fn run(set: &dyn IntSet, size: usize, update_pct: u64, threads: usize, iters: u64) -> Duration {
    common::run_shared(threads, iters, |t| {
        let mut rng = Rng(0x1234_5678_9ABC_DEF1 ^ ((t as u64 + 1) << 32) ^ iters);
        move || {
            let r = rng.next();
            let k = (r >> 8) % (2 * size as u64);
            let dice = r % 100;
            if dice < update_pct / 2 {
                std::hint::black_box(set.insert(k));
            } else if dice < update_pct {
                std::hint::black_box(set.remove(k));
            } else {
                std::hint::black_box(set.contains(k));
            }
        }
    })
}

type Maker = fn(usize) -> Box<dyn IntSet>;

fn systems(kind: &str) -> Vec<(&'static str, Maker)> {
    match kind {
        "hash" => vec![
            ("txmem", |_| Box::new(TxHash(THashMap::new()))),
            ("txmem-mulhash", |_| {
                Box::new(TxHash(THashMap::with_capacity_and_hasher(
                    0,
                    MulState::default(),
                )))
            }),
            ("txmem-direct", |_| Box::new(TxHashDirect(THashMap::new()))),
            ("txmem-words", |n| Box::new(WordsHash::new(n))),
            ("mutex-hashset", |_| Box::new(Mutex::new(HashSet::new()))),
            ("rwlock-hashset", |_| Box::new(RwLock::new(HashSet::new()))),
            ("dashmap", |_| Box::new(dashmap::DashSet::new())),
        ],
        "ordered" => vec![
            ("txmem", |_| Box::new(TxBTree(TBTreeMap::new()))),
            ("txmem-words", |n| Box::new(WordsSkip::new(n))),
            ("mutex-btreeset", |_| Box::new(Mutex::new(BTreeSet::new()))),
            ("rwlock-btreeset", |_| {
                Box::new(RwLock::new(BTreeSet::new()))
            }),
            ("crossbeam-skiplist", |_| {
                Box::new(crossbeam_skiplist::SkipSet::new())
            }),
        ],
        _ => vec![
            ("txmem", |_| Box::new(TxList(TListSet::new()))),
            ("txmem-words", |n| Box::new(WordsList::new(n))),
            ("rwlock-sorted-vec", |_| Box::new(RwLock::new(Vec::new()))),
        ],
    }
}

fn intset(c: &mut Criterion) {
    for kind in ["list", "hash", "ordered"] {
        for size in [256usize, 4096] {
            for update in [0u64, 20, 50] {
                for &threads in &common::thread_counts() {
                    let mut g =
                        c.benchmark_group(format!("intset/{kind}/n{size}/u{update}/t{threads}"));
                    g.sample_size(10);
                    for (name, make) in systems(kind) {
                        let set = make(size);
                        fill(&*set, size);
                        g.bench_function(name, |b| {
                            b.iter_custom(|iters| run(&*set, size, update, threads, iters))
                        });
                    }
                    g.finish();
                }
            }
        }
    }
}

criterion_group!(benches, intset);
criterion_main!(benches);
