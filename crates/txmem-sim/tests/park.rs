//! Spin-waits that sleep until their line is written (`park_spinners`): the same outcome as
//! polling, at most one L1 hit later per wait, and every way out of the sleep (a write, an
//! abort, an interrupt) works.

mod common;

use common::small;
use txmem_sim::config::InterruptMode;
use txmem_sim::workloads::{self, SyncKind, WorkloadConfig, WorkloadKind};
use txmem_sim::{HtmAbortCause, Sim, SimConfig, SimError};

/// Core 0 spins on a flag that core 1 sets after `delay` cycles; returns core 0's finish time
/// and the loads issued.
fn flag_handoff(park: bool, delay: u64) -> (u64, u64) {
    let mut cfg = small(2);
    cfg.park_spinners = park;
    let mut sim = Sim::new(cfg).unwrap();
    let flag = sim.alloc_lines(1);
    sim.spawn(0, move |cpu| async move {
        assert_eq!(cpu.spin_until(flag, |v| v == 9).await, 9);
    });
    sim.spawn(1, move |cpu| async move {
        cpu.compute(delay).await;
        cpu.store(flag, 3).await;
        cpu.compute(delay).await;
        cpu.store(flag, 9).await;
    });
    let s = sim.run().unwrap();
    (s.per_core[0].cycles, s.loads)
}

#[test]
fn a_sleeping_spinner_notices_a_write_when_a_polling_one_does() {
    let l1 = SimConfig::default().l1.latency;
    for delay in [1_000, 12_345] {
        let (parked, parked_loads) = flag_handoff(true, delay);
        let (polled, polled_loads) = flag_handoff(false, delay);
        // Woken at its first poll at or after each write, a sleeping spinner re-reads when a
        // polling one would have.
        assert_eq!(parked, polled, "delay {delay}");
        assert_eq!(parked_loads, 3, "first read, then one after each write");
        assert!(polled_loads > delay / l1, "{polled_loads}");
    }
}

/// A sleeping spinner wakes when its next poll would have been issued, so with two or three
/// cores (where no two spinners tie for the bus in the same cycle) sleeping and polling give
/// the same simulated time to the cycle. With more spinners, requests issued in the same
/// cycle are ordered by event sequence, which differs between the two; polling's order can
/// starve one core of a TTAS lock (the 4-core counter: one core finishes its increments alone
/// after the others), sleeping's hands the lock round.
#[test]
fn lock_counters_take_the_same_time_as_with_polling() {
    for sync in [SyncKind::Spinlock, SyncKind::Elided] {
        for cores in [2, 3] {
            let run = |park: bool| {
                let cfg = SimConfig {
                    cores,
                    park_spinners: park,
                    ..SimConfig::default()
                };
                let w = WorkloadConfig {
                    kind: WorkloadKind::Counter,
                    sync,
                    increments: 200,
                    ..WorkloadConfig::default()
                };
                workloads::run(&cfg, &w).unwrap().stats
            };
            let (parked, polled) = (run(true), run(false));
            assert!(parked.parked_waits > 0, "{sync:?}");
            assert_eq!(polled.parked_waits, 0);
            assert!(parked.mem_ops < polled.mem_ops, "{sync:?}");
            assert_eq!(
                parked.total_cycles, polled.total_cycles,
                "{sync:?} on {cores}"
            );
            assert_eq!(parked.tx, polled.tx, "{sync:?} on {cores}");
            assert_eq!(parked.coherence, polled.coherence, "{sync:?} on {cores}");
        }
    }
}

#[test]
fn a_transaction_doomed_while_asleep_wakes_to_take_its_abort() {
    let mut sim = Sim::new(small(2)).unwrap();
    let (x, flag) = (sim.alloc_lines(1), sim.alloc_lines(1));
    sim.spawn(0, move |cpu| async move {
        let r = cpu
            .xbegin(|cpu| async move {
                cpu.load(x).await;
                cpu.spin_until(flag, |v| v != 0).await;
            })
            .await;
        assert_eq!(r.unwrap_err().cause(), HtmAbortCause::Conflict);
    });
    sim.spawn(1, move |cpu| async move {
        cpu.compute(2_000).await;
        cpu.store(x, 1).await; // conflicts with core 0's read set; the flag stays 0
    });
    let s = sim.run().unwrap();
    assert_eq!(s.parked_waits, 1);
    assert!(s.per_core[0].cycles < 3_000, "{}", s.per_core[0].cycles);
}

#[test]
fn a_timer_interrupt_wakes_a_sleeping_spinner() {
    let mut cfg = small(2);
    cfg.interrupts.period = 1_000;
    cfg.interrupts.mode = InterruptMode::Abort;
    let mut sim = Sim::new(cfg).unwrap();
    let flag = sim.alloc_lines(1);
    sim.spawn(0, move |cpu| async move {
        cpu.spin_until(flag, |v| v != 0).await;
    });
    sim.spawn(1, move |cpu| async move {
        cpu.compute(20_500).await;
        cpu.store(flag, 1).await;
    });
    let s = sim.run().unwrap();
    // One interrupt per period while core 0 sleeps, each followed by a re-read and a new
    // sleep.
    assert!(s.per_core[0].interrupts >= 19, "{:?}", s.per_core[0]);
    assert!(s.parked_waits >= 19);
}

#[test]
fn spinning_on_a_word_nobody_writes_is_reported_stuck() {
    let mut sim = Sim::new(small(2)).unwrap();
    let flag = sim.alloc_lines(1);
    sim.spawn(0, move |cpu| async move {
        cpu.spin_until(flag, |v| v != 0).await;
    });
    assert!(matches!(sim.run(), Err(SimError::Stuck(_))));
}

#[test]
fn a_wait_on_two_words_wakes_on_either() {
    let mut sim = Sim::new(small(3)).unwrap();
    let (a, b) = (sim.alloc_lines(1), sim.alloc_lines(1));
    sim.spawn(0, move |cpu| async move {
        loop {
            let (va, vb) = (cpu.load(a).await, cpu.load(b).await);
            if vb != 0 {
                assert_eq!(va, 0);
                return;
            }
            cpu.wait_change(&[(a, va), (b, vb)]).await;
        }
    });
    sim.spawn(1, move |cpu| async move {
        cpu.compute(5_000).await;
        cpu.store(b, 1).await;
    });
    let s = sim.run().unwrap();
    assert_eq!(s.parked_waits, 1);
    assert!(s.per_core[0].cycles < 6_000);
}

#[test]
fn a_value_that_changed_before_the_wait_does_not_sleep() {
    let mut sim = Sim::new(small(1)).unwrap();
    let flag = sim.alloc_lines(1);
    sim.spawn(0, move |cpu| async move {
        cpu.store(flag, 1).await;
        // The caller "saw" 0, but the word holds 1 now: no sleep (nobody else would wake it).
        cpu.wait_change(&[(flag, 0)]).await;
    });
    let s = sim.run().unwrap();
    assert_eq!(s.parked_waits, 0);
}
