//! Panics inside transactions: a valid transaction's panic propagates with
//! nothing installed and no lock held; a doomed transaction's panic retries.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use txmem::{atomically, TBox};

#[test]
fn panic_in_valid_transaction_propagates_and_releases_everything() {
    let b = TBox::new(1u32);
    let aborted = AtomicU64::new(0);
    let r = panic::catch_unwind(AssertUnwindSafe(|| {
        atomically(|tx| {
            b.set(tx, 99)?;
            tx.on_abort(|| {
                aborted.fetch_add(1, Ordering::SeqCst);
            });
            if b.get(tx)? == 99 {
                panic!("boom");
            }
            Ok(())
        })
    }));
    assert!(r.is_err());
    assert_eq!(b.load(), 1, "nothing installed");
    assert_eq!(aborted.load(Ordering::SeqCst), 1, "abort handlers ran once");
    // No lock held, and the thread can run transactions again.
    atomically(|tx| b.modify(tx, |v| v + 1));
    assert_eq!(b.load(), 2);
}

/// Runs `reader` on one thread, over and over with no opacity, while
/// another thread commits 20,000 transactions that keep two boxes equal.
/// The reader gets the boxes and may see them differ in a doomed attempt.
fn race_unopaque_reader(reader: impl Fn(&txmem::TxOptions, &TBox<u64>, &TBox<u64>) + Sync) {
    let a = TBox::new(0u64);
    let b = TBox::new(0u64);
    let opts = txmem::TxOptions::new().opacity(txmem::Opacity::None);
    let stop = std::sync::atomic::AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            for i in 1..=20_000u64 {
                atomically(|tx| {
                    a.set(tx, i)?;
                    b.set(tx, i)
                });
            }
            stop.store(true, Ordering::Relaxed);
        });
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                reader(&opts, &a, &b);
            }
        });
    });
    assert_eq!(a.load(), b.load());
}

#[test]
fn panic_in_doomed_transaction_is_retried() {
    // The reader panics on an inconsistent view; that must be treated as an
    // abort (the attempt was doomed), never propagated.
    race_unopaque_reader(|opts, a, b| {
        opts.run(|tx| {
            let x = a.get(tx)?;
            let y = b.get(tx)?;
            assert_eq!(x, y, "inconsistent view");
            Ok(())
        })
    });
}

#[test]
fn user_errors_from_inconsistent_views_are_retried_without_opacity() {
    // The reader returns a user error on an inconsistent view; that error
    // must never reach the caller, because the attempt that produced it
    // fails validation and is retried.
    race_unopaque_reader(|opts, a, b| {
        let r: Result<(), (u64, u64)> = opts.try_run(|tx| {
            let x = a.get(tx)?;
            let y = b.get(tx)?;
            if x != y {
                return Err(txmem::TxError::User((x, y)));
            }
            Ok(())
        });
        assert_eq!(
            r,
            Ok(()),
            "an error computed from an inconsistent view escaped"
        );
    });
}
