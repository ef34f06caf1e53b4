//! Writes of inline values (`TBox<u64>`, `TArray<u64>`) go to the runtime's
//! word log instead of items: rollback of `or_else` branches, the index past
//! the cutoff, reads taken over by writes, the item path under
//! `untracked_reads(false)`, and the conflicts each must still see.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;

use txmem::{atomically, TArray, TBox, TxOptions};

#[test]
fn a_rolled_back_branch_restores_word_writes() {
    let a = TBox::new(0u64);
    let b = TBox::new(0u64);
    let seen = atomically(|tx| {
        a.set(tx, 1)?;
        tx.or_else(
            |tx| {
                a.set(tx, 2)?; // overwrites a write made before the branch
                b.set(tx, 5)?; // a write of the branch's own
                assert_eq!((a.get(tx)?, b.get(tx)?), (2, 5));
                Err(tx.retry())
            },
            |tx| Ok((a.get(tx)?, b.get(tx)?)),
        )
    });
    assert_eq!(
        seen,
        (1, 0),
        "the second branch sees the state before the first"
    );
    assert_eq!((a.load(), b.load()), (1, 0));
}

#[test]
fn nested_branches_restore_word_writes_level_by_level() {
    let a = TBox::new(0u64);
    let seen = atomically(|tx| {
        a.set(tx, 1)?;
        tx.or_else(
            |tx| {
                a.set(tx, 2)?;
                let inner = tx.or_else(
                    |tx| {
                        a.set(tx, 3)?;
                        Err(tx.retry())
                    },
                    |tx| a.get(tx),
                )?;
                assert_eq!(
                    inner, 2,
                    "the inner rollback restores the outer branch's write"
                );
                a.modify(tx, |v| v * 10)?;
                a.get(tx)
            },
            |_| Ok(0),
        )
    });
    assert_eq!((seen, a.load()), (20, 20));
}

#[test]
fn a_rollback_past_the_index_cutoff_keeps_lookups_right() {
    // 40 words written before the branch, 40 more and 10 overwrites in it:
    // the word log is indexed, and the rollback shortens it.
    let arr = TArray::new(100, 0u64);
    atomically(|tx| {
        for i in 0..40 {
            arr.set(tx, i, i as u64 + 1)?;
        }
        tx.or_else(
            |tx| {
                for i in 40..80 {
                    arr.set(tx, i, 1000)?;
                }
                for i in 0..10 {
                    arr.set(tx, i, 2000)?;
                }
                Err(tx.retry())
            },
            |tx| {
                for i in 0..80 {
                    let want = if i < 40 { i as u64 + 1 } else { 0 };
                    assert_eq!(arr.get(tx, i)?, want, "element {i} after the rollback");
                }
                // Writes after the rollback find and extend the log.
                for i in 35..45 {
                    arr.modify(tx, i, |v| v + 100)?;
                }
                Ok(())
            },
        )
    });
    for i in 0..100 {
        let mut want = if i < 40 { i as u64 + 1 } else { 0 };
        if (35..45).contains(&i) {
            want += 100;
        }
        assert_eq!(arr.load(i), want, "element {i}");
    }
}

#[test]
fn the_item_path_serves_word_values_when_untracked_reads_are_off() {
    let arr = TArray::new(8, 0u64);
    let items = TxOptions::new().untracked_reads(false);
    for round in 1..=3u64 {
        // Alternate the paths on one thread: nothing of one attempt's
        // choice may leak into the next.
        let opts = if round % 2 == 1 {
            items
        } else {
            TxOptions::new()
        };
        opts.run(|tx| {
            for i in 0..8 {
                arr.modify(tx, i, |v| v + 1)?;
                arr.modify(tx, i, |v| v + 1)?;
            }
            assert_eq!(tx.len(), 8, "one entry per element, either way");
            Ok(())
        });
        assert!((0..8).all(|i| arr.load(i) == 2 * round));
    }
}

/// Runs `body` in a transaction on this thread; in its first attempt, at
/// the point `body` calls its hook, `other` commits on another thread.
/// Returns the number of attempts.
fn with_commit_in_between(
    other: impl FnOnce() + Send + 'static,
    body: impl Fn(&mut txmem::Transaction<'_>, &mut dyn FnMut()) -> txmem::TxResult<()>,
) -> usize {
    let attempts = AtomicUsize::new(0);
    let (go, wait) = mpsc::channel::<()>();
    let (done, finished) = mpsc::channel::<()>();
    let helper = thread::spawn(move || {
        wait.recv().unwrap();
        other();
        done.send(()).unwrap();
    });
    let mut go = Some(go);
    atomically(|tx| {
        attempts.fetch_add(1, Ordering::Relaxed);
        let mut hook = || {
            if let Some(go) = go.take() {
                go.send(()).unwrap();
                finished.recv().unwrap();
            }
        };
        body(tx, &mut hook)
    });
    helper.join().unwrap();
    attempts.load(Ordering::Relaxed)
}

#[test]
fn a_read_taken_over_by_its_write_still_conflicts() {
    // read x, (x changes), write x: the write takes the read over, and its
    // lock at the version read fails, so the attempt reruns.
    let x: &'static TBox<u64> = Box::leak(Box::new(TBox::new(0)));
    let attempts = with_commit_in_between(
        move || atomically(|tx| x.set(tx, 10)),
        |tx, hook| {
            let v = x.get(tx)?;
            hook();
            x.set(tx, v + 1)
        },
    );
    assert_eq!((x.load(), attempts), (11, 2), "no lost update");
}

#[test]
fn a_read_left_in_the_read_log_still_conflicts() {
    // read x, read y, (x changes), write x and y: x's read is not the last
    // read when x is written, so it stays in the read log, where the commit
    // must find the lock on x its own and the version moved.
    let x: &'static TBox<u64> = Box::leak(Box::new(TBox::new(0)));
    let y: &'static TBox<u64> = Box::leak(Box::new(TBox::new(0)));
    let attempts = with_commit_in_between(
        move || atomically(|tx| x.set(tx, 10)),
        |tx, hook| {
            let (a, b) = (x.get(tx)?, y.get(tx)?);
            hook();
            x.set(tx, a + 1)?;
            y.set(tx, b + 1)
        },
    );
    assert_eq!((x.load(), y.load(), attempts), (11, 1, 2));
}

#[test]
fn blind_word_writes_do_not_conflict() {
    let x: &'static TBox<u64> = Box::leak(Box::new(TBox::new(0)));
    let attempts = with_commit_in_between(
        move || atomically(|tx| x.set(tx, 10)),
        |tx, hook| {
            hook();
            x.set(tx, 7)
        },
    );
    assert_eq!(
        (x.load(), attempts),
        (7, 1),
        "the later commit wins, no rerun"
    );
}

#[test]
fn an_irrevocable_transaction_installs_its_word_writes() {
    let arr = TArray::new(4, 1u64);
    TxOptions::new().irrevocable(true).run(|tx| {
        for i in 0..4 {
            arr.modify(tx, i, |v| v * 3)?;
        }
        Ok(())
    });
    assert!((0..4).all(|i| arr.load(i) == 3));
}

#[test]
fn concurrent_increments_through_the_word_log_lose_nothing() {
    const ROUNDS: usize = if cfg!(miri) { 40 } else { 2000 };
    let arr: &'static TArray<u64> = Box::leak(Box::new(TArray::new(16, 0)));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            thread::spawn(move || {
                for n in 0..ROUNDS {
                    atomically(|tx| {
                        // Overlapping read-modify-writes, some elements twice.
                        for k in 0..4 {
                            arr.modify(tx, (t + n + k * 5) % 16, |v| v + 1)?;
                        }
                        arr.modify(tx, n % 16, |v| v + 1)
                    });
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let total: u64 = (0..16).map(|i| arr.load(i)).sum();
    assert_eq!(total, 4 * ROUNDS as u64 * 5);
}

#[test]
fn a_read_modify_write_in_a_rolled_back_branch_keeps_its_read() {
    // Both branches retry, so the transaction waits for a change to what
    // either read: the first branch's read of `x`, taken by its write,
    // must outlive the rollback that drops the write, or the commit below
    // would not wake it.
    let x: &'static TBox<u64> = Box::leak(Box::new(TBox::new(0)));
    let waiter = thread::spawn(move || {
        atomically(|tx| {
            tx.or_else(
                |tx| {
                    let old = x.replace(tx, 100)?;
                    tx.check(old != 0)?;
                    Ok(old)
                },
                |tx| Err(tx.retry()),
            )
        })
    });
    thread::sleep(std::time::Duration::from_millis(50));
    atomically(|tx| x.set(tx, 7));
    assert_eq!(waiter.join().unwrap(), 7);
    assert_eq!(x.load(), 100);
}

#[test]
fn without_read_my_writes_a_modify_reads_the_committed_value() {
    let x = TBox::new(1u64);
    TxOptions::new().read_my_writes(false).run(|tx| {
        x.set(tx, 50)?;
        // Reads the committed 1 (not the pending 50), a read the commit
        // validates although the word's entry was already written.
        x.modify(tx, |v| v + 1)?;
        assert_eq!(x.get(tx)?, 1);
        Ok(())
    });
    assert_eq!(x.load(), 2);
}
