//! The three ways a transaction runs serially are counted apart, overall and
//! per call site: started irrevocable, switched mid-flight, serialized after
//! aborts. (Its own test binary: the overall counters are process-wide.)

use std::sync::Barrier;
use std::thread;

use txmem::{atomically, stats, TBox, TxOptions};

#[test]
fn started_switched_and_serialized_are_counted_apart() {
    let b = TBox::new(0u64);
    let before = stats::snapshot();

    TxOptions::new().irrevocable(true).run(|tx| b.set(tx, 1));
    atomically(|tx| {
        let v = b.get(tx)?;
        tx.become_irrevocable()?;
        b.set(tx, v + 1)
    });
    // The transaction aborts itself until the runtime serializes it, after
    // two aborts.
    let mut attempts = 0;
    TxOptions::new().serialize_after(Some(2)).run(|tx| {
        attempts += 1;
        let v = b.get(tx)?;
        if !tx.is_irrevocable() {
            return Err(tx.abort());
        }
        b.set(tx, v + 1)
    });
    assert_eq!(attempts, 3);
    assert_eq!(b.load(), 3);

    let d = stats::snapshot() - before;
    assert_eq!(d.started_irrevocable, 1);
    assert_eq!(d.switched_irrevocable, 1);
    assert_eq!(d.serialized, 1);
    assert_eq!(d.irrevocable_commits, 3);

    let profile = stats::site_profile();
    let row = |line: u32| {
        profile
            .sites
            .iter()
            .find(|s| {
                s.location
                    .contains(&format!("serialization_stats.rs:{line}:"))
            })
            .unwrap_or_else(|| panic!("no row for line {line}: {profile}"))
            .clone()
    };
    let started = row(line_of("irrevocable(true).run"));
    assert_eq!(
        (started.started_irrevocable, started.switched_irrevocable),
        (1, 0)
    );
    let switched = row(line_of("atomically(|tx| {"));
    assert_eq!(
        (switched.started_irrevocable, switched.switched_irrevocable),
        (0, 1)
    );
    let serialized = row(line_of("serialize_after(Some(2)).run"));
    assert_eq!(serialized.serialized, 1);
    assert_eq!(
        serialized.started_irrevocable + serialized.switched_irrevocable,
        0
    );
}

#[test]
fn ordinary_transactions_count_no_serialization() {
    let b = TBox::new(0u64);
    let go = Barrier::new(2);
    let before = stats::snapshot();
    thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                go.wait();
                for _ in 0..1000 {
                    TxOptions::new().serialize_after(None).run(|tx| {
                        let v = b.get(tx)?;
                        b.set(tx, v + 1)
                    });
                }
            });
        }
    });
    assert_eq!(b.load(), 2000);
    let d = stats::snapshot() - before;
    // The other test may run beside this one; it adds at most these.
    assert!(d.started_irrevocable <= 1 && d.switched_irrevocable <= 1 && d.serialized <= 1);
}

/// The line of this file holding `needle` (the first), so that the test
/// names call sites without hard-coding line numbers.
fn line_of(needle: &str) -> u32 {
    let src = include_str!("serialization_stats.rs");
    let at = src.find(needle).expect("needle in the source");
    src[..at].lines().count() as u32
}
