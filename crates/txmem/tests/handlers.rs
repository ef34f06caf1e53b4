//! Commit and abort handlers under contention: each attempt's handlers run
//! exactly once, for the outcome that attempt had.

use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use txmem::{atomically, stats, TBox};

#[test]
fn handlers_run_exactly_once_per_outcome_under_contention() {
    let counter = TBox::new(0u64);
    let commits = AtomicU64::new(0);
    let aborts = AtomicU64::new(0);
    let attempts = AtomicU64::new(0);
    let per_thread = if cfg!(debug_assertions) {
        5_000
    } else {
        50_000
    };
    thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..per_thread {
                    atomically(|tx| {
                        attempts.fetch_add(1, Ordering::Relaxed);
                        tx.on_commit(|| {
                            commits.fetch_add(1, Ordering::Relaxed);
                        });
                        tx.on_abort(|| {
                            aborts.fetch_add(1, Ordering::Relaxed);
                        });
                        let v = counter.get(tx)?;
                        counter.set(tx, v + 1)
                    });
                }
            });
        }
    });
    let transactions = 2 * per_thread;
    assert_eq!(counter.load(), transactions);
    assert_eq!(
        commits.load(Ordering::Relaxed),
        transactions,
        "one commit handler per committed transaction"
    );
    // Every attempt either committed or aborted, and ran exactly that outcome's handler.
    assert_eq!(
        commits.load(Ordering::Relaxed) + aborts.load(Ordering::Relaxed),
        attempts.load(Ordering::Relaxed),
        "every attempt ran exactly one of its handlers"
    );
    // The runtime's own count of this site's aborts agrees (the file has one call site).
    let site: u64 = stats::site_profile()
        .sites
        .iter()
        .filter(|s| s.location.contains("tests/handlers.rs:"))
        .map(|s| s.total_aborts())
        .sum();
    assert_eq!(site, aborts.load(Ordering::Relaxed));
}
