//! Concurrent inserts of distinct keys into the hash map, the ordered map
//! (with small nodes and with the default fanout) and the list set record
//! zero aborts. (Statistics are process-wide: this file holds a single test
//! so that nothing else runs in its process.)

use std::sync::Barrier;
use std::thread;

use txmem::{atomically, stats, TBTreeMap, THashMap, TListSet};

#[test]
fn distinct_key_inserts_never_abort() {
    // Pre-sized hash map: a resize holds bucket locks for a moment, which is
    // not a conflict but could make an insert wait past its spin bound.
    let h: THashMap<u64, u64> = THashMap::with_capacity(8192);
    // Default fanout: both threads' inserts land in the same wide leaves.
    let w: TBTreeMap<u64, u64> = TBTreeMap::new();
    let l: TListSet<u64> = TListSet::new();
    // Small nodes: the inserts split leaves and inner nodes many times.
    let b: TBTreeMap<u64, u64> = TBTreeMap::with_fanout(8);
    let barrier = Barrier::new(2);
    let before = stats::snapshot();
    thread::scope(|sc| {
        for t in 0..2u64 {
            let (h, w, l, b, barrier) = (&h, &w, &l, &b, &barrier);
            sc.spawn(move || {
                barrier.wait();
                for i in 0..1000u64 {
                    let k = i * 2 + t;
                    atomically(|tx| {
                        assert!(h.insert_if_absent(tx, k, k)?);
                        assert!(w.insert_if_absent(tx, k, k)?);
                        assert!(b.insert_if_absent(tx, k, k)?);
                        if i < 200 {
                            assert!(l.insert(tx, k)?);
                        }
                        Ok(())
                    });
                }
            });
        }
    });
    let d = stats::snapshot() - before;
    assert_eq!(d.commits, 2000);
    assert_eq!(d.total_aborts(), 0, "aborts: {d:?}");
    assert_eq!(h.load_len(), 2000);
    assert_eq!(w.load_len(), 2000);
    assert_eq!(w.load_keys(), (0..2000).collect::<Vec<_>>());
    assert_eq!(b.load_len(), 2000);
    assert_eq!(b.load_keys(), (0..2000).collect::<Vec<_>>());
    assert_eq!(l.load_len(), 400);
}
