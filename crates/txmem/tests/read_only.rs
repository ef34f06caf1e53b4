//! Read-only transactions (`TxOptions::read_only`): the first attempt reads
//! from a snapshot without logging its reads; whatever it cannot do as a
//! snapshot (write, `retry`, become irrevocable, meet a newer version) makes
//! the transaction go on as an ordinary one, never a wrong result.

mod common;

use std::cell::Cell;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use txmem::{stats, AbortCause, Opacity, TArray, TBox, THashMap, Transaction, TxOptions, TxResult};

fn read_only() -> TxOptions {
    TxOptions::new().read_only(true)
}

/// Runs `f` with `opts` and returns its value with the aborts txmem
/// recorded at this call site, by cause (`#[track_caller]` makes the
/// caller's location the site, as it is `run`'s).
#[track_caller]
fn run_at_site<'env, R>(
    opts: &TxOptions,
    f: impl FnMut(&mut Transaction<'env>) -> TxResult<R>,
) -> (R, [u64; AbortCause::COUNT]) {
    let here = Location::caller();
    let site = format!("{}:{}:{}", here.file(), here.line(), here.column());
    let aborts = || {
        stats::site_profile()
            .find(&site)
            .map_or([0; AbortCause::COUNT], |s| s.aborts)
    };
    let before = aborts();
    let value = opts.run(f);
    let after = aborts();
    (value, std::array::from_fn(|i| after[i] - before[i]))
}

/// Aborts for the transaction's own reasons: all but those that another
/// test's irrevocable transaction causes (a stress transaction that keeps
/// aborting is serialized, and while it runs every other writer's commit
/// aborts and retries).
fn own(aborts: &[u64; AbortCause::COUNT]) -> u64 {
    aborts.iter().sum::<u64>() - aborts[AbortCause::Irrevocable as usize]
}

#[test]
fn a_quiet_read_only_transaction_commits_in_its_snapshot_attempt() {
    let accounts = TArray::from_fn(100, |i| i as u64);
    let (total, aborts) = run_at_site(&read_only(), |tx| {
        let mut sum = 0;
        for i in 0..accounts.len() {
            sum += accounts.get(tx, i)?;
        }
        Ok(sum)
    });
    assert_eq!(total, 4950);
    assert_eq!(own(&aborts), 0);
}

#[test]
fn a_read_only_transaction_that_writes_commits_on_its_second_attempt() {
    let b = TBox::new(1u32);
    let attempts = Cell::new(0);
    let ((), aborts) = run_at_site(&read_only(), |tx| {
        attempts.set(attempts.get() + 1);
        let v = b.get(tx)?;
        b.set(tx, v + 1)
    });
    assert_eq!(b.load(), 2, "the write is installed once");
    assert_eq!(
        aborts[AbortCause::Snapshot as usize],
        1,
        "the snapshot attempt aborts, as `snapshot`"
    );
    assert_eq!(own(&aborts), 1, "then an ordinary attempt commits");
    assert_eq!(attempts.get() as u64, 1 + aborts.iter().sum::<u64>());
}

#[test]
fn retry_in_a_read_only_transaction_blocks_until_a_change() {
    let flag = TBox::new(0u32);
    let seen = common::within(20, "read-only retry never woke", {
        let flag = std::sync::Arc::new(flag);
        let writer = flag.clone();
        move || {
            thread::scope(|s| {
                s.spawn(|| {
                    thread::sleep(Duration::from_millis(50));
                    writer.store(7);
                });
                read_only().run(|tx| {
                    let v = flag.get(tx)?;
                    if v == 0 {
                        return Err(tx.retry());
                    }
                    Ok(v)
                })
            })
        }
    });
    assert_eq!(seen, 7);
}

#[test]
fn a_read_only_transaction_may_become_irrevocable() {
    let b = TBox::new(5u64);
    let (v, aborts) = run_at_site(&read_only(), |tx| {
        let v = b.get(tx)?;
        tx.become_irrevocable()?;
        Ok(v)
    });
    assert_eq!(v, 5);
    assert_eq!(
        aborts[AbortCause::Snapshot as usize],
        1,
        "restarted irrevocably once"
    );
}

/// Audits declared read-only against transfers, in every opacity mode: an
/// audit never sees a wrong total, not even in an attempt that aborts (the
/// snapshot attempt is opaque whatever the mode; the check inside the
/// closure would see a torn state as a wrong running total at the end).
#[test]
fn read_only_audits_see_consistent_totals_under_transfers() {
    for mode in [Opacity::Tl2, Opacity::Revalidate, Opacity::None] {
        const N: usize = if cfg!(miri) { 8 } else { 64 };
        const ROUNDS: u64 = if cfg!(miri) { 6 } else { 400 };
        let accounts = TArray::from_fn(N, |_| 100i64);
        let stop = AtomicBool::new(false);
        let audits = std::sync::atomic::AtomicU64::new(0);
        let writers = TxOptions::new().opacity(mode);
        let audit = writers.read_only(true);
        thread::scope(|s| {
            for t in 0..2u64 {
                let (accounts, stop, writers) = (&accounts, &stop, &writers);
                s.spawn(move || transfer_until(accounts, stop, t + 1, writers));
            }
            for _ in 0..2 {
                let (accounts, stop, audit, audits) = (&accounts, &stop, &audit, &audits);
                s.spawn(move || {
                    let _stop = StopOnDrop(stop);
                    for round in 0..ROUNDS {
                        let (total, torn) = audit.run(|tx| {
                            // Half the audits read element by element, half
                            // with `fold` (one datatype operation).
                            let sum = if round % 2 == 0 {
                                (0..N).try_fold(0, |sum, i| Ok(sum + accounts.get(tx, i)?))?
                            } else {
                                accounts.fold(tx, 0..N, 0, |sum, &v| sum + v)?
                            };
                            Ok((sum, tx.opacity() != Opacity::None && sum != 100 * N as i64))
                        });
                        assert!(!torn, "{mode:?}: an opaque attempt saw a torn total");
                        assert_eq!(
                            total,
                            100 * N as i64,
                            "{mode:?}: an audit committed a torn total"
                        );
                        audits.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
        assert_eq!(audits.load(Ordering::Relaxed), 2 * ROUNDS);
        let sum: i64 = (0..N).map(|i| accounts.load(i)).sum();
        assert_eq!(sum, 100 * N as i64);
    }
}

#[test]
fn read_only_map_lookups_see_committed_pairs() {
    // Pairs (k, k + 1000) are inserted together and removed together: a
    // read-only lookup of both sees both or neither.
    let map: THashMap<u64, u64> = THashMap::new();
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            let mut k = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let key = k % 32;
                txmem::atomically(|tx| {
                    if map.contains_key(tx, &key)? {
                        map.remove(tx, &key)?;
                        map.remove(tx, &(key + 1000))?;
                    } else {
                        map.set(tx, key, k)?;
                        map.set(tx, key + 1000, k)?;
                    }
                    Ok(())
                });
                k += 1;
            }
        });
        let _stop = StopOnDrop(&stop);
        for _ in 0..if cfg!(miri) { 20 } else { 3000 } {
            let k = fastrand_key();
            let (a, b) = read_only().run(|tx| Ok((map.get(tx, &k)?, map.get(tx, &(k + 1000))?)));
            assert_eq!(a, b, "key {k}: a read-only lookup saw half a pair");
        }
    });
}

fn fastrand_key() -> u64 {
    thread_local!(static X: Cell<u64> = const { Cell::new(88172645463325252) });
    X.with(|x| {
        let mut v = x.get();
        v ^= v << 13;
        v ^= v >> 7;
        v ^= v << 17;
        x.set(v);
        v % 32
    })
}

/// With history, a snapshot attempt that meets an element written once
/// after its snapshot began reads the element's value before that write
/// and commits in that attempt; the total is the snapshot's. Without
/// history the same interleaving restarts the transaction.
#[test]
fn history_serves_a_snapshot_older_than_the_last_write() {
    for history in [true, false] {
        let accounts = TArray::from_fn(2, |_| 100i64);
        let accounts = if history {
            accounts.with_snapshot_history()
        } else {
            accounts
        };
        let attempts = Cell::new(0);
        let (total, aborts) = run_at_site(&read_only(), |tx| {
            attempts.set(attempts.get() + 1);
            let a = accounts.get(tx, 0)?;
            if attempts.get() == 1 {
                // A transfer commits between the two reads (and takes a
                // version past the reader's bound: two written items tick
                // the clock).
                thread::scope(|s| {
                    s.spawn(|| {
                        txmem::atomically(|tx| {
                            accounts.modify(tx, 0, |v| v - 10)?;
                            accounts.modify(tx, 1, |v| v + 10)
                        })
                    });
                });
            }
            let b = accounts.get(tx, 1)?;
            Ok((a, b))
        });
        let snapshot_aborts = aborts[AbortCause::Snapshot as usize];
        if history {
            assert_eq!(
                total,
                (100, 100),
                "the snapshot's state, both before the transfer"
            );
            assert_eq!(snapshot_aborts, 0);
        } else {
            assert_eq!(total, (90, 110), "the rerun sees the transfer");
            assert_eq!(snapshot_aborts, 1);
        }
    }
}

/// A write that finished before a read-only transaction began is in its
/// snapshot, history or not: a single-element write does not advance the
/// clock, so its version may be one step past the clock the reader reads,
/// and the reader must not take the value before it from history.
#[test]
fn history_never_hides_a_write_that_finished_before_the_snapshot() {
    let cells = TArray::from_fn(4, |_| 0u64).with_snapshot_history();
    let opts = read_only();
    for i in 1..=if cfg!(miri) { 40 } else { 20_000u64 } {
        let k = (i % 4) as usize;
        if i % 2 == 0 {
            cells.store(k, i);
        } else {
            txmem::atomically(|tx| cells.set(tx, k, i));
        }
        let seen = opts.run(|tx| cells.get(tx, k));
        assert_eq!(
            seen, i,
            "write {i} finished before the read-only transaction began"
        );
    }
}

#[test]
#[should_panic(expected = "not stored inline")]
fn history_is_refused_for_values_not_stored_inline() {
    let _ = TArray::from_fn(2, |_| String::new()).with_snapshot_history();
}

/// Read-only audits over arrays with history, against transfers (two
/// elements: the commit advances the clock) and single-element stamp
/// writes (no clock advance): every audit sees the right total, and every
/// stamp write that finished before the audit began.
#[test]
fn history_audits_are_consistent_and_respect_real_time() {
    const N: usize = if cfg!(miri) { 8 } else { 64 };
    const STAMPS: usize = 4;
    let accounts = TArray::from_fn(N, |_| 100i64).with_snapshot_history();
    let stamps = TArray::from_fn(STAMPS, |_| 0u64).with_snapshot_history();
    let finished: Vec<std::sync::atomic::AtomicU64> = (0..STAMPS)
        .map(|_| std::sync::atomic::AtomicU64::new(0))
        .collect();
    let stop = AtomicBool::new(false);
    let audit = read_only();
    thread::scope(|s| {
        for t in 0..2u64 {
            let (accounts, stop) = (&accounts, &stop);
            s.spawn(move || transfer_until(accounts, stop, t + 7, &TxOptions::new()));
        }
        {
            let (stamps, finished, stop) = (&stamps, &finished, &stop);
            s.spawn(move || {
                let mut seq = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    seq += 1;
                    let k = seq as usize % STAMPS;
                    stamps.store(k, seq);
                    finished[k].store(seq, Ordering::SeqCst);
                }
            });
        }
        let (accounts, stamps, finished, stop, audit) =
            (&accounts, &stamps, &finished, &stop, &audit);
        s.spawn(move || {
            // Stops the writers however this thread ends (a failed
            // assertion too: the test must fail, not hang).
            let _stop = StopOnDrop(stop);
            for round in 0..if cfg!(miri) { 10 } else { 2_000 } {
                let before: Vec<u64> = finished.iter().map(|f| f.load(Ordering::SeqCst)).collect();
                let (total, seen) = audit.run(|tx| {
                    let total = if round % 2 == 0 {
                        (0..N).try_fold(0, |sum, i| Ok(sum + accounts.get(tx, i)?))?
                    } else {
                        accounts.fold(tx, 0..N, 0, |sum, &v| sum + v)?
                    };
                    let seen: Vec<u64> = (0..STAMPS)
                        .map(|k| stamps.get(tx, k))
                        .collect::<TxResult<_>>()?;
                    Ok((total, seen))
                });
                assert_eq!(total, 100 * N as i64, "an audit saw a torn total");
                for k in 0..STAMPS {
                    assert!(
                        seen[k] >= before[k],
                        "stamp {k}: the audit saw {} though write {} had finished before it began",
                        seen[k],
                        before[k]
                    );
                }
            }
        });
    });
}

/// Moves small amounts between random distinct accounts, each transfer a
/// transaction run with `opts` (two elements written: the commit advances
/// the clock), until `stop`.
fn transfer_until(accounts: &TArray<i64>, stop: &AtomicBool, seed: u64, opts: &TxOptions) {
    let n = accounts.len();
    let mut x = seed;
    while !stop.load(Ordering::Relaxed) {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let from = (x >> 33) as usize % n;
        let to = (from + 1 + (x >> 17) as usize % (n - 1)) % n;
        opts.run(|tx| {
            accounts.modify(tx, from, |v| v - 3)?;
            accounts.modify(tx, to, |v| v + 3)
        });
    }
}

/// Sets its flag when dropped.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// `fold` reads what a loop of `get` reads: in an ordinary attempt, in a
/// snapshot attempt, after the attempt's own write (read-my-writes), and
/// over a sub-range.
#[test]
fn fold_agrees_with_get() {
    fn by_get<'e>(
        a: &'e TArray<u64>,
        tx: &mut Transaction<'e>,
        r: std::ops::Range<usize>,
    ) -> TxResult<Vec<u64>> {
        r.map(|i| a.get(tx, i)).collect()
    }
    let a = TArray::from_fn(50, |i| i as u64 * 3);
    for opts in [TxOptions::new(), read_only()] {
        let (folded, looped) = opts.run(|tx| {
            let f = a.fold(tx, 5..40, Vec::new(), |mut v, &x| {
                v.push(x);
                v
            })?;
            Ok((f, by_get(&a, tx, 5..40)?))
        });
        assert_eq!(folded, looped);
    }
    let (folded, looped) = txmem::atomically(|tx| {
        a.set(tx, 7, 1000)?;
        let f = a.fold(tx, 0..10, 0, |s, &x| s + x)?;
        Ok((f, by_get(&a, tx, 0..10)?.iter().sum::<u64>()))
    });
    assert_eq!(folded, looped);
    assert_eq!(folded, (0..10).map(|i| i * 3).sum::<u64>() - 21 + 1000);
}

/// Writes of one element that do not advance the clock push its version
/// ahead of the clock (each one step past the last). A snapshot that
/// takes its bound later must still see the last of them: history is for
/// writes that began after the snapshot did, which a version past the
/// bound no longer shows.
#[test]
fn history_never_hides_writes_whose_versions_ran_ahead_of_the_clock() {
    let cells = TArray::from_fn(2, |_| 0u64).with_snapshot_history();
    let opts = read_only();
    for round in 0..if cfg!(miri) { 4 } else { 200u64 } {
        // (Five or six writes: a ticked snapshot bound then falls between
        // the element's last two versions in one case or the other.)
        let writes = 5 + round % 2;
        for i in 1..=writes {
            cells.store(1, round * 10 + i);
        }
        let seen = opts.run(|tx| cells.get(tx, 1));
        assert_eq!(
            seen,
            round * 10 + writes,
            "round {round}: a finished write was hidden"
        );
    }
}
