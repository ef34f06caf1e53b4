//! One `TBox` increment per transaction, side by side with `fast-stm`, `stm`,
//! and mutex-protected counters (single thread, uncontended).
//!
//! `txmem` is a full `atomically` transaction; `txmem-update` is the same
//! increment as a single-operation transaction (`TBox::update`: no closure
//! of transaction code, no tracking set, the one-item commit run directly).
//!
//! `cargo bench -p txmem --bench single_tbox`

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;

fn single_increment(c: &mut Criterion) {
    let mut g = c.benchmark_group("single-tbox-increment");

    let b = txmem::TBox::new(0u64);
    g.bench_function("txmem", |bench| {
        bench.iter(|| txmem::atomically(|tx| b.modify(tx, |v| v + 1)))
    });

    g.bench_function("txmem-update", |bench| bench.iter(|| b.update(|v| v + 1)));

    let no_opacity = txmem::TxOptions::new().opacity(txmem::Opacity::None);
    g.bench_function("txmem-no-opacity", |bench| {
        bench.iter(|| no_opacity.run(|tx| b.modify(tx, |v| v + 1)))
    });

    txmem::stats::set_enabled(false);
    g.bench_function("txmem-stats-off", |bench| {
        bench.iter(|| txmem::atomically(|tx| b.modify(tx, |v| v + 1)))
    });
    txmem::stats::set_enabled(true);

    let fv = fast_stm::TVar::new(0u64);
    g.bench_function("fast-stm", |bench| {
        bench.iter(|| fast_stm::atomically(|tx| fv.modify(tx, |v| v + 1)))
    });

    let sv = stm::TVar::new(0u64);
    g.bench_function("stm", |bench| {
        bench.iter(|| stm::atomically(|tx| sv.modify(tx, |v| v + 1)))
    });

    let pm = parking_lot::Mutex::new(0u64);
    g.bench_function("parking_lot-mutex", |bench| {
        bench.iter(|| {
            let mut guard = pm.lock();
            *guard = black_box(*guard + 1);
        })
    });

    let sm = std::sync::Mutex::new(0u64);
    g.bench_function("std-mutex", |bench| {
        bench.iter(|| {
            let mut guard = sm.lock().unwrap();
            *guard = black_box(*guard + 1);
        })
    });
    g.finish();
}

criterion_group!(benches, single_increment);
criterion_main!(benches);
