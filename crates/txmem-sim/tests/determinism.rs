//! Same configuration and seed give identical statistics, bit for bit.

mod common;

use common::small;
use txmem_sim::config::{BackoffKind, PolicyKind};
use txmem_sim::workloads::{run, SyncKind, WorkloadConfig, WorkloadKind};
use txmem_sim::{Sim, SimConfig, Stats};

fn stats(cfg: &SimConfig, w: &WorkloadConfig) -> Stats {
    run(cfg, w).unwrap().stats
}

#[test]
fn same_seed_same_stats() {
    let mut cfg = small(4);
    cfg.htm.backoff = BackoffKind::Random;
    cfg.htm.policy = PolicyKind::Polka;
    cfg.interrupts.period = 700;
    for kind in [WorkloadKind::Counter, WorkloadKind::CounterArray] {
        for sync in [SyncKind::Tx, SyncKind::Spinlock] {
            let w = WorkloadConfig {
                kind,
                sync,
                increments: 40,
                array_size: 4,
                ..WorkloadConfig::default()
            };
            let a = stats(&cfg, &w);
            let b = stats(&cfg, &w);
            assert_eq!(a, b, "{kind:?} {sync:?}");
            assert_eq!(
                serde_json::to_string(&a).unwrap(),
                serde_json::to_string(&b).unwrap()
            );
            if sync == SyncKind::Tx {
                assert!(a.tx.restarts > 0, "the test must exercise conflicts");
            }
        }
    }
}

#[test]
fn seed_changes_random_choices() {
    let mut cfg = small(4);
    cfg.htm.backoff = BackoffKind::Random;
    let w = WorkloadConfig {
        kind: WorkloadKind::CounterArray,
        increments: 40,
        array_size: 4,
        ..WorkloadConfig::default()
    };
    let a = stats(&cfg, &w);
    cfg.seed = 2;
    let b = stats(&cfg, &w);
    assert_ne!(a, b);
    assert_eq!(a.tx.commits, b.tx.commits);
}

#[test]
fn stats_round_trip_through_json() {
    let s = stats(
        &small(2),
        &WorkloadConfig {
            increments: 10,
            ..WorkloadConfig::default()
        },
    );
    let back: Stats = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(s, back);
}

#[test]
fn a_simulated_program_is_deterministic_with_interrupt_handlers() {
    let run_once = || {
        let mut cfg = small(3);
        cfg.interrupts.period = 250;
        let mut sim = Sim::new(cfg).unwrap();
        let c = sim.alloc_lines(1);
        sim.set_interrupt_handler(move |cpu| async move {
            cpu.fetch_add(c + 8, 1).await;
        });
        for core in 0..3 {
            sim.spawn(core, move |cpu| async move {
                for _ in 0..30 {
                    cpu.transaction(|cpu| async move {
                        let v = cpu.load(c).await;
                        cpu.compute(cpu.random_below(20)).await;
                        cpu.store(c, v + 1).await;
                    })
                    .await;
                }
            });
        }
        let s = sim.run().unwrap();
        (s, sim.read(c), sim.read(c + 8))
    };
    let (a, b) = (run_once(), run_once());
    assert_eq!(a, b);
    assert_eq!(a.1, 90);
    assert_eq!(a.2, a.0.interrupts);
}
