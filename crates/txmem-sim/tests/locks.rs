//! The lock algorithms of `txmem_sim::locks` on small machines: exclusion, exact totals,
//! determinism, and exact path counts on tiny configurations.

mod common;

use common::small;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use txmem_sim::locks::{AnyLock, LockKind, LockStats, RwLockAlgo};
use txmem_sim::{Sim, Stats};

/// Host-side shadow of the *non-speculative* sections inside: a section that runs outside
/// any transaction registers here, and asserts exclusion at every access.
#[derive(Default)]
struct Shadow {
    readers: Cell<i64>,
    writers: Cell<i64>,
}

/// A run's result: summed lock statistics, the machine's statistics, write sections done.
struct Outcome {
    locks: LockStats,
    sim: Stats,
    writes: u64,
}

/// `threads` threads each run `sections` sections, `write_pct`% of them writes, under
/// algorithm `kind`. A write section increments two words on different lines (a pair that
/// must always be seen equal); a read section reads both and asserts they are equal.
fn run(kind: LockKind, threads: usize, sections: u64, write_pct: u64, seed: u64) -> Outcome {
    let mut cfg = small(threads);
    cfg.seed = seed;
    let mut sim = Sim::new(cfg).unwrap();
    let lock = AnyLock::new(kind, &mut sim, threads);
    let a = sim.alloc_lines(1);
    let b = sim.alloc_lines(1);
    let shadow = Rc::new(Shadow::default());
    let total = Rc::new(RefCell::new(LockStats::default()));
    let writes = Rc::new(Cell::new(0u64));
    for core in 0..threads {
        let mut lock = lock.clone();
        let (shadow, total, writes) = (shadow.clone(), total.clone(), writes.clone());
        sim.spawn(core, move |cpu| async move {
            for _ in 0..sections {
                let work = 10 + cpu.random_below(40);
                if cpu.random_below(100) < write_pct {
                    let sh = &shadow;
                    lock.write(&cpu, |cpu| async move {
                        let spec = cpu.xtest();
                        let check = |d: i64| {
                            if !spec {
                                sh.writers.set(sh.writers.get() + d);
                                assert_eq!(sh.writers.get(), i64::from(d >= 0), "two writers");
                                assert_eq!(sh.readers.get(), 0, "writer beside readers");
                            }
                        };
                        check(1);
                        let va = cpu.load(a).await;
                        check(0);
                        cpu.store(a, va + 1).await;
                        check(0);
                        cpu.compute(work).await;
                        let vb = cpu.load(b).await;
                        check(0);
                        assert_eq!(va, vb, "writer saw a torn pair");
                        cpu.store(b, vb + 1).await;
                        check(-1);
                    })
                    .await;
                    writes.set(writes.get() + 1);
                } else {
                    let sh = &shadow;
                    lock.read(&cpu, |cpu| async move {
                        let spec = cpu.xtest();
                        let check = |d: i64| {
                            if !spec {
                                sh.readers.set(sh.readers.get() + d);
                                assert_eq!(sh.writers.get(), 0, "reader beside a writer");
                            }
                        };
                        check(1);
                        let va = cpu.load(a).await;
                        check(0);
                        cpu.compute(work).await;
                        let vb = cpu.load(b).await;
                        check(0);
                        assert_eq!(va, vb, "reader saw a torn pair");
                        check(-1);
                    })
                    .await;
                }
            }
            *total.borrow_mut() += lock.stats();
        });
    }
    let stats = sim.run().unwrap();
    let writes = writes.get();
    assert_eq!(sim.read(a), writes, "{kind:?}: lost or extra writes");
    assert_eq!(sim.read(b), writes, "{kind:?}: lost or extra writes");
    let locks = total.borrow().clone();
    assert_eq!(locks.write_sections, writes);
    assert_eq!(locks.sections(), threads as u64 * sections);
    Outcome {
        locks,
        sim: stats,
        writes,
    }
}

/// Every section went through exactly one path.
fn paths_add_up(kind: LockKind, s: &LockStats) {
    let paths = s.htm_commits + s.rot_commits + s.locked_sections + s.uninstrumented_reads;
    assert_eq!(paths, s.sections(), "{kind:?}: {s:?}");
}

#[test]
fn every_algorithm_excludes_and_counts_exactly() {
    for kind in LockKind::ALL {
        for pct in [10, 50] {
            let o = run(kind, 4, 150, pct, 7);
            paths_add_up(kind, &o.locks);
            assert!(o.writes > 0);
            eprintln!("{kind:?} {pct}%: {:?}", o.locks);
        }
    }
}

#[test]
fn every_algorithm_is_deterministic() {
    for kind in LockKind::ALL {
        let (x, y) = (run(kind, 4, 100, 30, 3), run(kind, 4, 100, 30, 3));
        assert_eq!(x.locks, y.locks, "{kind:?}");
        assert_eq!(x.sim, y.sim, "{kind:?}");
        assert_eq!(x.writes, y.writes);
    }
}

#[test]
fn a_single_thread_never_aborts_nor_falls_back() {
    for kind in LockKind::ALL {
        let o = run(kind, 1, 50, 30, 5);
        let s = &o.locks;
        assert_eq!(s.aborts.total(), 0, "{kind:?}");
        assert_eq!(s.quiescence_waits, 0, "{kind:?}");
        let (w, r) = (s.write_sections, s.read_sections);
        match kind {
            LockKind::Sgl | LockKind::PthreadRw | LockKind::BrLock => {
                assert_eq!(s.locked_sections, w + r)
            }
            LockKind::Tle => assert_eq!((s.htm_commits, s.locked_sections), (w + r, 0)),
            LockKind::RwLe1 | LockKind::RwLeOpt => {
                assert_eq!((s.htm_commits, s.uninstrumented_reads), (w, r))
            }
            LockKind::RwLePes => assert_eq!((s.rot_commits, s.uninstrumented_reads), (w, r)),
        }
    }
}
