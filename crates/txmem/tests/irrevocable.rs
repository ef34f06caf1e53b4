//! Irrevocable transactions run alone among writers, never abort, and cost
//! ordinary transactions nothing when none runs.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use txmem::{atomically, TBox, TxOptions};

#[test]
fn irrevocable_transactions_run_alone() {
    let shared = TBox::new(0u64);
    let stop = AtomicBool::new(false);
    let violations = AtomicU64::new(0);
    let irrevocable_runs = AtomicU64::new(0);
    thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                atomically(|tx| shared.modify(tx, |v| v + 1));
            }
        });
        s.spawn(|| {
            for _ in 0..20 {
                let attempts = AtomicU64::new(0);
                TxOptions::new().irrevocable(true).run(|tx| {
                    attempts.fetch_add(1, Ordering::Relaxed);
                    let first = shared.get(tx)?;
                    // Irreversible work would happen here; meanwhile no writer may commit.
                    thread::sleep(Duration::from_millis(2));
                    if shared.load() != first {
                        violations.fetch_add(1, Ordering::Relaxed);
                    }
                    shared.set(tx, first + 1000)
                });
                assert_eq!(
                    attempts.load(Ordering::Relaxed),
                    1,
                    "an irrevocable transaction never re-runs"
                );
                irrevocable_runs.fetch_add(1, Ordering::Relaxed);
            }
            stop.store(true, Ordering::Relaxed);
        });
    });
    assert_eq!(
        violations.load(Ordering::Relaxed),
        0,
        "a writer committed during an irrevocable transaction"
    );
    assert_eq!(irrevocable_runs.load(Ordering::Relaxed), 20);
    assert!(shared.load() >= 20_000);
}

#[test]
fn become_irrevocable_mid_transaction_keeps_counts_exact() {
    let counter = TBox::new(0u64);
    let per_thread = if cfg!(debug_assertions) {
        2_000
    } else {
        20_000
    };
    thread::scope(|s| {
        for t in 0..2 {
            let counter = &counter;
            s.spawn(move || {
                for i in 0..per_thread {
                    atomically(|tx| {
                        let v = counter.get(tx)?;
                        if (i + t) % 50 == 0 {
                            tx.become_irrevocable()?;
                        }
                        counter.set(tx, v + 1)
                    });
                }
            });
        }
    });
    assert_eq!(counter.load(), 2 * per_thread as u64);
}
