//! Multi-threaded bank stress: transfers between accounts with a concurrent
//! auditor, in every opacity mode and under every contention policy.
//!
//! Invariants: the committed total never changes; in the opaque modes no
//! attempt — not even one that later aborts — observes a wrong total.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::thread;

use txmem::{ContentionPolicy, Opacity, TArray, TxOptions};

const ACCOUNTS: usize = 16;
const INITIAL: i64 = 1000;
const MIN_AUDITS: u64 = if cfg!(miri) { 1 } else { 20 };

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Runs `transfers` transfers on each of two threads and audits concurrently.
/// Returns (audits that saw an inconsistent total inside the transaction).
///
/// The writers keep transferring past their quota until the auditor has
/// committed `MIN_AUDITS` audits, so that audits always overlap transfers
/// (on two cores the auditor may otherwise not be scheduled before the
/// writers are done).
fn run_bank(opts: TxOptions, transfers: usize) -> u64 {
    let accounts = TArray::new(ACCOUNTS, INITIAL);
    let expected = INITIAL * ACCOUNTS as i64;
    let done = AtomicBool::new(false);
    let torn_views = AtomicU64::new(0);
    let audits = AtomicU64::new(0);
    let finished = AtomicU64::new(0);
    let barrier = Barrier::new(3);
    thread::scope(|s| {
        for t in 0..2u64 {
            let (accounts, opts, barrier, done) = (&accounts, &opts, &barrier, &done);
            let (finished, audits) = (&finished, &audits);
            s.spawn(move || {
                let mut rng = 0x1234_5678_9abc_def1 ^ (t + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                barrier.wait();
                let mut done_transfers = 0;
                while done_transfers < transfers || audits.load(Ordering::Relaxed) < MIN_AUDITS {
                    done_transfers += 1;
                    let from = (xorshift(&mut rng) % ACCOUNTS as u64) as usize;
                    let to = (xorshift(&mut rng) % ACCOUNTS as u64) as usize;
                    let amount = (xorshift(&mut rng) % 50) as i64;
                    opts.run(|tx| {
                        let a = accounts.get(tx, from)?;
                        accounts.set(tx, from, a - amount)?;
                        let b = accounts.get(tx, to)?;
                        accounts.set(tx, to, b + amount)
                    });
                }
                if finished.fetch_add(1, Ordering::SeqCst) == 1 {
                    done.store(true, Ordering::SeqCst);
                }
            });
        }
        let (accounts, opts, barrier, done, torn_views, audits) =
            (&accounts, &opts, &barrier, &done, &torn_views, &audits);
        s.spawn(move || {
            barrier.wait();
            while !done.load(Ordering::Relaxed) {
                let total = opts.run(|tx| {
                    let mut sum = 0;
                    for i in 0..ACCOUNTS {
                        sum += accounts.get(tx, i)?;
                    }
                    // Record, don't panic: a panic in a doomed attempt would
                    // be retried and hide the violation.
                    if sum != expected {
                        torn_views.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(sum)
                });
                assert_eq!(total, expected, "a committed audit saw a wrong total");
                audits.fetch_add(1, Ordering::Relaxed);
            }
        });
    });
    assert!(audits.load(Ordering::Relaxed) >= MIN_AUDITS);
    let total: i64 = (0..ACCOUNTS).map(|i| accounts.load(i)).sum();
    assert_eq!(total, expected, "the committed total changed");
    torn_views.load(Ordering::Relaxed)
}

/// Operations each writer thread runs (fewer in unoptimized builds, far
/// fewer under Miri, which runs some thousand times slower).
fn per_thread() -> usize {
    if cfg!(miri) {
        8
    } else if cfg!(debug_assertions) {
        20_000
    } else {
        100_000
    }
}

#[test]
fn bank_total_is_conserved_in_every_opacity_mode() {
    for mode in [Opacity::Tl2, Opacity::Revalidate, Opacity::None] {
        let torn = run_bank(TxOptions::new().opacity(mode), per_thread());
        if mode != Opacity::None {
            assert_eq!(
                torn, 0,
                "{mode:?}: an attempt observed an inconsistent total"
            );
        }
    }
}

#[test]
fn bank_total_is_conserved_under_every_contention_policy() {
    for policy in ContentionPolicy::all() {
        let torn = run_bank(TxOptions::new().contention(policy), per_thread() / 2);
        assert_eq!(
            torn, 0,
            "{policy:?}: an attempt observed an inconsistent total"
        );
    }
}

#[test]
fn bank_total_is_conserved_with_aggressive_serialization() {
    // Serialize after the first abort: irrevocable and ordinary transactions mix.
    let torn = run_bank(TxOptions::new().serialize_after(Some(1)), per_thread() / 2);
    assert_eq!(torn, 0);
}

/// Transactions of one item commit through a path compiled for one item:
/// concurrent one-item increments of a box (and of an array element) must
/// lose nothing, also against two-item transactions on the same box.
#[test]
fn one_item_increments_are_never_lost_in_every_opacity_mode() {
    let n = per_thread() as u64;
    for mode in [Opacity::Tl2, Opacity::Revalidate, Opacity::None] {
        let opts = TxOptions::new().opacity(mode);
        let b = txmem::TBox::new(0u64);
        let other = txmem::TBox::new(0u64);
        let a = TArray::new(4, 0u64);
        let start = Barrier::new(3);
        thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    start.wait();
                    for _ in 0..n {
                        opts.run(|tx| b.modify(tx, |v| v + 1));
                        opts.run(|tx| a.modify(tx, 1, |v| v + 1));
                    }
                });
            }
            s.spawn(|| {
                start.wait();
                for _ in 0..n {
                    opts.run(|tx| {
                        b.modify(tx, |v| v + 1)?;
                        other.modify(tx, |v| v + 1)
                    });
                }
            });
        });
        assert_eq!(b.load(), 3 * n, "{mode:?}: a box increment was lost");
        assert_eq!(a.load(1), 2 * n, "{mode:?}: an element increment was lost");
        assert_eq!(other.load(), n);
    }
}
