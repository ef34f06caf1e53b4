//! Per-transaction cost of `THashMap` and `TBTreeMap` point operations,
//! for deterministic instruction counts under callgrind.
//!
//! Fills a map with the 4096 even keys of `0..8192` (one transaction per
//! insert, as the `intset` benchmark does), then runs `N` single-operation
//! transactions of one kind:
//!
//! * `get`: `contains_key` of key `i % 8192` (half present, half absent);
//! * `load`: the same lookups outside any transaction (`load_contains`, the
//!   committed read of one key; dashmap's `contains` for dashmap);
//! * `insert`: insert of the odd key `2 * i + 1` (absent; `N <= 4096`);
//! * `remove`: remove of the even key `2 * i` (present; `N <= 4096`);
//! * `mix`: the `intset` benchmark's mix at 20% updates: a key drawn at
//!   random from `0..8192`, inserted with probability 10%, removed with
//!   probability 10%, looked up otherwise (so about half of the inserts and
//!   removes change the map, and the map stays near 4096 keys);
//! * `insert-now`, `remove-now`, `mix-now`: `insert`, `remove` and `mix`
//!   outside any transaction (`insert_now`, `remove_now`, lookups by
//!   `load_contains`; dashmap's own operations for dashmap).
//!
//! Instructions per transaction = `(count(N + K) - count(K)) / N`, which
//! cancels the fill and the process start-up:
//!
//! ```text
//! export CARGO_TARGET_DIR=target-coll
//! cargo build --release -p txmem --example collections_cost
//! for n in 1000 4000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/tmp/cc.$n.out \
//!     target-coll/release/examples/collections_cost hash get $n
//! done
//! # (events of the 4000 run - events of the 1000 run) / 3000
//! ```
//!
//! usage: collections_cost <KIND> <get|load|insert|remove|mix|insert-now|remove-now|mix-now> N
//!
//! `KIND` picks the set and its hasher:
//! * `hash`: `THashMap` with its default hasher (foldhash);
//! * `hash-sip`: `THashMap` with std's `RandomState` (SipHash-1-3, the
//!   hasher `dashmap` defaults to);
//! * `hash-fast`: `THashMap` with a multiplicative hasher for integer keys;
//! * `btree`: `TBTreeMap`;
//! * `dashmap`, `dashmap-foldhash`: the same operations on a
//!   `dashmap::DashSet<u64>` with its default hasher or with foldhash, the
//!   peer the `intset` benchmark sets beside `THashMap`;
//! * `rwlock-btreeset`: the same operations on a
//!   `std::sync::RwLock<BTreeSet<u64>>` (a read lock for lookups), the
//!   `rwlock-std` peer the `intset` benchmark sets beside `TBTreeMap`.

use std::hash::{BuildHasherDefault, Hasher};

use txmem::{atomically, TBTreeMap, THashMap, TSet};

/// A multiplicative (Fibonacci) hasher for `u64` keys. Not HashDoS-safe.
#[derive(Default)]
struct MulHasher(u64);

impl Hasher for MulHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, k: u64) {
        // Keep the high bits (which the multiply mixes best) in the low ones.
        self.0 = (self.0 ^ k)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(32);
    }
}

/// The measured operations, each one transaction, on a map used as a set
/// of keys (its values are `()`).
fn contains(set: &dyn TSet<u64>, k: u64) -> bool {
    atomically(|tx| set.contains(tx, &k))
}

fn insert(set: &dyn TSet<u64>, k: u64) -> bool {
    atomically(|tx| set.insert(tx, k))
}

fn remove(set: &dyn TSet<u64>, k: u64) -> bool {
    atomically(|tx| set.remove(tx, &k))
}

const USAGE: &str =
    "usage: collections_cost <hash|hash-sip|hash-fast|btree|dashmap|dashmap-foldhash|rwlock-btreeset> \
     <get|load|insert|remove|mix|insert-now|remove-now|mix-now> N";

/// `dashmap`'s set behind the same three operations (no transactions).
struct Dash<S>(dashmap::DashSet<u64, S>);

/// A lock-based ordered set behind the same operations (no transactions).
struct LockedBTree(std::sync::RwLock<std::collections::BTreeSet<u64>>);

impl Ops for LockedBTree {
    fn contains(&self, k: u64) -> bool {
        self.0.read().unwrap().contains(&k)
    }
    fn load_contains(&self, k: u64) -> bool {
        self.contains(k)
    }
    fn insert(&self, k: u64) -> bool {
        self.0.write().unwrap().insert(k)
    }
    fn remove(&self, k: u64) -> bool {
        self.0.write().unwrap().remove(&k)
    }
    fn insert_now(&self, k: u64) -> bool {
        self.insert(k)
    }
    fn remove_now(&self, k: u64) -> bool {
        self.remove(k)
    }
}

/// The operations the example measures, on a transactional set or on
/// `dashmap`.
trait Ops {
    fn contains(&self, k: u64) -> bool;
    fn load_contains(&self, k: u64) -> bool;
    fn insert(&self, k: u64) -> bool;
    fn remove(&self, k: u64) -> bool;
    fn insert_now(&self, k: u64) -> bool;
    fn remove_now(&self, k: u64) -> bool;
}

impl Ops for Box<dyn TSet<u64>> {
    fn contains(&self, k: u64) -> bool {
        contains(&**self, k)
    }
    fn load_contains(&self, k: u64) -> bool {
        self.as_ref().load_contains(&k)
    }
    fn insert(&self, k: u64) -> bool {
        insert(&**self, k)
    }
    fn remove(&self, k: u64) -> bool {
        remove(&**self, k)
    }
    fn insert_now(&self, k: u64) -> bool {
        self.as_ref().insert_now(k)
    }
    fn remove_now(&self, k: u64) -> bool {
        self.as_ref().remove_now(&k)
    }
}

impl<S: std::hash::BuildHasher + Clone> Ops for Dash<S> {
    fn contains(&self, k: u64) -> bool {
        self.0.contains(&k)
    }
    fn load_contains(&self, k: u64) -> bool {
        self.0.contains(&k)
    }
    fn insert(&self, k: u64) -> bool {
        self.0.insert(k)
    }
    fn remove(&self, k: u64) -> bool {
        self.0.remove(&k).is_some()
    }
    fn insert_now(&self, k: u64) -> bool {
        self.insert(k)
    }
    fn remove_now(&self, k: u64) -> bool {
        self.remove(k)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [kind, op, n] = &args[..] else {
        panic!("{USAGE}")
    };
    let n: u64 = n.parse().expect(USAGE);
    let set: Box<dyn TSet<u64>> = match kind.as_str() {
        "dashmap" => return run(&Dash(dashmap::DashSet::new()), kind, op, n),
        "dashmap-foldhash" => {
            let set = dashmap::DashSet::with_hasher(txmem::DefaultHashBuilder::default());
            return run(&Dash(set), kind, op, n);
        }
        "rwlock-btreeset" => {
            let set = std::sync::RwLock::new(std::collections::BTreeSet::new());
            return run(&LockedBTree(set), kind, op, n);
        }
        "hash" => Box::new(THashMap::<u64, ()>::new()),
        "hash-sip" => Box::new(THashMap::<u64, (), _>::with_hasher(
            std::collections::hash_map::RandomState::new(),
        )),
        "hash-fast" => Box::new(THashMap::<u64, (), _>::with_hasher(BuildHasherDefault::<
            MulHasher,
        >::default())),
        "btree" => Box::new(TBTreeMap::<u64, ()>::new()),
        _ => panic!("{USAGE}"),
    };
    run(&set, kind, op, n)
}

fn run(map: &impl Ops, kind: &str, op: &str, n: u64) {
    for k in 0..4096 {
        assert!(map.insert(2 * k));
    }
    let mut hits = 0u64;
    match op {
        "get" => {
            for i in 0..n {
                hits += map.contains(std::hint::black_box(i % 8192)) as u64;
            }
        }
        "load" => {
            for i in 0..n {
                hits += map.load_contains(std::hint::black_box(i % 8192)) as u64;
            }
        }
        "insert" | "insert-now" => {
            assert!(n <= 4096, "insert: N <= 4096");
            let now = op == "insert-now";
            for i in 0..n {
                let k = std::hint::black_box(2 * i + 1);
                hits += if now {
                    map.insert_now(k)
                } else {
                    map.insert(k)
                } as u64;
            }
            assert_eq!(hits, n);
        }
        "remove" | "remove-now" => {
            assert!(n <= 4096, "remove: N <= 4096");
            let now = op == "remove-now";
            for i in 0..n {
                let k = std::hint::black_box(2 * i);
                hits += if now {
                    map.remove_now(k)
                } else {
                    map.remove(k)
                } as u64;
            }
            assert_eq!(hits, n);
        }
        "mix" | "mix-now" => {
            let now = op == "mix-now";
            let mut x = 0x1234_5678_9ABC_DEF1u64;
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let k = std::hint::black_box((x >> 8) % 8192);
                hits += match (x % 100, now) {
                    (0..10, false) => map.insert(k),
                    (10..20, false) => map.remove(k),
                    (_, false) => map.contains(k),
                    (0..10, true) => map.insert_now(k),
                    (10..20, true) => map.remove_now(k),
                    (_, true) => map.load_contains(k),
                } as u64;
            }
        }
        _ => panic!("{USAGE}"),
    }
    println!("{kind} {op} {n}: {hits} hits");
}
