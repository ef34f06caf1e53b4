//! The STO thesis' §7.2 array microbenchmark: transactions of `size`
//! operations on random elements of a 1M-element `TArray<u64>`, half reads
//! and half increments, in TL2 and no-opacity mode, at 1 and 2 threads.
//! Also measures the item-lookup cutoff (linear scan versus hash index).
//!
//! `cargo bench -p txmem --bench array_micro` (`TXMEM_BENCH_THREADS=1,2,4,8`
//! measures other thread counts than 1 and 2).
//! Reported time is per transaction (wall time / transactions, all threads).

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use txmem::{Opacity, TArray, TxOptions};

mod common;
use common::Rng;

const ELEMENTS: usize = 1 << 20;

/// One transaction of `size` random reads and increments, its elements
/// drawn from a generator seeded by `rng` (so a retry repeats them).
fn one_tx(array: &TArray<u64>, opts: &TxOptions, size: usize, rng: &mut Rng) {
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

fn timed(
    array: &TArray<u64>,
    opts: &TxOptions,
    size: usize,
    threads: usize,
    iters: u64,
) -> Duration {
    common::run_shared(threads, iters, |t| {
        let mut rng = Rng((0x9E37_79B9 * (t as u64 + 1)) | 1);
        move || one_tx(array, opts, size, &mut rng)
    })
}

fn array_micro(c: &mut Criterion) {
    let array = TArray::new(ELEMENTS, 0u64);
    let mut g = c.benchmark_group("array-micro");
    g.sample_size(10);
    for threads in common::thread_counts() {
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
