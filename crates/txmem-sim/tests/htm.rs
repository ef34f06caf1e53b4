//! Transactional semantics: atomicity, isolation, rollback, abort statuses, exact counter
//! totals under every policy and HTM mode, capacity, nesting and interrupts.

mod common;

use common::small;
use txmem_sim::config::{
    BackoffKind, Capacity, Detection, Granularity, InterruptMode, PolicyKind, TrackLevel,
    Versioning,
};
use txmem_sim::workloads::{run, SyncKind, WorkloadConfig, WorkloadKind};
use txmem_sim::{HtmAbortCause, Sim, SimConfig};

#[test]
fn aborted_transaction_leaves_no_trace() {
    for versioning in [Versioning::Eager, Versioning::Lazy] {
        let mut cfg = small(1);
        cfg.htm.versioning = versioning;
        let mut sim = Sim::new(cfg).unwrap();
        let a = sim.alloc_lines(1);
        let b = sim.alloc_lines(1);
        sim.write(a, 5);
        sim.spawn(0, move |cpu| async move {
            let r = cpu
                .xbegin(|cpu| async move {
                    cpu.store(a, 6).await;
                    cpu.store(b, 7).await;
                    assert_eq!(cpu.load(a).await, 6, "read-my-writes");
                    assert!(cpu.xtest());
                    cpu.xabort(42).await;
                    unreachable!("xabort returned inside a transaction");
                })
                .await;
            let st: txmem_sim::AbortStatus = r.unwrap_err();
            assert_eq!(st.cause(), HtmAbortCause::Explicit(42));
            assert!(!cpu.xtest());
            assert_eq!(cpu.load(a).await, 5);
            assert_eq!(cpu.load(b).await, 0);
            // Outside a transaction xabort does nothing.
            cpu.xabort(1).await;
        });
        let s = sim.run().unwrap();
        assert_eq!((sim.read(a), sim.read(b)), (5, 0), "{versioning:?}");
        assert_eq!(s.tx.aborts.explicit, 1);
        assert_eq!(s.tx.commits, 0);
    }
}

/// Two words that every transaction keeps equal: readers never see them differ, and the
/// final values show every committed write, all or nothing.
fn pair_invariant(cfg: SimConfig) {
    let cores = cfg.cores;
    let mut sim = Sim::new(cfg.clone()).unwrap();
    let a = sim.alloc_lines(1);
    let b = sim.alloc_lines(1);
    let torn = sim.alloc_lines(1);
    for core in 0..cores {
        sim.spawn(core, move |cpu| async move {
            for _ in 0..12 {
                if core % 2 == 0 {
                    cpu.transaction(|cpu| async move {
                        let x = cpu.load(a).await;
                        cpu.compute(5).await;
                        cpu.store(a, x + 1).await;
                        let y = cpu.load(b).await;
                        cpu.store(b, y + 1).await;
                    })
                    .await;
                } else {
                    let (x, y) = cpu
                        .transaction(|cpu| async move {
                            let x = cpu.load(a).await;
                            cpu.compute(3).await;
                            (x, cpu.load(b).await)
                        })
                        .await;
                    if x != y {
                        cpu.fetch_add(torn, 1).await;
                    }
                }
            }
        });
    }
    let s = sim.run().unwrap();
    let writers = cores.div_ceil(2) as u64;
    assert_eq!(
        sim.read(torn),
        0,
        "a reader saw a partial transaction under {:?}",
        cfg.htm
    );
    assert_eq!(sim.read(a), 12 * writers);
    assert_eq!(sim.read(b), 12 * writers);
    assert_eq!(s.tx.commits, 12 * cores as u64);
}

#[test]
fn committed_writes_appear_all_or_nothing() {
    for (versioning, detection) in [
        (Versioning::Eager, Detection::Eager),
        (Versioning::Lazy, Detection::Eager),
        (Versioning::Lazy, Detection::Lazy),
    ] {
        for granularity in [Granularity::Line, Granularity::Word] {
            let mut cfg = small(4);
            cfg.htm.versioning = versioning;
            cfg.htm.detection = detection;
            cfg.htm.granularity = granularity;
            pair_invariant(cfg);
        }
    }
}

#[test]
fn counter_totals_are_exact_under_every_policy_and_mode() {
    let modes = [
        (Versioning::Eager, Detection::Eager),
        (Versioning::Lazy, Detection::Eager),
        (Versioning::Lazy, Detection::Lazy),
    ];
    for policy in PolicyKind::ALL {
        for &(versioning, detection) in &modes {
            for stall in [false, true] {
                let mut cfg = small(4);
                cfg.htm.policy = policy;
                cfg.htm.versioning = versioning;
                cfg.htm.detection = detection;
                cfg.htm.stall_on_conflict = stall;
                cfg.htm.backoff = BackoffKind::Exponential;
                let w = WorkloadConfig {
                    increments: 15,
                    sync: SyncKind::Tx,
                    ..WorkloadConfig::default()
                };
                let r = run(&cfg, &w).unwrap_or_else(|e| {
                    panic!("{policy:?} {versioning:?} {detection:?} stall={stall}: {e}")
                });
                assert!(!r.stats.timed_out);
                assert_eq!(r.stats.tx.commits, 60);
                let wa = WorkloadConfig {
                    kind: WorkloadKind::CounterArray,
                    array_size: 3,
                    ..w
                };
                run(&cfg, &wa).unwrap_or_else(|e| {
                    panic!("array {policy:?} {versioning:?} {detection:?}: {e}")
                });
            }
        }
    }
}

#[test]
fn every_sync_kind_counts_exactly() {
    for sync in [SyncKind::Spinlock, SyncKind::Tx, SyncKind::Atomic] {
        let w = WorkloadConfig {
            increments: 20,
            sync,
            ..WorkloadConfig::default()
        };
        let r = run(&small(3), &w).unwrap();
        assert_eq!(
            r.stats.tx.commits,
            if sync == SyncKind::Tx { 60 } else { 0 }
        );
    }
}

/// Touches `lines` distinct lines that all map to L1 set 0.
async fn touch_same_set(cpu: &txmem_sim::Cpu, base: u64, stride: u64, lines: u64) {
    for i in 0..lines {
        let v = cpu.load(base + i * stride).await;
        cpu.store(base + i * stride, v + 1).await;
    }
}

#[test]
fn bounded_capacity_aborts_persistently_and_transaction_falls_back() {
    let cfg = small(1); // 2 KB, 2-way, 64-byte lines: 16 sets, stride 1 KB hits set 0
    let mut sim = Sim::new(cfg).unwrap();
    let base = sim.alloc(8 * 1024, 1024);
    sim.spawn(0, move |cpu| async move {
        let r = cpu
            .xbegin(|cpu| async move { touch_same_set(&cpu, base, 1024, 3).await })
            .await;
        let st = r.unwrap_err();
        assert_eq!(st.cause(), HtmAbortCause::Capacity);
        assert!(st.is_persistent());
        // Two lines fit in a set.
        cpu.xbegin(|cpu| async move { touch_same_set(&cpu, base, 1024, 2).await })
            .await
            .unwrap();
        // transaction() always completes: serial mode after the persistent abort.
        cpu.transaction(|cpu| async move { touch_same_set(&cpu, base, 1024, 3).await })
            .await;
    });
    let s = sim.run().unwrap();
    assert_eq!(sim.read(base), 2);
    assert_eq!(sim.read(base + 1024), 2);
    assert_eq!(sim.read(base + 2048), 1);
    assert_eq!(s.tx.aborts.capacity, 2);
    assert_eq!(s.tx.persistent_aborts, 2);
    assert_eq!(s.tx.serialized, 1);
    assert_eq!(s.tx.commits, 1);
}

#[test]
fn unbounded_capacity_overflows_with_penalty() {
    let mut cfg = small(1);
    cfg.htm.capacity = Capacity::Unbounded;
    let mut sim = Sim::new(cfg).unwrap();
    let base = sim.alloc(8 * 1024, 1024);
    sim.spawn(0, move |cpu| async move {
        cpu.xbegin(|cpu| async move { touch_same_set(&cpu, base, 1024, 4).await })
            .await
            .unwrap();
    });
    let s = sim.run().unwrap();
    assert_eq!(s.tx.overflows, 1);
    assert_eq!(s.tx.commits, 1);
    assert_eq!(s.tx.working_set_lines.max, 4);
    assert!(
        s.total_cycles > 500,
        "overflow penalty charged: {}",
        s.total_cycles
    );
    for i in 0..4 {
        assert_eq!(sim.read(base + i * 1024), 1);
    }
}

#[test]
fn flat_nesting_and_nesting_limit() {
    let mut cfg = small(1);
    cfg.htm.max_nesting = 2;
    let mut sim = Sim::new(cfg).unwrap();
    let a = sim.alloc_lines(1);
    sim.spawn(0, move |cpu| async move {
        // Depth 2 is fine and flattened: the inner commit is part of the outer.
        let r = cpu
            .xbegin(|cpu| async move {
                cpu.store(a, 1).await;
                cpu.xbegin(|cpu| async move { cpu.store(a, 2).await })
                    .await
                    .unwrap();
                cpu.load(a).await
            })
            .await;
        assert_eq!(r, Ok(2));
        // Depth 3 aborts the whole transaction with a persistent nesting status.
        let r = cpu
            .xbegin(|cpu| async move {
                cpu.store(a, 10).await;
                cpu.xbegin(|cpu| async move {
                    cpu.xbegin(|cpu| async move { cpu.store(a, 30).await })
                        .await
                        .ok();
                })
                .await
                .ok();
            })
            .await;
        let st = r.unwrap_err();
        assert_eq!(st.cause(), HtmAbortCause::NestingOverflow);
        assert!(st.is_persistent());
        // An abort inside a nested level aborts the outermost transaction.
        let r = cpu
            .xbegin(|cpu| async move {
                cpu.store(a, 50).await;
                let _ = cpu.xbegin(|cpu| async move { cpu.xabort(9).await }).await;
                unreachable!("the inner abort must unwind the outer transaction");
            })
            .await;
        assert_eq!(r.unwrap_err().code(), Some(9));
    });
    let s = sim.run().unwrap();
    assert_eq!(sim.read(a), 2);
    assert_eq!(s.tx.commits, 1);
    assert_eq!(s.tx.aborts.nesting, 1);
}

fn interrupt_run(mode: InterruptMode) -> (txmem_sim::Stats, u64, u64) {
    let mut cfg = small(2);
    cfg.interrupts.period = 300;
    cfg.interrupts.mode = mode;
    cfg.interrupts.entry_cycles = 5;
    let mut sim = Sim::new(cfg).unwrap();
    let counter = sim.alloc_lines(1);
    let irq_counter = sim.alloc_lines(1);
    sim.set_interrupt_handler(move |cpu| async move {
        // The handler runs its own, independent transaction.
        cpu.transaction(|cpu| async move {
            let v = cpu.load(irq_counter).await;
            cpu.store(irq_counter, v + 1).await;
        })
        .await;
    });
    for core in 0..2 {
        sim.spawn(core, move |cpu| async move {
            for _ in 0..40 {
                cpu.transaction(|cpu| async move {
                    let v = cpu.load(counter).await;
                    cpu.compute(40).await;
                    cpu.store(counter, v + 1).await;
                })
                .await;
            }
        });
    }
    let s = sim.run().unwrap();
    (s.clone(), sim.read(counter), sim.read(irq_counter))
}

#[test]
fn interrupt_handlers_run_transactions_under_xpush() {
    let (s, c, irq) = interrupt_run(InterruptMode::Xpush);
    assert_eq!(c, 80);
    assert!(s.interrupts > 0);
    assert_eq!(
        irq, s.interrupts,
        "every handler's transaction committed once"
    );
    assert_eq!(s.tx.commits, 80 + s.interrupts);
    assert!(s.tx.interrupted_transactions > 0);
    assert_eq!(s.tx.aborts.interrupt, 0);
}

#[test]
fn interrupts_abort_transactions_in_abort_mode() {
    let (s, c, irq) = interrupt_run(InterruptMode::Abort);
    assert_eq!(c, 80);
    assert_eq!(irq, s.interrupts);
    assert!(s.tx.interrupted_transactions > 0);
    assert_eq!(s.tx.aborts.interrupt, s.tx.interrupted_transactions);
}

/// Core 0 writes word 0 of a line and waits; core 1 writes word 1 of the same line.
/// Returns (core 0 committed first try, core 1 committed first try).
fn false_sharing(granularity: Granularity) -> (bool, bool) {
    let mut cfg = small(2);
    cfg.htm.granularity = granularity;
    cfg.htm.policy = PolicyKind::RequesterWins;
    let mut sim = Sim::new(cfg).unwrap();
    let line = sim.alloc_lines(1);
    let ok = sim.alloc_lines(1);
    sim.spawn(0, move |cpu| async move {
        let r = cpu
            .xbegin(|cpu| async move {
                cpu.store(line, 1).await;
                cpu.compute(1000).await;
            })
            .await;
        cpu.store(ok, u64::from(r.is_ok())).await;
    });
    sim.spawn(1, move |cpu| async move {
        cpu.compute(300).await;
        let r = cpu
            .xbegin(|cpu| async move { cpu.store(line + 8, 2).await })
            .await;
        cpu.store(ok + 8, u64::from(r.is_ok())).await;
    });
    sim.run().unwrap();
    assert_eq!(sim.read(line + 8), 2);
    (sim.read(ok) == 1, sim.read(ok + 8) == 1)
}

#[test]
fn word_granularity_ignores_false_sharing() {
    assert_eq!(false_sharing(Granularity::Word), (true, true));
    // Line granularity: the requester wins and the first transaction loses its line.
    assert_eq!(false_sharing(Granularity::Line), (false, true));
}

#[test]
fn lazy_detection_lets_the_committer_win() {
    let mut cfg = small(2);
    cfg.htm.versioning = Versioning::Lazy;
    cfg.htm.detection = Detection::Lazy;
    let mut sim = Sim::new(cfg).unwrap();
    let x = sim.alloc_lines(1);
    let ok = sim.alloc_lines(1);
    // Core 0 reads x and commits late; core 1 writes x and commits early: core 0 aborts at
    // core 1's commit, not at core 1's access.
    sim.spawn(0, move |cpu| async move {
        let r = cpu
            .xbegin(|cpu| async move {
                let v = cpu.load(x).await;
                cpu.compute(1000).await;
                v
            })
            .await;
        assert_eq!(r.unwrap_err().cause(), HtmAbortCause::Conflict);
        let again = cpu.xbegin(|cpu| async move { cpu.load(x).await }).await;
        cpu.store(ok, again.unwrap()).await;
    });
    sim.spawn(1, move |cpu| async move {
        cpu.compute(300).await;
        cpu.xbegin(|cpu| async move {
            cpu.store(x, 5).await;
            assert_eq!(cpu.load(x).await, 5, "read-my-writes from the write buffer");
            cpu.compute(100).await;
        })
        .await
        .unwrap();
    });
    sim.run().unwrap();
    assert_eq!(sim.read(ok), 5);
}

/// With the transactional state beside the L2 (`htm.tracked_in = l2`, POWER8's TMCAM), a
/// transaction may outgrow the L1 and commit; tracked in the L1 it aborts for capacity. Past
/// the L2 it aborts either way.
#[test]
fn tracking_in_the_l2_bounds_transactions_by_the_l2() {
    let run = |tracked_in: TrackLevel, lines: u64| {
        let mut cfg = small(1);
        cfg.l2.enabled = true;
        cfg.l2.cache.size_bytes = 16 * 1024;
        cfg.l2.cache.ways = 8;
        cfg.htm.tracked_in = tracked_in;
        let mut sim = Sim::new(cfg).unwrap();
        let base = sim.alloc_lines(lines);
        let lb = sim.config().line_bytes;
        let out = std::rc::Rc::new(std::cell::Cell::new(None));
        let o = out.clone();
        sim.spawn(0, move |cpu| async move {
            let r = cpu
                .xbegin(|cpu| async move {
                    for i in 0..lines {
                        cpu.load(base + i * lb).await;
                    }
                })
                .await;
            o.set(Some(r.map_err(|st| st.cause())));
        });
        sim.run().unwrap();
        out.get().unwrap()
    };
    // The L1 holds 32 lines (2 KB), the L2 256.
    assert_eq!(run(TrackLevel::L1, 100), Err(HtmAbortCause::Capacity));
    assert_eq!(run(TrackLevel::L2, 100), Ok(()));
    assert_eq!(run(TrackLevel::L2, 300), Err(HtmAbortCause::Capacity));
    let mut bad = small(1);
    bad.htm.tracked_in = TrackLevel::L2;
    assert!(Sim::new(bad)
        .unwrap_err()
        .to_string()
        .contains("l2.enabled"));
}
