//! TQueue (unbounded and bounded), TMVar and TSem: model property tests with
//! injected aborts, and concurrent stress with invariants.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use proptest::prelude::*;
use txmem::{atomically, Opacity, TMVar, TQueue, TSem, Transaction, TxError, TxOptions, TxResult};

#[derive(Clone, Debug)]
enum QOp {
    Push(u32),
    TryPush(u32),
    Pop,
    Peek,
    Len,
}

fn qop() -> impl Strategy<Value = QOp> {
    prop_oneof![
        3 => any::<u32>().prop_map(QOp::Push),
        1 => any::<u32>().prop_map(QOp::TryPush),
        3 => Just(QOp::Pop),
        1 => Just(QOp::Peek),
        1 => Just(QOp::Len),
    ]
}

/// Applies `ops` to the model; returns the observable results.
fn model_apply(m: &mut VecDeque<u32>, cap: Option<usize>, ops: &[QOp]) -> Vec<Option<u64>> {
    ops.iter()
        .map(|op| match op {
            QOp::Push(v) | QOp::TryPush(v) => {
                if cap.is_some_and(|c| m.len() >= c) {
                    Some(0)
                } else {
                    m.push_back(*v);
                    Some(1)
                }
            }
            QOp::Pop => m.pop_front().map(u64::from),
            QOp::Peek => m.front().map(|v| u64::from(*v)),
            QOp::Len => Some(m.len() as u64),
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn queue_matches_model(txs in prop::collection::vec((prop::collection::vec(qop(), 1..8), any::<bool>()), 1..20),
                           bounded in any::<bool>()) {
        let cap = bounded.then_some(4usize);
        let q: TQueue<u32> = match cap { Some(c) => TQueue::bounded(c), None => TQueue::new() };
        let mut model = VecDeque::new();
        for (ops, inject_abort) in txs {
            let attempts = Cell::new(0);
            let got = atomically(|tx| {
                attempts.set(attempts.get() + 1);
                let mut out = Vec::new();
                for op in &ops {
                    out.push(match op {
                        // Pushes on a full bounded queue would block: use try_push.
                        QOp::Push(v) | QOp::TryPush(v) => Some(q.try_push(tx, *v)?.is_ok() as u64),
                        QOp::Pop => q.try_pop(tx)?.map(u64::from),
                        QOp::Peek => q.peek(tx)?.map(u64::from),
                        QOp::Len => Some(q.len(tx)? as u64),
                    });
                }
                if inject_abort && attempts.get() == 1 {
                    return Err(tx.abort());
                }
                Ok(out)
            });
            let want = model_apply(&mut model, cap, &ops);
            prop_assert_eq!(got, want);
            prop_assert_eq!(q.load_vec(), model.iter().copied().collect::<Vec<_>>());
        }
    }
}

#[test]
fn producers_and_consumers_lose_and_duplicate_nothing() {
    for cap in [None, Some(8)] {
        let q: Arc<TQueue<u64>> = Arc::new(match cap {
            Some(c) => TQueue::bounded(c),
            None => TQueue::new(),
        });
        const PER: u64 = 400;
        let seen: Arc<Vec<AtomicU64>> = Arc::new((0..2 * PER).map(|_| AtomicU64::new(0)).collect());
        let mut hs = Vec::new();
        for p in 0..2u64 {
            let q = q.clone();
            hs.push(thread::spawn(move || {
                for i in 0..PER {
                    atomically(|tx| q.push(tx, p * PER + i));
                }
            }));
        }
        for _ in 0..2 {
            let q = q.clone();
            let seen = seen.clone();
            hs.push(thread::spawn(move || {
                let mut last = [None::<u64>; 2];
                for _ in 0..PER {
                    let v = atomically(|tx| q.pop(tx));
                    // FIFO per producer as seen by one consumer.
                    let p = (v / PER) as usize;
                    assert!(last[p].is_none_or(|l| l < v), "per-producer order violated");
                    last[p] = Some(v);
                    seen[v as usize].fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        for h in hs {
            h.join().unwrap();
        }
        assert!(
            seen.iter().all(|c| c.load(Ordering::Relaxed) == 1),
            "lost or duplicated"
        );
        assert!(q.load_vec().is_empty());
    }
}

#[test]
fn bounded_push_blocks_until_a_pop() {
    let q = Arc::new(TQueue::bounded(2));
    atomically(|tx| {
        q.push(tx, 1)?;
        q.push(tx, 2)
    });
    let pushed = Arc::new(AtomicBool::new(false));
    let h = {
        let (q, pushed) = (q.clone(), pushed.clone());
        thread::spawn(move || {
            atomically(|tx| q.push(tx, 3));
            pushed.store(true, Ordering::SeqCst);
        })
    };
    thread::sleep(std::time::Duration::from_millis(50));
    assert!(
        !pushed.load(Ordering::SeqCst),
        "push onto a full queue must wait"
    );
    assert_eq!(atomically(|tx| q.pop(tx)), 1);
    h.join().unwrap();
    assert_eq!(q.load_vec(), vec![2, 3]);
}

#[test]
fn mvar_ping_pong() {
    let a = Arc::new(TMVar::new_empty());
    let b = Arc::new(TMVar::new_empty());
    let h = {
        let (a, b) = (a.clone(), b.clone());
        thread::spawn(move || {
            for _ in 0..200 {
                let v: u64 = atomically(|tx| a.take(tx));
                atomically(|tx| b.put(tx, v + 1));
            }
        })
    };
    let mut v = 0u64;
    for _ in 0..200 {
        atomically(|tx| a.put(tx, v));
        v = atomically(|tx| b.take(tx));
    }
    h.join().unwrap();
    assert_eq!(v, 200);
    assert_eq!(a.load(), None);
    // take then put in one transaction swaps the value of a full cell.
    let m = TMVar::new(1u32);
    let old = atomically(|tx| {
        let old = m.take(tx)?;
        m.put(tx, old + 10)?;
        Ok(old)
    });
    assert_eq!((old, m.load()), (1, Some(11)));
}

#[test]
fn semaphore_never_over_admits() {
    let s = Arc::new(TSem::new(2));
    let inside = Arc::new(AtomicU64::new(0));
    let barrier = Arc::new(Barrier::new(3));
    let hs: Vec<_> = (0..3)
        .map(|_| {
            let (s, inside, barrier) = (s.clone(), inside.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                for _ in 0..300 {
                    atomically(|tx| s.acquire(tx));
                    let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    assert!(n <= 2, "{n} holders of a 2-permit semaphore");
                    inside.fetch_sub(1, Ordering::SeqCst);
                    atomically(|tx| s.release(tx));
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(s.load(), 2);
    assert_eq!(atomically(|tx| s.available(tx)), 2);
}

/// What one look at a queue tells the transaction about the queue it
/// started from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Claim {
    Empty,
    NotEmpty,
    Full,
    NotFull,
}

/// A look at the queue: its name and what it claims.
type Look = (
    &'static str,
    for<'e> fn(&'e TQueue<u32>, &mut Transaction<'e>) -> TxResult<Claim>,
);

fn emptiness(some: bool) -> Claim {
    if some {
        Claim::NotEmpty
    } else {
        Claim::Empty
    }
}

const EMPTINESS_LOOKS: [Look; 4] = [
    ("peek", |q, tx| Ok(emptiness(q.peek(tx)?.is_some()))),
    ("try_pop", |q, tx| Ok(emptiness(q.try_pop(tx)?.is_some()))),
    ("is_empty", |q, tx| Ok(emptiness(!q.is_empty(tx)?))),
    ("len", |q, tx| Ok(emptiness(q.len(tx)? > 0))),
];

/// Looks at a queue of capacity 1 (the value pushed is never seen again).
const ROOM_LOOKS: [Look; 2] = [
    ("try_push", |q, tx| {
        Ok(match q.try_push(tx, 99)? {
            Ok(()) => Claim::NotFull,
            Err(_) => Claim::Full,
        })
    }),
    ("len", |q, tx| {
        Ok(if q.len(tx)? >= 1 {
            Claim::Full
        } else {
            Claim::NotFull
        })
    }),
];

/// Every pair of looks a transaction made in an attempt, what the
/// committed attempt saw, and what a run ending with a user error returned.
struct TwoLooks {
    attempts: Vec<(Claim, Option<Claim>)>,
    committed: (Claim, Claim),
    user_error: (Claim, Claim),
}

/// Runs `first`, then (in the first attempt only) lets another thread
/// commit `interfere`, then runs `second`; once to a commit and once ending
/// with a user error that carries both claims out.
fn two_looks(
    mode: Opacity,
    make: &dyn Fn() -> TQueue<u32>,
    first: Look,
    interfere: &(dyn Fn(&TQueue<u32>) + Sync),
    second: Look,
) -> TwoLooks {
    let opts = TxOptions::new().opacity(mode);
    let q = make();
    let mut attempts = Vec::new();
    let committed = opts.run(|tx| {
        let a = (first.1)(&q, tx)?;
        attempts.push((a, None));
        if attempts.len() == 1 {
            thread::scope(|s| {
                s.spawn(|| interfere(&q));
            });
        }
        let b = (second.1)(&q, tx)?;
        attempts.last_mut().unwrap().1 = Some(b);
        Ok((a, b))
    });
    let q = make();
    let mut calls = 0;
    let user_error = opts
        .try_run(|tx| {
            let a = (first.1)(&q, tx)?;
            calls += 1;
            if calls == 1 {
                thread::scope(|s| {
                    s.spawn(|| interfere(&q));
                });
            }
            let b = (second.1)(&q, tx)?;
            Err::<(), _>(TxError::User((a, b)))
        })
        .unwrap_err();
    TwoLooks {
        attempts,
        committed,
        user_error,
    }
}

/// Opacity of the queue's looks (issue 20, E): a look that found the queue
/// empty (or full) and a later look of the same transaction must agree,
/// although another thread commits a push (a pop) between them. In the
/// opaque modes no attempt may see them disagree; in every mode neither
/// the committed attempt nor one that returns a user error may.
#[test]
fn a_later_look_agrees_with_an_empty_or_full_queue_seen_before() {
    let unbounded = || TQueue::new();
    let full = || {
        let q = TQueue::bounded(1);
        atomically(|tx| q.push(tx, 1));
        q
    };
    let push = |q: &TQueue<u32>| atomically(|tx| q.push(tx, 7));
    let pop = |q: &TQueue<u32>| assert_eq!(atomically(|tx| q.try_pop(tx)), Some(1));
    type Shape<'a> = (
        &'a [Look],
        &'a dyn Fn() -> TQueue<u32>,
        &'a (dyn Fn(&TQueue<u32>) + Sync),
        (Claim, Claim),
    );
    let shapes: [Shape; 2] = [
        (
            &EMPTINESS_LOOKS,
            &unbounded,
            &push,
            (Claim::Empty, Claim::NotEmpty),
        ),
        (&ROOM_LOOKS, &full, &pop, (Claim::Full, Claim::NotFull)),
    ];
    let mut failures = Vec::new();
    for mode in [Opacity::Tl2, Opacity::Revalidate, Opacity::None] {
        for (looks, make, interfere, bad) in shapes {
            for first in looks {
                for second in looks {
                    let r = two_looks(mode, make, *first, interfere, *second);
                    let case = format!("{mode:?}: {} then {}", first.0, second.0);
                    // The interference happens in the first attempt, after
                    // the first look: it must have seen the old queue.
                    assert_eq!(r.attempts[0].0, bad.0, "{case}: first look");
                    if mode != Opacity::None {
                        if let Some(n) = r
                            .attempts
                            .iter()
                            .position(|&(a, b)| (a, b) == (bad.0, Some(bad.1)))
                        {
                            failures.push(format!(
                                "{case}: attempt {} saw {:?} then {:?}",
                                n + 1,
                                bad.0,
                                bad.1
                            ));
                        }
                    }
                    if r.committed == bad {
                        failures.push(format!("{case}: committed having seen {bad:?}"));
                    }
                    if r.user_error == bad {
                        failures.push(format!("{case}: returned {bad:?} with a user error"));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "inconsistent looks:\n{}",
        failures.join("\n")
    );
}
