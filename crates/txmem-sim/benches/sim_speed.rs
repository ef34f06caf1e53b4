//! Simulator speed: simulated memory operations per host second on the counter workload.
//!
//! `cargo bench -p txmem-sim --bench sim_speed` (criterion reports "elements/s", one element
//! being one simulated memory operation: load, store, CAS, fetch-add or fence).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::time::Duration;
use txmem_sim::config::PolicyKind;
use txmem_sim::workloads::{run, SyncKind, WorkloadConfig};
use txmem_sim::SimConfig;

fn case(cores: usize, sync: SyncKind, policy: PolicyKind) -> (SimConfig, WorkloadConfig) {
    let mut cfg = SimConfig {
        cores,
        ..SimConfig::default()
    };
    cfg.htm.policy = policy;
    // About the same number of increments whatever the core count.
    let increments = (16_000 / cores as u64).max(500);
    (
        cfg,
        WorkloadConfig {
            sync,
            increments,
            ..WorkloadConfig::default()
        },
    )
}

fn bench_case(c: &mut Criterion, group: &str, label: String, cfg: SimConfig, w: WorkloadConfig) {
    let ops = run(&cfg, &w).expect("workload").stats.mem_ops;
    let mut g = c.benchmark_group(group);
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    g.throughput(Throughput::Elements(ops));
    g.bench_function(BenchmarkId::from_parameter(label), |b| {
        b.iter(|| run(&cfg, &w).expect("workload").stats.mem_ops)
    });
    g.finish();
}

fn counter_8_cores(c: &mut Criterion) {
    for (sync, policy) in [
        (SyncKind::Spinlock, PolicyKind::SizeMatters),
        (SyncKind::Atomic, PolicyKind::SizeMatters),
        (SyncKind::Tx, PolicyKind::SizeMatters),
        (SyncKind::Tx, PolicyKind::Polka),
    ] {
        let (cfg, w) = case(8, sync, policy);
        let label = if sync == SyncKind::Tx {
            format!("tx-{}", policy.name())
        } else {
            sync.name().to_string()
        };
        bench_case(c, "counter_8_cores", label, cfg, w);
    }
}

fn scaling(c: &mut Criterion) {
    for sync in [SyncKind::Spinlock, SyncKind::Tx] {
        for cores in [1, 2, 4, 8, 16, 32] {
            let (cfg, w) = case(cores, sync, PolicyKind::SizeMatters);
            bench_case(
                c,
                &format!("counter_scaling_{}", sync.name()),
                cores.to_string(),
                cfg,
                w,
            );
        }
    }
}

criterion_group!(benches, counter_8_cores, scaling);
criterion_main!(benches);
