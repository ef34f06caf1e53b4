//! Stall-on-conflict: never deadlocks, and lowers restarts.

mod common;

use common::small;
use proptest::prelude::*;
use txmem_sim::config::PolicyKind;
use txmem_sim::workloads::{run, WorkloadConfig};
use txmem_sim::Sim;

/// Each core moves one unit between two random slots, acquiring them in random order: the
/// classic pattern that deadlocks naive stalling.
fn transfers(
    cores: usize,
    slots: u64,
    rounds: u64,
    policy: PolicyKind,
    seed: u64,
) -> txmem_sim::Stats {
    let mut cfg = small(cores);
    cfg.seed = seed;
    cfg.htm.stall_on_conflict = true;
    cfg.htm.policy = policy;
    cfg.max_cycles = 50_000_000;
    let mut sim = Sim::new(cfg).unwrap();
    let base = sim.alloc_lines(slots);
    for i in 0..slots {
        sim.write(base + i * 64, 1000);
    }
    for core in 0..cores {
        sim.spawn(core, move |cpu| async move {
            for _ in 0..rounds {
                let a = cpu.random_below(slots);
                let b = cpu.random_below(slots);
                cpu.transaction(|cpu| async move {
                    let x = cpu.load(base + a * 64).await;
                    cpu.compute(20).await;
                    cpu.store(base + a * 64, x - 1).await;
                    let y = cpu.load(base + b * 64).await;
                    cpu.compute(20).await;
                    cpu.store(base + b * 64, y + 1).await;
                })
                .await;
            }
        });
    }
    let s = sim.run().unwrap();
    let total: u64 = (0..slots).map(|i| sim.read(base + i * 64)).sum();
    assert_eq!(total, 1000 * slots, "transfers conserve the total");
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn stall_on_conflict_never_deadlocks(
        cores in 2usize..6,
        slots in 2u64..5,
        policy in proptest::sample::select(PolicyKind::ALL.to_vec()),
        seed in 0u64..1000,
    ) {
        let s = transfers(cores, slots, 12, policy, seed);
        prop_assert!(!s.timed_out, "a stalled core never woke up");
        prop_assert_eq!(s.tx.commits, 12 * cores as u64);
    }
}

#[test]
fn deadlocks_are_detected_and_broken() {
    let s = (0..20)
        .map(|seed| transfers(4, 2, 10, PolicyKind::Timestamp, seed))
        .fold(0, |a, s| a + s.tx.deadlocks_avoided);
    assert!(
        s > 0,
        "the opposite-order pattern must create waits-for cycles"
    );
}

#[test]
fn stalling_lowers_the_restart_rate_on_the_counter_with_requester_wins() {
    let w = WorkloadConfig {
        increments: 50,
        ..WorkloadConfig::default()
    };
    let mut cfg = small(4);
    cfg.htm.policy = PolicyKind::RequesterWins;
    let eager = run(&cfg, &w).unwrap().stats;
    cfg.htm.stall_on_conflict = true;
    let stall = run(&cfg, &w).unwrap().stats;
    assert!(stall.tx.stalls > 0);
    assert!(
        stall.tx.restart_rate() < eager.tx.restart_rate(),
        "stall {} vs eager {}",
        stall.tx.restart_rate(),
        eager.tx.restart_rate()
    );
}
