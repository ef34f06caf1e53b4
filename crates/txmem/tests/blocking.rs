//! Blocking `retry`: producer/consumer through a bounded buffer never hangs
//! and loses nothing.

use std::thread;
use std::time::Duration;

use txmem::{atomically, TArray, TBox};

mod common;

/// Fails the test if `f` does not finish in `secs` seconds.
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    common::within(secs, "blocked transactions hung (lost wake-up?)", f)
}

const CAPACITY: usize = 4;

struct Buffer {
    slots: TArray<u64>,
    head: TBox<usize>,
    len: TBox<usize>,
}

impl Buffer {
    fn new() -> Self {
        Buffer {
            slots: TArray::new(CAPACITY, 0),
            head: TBox::new(0),
            len: TBox::new(0),
        }
    }

    fn put(&self, v: u64) {
        atomically(|tx| {
            let len = self.len.get(tx)?;
            tx.check(len < CAPACITY)?;
            let head = self.head.get(tx)?;
            self.slots.set(tx, (head + len) % CAPACITY, v)?;
            self.len.set(tx, len + 1)
        })
    }

    fn take(&self) -> u64 {
        atomically(|tx| {
            let len = self.len.get(tx)?;
            tx.check(len > 0)?;
            let head = self.head.get(tx)?;
            let v = self.slots.get(tx, head)?;
            self.head.set(tx, (head + 1) % CAPACITY)?;
            self.len.set(tx, len - 1)?;
            Ok(v)
        })
    }
}

#[test]
fn producer_consumer_through_retry_never_hangs() {
    let n: u64 = if cfg!(debug_assertions) {
        20_000
    } else {
        200_000
    };
    let sum = within(120, move || {
        let buf = std::sync::Arc::new(Buffer::new());
        let producers: Vec<_> = (0..2)
            .map(|p| {
                let buf = buf.clone();
                thread::spawn(move || {
                    for i in 0..n / 2 {
                        buf.put(p * (n / 2) + i + 1);
                    }
                })
            })
            .collect();
        let consumer = {
            let buf = buf.clone();
            thread::spawn(move || (0..n).map(|_| buf.take()).sum::<u64>())
        };
        producers.into_iter().for_each(|p| p.join().unwrap());
        consumer.join().unwrap()
    });
    assert_eq!(sum, n * (n + 1) / 2, "every item consumed exactly once");
}

#[test]
fn retry_sleeps_until_a_read_changes() {
    let flag = std::sync::Arc::new(TBox::new(false));
    let waiter = {
        let flag = flag.clone();
        thread::spawn(move || {
            let before = txmem::stats::snapshot().blocking_waits;
            atomically(|tx| {
                let f = flag.get(tx)?;
                tx.check(f)
            });
            txmem::stats::snapshot().blocking_waits - before
        })
    };
    thread::sleep(Duration::from_millis(50));
    atomically(|tx| flag.set(tx, true));
    let waits = within(30, move || waiter.join().unwrap());
    assert!(waits >= 1, "the waiter blocked at least once");
}

#[test]
fn or_else_waits_on_both_branches() {
    let a = std::sync::Arc::new(TBox::new(0u32));
    let b = std::sync::Arc::new(TBox::new(0u32));
    let taker = {
        let (a, b) = (a.clone(), b.clone());
        thread::spawn(move || {
            atomically(|tx| {
                tx.or_else(
                    |tx| {
                        let n = a.get(tx)?;
                        tx.check(n > 0)?;
                        a.set(tx, n - 1)?;
                        Ok('a')
                    },
                    |tx| {
                        let n = b.get(tx)?;
                        tx.check(n > 0)?;
                        b.set(tx, n - 1)?;
                        Ok('b')
                    },
                )
            })
        })
    };
    thread::sleep(Duration::from_millis(50));
    // Only the second branch's object changes: the waiter must still wake.
    atomically(|tx| b.set(tx, 1));
    assert_eq!(within(30, move || taker.join().unwrap()), 'b');
    assert_eq!(b.load(), 0);
}

#[test]
fn serialized_transactions_may_still_block() {
    // Serialize after every abort: the consumer becomes irrevocable after
    // its first `retry`-abort and must still be able to wait.
    let slot = std::sync::Arc::new(TBox::new(None::<u64>));
    let opts = txmem::TxOptions::new().serialize_after(Some(1));
    let consumer = {
        let slot = slot.clone();
        thread::spawn(move || {
            (0..200)
                .map(|_| {
                    opts.run(|tx| {
                        let v = slot.get(tx)?;
                        tx.check(v.is_some())?;
                        slot.set(tx, None)?;
                        Ok(v.unwrap_or(0))
                    })
                })
                .sum::<u64>()
        })
    };
    for i in 1..=200u64 {
        opts.run(|tx| {
            let v = slot.get(tx)?;
            tx.check(v.is_none())?;
            slot.set(tx, Some(i))
        });
    }
    assert_eq!(within(60, move || consumer.join().unwrap()), 200 * 201 / 2);
}
