//! Read-only transactions (`TxOptions::read_only`): the first attempt reads
//! from a snapshot without logging its reads; whatever it cannot do as a
//! snapshot (write, `retry`, become irrevocable, meet a newer version) makes
//! the transaction go on as an ordinary one, never a wrong result.

mod common;

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use txmem::{stats, AbortCause, Opacity, TArray, TBox, THashMap, TxOptions};

fn read_only() -> TxOptions {
    TxOptions::new().read_only(true)
}

#[test]
fn a_quiet_read_only_transaction_commits_in_its_snapshot_attempt() {
    let accounts = TArray::from_fn(100, |i| i as u64);
    let attempts = Cell::new(0);
    let total: u64 = read_only().run(|tx| {
        attempts.set(attempts.get() + 1);
        let mut sum = 0;
        for i in 0..accounts.len() {
            sum += accounts.get(tx, i)?;
        }
        Ok(sum)
    });
    assert_eq!(total, 4950);
    assert_eq!(attempts.get(), 1);
}

#[test]
fn a_read_only_transaction_that_writes_commits_on_its_second_attempt() {
    let b = TBox::new(1u32);
    let attempts = Cell::new(0);
    let before = snapshot_aborts();
    read_only().run(|tx| {
        attempts.set(attempts.get() + 1);
        let v = b.get(tx)?;
        b.set(tx, v + 1)
    });
    assert_eq!(b.load(), 2, "the write is installed once");
    assert_eq!(
        attempts.get(),
        2,
        "the snapshot attempt, then an ordinary one"
    );
    assert!(
        snapshot_aborts() > before,
        "the abort is counted as `snapshot`"
    );
}

fn snapshot_aborts() -> u64 {
    stats::site_profile()
        .sites
        .iter()
        .filter(|s| s.location.contains("read_only.rs"))
        .map(|s| s.aborts_by(AbortCause::Snapshot))
        .sum()
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
    let attempts = Cell::new(0);
    let v = read_only().run(|tx| {
        attempts.set(attempts.get() + 1);
        let v = b.get(tx)?;
        tx.become_irrevocable()?;
        Ok(v)
    });
    assert_eq!(v, 5);
    assert_eq!(attempts.get(), 2, "restarted irrevocably once");
}

/// Audits declared read-only against transfers, in every opacity mode: an
/// audit never sees a wrong total, not even in an attempt that aborts (the
/// snapshot attempt is opaque whatever the mode; the check inside the
/// closure would see a torn state as a wrong running total at the end).
#[test]
fn read_only_audits_see_consistent_totals_under_transfers() {
    for mode in [Opacity::Tl2, Opacity::Revalidate, Opacity::None] {
        const N: usize = 64;
        let accounts = TArray::from_fn(N, |_| 100i64);
        let stop = AtomicBool::new(false);
        let audits = std::sync::atomic::AtomicU64::new(0);
        let writers = TxOptions::new().opacity(mode);
        let audit = writers.read_only(true);
        thread::scope(|s| {
            for t in 0..2u64 {
                let (accounts, stop, writers) = (&accounts, &stop, &writers);
                s.spawn(move || {
                    let mut x = t + 1;
                    while !stop.load(Ordering::Relaxed) {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let from = (x >> 33) as usize % N;
                        let to = (from + 1 + (x >> 17) as usize % (N - 1)) % N;
                        writers.run(|tx| {
                            let a = accounts.get(tx, from)?;
                            let b = accounts.get(tx, to)?;
                            accounts.set(tx, from, a - 3)?;
                            accounts.set(tx, to, b + 3)
                        });
                    }
                });
            }
            for _ in 0..2 {
                let (accounts, stop, audit, audits) = (&accounts, &stop, &audit, &audits);
                s.spawn(move || {
                    for _ in 0..400 {
                        let (total, torn) = audit.run(|tx| {
                            let mut sum = 0;
                            for i in 0..N {
                                sum += accounts.get(tx, i)?;
                            }
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
                    stop.store(true, Ordering::Relaxed);
                });
            }
        });
        assert_eq!(audits.load(Ordering::Relaxed), 800);
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
        for _ in 0..3000 {
            let k = fastrand_key();
            let (a, b) = read_only().run(|tx| Ok((map.get(tx, &k)?, map.get(tx, &(k + 1000))?)));
            assert_eq!(a, b, "key {k}: a read-only lookup saw half a pair");
        }
        stop.store(true, Ordering::Relaxed);
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
