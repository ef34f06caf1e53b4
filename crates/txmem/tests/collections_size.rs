//! The collections' size counter under concurrency. Committers that change
//! the size without reading it (blind removes) share their thread's stripe;
//! committers that read it and change it (capacity-guarded inserts) lock
//! every stripe. Both run at once here, with auditors that compare the size
//! with the contents inside one transaction.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::thread;

use txmem::{atomically, TBTreeMap, THashMap, TListSet, TSet};

/// The most elements a guarded insert allows.
const CAP: usize = 40;
const KEYS: u64 = 128;

fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Two threads insert only while the size is below `CAP` (reading the size
/// and changing it: the exclusive path), one removes blindly (the share
/// path), one audits. The size never exceeds `CAP`, always equals the number
/// of elements seen in the same transaction, and ends equal to the contents.
fn size_scenario<C: TSet<u64>>(c: &C) {
    let done = AtomicBool::new(false);
    let start = Barrier::new(4);
    thread::scope(|s| {
        let (done, start) = (&done, &start);
        let mut workers = Vec::new();
        for t in 0..2u64 {
            workers.push(s.spawn(move || {
                start.wait();
                let mut x = 0x9E37_79B9 + t;
                for _ in 0..3000 {
                    let k = next(&mut x) % KEYS;
                    atomically(|tx| {
                        if c.len(tx)? < CAP {
                            c.insert(tx, k)?;
                        }
                        Ok(())
                    });
                }
            }));
        }
        workers.push(s.spawn(move || {
            start.wait();
            let mut x = 0x51ED_270B;
            for _ in 0..3000 {
                let k = next(&mut x) % KEYS;
                atomically(|tx| c.remove(tx, &k));
            }
        }));
        let auditor = s.spawn(move || {
            start.wait();
            let mut audits = 0;
            while !done.load(Ordering::Acquire) || audits == 0 {
                let (len, count) = atomically(|tx| Ok((c.len(tx)?, c.to_vec(tx)?.len())));
                assert_eq!(len, count, "the size disagrees with the contents");
                assert!(len <= CAP, "a guarded insert went past the capacity");
                audits += 1;
            }
        });
        for w in workers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Release);
        auditor.join().unwrap();
    });
    let (len, count) = atomically(|tx| Ok((c.len(tx)?, c.to_vec(tx)?.len())));
    assert_eq!(len, count);
    assert_eq!(c.load_len(), count);
    assert!(len <= CAP);
}

#[test]
fn hashmap_size_under_guarded_inserts_and_blind_removes() {
    size_scenario(&THashMap::<u64, ()>::new());
}

#[test]
fn btree_size_under_guarded_inserts_and_blind_removes() {
    size_scenario(&TBTreeMap::<u64, ()>::with_fanout(4));
}

/// The same with the default fanout: every key fits in a few leaves, so
/// the audits' scans and the inserts meet in the same leaf.
#[test]
fn wide_btree_size_under_guarded_inserts_and_blind_removes() {
    size_scenario(&TBTreeMap::<u64, ()>::new());
}

#[test]
fn listset_size_under_guarded_inserts_and_blind_removes() {
    size_scenario(&TListSet::new());
}

/// A transaction that read the size aborts when another commits a change
/// to it, and retries to a consistent result (no lost update of the size).
#[test]
fn len_guarded_inserts_never_exceed_capacity_from_many_threads() {
    let m: THashMap<u64, u64> = THashMap::new();
    let start = Barrier::new(4);
    thread::scope(|s| {
        for t in 0..4u64 {
            let (m, start) = (&m, &start);
            s.spawn(move || {
                start.wait();
                for i in 0..100 {
                    atomically(|tx| {
                        if m.len(tx)? < CAP {
                            m.insert_if_absent(tx, t * 1000 + i, i)?;
                        }
                        Ok(())
                    });
                }
            });
        }
    });
    assert_eq!(m.load_len(), CAP);
    assert_eq!(atomically(|tx| m.to_vec(tx)).len(), CAP);
}
