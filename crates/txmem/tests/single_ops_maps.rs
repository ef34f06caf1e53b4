//! Single-operation writes on maps and sets (`insert_now`,
//! `insert_if_absent_now`, `remove_now`, `update_now`): their results
//! against a sequential model, and that they serialize with ordinary
//! transactions — no lost updates, the size counter agreeing with the keys
//! in every snapshot, opaque readers never seeing a state that did not
//! exist, blocked `retry`ers woken, irrevocable transactions run alone.
//! `THashMap` and `TBTreeMap` commit them directly (each check runs on
//! both); `TListSet` runs the traits' transactions, checked by the same
//! model.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use proptest::prelude::*;
use txmem::{atomically, Opacity, TBTreeMap, THashMap, TListSet, TMap, TSet, TxOptions};

const MODES: [Opacity; 3] = [Opacity::Tl2, Opacity::Revalidate, Opacity::None];

/// One step of the sequential model: a single-operation write, or the same
/// write inside a transaction.
#[derive(Clone, Debug)]
enum Op {
    InsertNow(u8, u32),
    InsertIfAbsentNow(u8, u32),
    RemoveNow(u8),
    /// `update_now` adding to the value, removing it when the sum is odd
    /// and the key was present, inserting 1 when absent.
    UpdateNow(u8, u32),
    InsertTx(u8, u32),
    RemoveTx(u8),
}

fn op() -> impl Strategy<Value = Op> {
    // Few keys, so that operations meet; values small.
    let k = 0u8..24;
    prop_oneof![
        (k.clone(), any::<u32>()).prop_map(|(k, v)| Op::InsertNow(k, v)),
        (k.clone(), any::<u32>()).prop_map(|(k, v)| Op::InsertIfAbsentNow(k, v)),
        k.clone().prop_map(Op::RemoveNow),
        (k.clone(), 0u32..4).prop_map(|(k, v)| Op::UpdateNow(k, v)),
        (k.clone(), any::<u32>()).prop_map(|(k, v)| Op::InsertTx(k, v)),
        k.prop_map(Op::RemoveTx),
    ]
}

fn bump(old: Option<&u32>, by: u32) -> Option<u32> {
    match old {
        None => Some(1),
        Some(v) => {
            let s = v.wrapping_add(by);
            (s % 2 == 0).then_some(s)
        }
    }
}

/// Runs `ops` on `m` and on a `HashMap`, comparing every result and, at the
/// end, the contents and both sizes.
fn check_against_model<M: TMap<u8, u32>>(m: &M, ops: &[Op]) {
    let mut model: HashMap<u8, u32> = HashMap::new();
    for op in ops {
        match *op {
            Op::InsertNow(k, v) => assert_eq!(m.insert_now(k, v), model.insert(k, v), "{op:?}"),
            Op::InsertIfAbsentNow(k, v) => {
                let absent = !model.contains_key(&k);
                if absent {
                    model.insert(k, v);
                }
                assert_eq!(m.insert_if_absent_now(k, v), absent, "{op:?}");
            }
            Op::RemoveNow(k) => assert_eq!(m.remove_now(&k), model.remove(&k), "{op:?}"),
            Op::UpdateNow(k, by) => {
                let want = bump(model.get(&k), by);
                match want {
                    Some(v) => model.insert(k, v),
                    None => model.remove(&k),
                };
                assert_eq!(m.update_now(k, |old| bump(old, by)), want, "{op:?}");
            }
            Op::InsertTx(k, v) => {
                assert_eq!(atomically(|tx| m.insert(tx, k, v)), model.insert(k, v));
            }
            Op::RemoveTx(k) => assert_eq!(atomically(|tx| m.remove(tx, &k)), model.remove(&k)),
        }
        assert_eq!(m.load_len(), model.len(), "size after {op:?}");
    }
    let mut got = atomically(|tx| m.to_vec(tx));
    got.sort_unstable();
    let mut want: Vec<(u8, u32)> = model.into_iter().collect();
    want.sort_unstable();
    assert_eq!(got, want);
    assert_eq!(atomically(|tx| m.len(tx)), got.len());
}

proptest! {
    #[test]
    fn hash_map_single_operations_match_a_sequential_model(
        ops in proptest::collection::vec(op(), 1..200)
    ) {
        check_against_model(&THashMap::new(), &ops);
    }

    #[test]
    fn btree_map_single_operations_match_a_sequential_model(
        ops in proptest::collection::vec(op(), 1..120)
    ) {
        check_against_model(&TBTreeMap::new(), &ops);
    }
}

#[test]
fn sets_insert_and_remove_now() {
    fn check<S: TSet<u32>>(s: &S) {
        assert!(s.insert_now(3));
        assert!(!s.insert_now(3));
        assert!(s.load_contains(&3));
        assert!(!s.remove_now(&4));
        assert!(s.remove_now(&3));
        assert!(!s.load_contains(&3));
        assert_eq!(s.load_len(), 0);
    }
    check(&THashMap::<u32, ()>::new());
    check(&TBTreeMap::<u32, ()>::new());
    check(&TListSet::<u32>::new());
}

/// Enough single-operation inserts to grow the table many times, with
/// removals of every third key, and heap values: every key is found with
/// its value afterwards, inside and outside transactions.
#[test]
fn single_operation_inserts_grow_the_table() {
    let m: THashMap<u64, String> = THashMap::new();
    let before = m.bucket_count();
    let n = 20_000u64;
    for k in 0..n {
        assert_eq!(m.insert_now(k, k.to_string()), None);
    }
    for k in (0..n).step_by(3) {
        assert_eq!(m.remove_now(&k), Some(k.to_string()));
    }
    assert!(m.bucket_count() >= 4 * before, "the table did not grow");
    let left = (0..n).filter(|k| k % 3 != 0).count();
    assert_eq!(m.load_len(), left);
    for k in 0..n {
        let want = (k % 3 != 0).then(|| k.to_string());
        assert_eq!(m.load(&k), want);
        assert_eq!(atomically(|tx| m.get(tx, &k)), want);
    }
}

/// Single-operation inserts in a scattered order and in ascending order
/// (appends), enough to split leaves many times, with removals of every
/// third key: every key is found with its value afterwards, in order.
#[test]
fn single_operation_inserts_split_the_leaves() {
    let m: TBTreeMap<u64, String> = TBTreeMap::new();
    let n = 20_000u64;
    // A permutation of 0..n (7919 is prime to n), then n..2n in order.
    let scattered = (0..n).map(|i| i * 7919 % n);
    for k in scattered.chain(n..2 * n) {
        assert_eq!(m.insert_now(k, k.to_string()), None);
    }
    for k in (0..2 * n).step_by(3) {
        assert_eq!(m.remove_now(&k), Some(k.to_string()));
    }
    assert!(m.depth() >= 2, "the leaves did not split");
    let left: Vec<u64> = (0..2 * n).filter(|k| k % 3 != 0).collect();
    assert_eq!(m.load_len(), left.len());
    assert_eq!(m.load_keys(), left);
    for k in 0..2 * n {
        let want = (k % 3 != 0).then(|| k.to_string());
        assert_eq!(m.load(&k), want);
        assert_eq!(atomically(|tx| m.get(tx, &k)), want);
    }
}

/// Two threads insert the same keys with `insert_if_absent_now`, in
/// opposite orders, then removes them all: in every round each key is
/// inserted by exactly one thread, and the size stays exact.
#[test]
fn racing_single_operation_inserts_of_one_key_insert_it_once() {
    fn check<M: TMap<u32, u32> + Default>() {
        let m = M::default();
        let keys = 500u32;
        for round in 0..4u32 {
            let wins: Vec<u32> = thread::scope(|s| {
                let hs: Vec<_> = (0..2u32)
                    .map(|t| {
                        let m = &m;
                        s.spawn(move || {
                            let mut won = 0;
                            for i in 0..keys {
                                let k = if t == 0 { i } else { keys - 1 - i };
                                won += u32::from(m.insert_if_absent_now(k, t + round));
                            }
                            won
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert_eq!(wins.iter().sum::<u32>(), keys, "round {round}: {wins:?}");
            assert_eq!(m.load_len(), keys as usize);
            for k in 0..keys {
                assert!(m.remove_now(&k).is_some(), "round {round}: key {k} missing");
            }
            assert_eq!(m.load_len(), 0);
        }
    }
    check::<THashMap<u32, u32>>();
    check::<TBTreeMap<u32, u32>>();
}

#[test]
#[should_panic(expected = "single-operation writes")]
fn single_operation_btree_writes_panic_inside_a_transaction() {
    let m: TBTreeMap<u32, u32> = TBTreeMap::new();
    atomically(|tx| {
        m.remove_now(&1);
        m.get(tx, &1)
    });
}

#[test]
#[should_panic(expected = "single-operation writes")]
fn single_operation_map_writes_panic_inside_a_transaction() {
    let m: THashMap<u32, u32> = THashMap::new();
    atomically(|tx| {
        m.insert_now(1, 1);
        m.get(tx, &1)
    });
}

/// Counters per key, incremented by `update_now` from two threads and by
/// transactions from a third, while a fourth removes and re-inserts a key
/// of its own: no increment is lost.
#[test]
fn increments_through_update_now_and_transactions_are_never_lost() {
    increments_are_never_lost::<THashMap<u64, u64>>();
    increments_are_never_lost::<TBTreeMap<u64, u64>>();
}

fn increments_are_never_lost<M: TMap<u64, u64> + Default>() {
    for mode in MODES {
        let opts = TxOptions::new().opacity(mode);
        let n = if cfg!(debug_assertions) {
            3_000
        } else {
            30_000
        };
        let keys = 4u64;
        let m = M::default();
        thread::scope(|s| {
            for t in 0..2 {
                let m = &m;
                s.spawn(move || {
                    for i in 0..n {
                        m.update_now((i + t) % keys, |v| Some(v.copied().unwrap_or(0) + 1));
                    }
                });
            }
            s.spawn(|| {
                for i in 0..n {
                    opts.run(|tx| {
                        let k = i % keys;
                        let v = m.get(tx, &k)?.unwrap_or(0);
                        m.set(tx, k, v + 1)
                    });
                }
            });
            s.spawn(|| {
                for i in 0..n {
                    if i % 2 == 0 {
                        m.insert_now(100, i);
                    } else {
                        assert!(m.remove_now(&100).is_some(), "{mode:?}: key 100 vanished");
                    }
                }
            });
        });
        let total: u64 = (0..keys).map(|k| m.load(&k).unwrap_or(0)).sum();
        assert_eq!(total, 3 * n, "{mode:?}: an increment was lost");
        assert_eq!(m.load(&100), None);
        assert_eq!(m.load_len(), keys as usize);
    }
}

/// Single-operation inserts and removals of many keys, racing readers that
/// take the whole map and its size in one transaction: in every committed
/// read (and, with opacity, every attempt) the size equals the number of
/// keys found, and each writer's keys form a prefix of what it wrote
/// (writer `w` inserts `w, w+W, ...` in order, then removes them in order).
#[test]
fn readers_see_single_operation_writes_whole_and_in_order() {
    readers_see_writes_whole::<THashMap<u64, u64>>();
    readers_see_writes_whole::<TBTreeMap<u64, u64>>();
}

fn readers_see_writes_whole<M: TMap<u64, u64> + Default>() {
    const WRITERS: u64 = 2;
    for mode in MODES {
        let opts = TxOptions::new().opacity(mode);
        let per = if cfg!(debug_assertions) { 300 } else { 3_000 };
        let m = M::default();
        // The writers start once the reader has read once, so that reads
        // overlap the writes however the threads are scheduled.
        let reading = AtomicBool::new(false);
        let done = AtomicBool::new(false);
        let bad_attempts = AtomicU64::new(0);
        let reads = AtomicU64::new(0);
        thread::scope(|s| {
            let writers: Vec<_> = (0..WRITERS)
                .map(|w| {
                    let m = &m;
                    let reading = &reading;
                    s.spawn(move || {
                        while !reading.load(Ordering::Acquire) {
                            thread::yield_now();
                        }
                        for round in 0..3u64 {
                            for i in 0..per {
                                assert_eq!(m.insert_now(w + i * WRITERS, round), None);
                            }
                            for i in 0..per {
                                assert_eq!(m.remove_now(&(w + i * WRITERS)), Some(round));
                            }
                        }
                    })
                })
                .collect();
            s.spawn(|| {
                // A reader's view is consistent if, per writer, the keys
                // present form a run (a prefix of inserts with a prefix of
                // removals taken off) and the size matches.
                let consistent = |entries: &[(u64, u64)], len: usize| {
                    if entries.len() != len {
                        return false;
                    }
                    (0..WRITERS).all(|w| {
                        let mut idx: Vec<u64> = entries
                            .iter()
                            .filter(|(k, _)| k % WRITERS == w)
                            .map(|(k, _)| k / WRITERS)
                            .collect();
                        idx.sort_unstable();
                        idx.windows(2).all(|p| p[1] == p[0] + 1)
                    })
                };
                while !done.load(Ordering::Acquire) {
                    let (entries, len) = opts.run(|tx| {
                        let entries = m.to_vec(tx)?;
                        let len = m.len(tx)?;
                        if !consistent(&entries, len) {
                            bad_attempts.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok((entries, len))
                    });
                    assert!(
                        consistent(&entries, len),
                        "{mode:?}: committed a view of {} keys with size {len}",
                        entries.len()
                    );
                    reads.fetch_add(1, Ordering::Relaxed);
                    reading.store(true, Ordering::Release);
                }
            });
            for w in writers {
                w.join().unwrap();
            }
            done.store(true, Ordering::Release);
        });
        assert!(reads.load(Ordering::Relaxed) > 0);
        if mode != Opacity::None {
            assert_eq!(
                bad_attempts.load(Ordering::Relaxed),
                0,
                "{mode:?}: an attempt saw a state that never existed"
            );
        }
        assert_eq!(m.load_len(), 0);
    }
}

/// Runs `wait` (a transaction that blocks in `retry`) on a thread of its
/// own, calls `wake` after a pause, and fails unless `wait` returns within
/// five seconds (a waiter nobody wakes fails the test instead of hanging
/// it; its thread is left behind).
fn woken<M: Send + Sync + 'static>(
    m: M,
    wait: impl Fn(&M) + Send + 'static,
    wake: impl FnOnce(&M),
) {
    let m = std::sync::Arc::new(m);
    let waiter = {
        let m = m.clone();
        thread::spawn(move || wait(&m))
    };
    thread::sleep(Duration::from_millis(20));
    wake(&m);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !waiter.is_finished() {
        assert!(
            std::time::Instant::now() < deadline,
            "the transaction blocked in retry was not woken"
        );
        thread::sleep(Duration::from_millis(5));
    }
    waiter.join().unwrap();
}

#[test]
fn an_insert_now_wakes_a_transaction_blocked_in_retry() {
    insert_now_wakes(THashMap::new());
    insert_now_wakes(TBTreeMap::new());
}

fn insert_now_wakes<M: TMap<u32, &'static str> + 'static>(m: M) {
    woken(
        m,
        |m| {
            let v = atomically(|tx| match m.get(tx, &7)? {
                Some(v) => Ok(v),
                None => Err(tx.retry()),
            });
            assert_eq!(v, "here");
        },
        |m| {
            m.insert_now(7, "here");
        },
    );
}

#[test]
fn a_remove_now_wakes_a_transaction_blocked_in_retry() {
    remove_now_wakes(THashMap::new());
    remove_now_wakes(TBTreeMap::new());
}

fn remove_now_wakes<M: TMap<u32, u32> + 'static>(m: M) {
    m.insert_now(1, 1);
    woken(
        m,
        |m| {
            atomically(|tx| {
                let present = m.contains_key(tx, &1)?;
                tx.check(!present)
            })
        },
        |m| {
            m.remove_now(&1);
        },
    );
}

/// While an irrevocable transaction runs, no single-operation map write
/// commits: it reads the keys, waits, and finds them unchanged.
#[test]
fn single_operation_map_writes_wait_for_an_irrevocable_transaction() {
    writes_wait_for_irrevocable(THashMap::new());
    writes_wait_for_irrevocable(TBTreeMap::new());
}

fn writes_wait_for_irrevocable<M: TMap<u32, u32>>(m: M) {
    m.insert_now(1, 0);
    let started = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            TxOptions::new().irrevocable(true).run(|tx| {
                let one = m.get(tx, &1)?;
                let two = m.get(tx, &2)?;
                started.store(true, Ordering::Release);
                thread::sleep(Duration::from_millis(30));
                assert_eq!((m.load(&1), m.load(&2)), (one, two), "a write committed");
                Ok(())
            })
        });
        while !started.load(Ordering::Acquire) {
            thread::yield_now();
        }
        m.insert_now(2, 2);
        m.update_now(1, |v| v.map(|v| v + 1));
        m.remove_now(&2);
    });
    assert_eq!((m.load(&1), m.load(&2)), (Some(1), None));
}
