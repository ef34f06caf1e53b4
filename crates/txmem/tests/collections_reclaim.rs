//! Memory stays bounded under insert/remove churn: removed nodes are really
//! freed through the epoch scheme. Values count themselves.

use std::sync::atomic::{AtomicI64, Ordering};
use std::thread;

use txmem::{atomically, THashMap, TListSet, TQueue, TSkipMap};

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
    // Hash map (through several resizes), skip map, list set and queue, all
    // churned by two threads; the live-value count must return to the size.
    let h: THashMap<u64, Counted> = THashMap::new();
    let s: TSkipMap<u64, Counted> = TSkipMap::new();
    let l: TListSet<Counted> = TListSet::new();
    let q: TQueue<Counted> = TQueue::new();
    thread::scope(|sc| {
        for t in 0..2u64 {
            let (h, s, l, q) = (&h, &s, &l, &q);
            sc.spawn(move || {
                for round in 0..20u64 {
                    for i in 0..100u64 {
                        let k = (i * 2 + t) + 1000 * (round % 3);
                        atomically(|tx| {
                            h.put(tx, k, Counted::new(k))?;
                            s.put(tx, k, Counted::new(k))?;
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
                            s.remove(tx, &k)?;
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
    assert_eq!(h.load_len() + s.load_len() + l.load_len(), 0);
    // Everything was removed; allow the queue's dummy node to hold one value.
    let n = live(2);
    assert!(n <= 2, "{n} values still alive after churn and epoch flush");
    drop((h, s, l, q));
    assert_eq!(live(0), 0);
}
