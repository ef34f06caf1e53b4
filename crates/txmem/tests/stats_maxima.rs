//! `stats::reset_maxima`: after it, a snapshot's maxima cover only the
//! transactions since (alone in its binary: the maxima are process-wide).

use txmem::{atomically, stats, TArray};

#[test]
fn maxima_cover_only_what_ran_after_a_reset() {
    let a = TArray::new(64, 0u64);
    atomically(|tx| (0..40).try_for_each(|i| a.set(tx, i, 1)));
    assert!(stats::snapshot().max_items >= 40);
    stats::reset_maxima();
    assert_eq!(stats::snapshot().max_items, 0);
    atomically(|tx| (0..3).try_for_each(|i| a.set(tx, i, 2)));
    assert_eq!(stats::snapshot().max_items, 3);
    // A thread that exits keeps counting, and its maximum resets too.
    std::thread::scope(|s| {
        s.spawn(|| atomically(|tx| (0..7).try_for_each(|i| a.set(tx, i, 3))));
    });
    assert_eq!(stats::snapshot().max_items, 7);
    stats::reset_maxima();
    assert_eq!(stats::snapshot().max_items, 0);
}
