//! Single-operation transactions (`TBox::store`/`swap`/`update`,
//! `TArray::store`/`update`, `TCounter::add_now`): their results, and that
//! they serialize with ordinary transactions — no lost updates, ordered as
//! committed, opaque readers never see a state between two of them that did
//! not exist, blocked `retry`ers wake, irrevocable transactions run alone.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

use txmem::{atomically, set_default_options, Opacity, TArray, TBox, TCounter, TxOptions};

/// Tests that change the runtime-wide defaults (and those whose behaviour
/// depends on them) run one at a time.
static DEFAULTS: Mutex<()> = Mutex::new(());

fn with_default_opacity(mode: Opacity, f: impl FnOnce()) {
    let _serial = DEFAULTS.lock().unwrap_or_else(|e| e.into_inner());
    set_default_options(TxOptions::new().opacity(mode));
    f();
    set_default_options(TxOptions::new());
}

const MODES: [Opacity; 3] = [Opacity::Tl2, Opacity::Revalidate, Opacity::None];

#[test]
fn store_swap_update_and_add_now_return_what_they_document() {
    let b = TBox::new(1u64);
    b.store(5);
    assert_eq!(b.load(), 5);
    assert_eq!(b.swap(7), 5);
    assert_eq!(b.update(|v| v * 3), 21);
    assert_eq!(b.load(), 21);

    let s = TBox::new(vec![1, 2]);
    assert_eq!(
        s.update(|v| v.iter().chain(&[3]).copied().collect()),
        vec![1, 2, 3]
    );
    assert_eq!(s.swap(Vec::new()), vec![1, 2, 3]);
    assert!(s.load().is_empty());

    let a = TArray::new(3, 0i32);
    a.store(1, 4);
    assert_eq!(a.update(1, |v| v - 10), -6);
    assert_eq!((a.load(0), a.load(1), a.load(2)), (0, -6, 0));

    let c = TCounter::new(10);
    assert_eq!(c.add_now(-3), 7);
    assert_eq!(c.load(), 7);
}

#[test]
fn a_transaction_sees_a_single_operation_write_that_committed_before_it() {
    let b = TBox::new(0u64);
    b.store(3);
    assert_eq!(atomically(|tx| b.get(tx)), 3);
    atomically(|tx| b.set(tx, 4));
    assert_eq!(b.update(|v| v + 1), 5);
}

#[test]
#[should_panic(expected = "single-operation writes")]
fn single_operation_writes_panic_inside_a_transaction() {
    let b = TBox::new(0u64);
    atomically(|tx| {
        b.store(1);
        b.get(tx)
    });
}

#[test]
fn single_operation_writes_are_allowed_in_handlers() {
    let b = TBox::new(0u64);
    let c = TBox::new(0u64);
    atomically(|tx| {
        c.set(tx, 1)?;
        tx.on_commit(|| b.store(9));
        Ok(())
    });
    assert_eq!((b.load(), c.load()), (9, 1));
}

/// Three threads increment one box, two through `update` and one through
/// full transactions: every increment lands exactly once.
#[test]
fn increments_through_update_and_transactions_are_never_lost() {
    for mode in MODES {
        with_default_opacity(mode, || {
            let n = if cfg!(debug_assertions) {
                5_000
            } else {
                50_000
            };
            let b = TBox::new(0u64);
            let c = TCounter::new(0);
            thread::scope(|s| {
                for _ in 0..2 {
                    s.spawn(|| {
                        for _ in 0..n {
                            b.update(|v| v + 1);
                            c.add_now(1);
                        }
                    });
                }
                s.spawn(|| {
                    for _ in 0..n {
                        atomically(|tx| {
                            b.modify(tx, |v| v + 1)?;
                            c.add(tx, 1)
                        });
                    }
                });
            });
            assert_eq!(b.load(), 3 * n, "{mode:?}: a TBox increment was lost");
            assert_eq!(
                c.load(),
                3 * n as i64,
                "{mode:?}: a counter increment was lost"
            );
        });
    }
}

/// Races a writer that advances `a` and then `b` (by `write_pair`, so every
/// committed state has `a == b` or `a == b + 1`) against a reader that
/// reads both (by `read_pair`, which returns what its transaction committed
/// and what each attempt saw). Returns how many attempts saw a pair no
/// committed state had; panics if a committed read did. Runs until the
/// writer has done its rounds and the reader at least 100 reads, or the
/// reader panics.
fn race_ordered_pairs(
    mode: Opacity,
    write_pair: impl Fn() + Sync,
    read_pair: impl Fn(&mut dyn FnMut(u64, u64)) -> (u64, u64) + Sync,
) -> u64 {
    let rounds = if cfg!(debug_assertions) {
        10_000
    } else {
        100_000
    };
    let in_order = |x: u64, y: u64| x == y || x == y + 1;
    let done = AtomicBool::new(false);
    let reader_gone = AtomicBool::new(false);
    let torn = AtomicU64::new(0);
    let reads = AtomicU64::new(0);
    thread::scope(|s| {
        s.spawn(|| {
            let mut i = 0;
            while i < rounds
                || (reads.load(Ordering::Relaxed) < 100 && !reader_gone.load(Ordering::Relaxed))
            {
                write_pair();
                i += 1;
            }
            done.store(true, Ordering::Release);
        });
        s.spawn(|| {
            // Tells the writer to stop if an assertion below panics.
            struct Gone<'a>(&'a AtomicBool);
            impl Drop for Gone<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::Relaxed);
                }
            }
            let _gone = Gone(&reader_gone);
            while !done.load(Ordering::Acquire) {
                let (x, y) = read_pair(&mut |x, y| {
                    if !in_order(x, y) {
                        torn.fetch_add(1, Ordering::Relaxed);
                    }
                });
                assert!(in_order(x, y), "{mode:?}: committed a={x}, b={y}");
                reads.fetch_add(1, Ordering::Relaxed);
            }
        });
    });
    torn.load(Ordering::Relaxed)
}

/// A writer advances `a` and then `b` with separate single-operation
/// writes. Readers in every opacity mode must commit only states in that
/// order, and in the opaque modes no attempt may even observe another.
#[test]
fn readers_see_single_operation_writes_in_commit_order() {
    for mode in MODES {
        with_default_opacity(mode, || {
            let (a, b) = (TBox::new(0u64), TBox::new(0u64));
            let torn = race_ordered_pairs(
                mode,
                || {
                    a.update(|v| v + 1);
                    b.update(|v| v + 1);
                },
                |seen| {
                    atomically(|tx| {
                        let y = b.get(tx)?;
                        let x = a.get(tx)?;
                        seen(x, y);
                        Ok((x, y))
                    })
                },
            );
            if mode != Opacity::None {
                assert_eq!(torn, 0, "{mode:?}: an attempt saw a torn pair");
            }
        });
    }
}

/// The same check with `atomically` transactions that write one item each
/// (which do not tick the TL2 clock), read in the order they were written:
/// the old `a` with the new `b` would be the torn view. Each read
/// transaction follows a single write of the reader's own, so its snapshot
/// bound is the one kept from a commit that did not tick.
#[test]
fn readers_see_single_write_transactions_in_commit_order() {
    for mode in MODES {
        let opts = TxOptions::new().opacity(mode);
        let (a, b) = (TBox::new(0u64), TBox::new(0u64));
        let own = TBox::new(0u64);
        let torn = race_ordered_pairs(
            mode,
            || {
                opts.run(|tx| a.modify(tx, |v| v + 1));
                opts.run(|tx| b.modify(tx, |v| v + 1));
            },
            |seen| {
                opts.run(|tx| own.modify(tx, |v| v + 1));
                opts.run(|tx| {
                    let x = a.get(tx)?;
                    let y = b.get(tx)?;
                    seen(x, y);
                    Ok((x, y))
                })
            },
        );
        if mode != Opacity::None {
            assert_eq!(torn, 0, "{mode:?}: an attempt saw a torn pair");
        }
    }
}

#[test]
fn a_store_wakes_a_transaction_blocked_in_retry() {
    let flag = TBox::new(false);
    let seen = thread::scope(|s| {
        let waiter = s.spawn(|| {
            atomically(|tx| {
                let f = flag.get(tx)?;
                tx.check(f)?;
                Ok(f)
            })
        });
        thread::sleep(Duration::from_millis(20));
        flag.store(true);
        waiter.join().unwrap()
    });
    assert!(seen);
}

/// While an irrevocable transaction runs, no single-operation write commits:
/// it reads the box, waits, and finds it unchanged.
#[test]
fn single_operation_writes_wait_for_an_irrevocable_transaction() {
    let _serial = DEFAULTS.lock().unwrap_or_else(|e| e.into_inner());
    let b = TBox::new(0u64);
    let started = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            TxOptions::new().irrevocable(true).run(|tx| {
                let before = b.get(tx)?;
                started.store(true, Ordering::Release);
                thread::sleep(Duration::from_millis(30));
                assert_eq!(
                    b.load(),
                    before,
                    "a single-operation write committed during an irrevocable transaction"
                );
                Ok(())
            })
        });
        while !started.load(Ordering::Acquire) {
            thread::yield_now();
        }
        for _ in 0..10 {
            b.update(|v| v + 1);
        }
    });
    assert_eq!(b.load(), 10);
}

/// Heap values (`Vec`) replaced by `update` while other threads `load` them
/// outside any transaction, with more threads than cores so that readers are
/// preempted between loading a value's pointer and using it. Every value a
/// reader sees must be whole: a freed one shows up as a wrong length or a
/// clobbered sentinel (and, under a memory checker, as a use-after-free).
#[test]
fn heap_values_read_outside_transactions_survive_concurrent_updates() {
    const THREADS: usize = 8;
    const OPS: usize = 4_000;
    let b = TBox::new({
        let mut v = vec![0u64; 64];
        v[63] = 7;
        v
    });
    thread::scope(|s| {
        for t in 0..THREADS {
            let b = &b;
            s.spawn(move || {
                for _ in 0..OPS {
                    if t % 2 == 0 {
                        b.update(|v| {
                            let mut w = v.clone();
                            w[0] += 1;
                            w
                        });
                    } else {
                        let v = b.load();
                        assert_eq!(v.len(), 64, "a reader saw a torn or freed value");
                        assert_eq!(v[63], 7, "a reader saw a torn or freed value");
                    }
                }
            });
        }
    });
    assert_eq!(b.load()[0], (THREADS / 2 * OPS) as u64);
}
