//! Uncontended lock/unlock: the elided mutex against `parking_lot::Mutex`.
//!
//! On a CPU without RTM the elided mutex takes its fallback path: one relaxed load of the
//! cached detection result, then parking_lot's compare-and-swap.

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use txmem_elide::htm::NoHtm;
use txmem_elide::ElidedMutex;

fn uncontended(c: &mut Criterion) {
    let mut g = c.benchmark_group("uncontended_lock_unlock");
    let pl = parking_lot::Mutex::new(0u64);
    g.bench_function("parking_lot", |b| {
        b.iter(|| {
            *black_box(&pl).lock() += 1;
        })
    });
    let el = ElidedMutex::<u64>::new(0);
    g.bench_function("txmem_elided", |b| {
        b.iter(|| {
            *black_box(&el).lock() += 1;
        })
    });
    let none = ElidedMutex::<u64, NoHtm>::new(0);
    g.bench_function("txmem_elided_nohtm", |b| {
        b.iter(|| {
            *black_box(&none).lock() += 1;
        })
    });
    g.finish();
}

criterion_group!(benches, uncontended);
criterion_main!(benches);
