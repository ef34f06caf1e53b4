//! `or_else` and what a rolled-back branch leaves behind.
//!
//! A branch that retries is undone, but what it *saw* stays part of the
//! transaction: the choice of the second branch depends on it. The subtle
//! case is an insert that reports its key absent: it records no read (so
//! that inserts of distinct keys never conflict) and relies on its
//! placeholder to keep the key absent. These tests force the interleavings
//! in which a rollback could lose that absence, or keep a read that its
//! own rollback then invalidates, on each map and set, in every opacity
//! mode.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use txmem::{atomically, Opacity, TBTreeMap, THashMap, TListSet, TMap, TSet, TxOptions};

const MODES: [Opacity; 3] = [Opacity::Tl2, Opacity::Revalidate, Opacity::None];
const K: u64 = 42;

/// How the first branch inserts the absent key.
#[derive(Clone, Copy, Debug)]
enum Insert {
    /// `insert`, which returns the old value (`None`: absent).
    Swap,
    /// `insert_if_absent`, which returns whether the key was absent.
    IfAbsent,
}

impl Insert {
    /// Inserts `K → 1`; true if the key was absent.
    fn run<'e, M: TMap<u64, u64>>(
        self,
        m: &'e M,
        tx: &mut txmem::Transaction<'e>,
    ) -> txmem::TxResult<bool> {
        match self {
            Insert::Swap => Ok(m.insert(tx, K, 1)?.is_none()),
            Insert::IfAbsent => m.insert_if_absent(tx, K, 1),
        }
    }
}

/// Runs `f` on another thread and waits for it at most `limit`: the
/// other thread may have to wait for the calling transaction to end.
fn on_another_thread(limit: Duration, f: impl FnOnce() + Send + 'static) -> bool {
    let (done_tx, done_rx) = mpsc::channel();
    thread::spawn(move || {
        f();
        let _ = done_tx.send(());
    });
    done_rx.recv_timeout(limit).is_ok()
}

/// The interleaving of the issue: the first branch inserts the absent key
/// and retries; another thread inserts the key and commits; the second
/// branch reads it. A commit that saw the key absent in the first branch
/// and present in the second is not serializable.
fn absence_survives_rollback<M: TMap<u64, u64> + 'static>(make: fn() -> M) {
    for mode in MODES {
        for insert in [Insert::Swap, Insert::IfAbsent] {
            let m: &'static M = Box::leak(Box::new(make()));
            let opts = TxOptions::new().opacity(mode);
            let first_attempt = Cell::new(true);
            let saw_absent = Cell::new(false);
            let other_done = Cell::new(false);
            let got = opts.run(|tx| {
                tx.or_else(
                    |tx| {
                        saw_absent.set(insert.run(m, tx)?);
                        Err(tx.retry())
                    },
                    |tx| {
                        if first_attempt.replace(false) {
                            // Another thread commits the same key now. It
                            // may have to wait for this transaction (the
                            // key's absence is still ours): then it ends
                            // after it, which is serializable too.
                            other_done.set(on_another_thread(Duration::from_millis(300), || {
                                atomically(|tx| m.insert_if_absent(tx, K, 7));
                            }));
                        }
                        m.get(tx, &K)
                    },
                )
            });
            assert!(
                !(saw_absent.get() && got == Some(7)),
                "{mode:?}, {insert:?}: the committed attempt saw key {K} absent in its first \
                 branch and another transaction's value in its second (other thread finished \
                 inside: {})",
                other_done.get()
            );
            // The other thread's insert lands in the end, whoever went first.
            let deadline = Instant::now() + Duration::from_secs(10);
            while m.load(&K).is_none() {
                assert!(Instant::now() < deadline, "the other insert never landed");
                thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(m.load(&K), Some(7), "{mode:?}, {insert:?}");
        }
    }
}

#[test]
fn thashmap_keeps_an_absence_its_rolled_back_insert_reported() {
    absence_survives_rollback(THashMap::<u64, u64>::new);
}

#[test]
fn tbtreemap_keeps_an_absence_its_rolled_back_insert_reported() {
    absence_survives_rollback(TBTreeMap::<u64, u64>::new);
}

#[test]
fn tlistset_keeps_an_absence_its_rolled_back_insert_reported() {
    for mode in MODES {
        let s: &'static TListSet<u64> = Box::leak(Box::new(TListSet::new()));
        let first_attempt = Cell::new(true);
        let saw_absent = Cell::new(false);
        let present = TxOptions::new().opacity(mode).run(|tx| {
            tx.or_else(
                |tx| {
                    saw_absent.set(s.insert(tx, K)?);
                    Err(tx.retry())
                },
                |tx| {
                    if first_attempt.replace(false) {
                        on_another_thread(Duration::from_millis(300), || {
                            atomically(|tx| s.insert(tx, K));
                        });
                    }
                    s.contains(tx, &K)
                },
            )
        });
        assert!(
            !(saw_absent.get() && present),
            "{mode:?}: the committed attempt saw {K} absent, then present"
        );
    }
}

/// A read of the structure taken before the `or_else`, which the first
/// branch's insert moves past its own link: the rollback must leave the
/// read valid (the structure stays as the link left it until the
/// transaction ends), or the transaction can never commit.
fn commits_after_rolling_back_an_insert<S: TSet<u64> + 'static>(name: &str, make: fn() -> S) {
    for mode in MODES {
        let s = make();
        let attempts = Cell::new(0u32);
        let took_second = TxOptions::new().opacity(mode).run(|tx| {
            attempts.set(attempts.get() + 1);
            assert!(
                attempts.get() < 100,
                "{name}, {mode:?}: still aborting after 100 attempts (no other thread runs)"
            );
            assert!(!s.contains(tx, &K)?);
            tx.or_else(
                |tx| {
                    assert!(s.insert(tx, K)?);
                    Err(tx.retry())
                },
                |tx| Ok(!s.contains(tx, &K)?),
            )
        });
        assert!(
            took_second,
            "{name}, {mode:?}: the rolled-back insert is gone"
        );
        assert!(!s.load_contains(&K), "{name}, {mode:?}");
        assert_eq!(
            attempts.get(),
            1,
            "{name}, {mode:?}: alone, it commits at once"
        );
    }
}

#[test]
fn a_read_before_or_else_survives_a_rolled_back_insert() {
    commits_after_rolling_back_an_insert("THashMap", THashMap::<u64, ()>::new);
    commits_after_rolling_back_an_insert("TBTreeMap", || TBTreeMap::<u64, ()>::with_fanout(4));
    commits_after_rolling_back_an_insert("TListSet", TListSet::<u64>::new);
}

/// The second branch inserts the key the first branch inserted and rolled
/// back: it finds it absent and its insert commits; nothing else remains.
#[test]
fn the_second_branch_may_insert_what_the_first_rolled_back() {
    for mode in MODES {
        let m = THashMap::<u64, u64>::new();
        let t = TBTreeMap::<u64, u64>::new();
        TxOptions::new().opacity(mode).run(|tx| {
            tx.or_else(
                |tx| {
                    m.insert(tx, K, 1)?;
                    t.insert(tx, K, 1)?;
                    Err(tx.retry())
                },
                |tx| {
                    assert_eq!(m.get(tx, &K)?, None);
                    assert_eq!(t.get(tx, &K)?, None);
                    assert!(m.insert_if_absent(tx, K, 2)?);
                    assert_eq!(t.insert(tx, K, 2)?, None);
                    assert_eq!((m.len(tx)?, t.len(tx)?), (1, 1));
                    Ok(())
                },
            )
        });
        assert_eq!((m.load(&K), t.load(&K)), (Some(2), Some(2)), "{mode:?}");
        assert_eq!((m.load_len(), t.load_len()), (1, 1), "{mode:?}");
    }
}

/// Both branches retry; the first had found the key absent through its
/// insert. The transaction must wake when the key appears: the absence is
/// part of what it read.
#[test]
fn a_blocked_or_else_wakes_when_a_key_its_insert_found_absent_appears() {
    let m: &'static THashMap<u64, u64> = Box::leak(Box::new(THashMap::new()));
    let woke = std::sync::Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = mpsc::channel();
    {
        let woke = woke.clone();
        thread::spawn(move || {
            let v = atomically(|tx| {
                tx.or_else(
                    |tx| {
                        if m.insert_if_absent(tx, K, 1)? {
                            // Absent: wait for someone else to put it there.
                            return Err(tx.retry());
                        }
                        m.get(tx, &K)
                    },
                    |tx| Err(tx.retry()),
                )
            });
            woke.store(true, Ordering::SeqCst);
            let _ = done_tx.send(v);
        });
    }
    thread::sleep(Duration::from_millis(50));
    atomically(|tx| m.insert_if_absent(tx, K, 9));
    let got = done_rx.recv_timeout(Duration::from_secs(20));
    assert_eq!(
        got,
        Ok(Some(9)),
        "the blocked transaction never woke (or failed) after key {K} appeared"
    );
}

/// A read-only transaction's snapshot attempt records no reads: when both
/// of its branches retry, it must rerun as an ordinary attempt and wait on
/// what the branches read, not block on nothing.
#[test]
fn a_read_only_or_else_whose_branches_both_retry_wakes() {
    let a: &'static txmem::TBox<u32> = Box::leak(Box::new(txmem::TBox::new(0)));
    let b: &'static txmem::TBox<u32> = Box::leak(Box::new(txmem::TBox::new(0)));
    let (done_tx, done_rx) = mpsc::channel();
    thread::spawn(move || {
        let got = txmem::read_only(|tx| {
            tx.or_else(
                |tx| {
                    let n = a.get(tx)?;
                    tx.check(n > 0)?;
                    Ok(('a', n))
                },
                |tx| {
                    let n = b.get(tx)?;
                    tx.check(n > 0)?;
                    Ok(('b', n))
                },
            )
        });
        let _ = done_tx.send(got);
    });
    thread::sleep(Duration::from_millis(50));
    atomically(|tx| b.set(tx, 3));
    assert_eq!(done_rx.recv_timeout(Duration::from_secs(20)), Ok(('b', 3)));
}
