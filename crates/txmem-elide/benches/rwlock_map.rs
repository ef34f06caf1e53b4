//! A read-mostly hash map behind one reader-writer lock, at 1%, 10% and 90% writes, with 1
//! and 2 threads: the elided reader-writer lock (with its reader-biased fallback) against
//! `parking_lot::RwLock`, `std::sync::RwLock` and `crossbeam_utils::sync::ShardedLock`.
//!
//! One iteration is one operation on *each* thread (time per iteration = wall time for
//! `iters` operations per thread), so lower is better and numbers are comparable across
//! locks at the same thread count.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

const KEYS: u64 = 1024;

trait MapLock: Sync {
    fn name() -> &'static str;
    fn new(m: HashMap<u64, u64>) -> Self;
    fn get(&self, k: u64) -> Option<u64>;
    fn put(&self, k: u64, v: u64);
}

macro_rules! map_lock {
    ($ty:ty, $name:expr, $read:ident, $write:ident $(, $unwrap:ident)?) => {
        impl MapLock for $ty {
            fn name() -> &'static str {
                $name
            }
            fn new(m: HashMap<u64, u64>) -> Self {
                <$ty>::new(m)
            }
            fn get(&self, k: u64) -> Option<u64> {
                self.$read()$(.$unwrap())?.get(&k).copied()
            }
            fn put(&self, k: u64, v: u64) {
                self.$write()$(.$unwrap())?.insert(k, v);
            }
        }
    };
}

map_lock!(
    txmem_elide::ElidedRwLock<HashMap<u64, u64>>,
    "txmem_elided",
    read,
    write
);
map_lock!(
    parking_lot::RwLock<HashMap<u64, u64>>,
    "parking_lot",
    read,
    write
);
map_lock!(
    std::sync::RwLock<HashMap<u64, u64>>,
    "std",
    read,
    write,
    unwrap
);
map_lock!(
    crossbeam_utils::sync::ShardedLock<HashMap<u64, u64>>,
    "crossbeam_sharded",
    read,
    write,
    unwrap
);

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

fn run<L: MapLock>(lock: &L, threads: usize, write_pct: u64, iters: u64) -> Duration {
    let start = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let start = &start;
                s.spawn(move || {
                    let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ ((t as u64 + 1) * 0x1234_5678);
                    start.wait();
                    let mut found = 0u64;
                    for _ in 0..iters {
                        let r = xorshift(&mut rng);
                        let key = r % KEYS;
                        if (r >> 32) % 100 < write_pct {
                            lock.put(key, r);
                        } else if lock.get(key).is_some() {
                            found += 1;
                        }
                    }
                    black_box(found);
                })
            })
            .collect();
        start.wait();
        let t0 = Instant::now();
        for h in handles {
            h.join().unwrap();
        }
        t0.elapsed()
    })
}

fn bench_lock<L: MapLock>(c: &mut Criterion, write_pct: u64, threads: usize) {
    let map: HashMap<u64, u64> = (0..KEYS).map(|k| (k, k)).collect();
    let lock = L::new(map);
    c.benchmark_group(format!(
        "rwlock_map/writes_{write_pct}pct/threads_{threads}"
    ))
    .bench_function(BenchmarkId::from_parameter(L::name()), |b| {
        b.iter_custom(|iters| run(&lock, threads, write_pct, iters))
    });
}

fn rwlock_map(c: &mut Criterion) {
    for write_pct in [1, 10, 90] {
        for threads in [1, 2] {
            bench_lock::<txmem_elide::ElidedRwLock<HashMap<u64, u64>>>(c, write_pct, threads);
            bench_lock::<parking_lot::RwLock<HashMap<u64, u64>>>(c, write_pct, threads);
            bench_lock::<std::sync::RwLock<HashMap<u64, u64>>>(c, write_pct, threads);
            bench_lock::<crossbeam_utils::sync::ShardedLock<HashMap<u64, u64>>>(
                c, write_pct, threads,
            );
        }
    }
}

criterion_group!(benches, rwlock_map);
criterion_main!(benches);
