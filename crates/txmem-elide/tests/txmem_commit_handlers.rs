//! `TxCondvar` driven from txmem's STM: the committing transaction notifies
//! from its `on_commit` handler; waiters use tickets because no lock protects
//! the transactional state. Nothing is lost, nothing hangs.

use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use txmem::{atomically, TBox};
use txmem_elide::TxCondvar;

struct Mailbox {
    items: TBox<Vec<u64>>,
    ready: TxCondvar,
}

impl Mailbox {
    fn put(&self, v: u64) {
        let notifier = self.ready.notifier();
        atomically(|tx| {
            let mut items = self.items.get(tx)?;
            items.push(v);
            self.items.set(tx, items)?;
            // Runs once, after the transaction commits (never for an aborted attempt).
            let n = notifier.clone();
            tx.on_commit(move || n.notify_all());
            Ok(())
        });
    }

    fn take(&self) -> u64 {
        loop {
            let ticket = self.ready.ticket();
            let got = atomically(|tx| {
                let mut items = self.items.get(tx)?;
                let v = items.pop();
                if v.is_some() {
                    self.items.set(tx, items)?;
                }
                Ok(v)
            });
            match got {
                Some(v) => return v,
                None => self.ready.wait_for_ticket(ticket),
            }
        }
    }
}

#[test]
fn notifications_from_txmem_commit_handlers_are_never_lost() {
    let n: u64 = if cfg!(debug_assertions) {
        5_000
    } else {
        50_000
    };
    let (done_tx, done_rx) = mpsc::channel();
    thread::spawn(move || {
        let mb = Arc::new(Mailbox {
            items: TBox::new(Vec::new()),
            ready: TxCondvar::new(),
        });
        let consumers: Vec<_> = (0..2)
            .map(|_| {
                let mb = mb.clone();
                thread::spawn(move || (0..n / 2).map(|_| mb.take()).sum::<u64>())
            })
            .collect();
        for v in 1..=n {
            mb.put(v);
        }
        let sum: u64 = consumers.into_iter().map(|c| c.join().unwrap()).sum();
        let _ = done_tx.send((sum, mb.ready.notifications()));
    });
    let (sum, notifications) = done_rx
        .recv_timeout(Duration::from_secs(120))
        .expect("a waiter hung: lost wake-up");
    assert_eq!(sum, n * (n + 1) / 2, "every item consumed exactly once");
    assert_eq!(notifications, n, "one notification per committed put");
}
