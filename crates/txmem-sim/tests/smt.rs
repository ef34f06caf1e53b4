//! SMT (hardware threads sharing a core's private caches and transactional capacity), the
//! POWER8 and Haswell presets, and the TLB as a source of paging aborts.

mod common;

use common::small;
use std::cell::Cell;
use std::rc::Rc;
use txmem_sim::workloads::{run, SyncKind, WorkloadConfig, WorkloadKind};
use txmem_sim::{HtmAbortCause, Sim, SimConfig};

/// `small` with `cores` physical cores of `tpc` hardware threads each.
fn smt(cores: usize, tpc: usize) -> SimConfig {
    SimConfig {
        threads_per_core: tpc,
        ..small(cores)
    }
}

#[test]
fn siblings_share_the_l1() {
    // Hardware thread 1 loads, later, the line thread 0 loaded: a hit in the shared L1.
    let run_two = |cfg: SimConfig| {
        let mut sim = Sim::new(cfg).unwrap();
        let x = sim.alloc_lines(1);
        sim.spawn(0, move |cpu| async move {
            cpu.load(x).await;
        });
        sim.spawn(1, move |cpu| async move {
            cpu.compute(1000).await;
            cpu.load(x).await;
        });
        sim.run().unwrap()
    };
    let shared = run_two(smt(1, 2));
    assert_eq!(shared.cache.l1.misses, 1);
    assert_eq!(shared.cache.l1.hits, 1);
    // Two cores of one thread each: both miss.
    let separate = run_two(smt(2, 1));
    assert_eq!(separate.cache.l1.misses, 2);
    assert_eq!(separate.cache.l1.hits, 0);
}

#[test]
fn sibling_write_aborts_a_transaction() {
    for sibling_tx in [false, true] {
        let mut cfg = smt(1, 2);
        // The sibling's access wins (under SizeMatters the bigger transaction 0 would).
        cfg.htm.policy = txmem_sim::config::PolicyKind::RequesterWins;
        let mut sim = Sim::new(cfg).unwrap();
        let x = sim.alloc_lines(1);
        let cause = Rc::new(Cell::new(None));
        let c2 = cause.clone();
        sim.spawn(0, move |cpu| async move {
            let r = cpu
                .xbegin(|cpu| async move {
                    cpu.load(x).await;
                    cpu.compute(1000).await;
                })
                .await;
            c2.set(r.err().map(|st| st.cause()));
        });
        sim.spawn(1, move |cpu| async move {
            cpu.compute(100).await;
            if sibling_tx {
                cpu.transaction(|cpu| async move { cpu.store(x, 7).await })
                    .await;
            } else {
                cpu.store(x, 7).await;
            }
        });
        let stats = sim.run().unwrap();
        assert_eq!(
            cause.get(),
            Some(HtmAbortCause::Conflict),
            "sibling_tx={sibling_tx}"
        );
        assert_eq!(stats.tx.aborts.conflict, 1);
        assert_eq!(sim.read(x), 7);
    }
}

/// Threads 0 and 1 each run a transaction over 4 lines of their own (they overlap in
/// time). Returns the abort causes of thread 0 and thread 1.
fn two_footprints(cfg: SimConfig) -> (Option<HtmAbortCause>, Option<HtmAbortCause>) {
    let mut sim = Sim::new(cfg).unwrap();
    let base = sim.alloc_lines(8);
    let lb = sim.config().line_bytes;
    let out: Rc<[Cell<Option<HtmAbortCause>>; 2]> = Rc::new([Cell::new(None), Cell::new(None)]);
    for t in 0..2usize {
        let out = out.clone();
        sim.spawn(t, move |cpu| async move {
            cpu.compute(1 + 100 * t as u64).await;
            let r = cpu
                .xbegin(|cpu| async move {
                    for k in 0..4 {
                        cpu.store(base + (t as u64 * 4 + k) * lb, 1).await;
                    }
                    cpu.compute(1000).await;
                })
                .await;
            out[t].set(r.err().map(|st| st.cause()));
        });
    }
    sim.run().unwrap();
    (out[0].get(), out[1].get())
}

#[test]
fn siblings_share_the_core_capacity() {
    // 6 lines per core: each 4-line transaction fits alone, two siblings' do not.
    let mut cfg = smt(1, 2);
    cfg.htm.core_capacity_lines = 6;
    // Whichever adds the line over the bound aborts; the other commits.
    let (a, b) = two_footprints(cfg);
    assert!(
        matches!(
            (a, b),
            (None, Some(HtmAbortCause::Capacity)) | (Some(HtmAbortCause::Capacity), None)
        ),
        "{a:?} {b:?}"
    );
    // On two cores each has its own 6 lines.
    let mut cfg = smt(2, 1);
    cfg.htm.core_capacity_lines = 6;
    assert_eq!(two_footprints(cfg), (None, None));
    // Unbounded by default.
    assert_eq!(two_footprints(smt(1, 2)), (None, None));
}

/// One thread runs a transaction touching `pages` fresh pages. Returns the stats.
fn paging_run(cfg: SimConfig, pages: u64) -> txmem_sim::Stats {
    let mut sim = Sim::new(cfg).unwrap();
    let page = sim.config().tlb.page_bytes;
    // One line further into each page, so that the lines fall in different L1 sets.
    let step = page + sim.config().line_bytes;
    let base = sim.alloc(pages * page, page);
    sim.spawn(0, move |cpu| async move {
        cpu.transaction(|cpu| async move {
            for p in 0..pages {
                cpu.fetch_add(base + p * step, 1).await;
            }
        })
        .await;
        // Non-transactional misses never abort anything.
        cpu.store(base + pages * page - 8, 5).await;
    });
    let stats = sim.run().unwrap();
    for p in 0..pages {
        assert_eq!(sim.read(base + p * step), 1);
    }
    stats
}

#[test]
fn tlb_misses_abort_only_when_enabled() {
    let mut cfg = small(1);
    cfg.memory_bytes = 1 << 20;
    let off = paging_run(cfg.clone(), 3);
    assert_eq!(
        (off.tlb_hits, off.tlb_misses, off.tx.aborts.paging),
        (0, 0, 0)
    );
    assert_eq!(off.tx.restarts, 0);

    cfg.tlb.enabled = true;
    cfg.tlb.tx_miss_abort_ppm = 0;
    let never = paging_run(cfg.clone(), 3);
    assert_eq!(never.tlb_misses, 3);
    assert_eq!((never.tx.restarts, never.tx.aborts.paging), (0, 0));
    assert!(never.total_cycles > off.total_cycles, "a miss costs cycles");

    cfg.tlb.tx_miss_abort_ppm = 1_000_000;
    let always = paging_run(cfg.clone(), 3);
    // Each attempt aborts at its first new page, which the walk installs.
    assert_eq!(always.tx.aborts.paging, 3);
    assert_eq!(always.tx.aborts.other, 3);
    assert_eq!(always.tx.commits, 1);
}

#[test]
fn presets_validate_and_run() {
    for (name, cfg, cpus) in [
        ("power8", SimConfig::power8(), 80),
        ("haswell", SimConfig::haswell(), 8),
    ] {
        cfg.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(cfg.cpus(), cpus, "{name}");
        let w = WorkloadConfig {
            kind: WorkloadKind::Counter,
            sync: SyncKind::Tx,
            increments: 5,
            ..WorkloadConfig::default()
        };
        let mut c = cfg.clone();
        c.check_invariants = true;
        let r = run(&c, &w).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.stats.tx.commits, cpus as u64 * 5, "{name}");
    }
    assert_eq!(SimConfig::power8().htm.core_capacity_lines, 64);
    assert_eq!(SimConfig::power8().line_bytes, 128);
    assert_eq!(SimConfig::haswell().l1.size_bytes, 32 * 1024);
}

#[test]
fn too_many_hardware_threads_is_rejected() {
    let cfg = SimConfig {
        cores: 64,
        threads_per_core: 4,
        ..SimConfig::default()
    };
    assert!(cfg.validate().is_err());
    let cfg = SimConfig {
        threads_per_core: 0,
        ..SimConfig::default()
    };
    assert!(cfg.validate().is_err());
}

#[test]
fn smt_runs_are_deterministic() {
    let mut cfg = smt(2, 4);
    cfg.htm.core_capacity_lines = 8;
    cfg.tlb.enabled = true;
    cfg.tlb.page_bytes = 256;
    cfg.tlb.entries = 4;
    cfg.tlb.ways = 2;
    cfg.tlb.tx_miss_abort_ppm = 300_000;
    let w = WorkloadConfig {
        kind: WorkloadKind::CounterArray,
        sync: SyncKind::Tx,
        increments: 30,
        array_size: 64,
        ..WorkloadConfig::default()
    };
    let a = run(&cfg, &w).unwrap().stats;
    let b = run(&cfg, &w).unwrap().stats;
    assert_eq!(a, b);
    assert!(
        a.tx.aborts.paging > 0,
        "the test must exercise paging aborts"
    );
    assert!(a.tx.restarts > 0);
}
