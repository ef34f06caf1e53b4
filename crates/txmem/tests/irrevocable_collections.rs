//! Irrevocable transactions over the collections, while other transactions
//! place placeholders (committed or abandoned) and remove keys: the
//! irrevocable one runs exactly once and sees a consistent map.
//!
//! Structure words (a leaf's version, a bucket's, a gap) change while an
//! irrevocable transaction runs even though no other transaction commits:
//! running transactions place placeholders in them. An irrevocable
//! transaction once validated those words at commit, failed, and panicked
//! with its write set locked, and every other thread then waited for those
//! locks forever; it also aborted (ran twice) when it met another
//! transaction's placeholder of a key it inserted.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use txmem::{
    atomically, try_atomically, TBTreeMap, THashMap, TListSet, Transaction, TxError, TxOptions,
    TxResult,
};

mod common;

/// Even keys below `2 * EVENS` stay present; odd keys come and go.
const EVENS: u64 = 64;

/// The operations the test needs from a collection of `u64` keys.
trait KeySet: Send + Sync + 'static {
    fn add<'env>(&'env self, tx: &mut Transaction<'env>, k: u64) -> TxResult<()>;
    fn del<'env>(&'env self, tx: &mut Transaction<'env>, k: u64) -> TxResult<()>;
    /// The number of even keys present (a whole scan or iteration).
    fn evens<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<u64>;
}

impl KeySet for TBTreeMap<u64, u64> {
    fn add<'env>(&'env self, tx: &mut Transaction<'env>, k: u64) -> TxResult<()> {
        self.insert_if_absent(tx, k, k).map(drop)
    }
    fn del<'env>(&'env self, tx: &mut Transaction<'env>, k: u64) -> TxResult<()> {
        self.remove(tx, &k).map(drop)
    }
    fn evens<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<u64> {
        let all = self.range(tx, ..)?;
        Ok(all.iter().filter(|(k, _)| k % 2 == 0).count() as u64)
    }
}

/// An ordered map whose scans run in descending order.
struct Descending(TBTreeMap<u64, u64>);

impl KeySet for Descending {
    fn add<'env>(&'env self, tx: &mut Transaction<'env>, k: u64) -> TxResult<()> {
        self.0.add(tx, k)
    }
    fn del<'env>(&'env self, tx: &mut Transaction<'env>, k: u64) -> TxResult<()> {
        self.0.del(tx, k)
    }
    fn evens<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<u64> {
        let all = self.0.range_rev(tx, ..)?;
        Ok(all.iter().filter(|(k, _)| k % 2 == 0).count() as u64)
    }
}

impl KeySet for THashMap<u64, u64> {
    fn add<'env>(&'env self, tx: &mut Transaction<'env>, k: u64) -> TxResult<()> {
        self.insert_if_absent(tx, k, k).map(drop)
    }
    fn del<'env>(&'env self, tx: &mut Transaction<'env>, k: u64) -> TxResult<()> {
        self.remove(tx, &k).map(drop)
    }
    fn evens<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<u64> {
        // Lookups of absent odd keys read their buckets; iteration reads
        // every bucket.
        let mut n = 0;
        for k in 0..2 * EVENS {
            let present = self.get(tx, &k)?.is_some();
            n += u64::from(k % 2 == 0 && present);
        }
        let all = self.to_vec(tx)?;
        assert_eq!(all.iter().filter(|(k, _)| k % 2 == 0).count() as u64, n);
        Ok(n)
    }
}

impl KeySet for TListSet<u64> {
    fn add<'env>(&'env self, tx: &mut Transaction<'env>, k: u64) -> TxResult<()> {
        self.insert(tx, k).map(drop)
    }
    fn del<'env>(&'env self, tx: &mut Transaction<'env>, k: u64) -> TxResult<()> {
        self.remove(tx, &k).map(drop)
    }
    fn evens<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<u64> {
        let all = self.to_vec(tx)?;
        Ok(all.iter().filter(|k| *k % 2 == 0).count() as u64)
    }
}

/// Fails the test if `f` panics or does not finish in `secs` seconds.
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    common::within(secs, "the irrevocable transactions panicked or hung", f)
}

fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// One thread churns odd keys (inserts that commit, inserts whose
/// transaction gives up and abandons its placeholder, removals) while
/// another runs irrevocable transactions that scan the whole collection,
/// then insert and remove an odd key of their own.
fn irrevocable_amid_churn<S: KeySet>(set: S) {
    let rounds = if cfg!(debug_assertions) { 150 } else { 600 };
    within(120, move || {
        let set = Arc::new(set);
        atomically(|tx| {
            for k in (0..2 * EVENS).step_by(2) {
                set.add(tx, k)?;
            }
            Ok(())
        });
        let stop = Arc::new(AtomicBool::new(false));
        let churner = {
            let (set, stop) = (set.clone(), stop.clone());
            thread::spawn(move || {
                let mut x = 0x9E37_79B9_7F4A_7C15u64;
                while !stop.load(Ordering::Relaxed) {
                    let r = next(&mut x);
                    let k = 2 * (r % EVENS) + 1;
                    match r >> 62 {
                        0 | 1 => {
                            let _ = try_atomically(|tx| {
                                set.add(tx, k)?;
                                thread::yield_now();
                                Err::<(), _>(TxError::User(()))
                            });
                        }
                        2 => atomically(|tx| set.add(tx, k)),
                        _ => atomically(|tx| set.del(tx, k)),
                    }
                }
            })
        };
        let mut x = 0x1234_5678_9ABC_DEF1u64;
        for round in 0..rounds {
            let k = 2 * (next(&mut x) % EVENS) + 1;
            let mut runs = 0;
            let evens = TxOptions::new().irrevocable(true).run(|tx| {
                runs += 1;
                let evens = set.evens(tx)?;
                thread::yield_now();
                set.add(tx, k)?;
                set.del(tx, k)?;
                set.add(tx, k)?;
                Ok(evens)
            });
            assert_eq!(
                runs, 1,
                "round {round}: an irrevocable transaction ran again"
            );
            assert_eq!(evens, EVENS, "round {round}: an even key was missing");
        }
        stop.store(true, Ordering::Relaxed);
        churner.join().expect("the churning thread panicked");
    });
}

#[test]
fn irrevocable_btree_transactions_run_once_amid_placeholders() {
    // Small nodes: placements split leaves under the irrevocable scans.
    irrevocable_amid_churn(TBTreeMap::<u64, u64>::with_fanout(4));
}

#[test]
fn irrevocable_btree_reverse_scans_run_once_amid_placeholders() {
    // Default fanout: the descending scans cross a few wide leaves.
    irrevocable_amid_churn(Descending(TBTreeMap::new()));
}

#[test]
fn irrevocable_hashmap_transactions_run_once_amid_placeholders() {
    irrevocable_amid_churn(THashMap::<u64, u64>::new());
}

#[test]
fn irrevocable_listset_transactions_run_once_amid_placeholders() {
    irrevocable_amid_churn(TListSet::<u64>::new());
}

/// A transaction that inserted a key and then blocks in `retry` leaves no
/// placeholder behind while it sleeps: an insert of the same key by another
/// transaction (which the sleeper is waiting for) commits.
#[test]
fn a_sleeping_transaction_leaves_no_placeholder_in_the_way() {
    within(60, || {
        let map = Arc::new(THashMap::<u64, u64>::new());
        let gate = Arc::new(txmem::TBox::new(false));
        let sleeper = {
            let (map, gate) = (map.clone(), gate.clone());
            thread::spawn(move || {
                atomically(|tx| {
                    map.insert_if_absent(tx, 7, 1)?;
                    let open = gate.get(tx)?;
                    tx.check(open)?;
                    Ok(())
                })
            })
        };
        // Wait until the sleeper has run at least once and blocks.
        while txmem::stats::snapshot().blocking_waits == 0 {
            thread::yield_now();
        }
        let inserted = TxOptions::new().serialize_after(None).run(|tx| {
            let fresh = map.insert_if_absent(tx, 7, 2)?;
            gate.set(tx, true)?;
            Ok(fresh)
        });
        sleeper.join().expect("the sleeper panicked");
        assert!(
            inserted,
            "the sleeper's placeholder was taken for a committed key"
        );
        let got = atomically(|tx| map.get(tx, &7));
        assert_eq!(
            got,
            Some(2),
            "the sleeper's insert of an existing key changes nothing"
        );
    });
}

/// A transaction that holds a placeholder and then asks to become
/// irrevocable while another irrevocable transaction runs must not wait for
/// the token: that transaction may be waiting for its placeholder. It
/// restarts irrevocably instead (after unlinking the placeholder).
#[test]
fn become_irrevocable_does_not_wait_for_the_token_holding_a_placeholder() {
    use std::sync::atomic::AtomicU32;
    within(60, || {
        let map = Arc::new(THashMap::<u64, u64>::new());
        let placed = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicBool::new(false));
        let upgrader = {
            let (map, placed, started) = (map.clone(), placed.clone(), started.clone());
            thread::spawn(move || {
                let attempts = AtomicU32::new(0);
                let fresh = atomically(|tx| {
                    attempts.fetch_add(1, Ordering::Relaxed);
                    let fresh = map.insert_if_absent(tx, 7, 1)?;
                    placed.store(true, Ordering::Release);
                    while !started.load(Ordering::Acquire) {
                        thread::yield_now();
                    }
                    // Let the irrevocable transaction reach our placeholder.
                    thread::sleep(std::time::Duration::from_millis(20));
                    tx.become_irrevocable()?;
                    Ok(fresh)
                });
                (fresh, attempts.load(Ordering::Relaxed))
            })
        };
        while !placed.load(Ordering::Acquire) {
            thread::yield_now();
        }
        let inserted = TxOptions::new().irrevocable(true).run(|tx| {
            started.store(true, Ordering::Release);
            map.insert_if_absent(tx, 7, 2)
        });
        let (fresh, attempts) = upgrader.join().expect("the upgrader panicked");
        assert!(inserted, "the irrevocable insert found the key present");
        assert!(
            !fresh && attempts >= 2,
            "the upgrader restarted after the insert"
        );
        assert_eq!(atomically(|tx| map.get(tx, &7)), Some(2));
    });
}
