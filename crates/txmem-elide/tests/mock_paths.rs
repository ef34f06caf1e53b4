//! Every elision-policy path, driven deterministically through the mock HTM backend.

use std::sync::Arc;
use std::thread;
use txmem_elide::htm::{AbortStatus, Htm, MockEvent, MockHtm, MockScript};
use txmem_elide::policy::{CoarsenConfig, RetryConfig};
use txmem_elide::{
    configure_thread, stats, thread_policy, Batch, ElisionStatsExt, RawElidedMutex,
    RawElidedRwLock, TxCondvar,
};

type Mutex<T> = lock_api::Mutex<RawElidedMutex<MockHtm>, T>;
type RwLock<T> = lock_api::RwLock<RawElidedRwLock<MockHtm>, T>;

fn setup(max_attempts: u32, script: MockScript) {
    stats::set_per_lock_counts(true);
    configure_thread(
        RetryConfig {
            max_attempts,
            grow_by: 1,
            max_busy_waits: 4,
        },
        CoarsenConfig {
            threshold: 2,
            max_group: 8,
        },
    );
    MockHtm::install(script);
}

fn wait_for(mut cond: impl FnMut() -> bool) {
    while !cond() {
        thread::yield_now();
    }
}

#[test]
fn commit_path_runs_inside_a_transaction() {
    setup(5, MockScript::new());
    let before = stats::thread();
    let m = Mutex::new(0u32);
    {
        let mut g = m.lock();
        assert!(MockHtm.test(), "section must run transactionally");
        assert!(
            !m.is_locked(),
            "an elided section leaves the lock word free"
        );
        *g += 1;
    }
    assert!(!MockHtm.test());
    assert_eq!(*m.lock(), 1);
    let s = m.elision_stats();
    assert_eq!(
        (s.attempts, s.elided_commits, s.fallback_acquisitions),
        (2, 2, 0)
    );
    assert_eq!(s.aborts.total(), 0);
    let t = stats::thread();
    assert_eq!(t.elided_commits - before.elided_commits, 2);
    assert_eq!(
        MockHtm::events(),
        vec![
            MockEvent::Begin(Ok(())),
            MockEvent::End(true),
            MockEvent::Begin(Ok(())),
            MockEvent::End(true)
        ]
    );
}

#[test]
fn conflicts_are_retried_then_commit() {
    setup(5, MockScript::new().aborts(AbortStatus::conflict(), 2));
    let m = Mutex::new(0u32);
    *m.lock() += 1;
    let s = m.elision_stats();
    assert_eq!(s.attempts, 3);
    assert_eq!(s.aborts.conflict, 2);
    assert_eq!(s.elided_commits, 1);
    assert_eq!(s.fallback_acquisitions, 0);
    // The abort dropped the limit to one; the commit raised it back by one.
    assert_eq!(thread_policy().0.limit(), 2);
}

#[test]
fn conflicts_exhaust_the_budget_then_fall_back() {
    setup(3, MockScript::always(AbortStatus::conflict()));
    let m = Mutex::new(0u32);
    *m.lock() += 1;
    let s = m.elision_stats();
    assert_eq!(
        (s.attempts, s.aborts.conflict, s.fallback_acquisitions),
        (3, 3, 1)
    );
    // The next section gets a single attempt (adaptive limit dropped to 1).
    *m.lock() += 1;
    let s = m.elision_stats();
    assert_eq!((s.attempts, s.fallback_acquisitions), (4, 2));
    assert_eq!(*m.lock(), 2);
}

#[test]
fn adaptive_limit_grows_back_on_commits() {
    setup(
        4,
        MockScript::new()
            .abort(AbortStatus::conflict()) // section 1: abort ...
            .commits(1) //                      ... then commit: limit 1 -> 2
            .aborts(AbortStatus::conflict(), 2), // section 2: budget 2, both abort
    );
    let m = Mutex::new(());
    drop(m.lock());
    assert_eq!(thread_policy().0.limit(), 2);
    drop(m.lock());
    assert_eq!(
        MockHtm::stats().begins,
        4,
        "section 2 used exactly its budget of 2"
    );
    assert_eq!(m.elision_stats().fallback_acquisitions, 1);
    for _ in 0..5 {
        drop(m.lock());
    }
    assert_eq!(thread_policy().0.limit(), 4, "capped at max_attempts");
}

#[test]
fn capacity_abort_falls_back_immediately() {
    setup(5, MockScript::new().abort(AbortStatus::capacity()));
    let m = Mutex::new(0u32);
    {
        let mut g = m.lock();
        assert!(!MockHtm.test(), "fallback sections are not transactional");
        assert!(m.is_locked());
        *g += 1;
    }
    let s = m.elision_stats();
    assert_eq!(
        (s.attempts, s.aborts.capacity, s.fallback_acquisitions),
        (1, 1, 1)
    );
    assert_eq!(thread_policy().0.limit(), 1);
}

#[test]
fn persistent_aborts_fall_back_immediately() {
    for status in [
        AbortStatus::explicit(7),
        AbortStatus::other(),
        AbortStatus::debug(),
    ] {
        setup(5, MockScript::new().abort(status));
        let m = Mutex::new(0u32);
        *m.lock() += 1;
        let s = m.elision_stats();
        assert_eq!((s.attempts, s.fallback_acquisitions), (1, 1), "{status:?}");
        assert_eq!(s.aborts.total(), 1);
    }
}

#[test]
fn lock_busy_waits_outside_then_retries() {
    let m = Arc::new(Mutex::new(0u32));
    // This thread holds the fallback lock (its elision attempt is refused).
    setup(5, MockScript::always(AbortStatus::capacity()));
    let mut held = m.lock();
    assert!(m.is_locked());

    let m2 = m.clone();
    let t = thread::spawn(move || {
        setup(5, MockScript::new());
        *m2.lock() += 1;
        (MockHtm::events(), thread_policy().0.limit())
    });
    wait_for(|| m.elision_stats().aborts.lock_busy == 1);
    *held += 10;
    drop(held);
    let (events, limit) = t.join().unwrap();
    assert_eq!(
        events,
        vec![
            MockEvent::Begin(Ok(())),
            MockEvent::Abort(txmem_elide::htm::LOCK_BUSY_CODE),
            MockEvent::Begin(Ok(())),
            MockEvent::End(true),
        ]
    );
    assert_eq!(limit, 5, "a busy abort does not lower the limit");
    let s = m.elision_stats();
    assert_eq!(s.aborts.lock_busy, 1);
    assert_eq!(s.elided_commits, 1);
    assert_eq!(s.fallback_acquisitions, 1);
    assert_eq!(*m.lock(), 11);
}

#[test]
fn conflict_while_lock_held_exhausts_budget_and_queues() {
    let m = Arc::new(Mutex::new(0u32));
    setup(5, MockScript::always(AbortStatus::capacity()));
    let held = m.lock();
    let m2 = m.clone();
    let t = thread::spawn(move || {
        let watch = m2.clone();
        setup(
            3,
            MockScript::new().abort_while(AbortStatus::conflict(), move || watch.is_locked()),
        );
        *m2.lock() += 1;
        MockHtm::events()
    });
    // 1 attempt by this thread + 3 by the other, then it queues on the fallback lock.
    wait_for(|| m.elision_stats().aborts.conflict == 3);
    drop(held);
    let events = t.join().unwrap();
    assert_eq!(
        events,
        vec![MockEvent::Begin(Err(AbortStatus::conflict())); 3]
    );
    let s = m.elision_stats();
    assert_eq!((s.fallback_acquisitions, s.elided_commits), (2, 0));
}

#[test]
fn nested_sections_flatten_into_one_transaction() {
    setup(5, MockScript::new());
    let a = Mutex::new(1u32);
    let b = Mutex::new(2u32);
    {
        let ga = a.lock();
        let mut gb = b.lock();
        *gb += *ga;
    }
    assert_eq!(a.elision_stats().elided_commits, 1);
    assert_eq!(
        b.elision_stats().elided_commits,
        0,
        "inner commit is not outermost"
    );
    assert_eq!(*b.lock(), 3);
    assert_eq!(MockHtm::stats().commits, 2);
    assert_eq!(
        MockHtm::events()[..3],
        [
            MockEvent::Begin(Ok(())),
            MockEvent::NestedBegin,
            MockEvent::End(false)
        ]
    );
}

#[test]
fn a_thread_never_gets_a_second_guard_of_a_lock_it_holds_elided() {
    setup(5, MockScript::new());
    let m = Mutex::new(0u32);
    {
        let _g = m.lock();
        assert!(MockHtm.test(), "the first guard is elided");
        // A real mutex is held here, so `try_lock` must fail: an elided hold must not
        // hand out a second `&mut` to the same data.
        assert!(m.try_lock().is_none());
    }
    assert!(m.try_lock().is_some(), "free again once the section ended");

    let l = RwLock::new(0u32);
    {
        let _w = l.write();
        assert!(MockHtm.test());
        assert!(l.try_write().is_none(), "write inside an elided write");
        assert!(l.try_read().is_none(), "read inside an elided write");
    }
    {
        let _r = l.read();
        assert!(MockHtm.test());
        assert!(l.try_write().is_none(), "write inside an elided read");
        let again = l.try_read();
        assert!(again.is_some(), "reads may nest");
    }
    assert!(l.try_write().is_some());
}

#[test]
fn coarsening_grows_to_the_maximum() {
    setup(5, MockScript::new());
    let m = Mutex::new(0u64);
    let mut batch = Batch::new(&m);
    for _ in 0..16 {
        batch.run(|x| *x += 1);
    }
    drop(batch);
    assert_eq!(*m.lock(), 16);
    // Groups: 1, 1, then 2, 4, 8 after the threshold of 2 commits.
    assert_eq!(MockHtm::stats().begins, 5 + 1);
    let s = m.elision_stats();
    assert_eq!(s.coarsened_sections, 14);
    assert_eq!(thread_policy().1.group_size(), 8);
}

#[test]
fn coarsening_halves_on_capacity() {
    setup(
        5,
        MockScript::new().commits(4).abort(AbortStatus::capacity()),
    );
    let m = Mutex::new(0u64);
    let mut batch = Batch::new(&m);
    for _ in 0..9 {
        batch.run(|x| *x += 1);
    }
    // Groups 1, 1, 2, 4; the 5th begin (a group of 8) overflowed: section 9 ran on the lock.
    assert_eq!(batch.open_sections(), 0);
    let (_, coarsen) = thread_policy();
    assert_eq!((coarsen.group_size(), coarsen.ceiling()), (4, 4));
    assert_eq!(m.elision_stats().fallback_acquisitions, 1);
    for _ in 0..8 {
        batch.run(|x| *x += 1);
    }
    batch.finish();
    assert_eq!(*m.lock(), 17);
    // Two groups of 4 after the overflow; the ceiling relaxes after 2 commits at it.
    assert_eq!(MockHtm::stats().begins, 7 + 1);
    assert_eq!(thread_policy().1.ceiling(), 8);
    assert_eq!(m.elision_stats().aborts.capacity, 1);
}

#[test]
fn coarsening_stops_on_conflict() {
    setup(
        5,
        MockScript::new().commits(3).abort(AbortStatus::conflict()),
    );
    let m = Mutex::new(0u64);
    let mut batch = Batch::new(&m);
    for _ in 0..4 {
        batch.run(|x| *x += 1);
    }
    assert_eq!(thread_policy().1.group_size(), 4);
    // The next group aborts with a conflict: retried at the natural granularity.
    batch.run(|x| *x += 1);
    assert_eq!(batch.open_sections(), 0, "group of one committed at once");
    assert_eq!(thread_policy().1.group_size(), 1);
    batch.run(|x| *x += 1);
    assert_eq!(
        thread_policy().1.group_size(),
        2,
        "restarts after the threshold"
    );
    drop(batch);
    assert_eq!(*m.lock(), 6);
    let s = m.elision_stats();
    assert_eq!((s.aborts.conflict, s.fallback_acquisitions), (1, 0));
}

#[test]
fn rwlock_readers_and_writers_are_elided() {
    setup(5, MockScript::new());
    let l = RwLock::new(5u32);
    {
        let r = l.read();
        assert!(MockHtm.test());
        assert_eq!(*r, 5);
    }
    *l.write() += 1;
    assert_eq!(*l.read(), 6);
    let s = l.elision_stats();
    assert_eq!((s.elided_commits, s.fallback_acquisitions), (3, 0));
}

#[test]
fn rwlock_writer_waits_for_a_biased_reader() {
    let l = Arc::new(RwLock::new(0u32));
    setup(5, MockScript::always(AbortStatus::capacity()));
    let r = l.read(); // fallback: the biased fast path
    assert!(l.raw_fallback_reader_bias());
    let l2 = l.clone();
    let t = thread::spawn(move || {
        setup(5, MockScript::new());
        *l2.write() += 1;
        MockHtm::events()
    });
    wait_for(|| l.elision_stats().aborts.lock_busy == 1);
    assert_eq!(*r, 0);
    drop(r);
    let events = t.join().unwrap();
    assert_eq!(events.first(), Some(&MockEvent::Begin(Ok(()))));
    assert_eq!(events.last(), Some(&MockEvent::End(true)));
    assert_eq!(*l.read(), 1);
}

trait BiasProbe {
    fn raw_fallback_reader_bias(&self) -> bool;
}

impl<T> BiasProbe for RwLock<T> {
    fn raw_fallback_reader_bias(&self) -> bool {
        // SAFETY: only reads state.
        unsafe { self.raw() }.fallback().reader_bias()
    }
}

#[test]
fn condvar_notification_is_deferred_to_commit() {
    setup(5, MockScript::new());
    let m = Mutex::new(false);
    let cv = TxCondvar::new();
    {
        let mut g = m.lock();
        *g = true;
        cv.notify_one();
        cv.notifier().notify_all();
        assert_eq!(cv.notifications(), 0, "deferred while the section is open");
    }
    assert_eq!(cv.notifications(), 2, "delivered after commit");
    // On the fallback path (no transaction) delivery is immediate.
    MockHtm::install(MockScript::always(AbortStatus::capacity()));
    let _g = m.lock();
    cv.notify_one();
    assert_eq!(cv.notifications(), 3);
}

#[test]
fn mock_stress_mixed_outcomes_never_lose_updates() {
    const THREADS: usize = 2;
    const ITERS: u64 = 2_000;
    let m = Arc::new(Mutex::new((0u64, 0u64)));
    let handles: Vec<_> = (0..THREADS)
        .map(|i| {
            let m = m.clone();
            thread::spawn(move || {
                // A deterministic pattern of outcomes per thread.
                let mut script = MockScript::new();
                for k in 0..ITERS as usize {
                    script = match (k + i) % 5 {
                        0 => script.abort(AbortStatus::conflict()),
                        1 => script.abort(AbortStatus::capacity()),
                        _ => script.commits(1),
                    };
                }
                setup(3, script);
                for _ in 0..ITERS {
                    let mut g = m.lock();
                    g.0 += 1;
                    g.1 += 2;
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let g = m.lock();
    assert_eq!(*g, (THREADS as u64 * ITERS, 2 * THREADS as u64 * ITERS));
    drop(g);
    let s = m.elision_stats();
    assert_eq!(
        s.elided_commits + s.fallback_acquisitions,
        THREADS as u64 * ITERS + 1
    );
    assert!(s.aborts.capacity > 0 && s.aborts.conflict > 0);
}
