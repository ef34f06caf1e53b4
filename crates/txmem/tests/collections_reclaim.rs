//! Memory stays bounded under insert/remove churn: removed nodes are really
//! freed through the epoch scheme. Values count themselves.

use std::sync::atomic::{AtomicI64, Ordering};
use std::thread;

use txmem::{atomically, try_atomically, TBTreeMap, THashMap, TList, TListSet, TQueue, TxError};

static LIVE: AtomicI64 = AtomicI64::new(0);

/// A value that counts live instances (clones included).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Counted(u64);
impl Counted {
    fn new(v: u64) -> Self {
        LIVE.fetch_add(1, Ordering::SeqCst);
        Counted(v)
    }
}
impl Clone for Counted {
    fn clone(&self) -> Self {
        Counted::new(self.0)
    }
}
impl Drop for Counted {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::SeqCst);
    }
}

fn flush() {
    for _ in 0..256 {
        crossbeam_epoch::pin().flush();
    }
}

/// The live count once the epoch collector has caught up (garbage of exited
/// threads reaches the global queue and is collected a few bags at a time).
fn live(expected: i64) -> i64 {
    for _ in 0..200 {
        flush();
        let n = LIVE.load(Ordering::SeqCst);
        if n <= expected {
            return n;
        }
        thread::sleep(std::time::Duration::from_millis(5));
    }
    LIVE.load(Ordering::SeqCst)
}

#[test]
fn churn_frees_removed_nodes() {
    // Hash map (through several resizes), ordered maps (small nodes and the
    // default fanout), list set and queue, all churned by two threads; the
    // live-value count must return to the size.
    let h: THashMap<u64, Counted> = THashMap::new();
    let w: TBTreeMap<u64, Counted> = TBTreeMap::new();
    let b: TBTreeMap<u64, Counted> = TBTreeMap::with_fanout(4);
    let l: TListSet<Counted> = TListSet::new();
    let q: TQueue<Counted> = TQueue::new();
    thread::scope(|sc| {
        for t in 0..2u64 {
            let (h, w, b, l, q) = (&h, &w, &b, &l, &q);
            sc.spawn(move || {
                for round in 0..20u64 {
                    for i in 0..100u64 {
                        let k = (i * 2 + t) + 1000 * (round % 3);
                        atomically(|tx| {
                            h.set(tx, k, Counted::new(k))?;
                            w.set(tx, k, Counted::new(k))?;
                            b.set(tx, k, Counted::new(k))?;
                            q.push(tx, Counted::new(k))
                        });
                        if i < 20 {
                            atomically(|tx| l.insert(tx, Counted::new(k)).map(|_| ()));
                        }
                    }
                    for i in 0..100u64 {
                        let k = (i * 2 + t) + 1000 * (round % 3);
                        atomically(|tx| {
                            h.remove(tx, &k)?;
                            w.remove(tx, &k)?;
                            b.remove(tx, &k)?;
                            q.try_pop(tx)?;
                            Ok(())
                        });
                        if i < 20 {
                            atomically(|tx| l.remove(tx, &Counted::new(k)).map(|_| ()));
                        }
                    }
                }
            });
        }
    });
    assert_eq!(h.load_len() + w.load_len() + b.load_len() + l.load_len(), 0);
    // Everything was removed; allow the queue's dummy node to hold one value.
    let n = live(2);
    assert!(n <= 2, "{n} values still alive after churn and epoch flush");
    drop((h, w, b, l, q));
    assert_eq!(live(0), 0);
}

static LIVE_KEYS: AtomicI64 = AtomicI64::new(0);

/// A key that counts live instances (its own counter: this file's tests run
/// in parallel).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct CountedKey(u64);
impl CountedKey {
    fn new(v: u64) -> Self {
        LIVE_KEYS.fetch_add(1, Ordering::SeqCst);
        CountedKey(v)
    }
}
impl Clone for CountedKey {
    fn clone(&self) -> Self {
        CountedKey::new(self.0)
    }
}
impl Drop for CountedKey {
    fn drop(&mut self) {
        LIVE_KEYS.fetch_sub(1, Ordering::SeqCst);
    }
}

#[test]
fn btree_churn_frees_replaced_contents_and_entries() {
    // Keys are cloned into every copy-on-write leaf and into separators:
    // counting them checks that replaced contents and removed entries are
    // freed (without reclamation, tens of thousands would be alive).
    let b: TBTreeMap<CountedKey, u64> = TBTreeMap::with_fanout(4);
    thread::scope(|sc| {
        for t in 0..2u64 {
            let b = &b;
            sc.spawn(move || {
                for round in 0..20u64 {
                    for i in 0..100u64 {
                        let k = (i * 2 + t) + 1000 * (round % 3);
                        atomically(|tx| b.set(tx, CountedKey::new(k), k));
                    }
                    for i in 0..100u64 {
                        let k = (i * 2 + t) + 1000 * (round % 3);
                        atomically(|tx| b.remove(tx, &CountedKey::new(k)).map(|_| ()));
                    }
                }
            });
        }
    });
    assert_eq!(b.load_len(), 0);
    // What remains: the bounds of the (emptied, never merged) leaves and
    // the separators of 600 distinct keys' worth of splits.
    let mut n = LIVE_KEYS.load(Ordering::SeqCst);
    for _ in 0..200 {
        flush();
        n = LIVE_KEYS.load(Ordering::SeqCst);
        if n <= 1500 {
            break;
        }
        thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(
        n <= 1500,
        "{n} keys still alive after churn and epoch flush"
    );
    drop(b);
    for _ in 0..200 {
        flush();
        if LIVE_KEYS.load(Ordering::SeqCst) == 0 {
            break;
        }
        thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(LIVE_KEYS.load(Ordering::SeqCst), 0);
}

static LIVE_ELEMS: AtomicI64 = AtomicI64::new(0);

/// A list element that counts live instances (its own counter, as above).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Elem(u64);
impl Elem {
    fn new(v: u64) -> Self {
        LIVE_ELEMS.fetch_add(1, Ordering::SeqCst);
        Elem(v)
    }
}
impl Clone for Elem {
    fn clone(&self) -> Self {
        Elem::new(self.0)
    }
}
impl Drop for Elem {
    fn drop(&mut self) {
        LIVE_ELEMS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The live element count once the epoch collector has caught up.
fn live_elems(expected: i64) -> i64 {
    for _ in 0..200 {
        flush();
        let n = LIVE_ELEMS.load(Ordering::SeqCst);
        if n <= expected {
            return n;
        }
        thread::sleep(std::time::Duration::from_millis(5));
    }
    LIVE_ELEMS.load(Ordering::SeqCst)
}

#[test]
fn list_placeholders_and_removals_free_every_node() {
    // Every way a list node leaves its list: a placeholder abandoned by an
    // aborted insert, an own insert removed again (both unlinked in
    // cleanup), a committed removal (unlinked at commit), and a removal
    // whose element the same transaction inserts again.
    let s: TListSet<Elem> = TListSet::new();
    let l: TList<Elem> = TList::new();
    thread::scope(|sc| {
        for t in 0..2u64 {
            let (s, l) = (&s, &l);
            sc.spawn(move || {
                for i in 0..400u64 {
                    let k = i % 23 + 100 * t;
                    let r: Result<(), ()> = try_atomically(|tx| {
                        s.insert(tx, Elem::new(k + 1000))?;
                        l.insert(tx, Elem::new(k))?;
                        Err(TxError::User(()))
                    });
                    assert!(r.is_err());
                    atomically(|tx| {
                        s.insert(tx, Elem::new(k))?;
                        l.insert(tx, Elem::new(k))?;
                        l.insert(tx, Elem::new(k + 500))?;
                        assert!(l.remove(tx, &Elem::new(k + 500))?);
                        Ok(())
                    });
                    atomically(|tx| {
                        s.remove(tx, &Elem::new(k))?;
                        if l.remove(tx, &Elem::new(k))? && i % 3 == 0 {
                            l.insert(tx, Elem::new(k))?;
                        }
                        Ok(())
                    });
                    // Readers' clones are dropped right away.
                    atomically(|tx| {
                        s.range(tx, ..)?;
                        l.get(tx, &Elem::new(k)).map(drop)
                    });
                }
            });
        }
    });
    assert_eq!(s.load_vec(), vec![]);
    let held = l.load_len() as i64;
    assert_eq!(held, l.load_vec().len() as i64);
    assert_eq!(
        live_elems(held),
        held,
        "list nodes left unfreed after churn and epoch flush"
    );
    drop((s, l));
    assert_eq!(live_elems(0), 0);
}
