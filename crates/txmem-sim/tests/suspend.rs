//! MetaTM xpush/xpop and POWER8 tsuspend/tresume and rollback-only transactions.

mod common;

use common::small;
use txmem_sim::{HtmAbortCause, Sim};

#[test]
fn suspended_transaction_loses_conflict_and_restarts_at_xpop() {
    let mut sim = Sim::new(small(2)).unwrap();
    let x = sim.alloc_lines(1);
    let seen = sim.alloc_lines(1);
    sim.spawn(0, move |cpu| async move {
        let r = cpu
            .xbegin(|cpu| async move {
                cpu.store(x, 1).await;
                cpu.xpush().await;
                assert!(!cpu.xtest(), "suspended transactions are not running");
                cpu.compute(2000).await; // core 1 writes x meanwhile
                cpu.xpop().await;
                unreachable!("xpop must abort a transaction doomed while suspended");
            })
            .await;
        assert_eq!(r.unwrap_err().cause(), HtmAbortCause::Conflict);
        cpu.store(seen, cpu.load(x).await).await;
    });
    sim.spawn(1, move |cpu| async move {
        cpu.compute(500).await;
        // Strong atomicity: the non-transactional store wins; the old value was restored first.
        assert_eq!(cpu.load(x).await, 0);
        cpu.store(x, 7).await;
    });
    let s = sim.run().unwrap();
    assert_eq!(sim.read(seen), 7);
    assert_eq!(s.tx.doomed_while_suspended, 1);
}

#[test]
fn suspended_transaction_without_conflict_commits_after_xpop() {
    let mut sim = Sim::new(small(2)).unwrap();
    let x = sim.alloc_lines(1);
    let y = sim.alloc_lines(1);
    sim.spawn(0, move |cpu| async move {
        cpu.xbegin(|cpu| async move {
            cpu.store(x, 1).await;
            cpu.xpush().await;
            // An independent transaction while the first is suspended.
            cpu.xbegin(|cpu| async move { cpu.store(y, 2).await })
                .await
                .unwrap();
            cpu.xpop().await;
            assert!(cpu.xtest());
            cpu.store(x, 3).await;
        })
        .await
        .unwrap();
    });
    let s = sim.run().unwrap();
    assert_eq!((sim.read(x), sim.read(y)), (3, 2));
    assert_eq!(s.tx.commits, 2);
}

#[test]
fn same_core_conflict_favours_the_newest_transaction() {
    let mut sim = Sim::new(small(1)).unwrap();
    let x = sim.alloc_lines(1);
    sim.spawn(0, move |cpu| async move {
        let r = cpu
            .xbegin(|cpu| async move {
                cpu.store(x, 1).await;
                cpu.xpush().await;
                // The newer, independent transaction conflicts with the suspended one and wins.
                cpu.xbegin(|cpu| async move {
                    let v = cpu.load(x).await;
                    cpu.store(x, v + 10).await;
                })
                .await
                .unwrap();
                cpu.xpop().await;
            })
            .await;
        assert_eq!(r.unwrap_err().cause(), HtmAbortCause::Conflict);
    });
    let s = sim.run().unwrap();
    // The suspended write (1) was rolled back before the newer transaction read x.
    assert_eq!(sim.read(x), 10);
    assert_eq!(s.tx.commits, 1);
    assert_eq!(s.tx.restarts, 1);
}

#[test]
fn xpush_without_transaction_is_balanced_by_xpop() {
    let mut sim = Sim::new(small(1)).unwrap();
    let x = sim.alloc_lines(1);
    sim.spawn(0, move |cpu| async move {
        cpu.xpush().await;
        cpu.xpush().await;
        cpu.transaction(|cpu| async move { cpu.store(x, 4).await })
            .await;
        cpu.xpop().await;
        cpu.xpop().await;
    });
    sim.run().unwrap();
    assert_eq!(sim.read(x), 4);
}

#[test]
#[should_panic(expected = "without a matching xpush")]
fn unbalanced_xpop_is_reported() {
    let mut sim = Sim::new(small(1)).unwrap();
    sim.spawn(0, move |cpu| async move { cpu.xpop().await });
    let _ = sim.run();
}

#[test]
fn tsuspend_accesses_are_not_transactional_and_conflicts_doom_at_tresume() {
    let mut sim = Sim::new(small(2)).unwrap();
    let x = sim.alloc_lines(1);
    let flag = sim.alloc_lines(1);
    let seen = sim.alloc_lines(1);
    sim.spawn(0, move |cpu| async move {
        let r = cpu
            .xbegin(|cpu| async move {
                cpu.store(x, 1).await;
                cpu.tsuspend().await;
                // Non-transactional: survives the abort below.
                cpu.store(flag, 99).await;
                while cpu.load(seen).await == 0 {
                    cpu.compute(50).await;
                }
                cpu.tresume().await;
                unreachable!("a conflict during suspension dooms the transaction at tresume");
            })
            .await;
        assert_eq!(r.unwrap_err().cause(), HtmAbortCause::Conflict);
    });
    sim.spawn(1, move |cpu| async move {
        cpu.compute(300).await;
        // Reading the suspended transaction's write dooms it and sees the old value.
        let v = cpu.load(x).await;
        cpu.store(seen, v + 100).await;
    });
    let s = sim.run().unwrap();
    assert_eq!(sim.read(flag), 99);
    assert_eq!(sim.read(seen), 100);
    assert_eq!(sim.read(x), 0);
    assert_eq!(s.tx.doomed_while_suspended, 1);
}

#[test]
fn tsuspend_without_conflict_commits() {
    let mut sim = Sim::new(small(1)).unwrap();
    let x = sim.alloc_lines(1);
    let y = sim.alloc_lines(1);
    sim.spawn(0, move |cpu| async move {
        cpu.xbegin(|cpu| async move {
            cpu.store(x, 1).await;
            cpu.tsuspend().await;
            cpu.store(y, 2).await;
            cpu.tresume().await;
            cpu.store(x, 3).await;
        })
        .await
        .unwrap();
    });
    sim.run().unwrap();
    assert_eq!((sim.read(x), sim.read(y)), (3, 2));
}

/// Core 0 reads x in a (rollback-only or ordinary) transaction, waits, then writes y; core 1
/// writes x in between. Returns whether core 0's first attempt committed.
fn read_then_remote_write(rot: bool) -> bool {
    let mut sim = Sim::new(small(2)).unwrap();
    let x = sim.alloc_lines(1);
    let y = sim.alloc_lines(1);
    let ok = sim.alloc_lines(1);
    sim.spawn(0, move |cpu| async move {
        let body = |cpu: txmem_sim::Cpu| async move {
            let v = cpu.load(x).await;
            cpu.compute(1000).await;
            cpu.store(y, v + 1).await;
        };
        let r = if rot {
            cpu.xbegin_rot(body).await
        } else {
            cpu.xbegin(body).await
        };
        cpu.store(ok, u64::from(r.is_ok())).await;
    });
    sim.spawn(1, move |cpu| async move {
        cpu.compute(400).await;
        cpu.store(x, 5).await;
    });
    sim.run().unwrap();
    sim.read(ok) == 1
}

#[test]
fn rollback_only_transactions_do_not_track_loads() {
    assert!(
        read_then_remote_write(true),
        "a ROT's loads are not tracked"
    );
    assert!(
        !read_then_remote_write(false),
        "an ordinary transaction's loads are"
    );
}

#[test]
fn rollback_only_stores_are_tracked_and_buffered() {
    let mut sim = Sim::new(small(2)).unwrap();
    let y = sim.alloc_lines(1);
    let seen = sim.alloc_lines(1);
    sim.spawn(0, move |cpu| async move {
        let r = cpu
            .xbegin_rot(|cpu| async move {
                cpu.store(y, 1).await;
                cpu.compute(1000).await;
            })
            .await;
        assert_eq!(r.unwrap_err().cause(), HtmAbortCause::Conflict);
    });
    sim.spawn(1, move |cpu| async move {
        cpu.compute(300).await;
        let v = cpu.load(y).await;
        cpu.store(seen, v + 10).await;
    });
    let s = sim.run().unwrap();
    assert_eq!(sim.read(seen), 10, "the buffered store was never visible");
    assert_eq!(sim.read(y), 0);
    assert_eq!(s.tx.rot_commits, 0);
}

#[test]
#[should_panic(expected = "every tsuspend needs a tresume")]
fn body_ending_while_suspended_is_reported() {
    let mut sim = Sim::new(small(1)).unwrap();
    sim.spawn(0, move |cpu| async move {
        let _ = cpu.xbegin(|cpu| async move { cpu.tsuspend().await }).await;
    });
    let _ = sim.run();
}
