//! Elision on real Intel RTM: the paths the mock backend cannot show (real rollback of
//! registers and memory, conflict and capacity aborts raised by the hardware, `xtest`, flat
//! nesting, lock subscription). Each test runs only where txmem-elide's detection found
//! usable RTM, and says on stderr why it did nothing otherwise.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;

use crossbeam_utils::CachePadded;
use txmem_elide::htm::{Htm, HtmAbortCause, Rtm, RtmVerdict};
use txmem_elide::{ElidedMutex, ElidedRwLock, ElisionStatsExt};

fn rtm_usable(test: &str) -> bool {
    let d = Rtm::detection();
    if d.verdict != RtmVerdict::Usable {
        eprintln!("{test}: skipped, RTM is not usable here ({:?})", d.verdict);
        return false;
    }
    // The tests read per-lock attempts and commits.
    txmem_elide::stats::set_per_lock_counts(true);
    true
}

/// Hardware transactions abort now and then for reasons of their own (interrupts, page
/// faults): a test that needs one to start tries a few times.
fn begin_eventually() -> bool {
    (0..1000).any(|_| Rtm.begin().is_ok())
}

#[test]
fn xbegin_xend_xtest_and_rollback() {
    if !rtm_usable("xbegin_xend_xtest_and_rollback") {
        return;
    }
    assert!(!Rtm.test());
    assert!(begin_eventually());
    assert!(Rtm.test(), "xtest inside a transaction");
    Rtm.end();
    assert!(!Rtm.test());

    // An explicit abort rolls back memory and reports its code.
    static CELL: AtomicU64 = AtomicU64::new(7);
    let mut seen_code = false;
    for _ in 0..1000 {
        match Rtm.begin() {
            Ok(()) => {
                CELL.store(99, Ordering::Relaxed);
                Rtm.abort(0x42);
                unreachable!("xabort inside a transaction does not return");
            }
            Err(status) => {
                assert_eq!(CELL.load(Ordering::Relaxed), 7, "the store was rolled back");
                if status.code() == Some(0x42) {
                    assert_eq!(status.cause(), HtmAbortCause::Explicit(0x42));
                    seen_code = true;
                    break;
                }
            }
        }
    }
    assert!(seen_code, "an explicit abort reports its code");
}

#[test]
fn nested_transactions_commit_at_the_outermost_end() {
    if !rtm_usable("nested_transactions_commit_at_the_outermost_end") {
        return;
    }
    static CELL: AtomicU64 = AtomicU64::new(0);
    loop {
        if Rtm.begin().is_err() {
            continue;
        }
        CELL.store(1, Ordering::Relaxed);
        if Rtm.begin().is_err() {
            unreachable!("a nested begin inside a running transaction cannot fail by itself");
        }
        CELL.store(2, Ordering::Relaxed);
        Rtm.end();
        assert!(Rtm.test(), "the inner end does not commit");
        Rtm.end();
        break;
    }
    assert!(!Rtm.test());
    assert_eq!(CELL.load(Ordering::Relaxed), 2);
}

#[test]
fn uncontended_sections_commit_in_hardware() {
    if !rtm_usable("uncontended_sections_commit_in_hardware") {
        return;
    }
    let m = ElidedMutex::<u64>::new(0);
    const N: u64 = 20_000;
    for _ in 0..N {
        *m.lock() += 1;
    }
    assert_eq!(*m.lock(), N);
    let s = m.elision_stats();
    assert_eq!(s.elided_commits + s.fallback_acquisitions, N + 1);
    // Interrupts abort the odd section; nearly all commit in hardware.
    assert!(
        s.elided_commits >= N * 9 / 10,
        "only {} of {N} sections elided: {s:?}",
        s.elided_commits
    );
}

#[test]
fn a_write_set_larger_than_the_cache_never_commits_in_hardware_and_falls_back() {
    if !rtm_usable("a_write_set_larger_than_the_cache_never_commits_in_hardware_and_falls_back") {
        return;
    }
    // 8 MiB, far beyond any L1 data cache (RTM tracks the write set there).
    let m = ElidedMutex::<Vec<u8>>::new(vec![0; 8 << 20]);
    for round in 1..=3u8 {
        let mut g = m.lock();
        for line in g.chunks_mut(64) {
            line[0] = round;
        }
    }
    // Counted before the check below, whose 8 MiB read set may fit where the writes did not.
    let s = m.elision_stats();
    eprintln!("8 MiB write sets: {s:?}");
    assert!(m.lock().chunks(64).all(|line| line[0] == 3));
    // The cause the hardware reports for such an abort varies by part and by what the
    // sibling hyperthread does: the capacity bit on an idle core, the conflict bit when an
    // eviction was forced from outside, no bit at all for the page faults of the first
    // round. What is certain is that none of them commits and each falls back.
    assert_eq!(s.elided_commits, 0, "{s:?}");
    assert!(s.fallback_acquisitions >= 3, "{s:?}");
    let a = &s.aborts;
    assert!(a.capacity + a.conflict + a.other >= 3, "{s:?}");
    assert_eq!(a.explicit + a.debug, 0, "{s:?}");
}

#[test]
fn conflicting_sections_lose_no_updates() {
    if !rtm_usable("conflicting_sections_lose_no_updates") {
        return;
    }
    let m = ElidedMutex::<u64>::new(0);
    const PER_THREAD: u64 = 200_000;
    let start = Barrier::new(2);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                start.wait();
                for _ in 0..PER_THREAD {
                    *m.lock() += 1;
                }
            });
        }
    });
    assert_eq!(*m.lock(), 2 * PER_THREAD);
    let s = m.elision_stats();
    assert_eq!(
        s.elided_commits + s.fallback_acquisitions,
        2 * PER_THREAD + 1
    );
    eprintln!("one shared counter, 2 threads: {s:?}");
}

#[test]
fn disjoint_sections_under_one_lock_mostly_elide() {
    if !rtm_usable("disjoint_sections_under_one_lock_mostly_elide") {
        return;
    }
    // Each thread updates its own cache line under the same lock: nothing conflicts but
    // the lock, which elision leaves untouched.
    let m = ElidedMutex::<[CachePadded<u64>; 2]>::new([CachePadded::new(0), CachePadded::new(0)]);
    const PER_THREAD: u64 = 200_000;
    let start = Barrier::new(2);
    std::thread::scope(|s| {
        for t in 0..2 {
            let (m, start) = (&m, &start);
            s.spawn(move || {
                start.wait();
                for _ in 0..PER_THREAD {
                    *m.lock()[t] += 1;
                }
            });
        }
    });
    let g = m.lock();
    assert_eq!((*g[0], *g[1]), (PER_THREAD, PER_THREAD));
    drop(g);
    let s = m.elision_stats();
    eprintln!("disjoint lines, 2 threads: {s:?}");
    assert!(
        s.elided_commits >= PER_THREAD,
        "fewer than half of the sections elided: {s:?}"
    );
}

#[test]
fn elided_readers_and_writers_keep_a_pair_consistent() {
    if !rtm_usable("elided_readers_and_writers_keep_a_pair_consistent") {
        return;
    }
    let l = ElidedRwLock::<(u64, u64)>::new((0, 0));
    const WRITES: u64 = 50_000;
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 1..=WRITES {
                let mut g = l.write();
                g.0 = i;
                g.1 = i;
            }
        });
        s.spawn(|| {
            let mut last = 0;
            while last < WRITES {
                let g = l.read();
                assert_eq!(g.0, g.1, "a reader saw half a write");
                assert!(g.0 >= last, "values went backwards");
                last = g.0;
            }
        });
    });
    let s = l.elision_stats();
    eprintln!("rwlock pair: {s:?}");
    assert!(s.elided_commits > 0, "{s:?}");
}
