//! The STO thesis' §7.2 array microbenchmark: transactions of `size`
//! operations on random elements of a 1M-element `TArray<u64>`, half reads
//! and half increments, in TL2 and no-opacity mode, at 1 and 2 threads.
//! Also measures the item-lookup cutoff (linear scan versus hash index).
//!
//! `cargo bench -p txmem --bench array_micro` (`TXMEM_BENCH_THREADS=1,2,4,8`
//! measures other thread counts than 1 and 2).
//! Reported time is per transaction (wall time / transactions, all threads).

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use txmem::{Opacity, TArray, TxOptions};

mod common;

const ELEMENTS: usize = 1 << 20;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn run_txs(array: &TArray<u64>, opts: &TxOptions, size: usize, txs: u64, seed: u64) {
    let mut rng = Rng(seed | 1);
    for _ in 0..txs {
        let start = rng.next();
        opts.run(|tx| {
            let mut r = Rng(start | 1);
            for _ in 0..size {
                let x = r.next();
                let i = (x as usize >> 1) % ELEMENTS;
                if x & 1 == 0 {
                    array.get(tx, i)?;
                } else {
                    array.modify(tx, i, |v| v + 1)?;
                }
            }
            Ok(())
        });
    }
}

fn timed(array: &TArray<u64>, opts: &TxOptions, size: usize, threads: u64, iters: u64) -> Duration {
    let per_thread = (iters / threads).max(1);
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || run_txs(array, opts, size, per_thread, 0x9E37_79B9 * (t + 1)));
        }
    });
    // Scale to the requested iteration count (per_thread * threads ~ iters).
    start
        .elapsed()
        .mul_f64(iters as f64 / (per_thread * threads) as f64)
}

fn array_micro(c: &mut Criterion) {
    let array = TArray::new(ELEMENTS, 0u64);
    let mut g = c.benchmark_group("array-micro");
    g.sample_size(10);
    for threads in common::thread_counts() {
        let threads = threads as u64;
        for size in [5usize, 10, 50, 100] {
            for mode in [Opacity::Tl2, Opacity::None] {
                let opts = TxOptions::new().opacity(mode);
                let id = BenchmarkId::new(format!("{}-{}t", mode.name(), threads), size);
                g.bench_function(id, |b| {
                    b.iter_custom(|iters| timed(&array, &opts, size, threads, iters))
                });
            }
        }
    }
    g.finish();
}

/// Transactions touching `n` distinct elements twice each, with the hash
/// index never used versus always used: the crossover is the right cutoff.
fn lookup_cutoff(c: &mut Criterion) {
    let array = TArray::new(4096, 0u64);
    let mut g = c.benchmark_group("item-lookup");
    for n in [4usize, 8, 12, 16, 24, 32, 64, 128] {
        for (name, cutoff) in [("scan", usize::MAX), ("hash", 0)] {
            g.bench_function(BenchmarkId::new(name, n), |b| {
                txmem::tuning::set_item_index_cutoff(cutoff);
                b.iter(|| {
                    txmem::atomically(|tx| {
                        for i in 0..n {
                            array.get(tx, i * 7)?;
                        }
                        for i in 0..n {
                            array.modify(tx, i * 7, |v| v + 1)?;
                        }
                        Ok(())
                    })
                })
            });
        }
    }
    txmem::tuning::set_item_index_cutoff(txmem::tuning::HASH_CUTOFF);
    g.finish();
}

criterion_group!(benches, array_micro, lookup_cutoff);
criterion_main!(benches);
