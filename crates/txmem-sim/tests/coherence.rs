//! Coherence invariants checked at every step (`check_invariants`): at most one writer or
//! many readers per line, private caches agree with the protocol (a sparse directory has an
//! entry for every cached line, Flask's filter has no false negative), and every load returns
//! the last committed store. Random programs of loads, stores (plain or overlapped), CAS and
//! transactions, under MESI snooping, a sparse directory, Flask, MOSAIC or TokenB (on an ideal
//! network or a mesh), with an inclusive or exclusive L2 or none.

mod common;

use common::small;
use proptest::prelude::*;
use txmem_sim::config::{Detection, Granularity, ProtocolKind, Topology, Versioning};
use txmem_sim::Sim;

#[derive(Clone, Debug)]
enum Step {
    Load(u64),
    Store(u64, u64),
    Cas(u64, u64),
    Add(u64),
    Tx(Vec<(u64, bool)>),
    Think(u64),
}

fn step() -> impl Strategy<Value = Step> {
    // 48 words over 24 lines spread across the small L1 sets (so evictions happen).
    let addr = 0u64..48;
    prop_oneof![
        addr.clone().prop_map(Step::Load),
        (addr.clone(), 0u64..5).prop_map(|(a, v)| Step::Store(a, v)),
        (addr.clone(), 0u64..5).prop_map(|(a, v)| Step::Cas(a, v)),
        addr.clone().prop_map(Step::Add),
        proptest::collection::vec((addr, any::<bool>()), 1..5).prop_map(Step::Tx),
        (0u64..30).prop_map(Step::Think),
    ]
}

fn addr_of(base: u64, i: u64) -> u64 {
    // Word i lives in line i / 2, lines 512 bytes apart (a few L1 sets, many conflicts).
    base + (i / 2) * 512 + (i % 2) * 8
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]
    #[test]
    fn invariants_hold_at_every_step(
        programs in proptest::collection::vec(proptest::collection::vec(step(), 1..25), 2..5),
        mode in 0usize..3,
        word in any::<bool>(),
        l2 in 0usize..3,
        directory in prop_oneof![Just(None), (0usize..4, 1u32..40, 1u32..4).prop_map(Some)],
        mesh in any::<bool>(),
        overlapped in any::<bool>(),
    ) {
        let mut cfg = small(programs.len());
        (cfg.htm.versioning, cfg.htm.detection) = [
            (Versioning::Eager, Detection::Eager),
            (Versioning::Lazy, Detection::Eager),
            (Versioning::Lazy, Detection::Lazy),
        ][mode];
        if word {
            cfg.htm.granularity = Granularity::Word;
        }
        if l2 > 0 {
            // Inclusive of the L1, or its victim cache.
            cfg.l2.enabled = true;
            cfg.l2.cache.size_bytes = 4096;
            cfg.l2.cache.ways = 2;
            cfg.l2.exclusive = l2 == 2;
        }
        if let Some((protocol, coverage, ways)) = directory {
            // A directory far smaller than the caches: a sparse one recalls all the time,
            // Flask's and MOSAIC's lose entries and reconstruct them (TokenB has none).
            cfg.coherence.protocol = [
                ProtocolKind::SparseDirectory,
                ProtocolKind::Flask,
                ProtocolKind::Mosaic,
                ProtocolKind::TokenB,
            ][protocol];
            cfg.coherence.directory_coverage_pct = coverage;
            cfg.coherence.directory_ways = ways;
            if mesh {
                cfg.network.topology = Topology::Mesh;
                (cfg.network.mesh_width, cfg.network.mesh_height) = (2, 2);
                cfg.llc_banks = 4;
            }
        }
        let mut sim = Sim::new(cfg).unwrap();
        let base = sim.alloc(24 * 512, 512);
        let adds = sim.alloc_lines(1);
        let mut expected_adds = 0;
        for (core, prog) in programs.into_iter().enumerate() {
            expected_adds += prog.iter().filter(|s| matches!(s, Step::Add(_))).count() as u64;
            sim.spawn(core, move |cpu| async move {
                for s in prog {
                    match s {
                        // Overlapped accesses take effect when issued, like the others.
                        Step::Load(a) if overlapped => {
                            cpu.load_overlapped(addr_of(base, a)).await;
                        }
                        Step::Store(a, v) if overlapped => {
                            cpu.store_overlapped(addr_of(base, a), v).await;
                        }
                        Step::Load(a) => { cpu.load(addr_of(base, a)).await; }
                        Step::Store(a, v) => cpu.store(addr_of(base, a), v).await,
                        Step::Cas(a, v) => { cpu.cas(addr_of(base, a), v, v + 1).await; }
                        Step::Add(a) => {
                            cpu.fetch_add(addr_of(base, a), 0).await;
                            cpu.fetch_add(adds, 1).await;
                        }
                        Step::Tx(ops) => {
                            let ops = ops.clone();
                            cpu.transaction(|cpu| {
                                let ops = ops.clone();
                                async move {
                                    for (a, w) in ops {
                                        let v = cpu.load(addr_of(base, a)).await;
                                        if w {
                                            cpu.store(addr_of(base, a), v + 1).await;
                                        }
                                    }
                                }
                            })
                            .await;
                        }
                        Step::Think(c) => cpu.compute(c).await,
                    }
                }
            });
        }
        // Invariants are asserted inside the simulator after every access.
        let s = sim.run().unwrap();
        prop_assert_eq!(sim.read(adds), expected_adds);
        prop_assert!(!s.timed_out);
    }
}

/// A sparse directory that covers a tenth of the caches' lines recalls lines all the time;
/// the counters stay exact (the workload checks them), the invariants hold at every access,
/// and recalls of transactional lines abort those transactions. One with twice the caches'
/// lines never recalls here.
#[test]
fn a_small_sparse_directory_recalls_and_keeps_totals_exact() {
    use txmem_sim::workloads::{run, SyncKind, WorkloadConfig, WorkloadKind};
    for sync in [SyncKind::Spinlock, SyncKind::Tx] {
        for coverage in [200, 10] {
            let mut cfg = txmem_sim::SimConfig {
                cores: 4,
                check_invariants: true,
                ..txmem_sim::SimConfig::default()
            };
            cfg.coherence.protocol = ProtocolKind::SparseDirectory;
            cfg.coherence.directory_coverage_pct = coverage;
            let w = WorkloadConfig {
                kind: WorkloadKind::CounterArray,
                sync,
                increments: 300,
                array_size: 1024,
                ..WorkloadConfig::default()
            };
            let r = run(&cfg, &w).unwrap();
            let c = &r.stats.coherence;
            if coverage == 200 {
                assert_eq!(c.directory_recalls, 0, "{sync:?}");
            } else {
                assert!(c.directory_recalls > 1000, "{sync:?}: {c:?}");
                assert_eq!(c.recall_invalidations, c.directory_recalls, "one copy each");
            }
        }
    }
}

/// A recall takes a line from a running transaction, which aborts for capacity: the
/// directory here has one entry, and core 1's access needs it while core 0's transaction
/// holds the line it tracks.
#[test]
fn a_recall_aborts_the_transaction_that_tracked_the_line() {
    use std::cell::Cell;
    use std::rc::Rc;
    let mut cfg = small(2);
    cfg.coherence.protocol = ProtocolKind::SparseDirectory;
    cfg.coherence.directory_coverage_pct = 1;
    cfg.coherence.directory_ways = 1;
    let mut sim = Sim::new(cfg).unwrap();
    let (a, b) = (sim.alloc_lines(1), sim.alloc_lines(1));
    let cause = Rc::new(Cell::new(None));
    let seen = cause.clone();
    sim.spawn(0, move |cpu| async move {
        let r = cpu
            .xbegin(|cpu| async move {
                cpu.load(a).await;
                cpu.compute(5_000).await;
            })
            .await;
        seen.set(Some(r.map_err(|st| st.cause())));
    });
    sim.spawn(1, move |cpu| async move {
        cpu.compute(1_000).await;
        cpu.load(b).await;
    });
    let s = sim.run().unwrap();
    assert_eq!(cause.get(), Some(Err(txmem_sim::HtmAbortCause::Capacity)));
    assert_eq!(s.coherence.directory_recalls, 1);
}

/// Flask keeps its counters exact and its filter free of false negatives (checked at every
/// access) with a directory of a fifth of the caches' lines (40% of SDE storage, half of it
/// filter); it reconstructs shared lines instead of recalling them, and its reconstructions
/// mostly find the line on chip.
#[test]
fn flask_with_a_small_directory_reconstructs_instead_of_recalling() {
    let c = flask_counter_array(40);
    assert_eq!((c.directory_recalls, c.filter_overflows), (0, 0));
    assert!(c.directory_evictions > 0, "{c:?}");
    assert!(c.reconstructions > 0, "{c:?}");
    assert_eq!(c.reconstructions, c.multicasts_true + c.multicasts_false);
    assert!(c.multicasts_false * 10 < c.reconstructions, "{c:?}");
}

/// At 5% SDE the filter has fewer cells than the caches have lines: inserts overflow, and
/// Flask empties the buckets concerned by recalling their lines. Totals stay exact and the
/// filter never has a false negative (checked at every access).
#[test]
fn flask_with_a_tiny_filter_recalls_to_keep_it_exact() {
    let c = flask_counter_array(5);
    assert!(c.filter_overflows > 0, "{c:?}");
    assert!(c.filter_invalidations >= c.filter_overflows, "{c:?}");
    assert_eq!(c.directory_recalls, 0);
}

fn flask_counter_array(coverage: u32) -> txmem_sim::stats::CoherenceStats {
    use txmem_sim::workloads::{run, SyncKind, WorkloadConfig, WorkloadKind};
    let mut cfg = txmem_sim::SimConfig {
        cores: 4,
        check_invariants: true,
        ..txmem_sim::SimConfig::default()
    };
    cfg.coherence.protocol = ProtocolKind::Flask;
    cfg.coherence.directory_coverage_pct = coverage;
    let w = WorkloadConfig {
        kind: WorkloadKind::CounterArray,
        sync: SyncKind::Tx,
        increments: 300,
        array_size: 1024,
        ..WorkloadConfig::default()
    };
    run(&cfg, &w).unwrap().stats.coherence
}
