//! Contention policies that change what other transactions may do (the
//! stress tests in `bank.rs` run every policy for correctness).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use txmem::{atomically, ContentionPolicy, TBox, TxOptions};

mod common;

/// A transaction that took the hourglass (here after its first abort) keeps
/// every other transaction from beginning until it commits: a transaction
/// started while the holder's second attempt runs sees that attempt's body
/// finished.
#[test]
fn no_transaction_begins_while_another_holds_the_hourglass() {
    let holding = Arc::new(AtomicBool::new(false));
    let body_done = Arc::new(AtomicBool::new(false));
    let holder = {
        let (holding, body_done) = (holding.clone(), body_done.clone());
        thread::spawn(move || {
            let b = TBox::new(0u32);
            let mut attempts = 0;
            TxOptions::new()
                .contention(ContentionPolicy::Hourglass { threshold: 1 })
                .run(|tx| {
                    attempts += 1;
                    if attempts == 1 {
                        return Err(tx.abort());
                    }
                    b.set(tx, 1)?;
                    holding.store(true, Ordering::SeqCst);
                    // Long enough for the other thread to try to begin.
                    thread::sleep(Duration::from_millis(100));
                    body_done.store(true, Ordering::SeqCst);
                    Ok(())
                });
            attempts
        })
    };
    while !holding.load(Ordering::SeqCst) {
        thread::yield_now();
    }
    let saw_done = common::within(10, "a transaction waited for the hourglass forever", {
        let body_done = body_done.clone();
        move || atomically(|_| Ok(body_done.load(Ordering::SeqCst)))
    });
    assert_eq!(
        holder.join().unwrap(),
        2,
        "the holder committed on its second attempt"
    );
    assert!(
        saw_done,
        "a transaction began while another held the hourglass"
    );
}
