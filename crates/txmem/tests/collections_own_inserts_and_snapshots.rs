//! One thread, so nothing conflicts: transactions insert runs of keys into
//! one B-tree leaf (each insert moves the leaf's version), and read-only
//! transactions scan the map after each. A snapshot attempt aborts when it
//! meets a version ahead of the clock, so every version the inserts leave
//! behind must be covered by the clock once they commit: no abort at all.
//! (Statistics are process-wide: this file holds a single test so that
//! nothing else runs in its process.)

use txmem::{atomically, read_only, stats, TBTreeMap};

#[test]
fn snapshots_after_runs_of_own_inserts_never_abort() {
    let m: TBTreeMap<u64, u64> = TBTreeMap::new();
    let before = stats::snapshot();
    let mut next = 0u64;
    for round in 0..300u64 {
        atomically(|tx| {
            for k in next..next + 10 {
                assert!(m.insert_if_absent(tx, k, round)?);
            }
            Ok(())
        });
        next += 10;
        // The last rounds' keys: the leaves the inserts just moved.
        let from = next.saturating_sub(40);
        let seen = read_only(|tx| m.range(tx, from..next));
        assert_eq!(seen.len() as u64, next - from);
    }
    let d = stats::snapshot() - before;
    assert_eq!(d.commits, 600);
    assert_eq!(d.total_aborts(), 0, "aborts: {d:?}");
    assert_eq!(m.load_len(), 3000);
}
