//! Simulated lock elision: `txmem-htm`'s retry and coarsening policies decide what the
//! simulated machine does, and different decisions give different simulated outcomes.

mod common;

use common::small;
use std::cell::Cell;
use std::rc::Rc;
use txmem_sim::elision::{spin_lock, spin_unlock, Elision, ElisionConfig, ElisionStats};
use txmem_sim::experiments::{run_one, RunConfig};
use txmem_sim::policy::{CoarsenConfig, CoarsenEvent, CoarsenPolicy};
use txmem_sim::workloads::{self, SyncKind, WorkloadConfig, WorkloadKind};
use txmem_sim::{Sim, SimConfig, Stats};

/// Core 0 holds the spinlock for a long time; core 1 meanwhile runs one elided section,
/// which finds the lock busy. Returns core 1's elision counts and the machine's statistics.
fn busy_lock_run(max_busy_waits: u32) -> (ElisionStats, Stats) {
    let mut sim = Sim::new(small(2)).unwrap();
    let lock = sim.alloc_lines(1);
    let counter = sim.alloc_lines(1);
    let out = Rc::new(Cell::new(ElisionStats::default()));
    sim.spawn(0, move |cpu| async move {
        spin_lock(&cpu, lock).await;
        cpu.compute(5_000).await;
        spin_unlock(&cpu, lock).await;
    });
    let out1 = out.clone();
    sim.spawn(1, move |cpu| async move {
        cpu.compute(100).await;
        let cfg = ElisionConfig {
            max_busy_waits,
            ..ElisionConfig::default()
        };
        let mut e = Elision::new(&cfg);
        e.run(&cpu, lock, |cpu| async move {
            let v = cpu.load(counter).await;
            cpu.store(counter, v + 1).await;
        })
        .await;
        out1.set(e.stats());
    });
    let stats = sim.run().unwrap();
    assert_eq!(sim.read(counter), 1);
    assert_eq!(sim.read(lock), 0);
    (out.get(), stats)
}

#[test]
fn retry_policy_waits_for_a_busy_lock_or_takes_it() {
    // Waiting allowed: the section waits outside the transaction, then commits in hardware.
    let (wait, wait_stats) = busy_lock_run(16);
    assert_eq!(wait.aborts.lock_busy, 1);
    assert_eq!(wait.busy_waits, 1);
    assert_eq!(wait.elided_commits, 1);
    assert_eq!(wait.fallback_acquisitions, 0);
    assert_eq!(wait_stats.tx.commits, 1);
    assert_eq!(wait_stats.tx.aborts.explicit, 1, "the lock-busy xabort");

    // No waits allowed: the same abort sends the section to the lock.
    let (lock, lock_stats) = busy_lock_run(0);
    assert_eq!(lock.aborts.lock_busy, 1);
    assert_eq!(lock.busy_waits, 0);
    assert_eq!(lock.elided_commits, 0);
    assert_eq!(lock.fallback_acquisitions, 1);
    assert_eq!(lock_stats.tx.commits, 0);
    assert_eq!(lock_stats.tx.aborts.explicit, 1);
}

fn elided_counter(cores: usize, elision: ElisionConfig) -> workloads::RunResult {
    let sim = SimConfig {
        cores,
        ..SimConfig::default()
    };
    let w = WorkloadConfig {
        kind: WorkloadKind::Counter,
        sync: SyncKind::Elided,
        increments: 200,
        elision,
        ..WorkloadConfig::default()
    };
    workloads::run(&sim, &w).unwrap()
}

#[test]
fn retry_budget_changes_the_simulated_counter() {
    let one = elided_counter(
        4,
        ElisionConfig {
            max_attempts: 1,
            ..ElisionConfig::default()
        },
    );
    let ten = elided_counter(
        4,
        ElisionConfig {
            max_attempts: 10,
            ..ElisionConfig::default()
        },
    );
    for r in [&one, &ten] {
        assert_eq!(r.elision.sections, 800);
        assert_eq!(
            r.elision.elided_commits + r.elision.fallback_acquisitions,
            800
        );
        assert_eq!(r.stats.tx.commits, r.elision.elided_commits);
        assert_eq!(r.stats.tx.restarts, r.elision.aborts.total());
    }
    // One attempt per section: every abort but a lock-busy one (the section then waits
    // and tries again) ends on the lock, exactly as the policy prescribes.
    let e = one.elision;
    assert_eq!(
        e.fallback_acquisitions,
        e.aborts.total() - e.aborts.lock_busy
    );
    // A larger budget retries conflicts in hardware instead.
    let e = ten.elision;
    assert!(
        e.fallback_acquisitions < e.aborts.total() - e.aborts.lock_busy,
        "{e:?}"
    );
    assert_ne!(one.stats.total_cycles, ten.stats.total_cycles);
}

#[test]
fn coarsening_groups_follow_the_shared_policy() {
    let cfg = ElisionConfig {
        coarsen: true,
        coarsen_threshold: 2,
        coarsen_max_group: 8,
        ..ElisionConfig::default()
    };
    let r = elided_counter(1, cfg.clone());
    // Alone on the machine nothing aborts, so the group sizes are the policy's, which the
    // test replays with the policy itself.
    let mut policy = CoarsenPolicy::new(CoarsenConfig {
        threshold: 2,
        max_group: 8,
    });
    let (mut left, mut groups) = (200u64, 0u64);
    while left > 0 {
        let k = u64::from(policy.group_size()).min(left);
        policy.on(CoarsenEvent::Committed { sections: k as u32 });
        left -= k;
        groups += 1;
    }
    assert_eq!(r.elision.aborts.total(), 0);
    assert_eq!(r.elision.elided_commits, groups);
    assert_eq!(r.stats.tx.commits, groups);
    assert!(groups < 40, "{groups} transactions for 200 sections");
    assert_eq!(r.elision.sections, 200);
    assert_eq!(
        r.elision.coarsened_sections,
        200 - 2,
        "all but the first two"
    );
    let plain = elided_counter(1, ElisionConfig::default());
    assert_eq!(plain.stats.tx.commits, 200);
    assert!(r.stats.total_cycles < plain.stats.total_cycles);
}

#[test]
fn a_capacity_abort_goes_to_the_lock_at_once() {
    // 2 KB 2-way L1 with 64-byte lines: three lines 1 KB apart overflow one set.
    let mut sim = Sim::new(small(1)).unwrap();
    let lock = sim.alloc_lines(1);
    let base = sim.alloc(4 * 1024, 1024);
    let out = Rc::new(Cell::new(ElisionStats::default()));
    let out0 = out.clone();
    sim.spawn(0, move |cpu| async move {
        let mut e = Elision::new(&ElisionConfig::default());
        e.run(&cpu, lock, |cpu| async move {
            for i in 0..3 {
                cpu.store(base + i * 1024, 1).await;
            }
        })
        .await;
        assert_eq!(e.retry_policy().limit(), 1, "an abort drops the limit");
        out0.set(e.stats());
    });
    let s = sim.run().unwrap();
    let e = out.get();
    assert_eq!(
        (e.attempts, e.aborts.total(), e.fallback_acquisitions),
        (1, 1, 1),
        "{e:?}"
    );
    assert_eq!(s.tx.aborts.capacity, 1);
    assert_eq!(sim.read(base + 2048), 1);
}

#[test]
fn the_elision_experiment_reports_policy_decisions() {
    let mut rc = RunConfig::default();
    rc.set("cores", "2").unwrap();
    rc.set("workload.increments", "50").unwrap();
    rc.set("workload.sync", "elided").unwrap();
    rc.set("workload.elision.max_busy_waits", "3").unwrap();
    assert_eq!(rc.workload.elision.max_busy_waits, 3);
    let m = run_one(&rc).unwrap();
    let get = |k: &str| m[k].as_u64().unwrap();
    assert_eq!(get("elided_commits") + get("fallbacks"), 100);
    assert!(m.contains_key("fallback_rate"));
    // Other synchronizations' rows carry no elision metrics.
    rc.set("workload.sync", "tx").unwrap();
    assert!(!run_one(&rc).unwrap().contains_key("fallbacks"));
}
