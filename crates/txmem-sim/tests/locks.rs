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
    run_split(kind, false, threads, sections, write_pct, seed)
}

/// [`run`], with RW-LE's split lock on or off.
fn run_split(
    kind: LockKind,
    split: bool,
    threads: usize,
    sections: u64,
    write_pct: u64,
    seed: u64,
) -> Outcome {
    let mut cfg = small(threads);
    cfg.seed = seed;
    let mut sim = Sim::new(cfg).unwrap();
    let lock = AnyLock::new(kind, &mut sim, threads, split);
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

/// The split lock lets HTM writers run beside a ROT writer: exclusion and exact totals hold
/// all the same, and runs are deterministic.
#[test]
fn the_split_lock_excludes_and_counts_exactly() {
    for kind in [LockKind::RwLeOpt, LockKind::RwLePes] {
        for (pct, seed) in [(10, 7), (50, 8), (90, 9)] {
            let o = run_split(kind, true, 4, 150, pct, seed);
            paths_add_up(kind, &o.locks);
            let again = run_split(kind, true, 4, 150, pct, seed);
            assert_eq!(o.locks, again.locks, "{kind:?}");
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
            LockKind::RwLe1 | LockKind::RwLeOpt | LockKind::RwLeNoRot | LockKind::RwLeFair => {
                assert_eq!((s.htm_commits, s.uninstrumented_reads), (w, r))
            }
            LockKind::RwLePes => assert_eq!((s.rot_commits, s.uninstrumented_reads), (w, r)),
        }
    }
}

/// Exact path counts of two threads × 10 sections, half of them writes, on a tiny machine
/// (the simulator is deterministic). Every section touches the same pair of lines, so the
/// speculative writers conflict a lot; the numbers hang together as noted.
#[test]
fn tiny_two_thread_runs_have_exact_path_counts() {
    let count = |kind| {
        let o = run(kind, 2, 10, 50, 1);
        assert_eq!((o.writes, o.locks.read_sections), (11, 9), "{kind:?}");
        o.locks
    };
    // TLE: 14 sections ran under the lock, each after exactly 5 aborted attempts (70), and
    // one more attempt aborted before its section committed. Each fallback's lock store
    // aborts the other thread's subscribed transaction, so fallbacks cascade (the lemming
    // effect): lock-busy aborts never happen because the thread waits for a free lock first.
    let s = count(LockKind::Tle);
    assert_eq!((s.htm_commits, s.locked_sections), (6, 14));
    assert_eq!(
        (s.aborts.conflict, s.aborts.total(), s.lock_busy_aborts),
        (71, 71, 0)
    );
    // RW-LE OPT: 6 writers used up their 5 HTM tries (30 aborts) and committed as ROTs, 5
    // committed in HTM after 3 more aborts in all; no writer reached the NS path.
    let s = count(LockKind::RwLeOpt);
    assert_eq!((s.htm_commits, s.rot_commits, s.locked_sections), (5, 6, 0));
    assert_eq!(
        (s.aborts.conflict, s.aborts.total(), s.rot_aborts),
        (33, 33, 0)
    );
    assert_eq!((s.uninstrumented_reads, s.quiescence_waits), (9, 3));
    // RW-LE PES: every writer committed as a ROT, 8 ROT attempts aborted (readers hitting
    // the write set), none used all 5 tries.
    let s = count(LockKind::RwLePes);
    assert_eq!(
        (s.htm_commits, s.rot_commits, s.locked_sections),
        (0, 11, 0)
    );
    assert_eq!(
        (s.aborts.conflict, s.aborts.total(), s.rot_aborts),
        (8, 8, 8)
    );
    assert_eq!((s.uninstrumented_reads, s.quiescence_waits), (9, 2));
    // RW-LE Algorithm 1: blind retry, so every writer commits in HTM, after 6 aborts in all.
    let s = count(LockKind::RwLe1);
    assert_eq!(
        (s.htm_commits, s.aborts.conflict, s.aborts.total()),
        (11, 6, 6)
    );
    assert_eq!((s.uninstrumented_reads, s.quiescence_waits), (9, 4));
    // Algorithm 2 without ROTs: 6 writers used up their 5 HTM tries (30 aborts) and took
    // the NS path; the 5 HTM commits took 3 more aborts.
    let s = count(LockKind::RwLeNoRot);
    assert_eq!(
        (s.htm_commits, s.locked_sections, s.aborts.total()),
        (5, 6, 33)
    );
    assert_eq!((s.causes.htm_conflict, s.causes.non_tx), (23, 10));
    // FAIR: 4 NS writers (20 aborts) and 7 HTM commits after 2 more.
    let s = count(LockKind::RwLeFair);
    assert_eq!(
        (s.htm_commits, s.locked_sections, s.aborts.total()),
        (7, 4, 22)
    );
    assert_eq!((s.causes.htm_conflict, s.causes.non_tx), (14, 8));
    // OPT with the split lock: 2 writers reached NS after 5 HTM and 5 ROT aborts each (20),
    // 3 committed as ROTs after 5 HTM aborts each (15) and 2 ROT aborts between them, and 6
    // committed in HTM after 3 more aborts: 40 in all, 12 of them ROTs'.
    let o = run_split(LockKind::RwLeOpt, true, 2, 10, 50, 1);
    let s = &o.locks;
    assert_eq!(o.writes, 11);
    assert_eq!((s.htm_commits, s.rot_commits, s.locked_sections), (6, 3, 2));
    assert_eq!((s.aborts.total(), s.rot_aborts), (40, 12));
    assert_eq!(
        (
            s.causes.htm_conflict,
            s.causes.rot_conflict,
            s.causes.non_tx
        ),
        (20, 10, 10)
    );
}

/// The torn-pair check bites: HTM writers that commit *without* RW-LE's quiescence, beside
/// uninstrumented readers, let a reader see the pair half updated.
#[test]
#[should_panic(expected = "reader saw a torn pair")]
fn the_pair_check_catches_writers_that_skip_quiescence() {
    let mut sim = Sim::new(small(2)).unwrap();
    let a = sim.alloc_lines(1);
    let b = sim.alloc_lines(1);
    sim.spawn(0, move |cpu| async move {
        cpu.compute(100).await; // the reader has read `a` by now
        cpu.transaction(|cpu| async move {
            let va = cpu.load(a).await;
            cpu.store(a, va + 1).await;
            let vb = cpu.load(b).await;
            cpu.store(b, vb + 1).await;
        })
        .await;
    });
    sim.spawn(1, move |cpu| async move {
        let va = cpu.load(a).await;
        cpu.compute(2000).await;
        let vb = cpu.load(b).await;
        assert_eq!(va, vb, "reader saw a torn pair");
    });
    sim.run().unwrap();
}
