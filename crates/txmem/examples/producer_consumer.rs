//! Producers and consumers around a bounded `TQueue`, with no condition
//! variables: blocking is `retry`, and shutdown is one more value that the
//! waiting transaction reads.
//!
//! * `pop` retries while the queue is empty, so a consumer sleeps until a
//!   push commits.
//! * On a `bounded` queue, `push` retries while it is full, so a fast
//!   producer sleeps until a pop makes room.
//! * A consumer's transaction reads the `done` flag too (through `or_else`),
//!   so setting it wakes every idle consumer; they exit once the queue is
//!   drained.
//!
//! `cargo run --release -p txmem --example producer_consumer`

use std::thread;

use txmem::{atomically, stats, AbortCause, TBox, TQueue};

const PRODUCERS: u64 = 2;
const CONSUMERS: usize = 3;
const ITEMS_PER_PRODUCER: u64 = 5_000;
/// Small on purpose, so producers regularly find the queue full and block.
const CAPACITY: usize = 8;

fn main() {
    let queue = TQueue::<u64>::bounded(CAPACITY);
    let done = TBox::new(false);
    let before = stats::snapshot();

    let per_consumer: Vec<(usize, u64)> = thread::scope(|s| {
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let queue = &queue;
                s.spawn(move || {
                    // Producer p sends p*N+1 ..= (p+1)*N, so every value is distinct.
                    for i in 1..=ITEMS_PER_PRODUCER {
                        let item = p * ITEMS_PER_PRODUCER + i;
                        atomically(|tx| queue.push(tx, item));
                    }
                })
            })
            .collect();

        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|_| {
                let (queue, done) = (&queue, &done);
                s.spawn(move || {
                    let (mut count, mut sum) = (0usize, 0u64);
                    loop {
                        // Take an item if there is one; otherwise stop if the
                        // producers are done. If neither holds, both branches
                        // retry, and the thread sleeps until the queue or the
                        // flag changes.
                        let next = atomically(|tx| {
                            tx.or_else(
                                |tx| queue.pop(tx).map(Some),
                                |tx| {
                                    let finished = done.get(tx)?;
                                    tx.check(finished)?;
                                    Ok(None)
                                },
                            )
                        });
                        match next {
                            Some(item) => {
                                count += 1;
                                sum += item;
                            }
                            None => return (count, sum),
                        }
                    }
                })
            })
            .collect();

        for p in producers {
            p.join().unwrap();
        }
        // A transaction of its own: it wakes every consumer blocked on `done`.
        done.store(true);
        consumers.into_iter().map(|c| c.join().unwrap()).collect()
    });

    let delta = stats::snapshot() - before;
    let total = PRODUCERS * ITEMS_PER_PRODUCER;
    let expected_sum = total * (total + 1) / 2;
    let consumed: usize = per_consumer.iter().map(|&(n, _)| n).sum();
    let sum: u64 = per_consumer.iter().map(|&(_, s)| s).sum();

    println!("{PRODUCERS} producers, {CONSUMERS} consumers, queue capacity {CAPACITY}");
    for (i, (n, _)) in per_consumer.iter().enumerate() {
        println!("  consumer {i} took {n} items");
    }
    println!("consumed {consumed} of {total} items, sum {sum} (expected {expected_sum})");
    println!(
        "{} commits, {} retries, {} blocking waits (empty or full queue)",
        delta.commits,
        delta.aborts_by(AbortCause::Retry),
        delta.blocking_waits
    );
    assert_eq!(consumed as u64, total, "an item was lost or duplicated");
    assert_eq!(sum, expected_sum, "an item was lost or duplicated");
    assert!(queue.load_vec().is_empty());
    println!("ok: every item consumed exactly once");
}
