//! The intset workloads under criterion: the rows of `txmem bench intset`
//! (the same structures, initial contents, operation mix and systems; the
//! harness is `txmem_cli::harness`), each timed for a number of operations
//! shared out among the threads through one counter.
//!
//! Workload: a set pre-filled with `size` random keys from `0..2*size`;
//! each operation picks a random key in that range and is an insert (with
//! probability update/2), a remove (update/2) or a lookup (the rest), so the
//! size stays near `size`. Every txmem operation is one transaction, except
//! the lookups of the `txmem-direct` rows, which read outside any
//! transaction.
//!
//! `cargo bench -p txmem-cli --bench intset -- --warm-up-time 1 --measurement-time 2`
//! (add a filter such as `ordered/n4096/u20/t2` to run one configuration,
//! or `ordered/n4096/u20/t2/txmem` for one system;
//! `TXMEM_BENCH_THREADS=1,2,4,8` measures other thread counts than 1 and 2).
//! Criterion reports time per operation over all threads (the inverse of
//! throughput).

use criterion::{criterion_group, criterion_main, Criterion};
use txmem_cli::harness::{intset_workloads, Budget, ThreadList, DEFAULT_SEED};

/// `TXMEM_BENCH_THREADS`, parsed as `txmem bench --threads` is, or 1 and 2.
fn thread_counts() -> Vec<usize> {
    match std::env::var("TXMEM_BENCH_THREADS") {
        Ok(list) => match list.parse::<ThreadList>() {
            Ok(t) => t.counts().to_vec(),
            Err(e) => panic!("TXMEM_BENCH_THREADS: {e}"),
        },
        Err(_) => vec![1, 2],
    }
}

fn intset(c: &mut Criterion) {
    let threads = thread_counts();
    for w in intset_workloads(DEFAULT_SEED) {
        for &t in &threads {
            let mut g = c.benchmark_group(format!(
                "intset/{}/n{}/u{}/t{t}",
                w.structure, w.size, w.update_percent
            ));
            g.sample_size(10);
            for row in &w.rows {
                let set = row.build();
                g.bench_function(row.system(), |b| {
                    b.iter_custom(|iters| {
                        set.run(t, Budget::Ops(iters), DEFAULT_SEED ^ iters)
                            .unwrap_or_else(|e| panic!("{} {}: {e}", w.name, row.system()))
                    })
                });
            }
            g.finish();
        }
    }
}

criterion_group!(benches, intset);
criterion_main!(benches);
