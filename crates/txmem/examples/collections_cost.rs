//! Per-transaction cost of `THashMap` and `TBTreeMap` point operations,
//! for deterministic instruction counts under callgrind.
//!
//! Fills a map with the 4096 even keys of `0..8192` (one transaction per
//! insert, as the `intset` benchmark does), then runs `N` single-operation
//! transactions of one kind:
//!
//! * `get`: `contains_key` of key `i % 8192` (half present, half absent);
//! * `insert`: insert of the odd key `2 * i + 1` (absent; `N <= 4096`);
//! * `remove`: remove of the even key `2 * i` (present; `N <= 4096`);
//! * `mix`: the `intset` benchmark's mix at 20% updates: a key drawn at
//!   random from `0..8192`, inserted with probability 10%, removed with
//!   probability 10%, looked up otherwise (so about half of the inserts and
//!   removes change the map, and the map stays near 4096 keys).
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
//! usage: collections_cost <hash|hash-fast|btree> <get|insert|remove|mix> N
//!
//! `hash` uses the default `RandomState` (SipHash-1-3, the same hasher
//! `dashmap` uses); `hash-fast` uses a multiplicative hasher for integer
//! keys, to show how much of the cost is hashing.

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

const USAGE: &str = "usage: collections_cost <hash|hash-fast|btree> <get|insert|remove|mix> N";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [kind, op, n] = &args[..] else {
        panic!("{USAGE}")
    };
    let n: u64 = n.parse().expect(USAGE);
    let map: Box<dyn TSet<u64>> = match kind.as_str() {
        "hash" => Box::new(THashMap::<u64, ()>::new()),
        "hash-fast" => Box::new(THashMap::<u64, (), _>::with_hasher(BuildHasherDefault::<
            MulHasher,
        >::default())),
        "btree" => Box::new(TBTreeMap::<u64, ()>::new()),
        _ => panic!("{USAGE}"),
    };
    for k in 0..4096 {
        assert!(insert(&*map, 2 * k));
    }
    let mut hits = 0u64;
    match op.as_str() {
        "get" => {
            for i in 0..n {
                hits += contains(&*map, std::hint::black_box(i % 8192)) as u64;
            }
        }
        "insert" => {
            assert!(n <= 4096, "insert: N <= 4096");
            for i in 0..n {
                hits += insert(&*map, std::hint::black_box(2 * i + 1)) as u64;
            }
            assert_eq!(hits, n);
        }
        "remove" => {
            assert!(n <= 4096, "remove: N <= 4096");
            for i in 0..n {
                hits += remove(&*map, std::hint::black_box(2 * i)) as u64;
            }
            assert_eq!(hits, n);
        }
        "mix" => {
            let mut x = 0x1234_5678_9ABC_DEF1u64;
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let k = std::hint::black_box((x >> 8) % 8192);
                hits += match x % 100 {
                    0..10 => insert(&*map, k),
                    10..20 => remove(&*map, k),
                    _ => contains(&*map, k),
                } as u64;
            }
        }
        _ => panic!("{USAGE}"),
    }
    println!("{kind} {op} {n}: {hits} hits");
}
