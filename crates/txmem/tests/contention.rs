//! Contention policies that change what other transactions may do (the
//! stress tests in `bank.rs` run every policy for correctness).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use txmem::{atomically, ContentionPolicy, TBox, Transaction, TxOptions, TxResult};

mod common;

/// Runs `body` as a transaction that takes the hourglass: its first attempt
/// aborts, and the policy hands the hourglass to the next. Returns the
/// number of attempts.
fn holding_the_hourglass<'env>(
    mut body: impl FnMut(&mut Transaction<'env>) -> TxResult<()>,
) -> u32 {
    let mut attempts = 0;
    TxOptions::new()
        .contention(ContentionPolicy::Hourglass { threshold: 1 })
        .run(|tx| {
            attempts += 1;
            if attempts == 1 {
                return Err(tx.abort());
            }
            body(tx)
        });
    attempts
}

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
            holding_the_hourglass(|tx| {
                b.set(tx, 1)?;
                holding.store(true, Ordering::SeqCst);
                // Long enough for the other thread to try to begin.
                thread::sleep(Duration::from_millis(100));
                body_done.store(true, Ordering::SeqCst);
                Ok(())
            })
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

/// A panic that escapes an abort handler unwinds out of `atomically` while
/// the transaction holds the hourglass (taken after its first abort): the
/// hourglass must be released, or no transaction could ever begin again.
#[test]
fn a_panic_out_of_an_abort_handler_releases_the_hourglass() {
    thread::spawn(|| {
        let mut attempts = 0;
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            TxOptions::new()
                .contention(ContentionPolicy::Hourglass { threshold: 1 })
                .run(|tx| {
                    attempts += 1;
                    if attempts == 2 {
                        tx.on_abort(|| panic!("abort handler fails"));
                    }
                    Err::<(), _>(tx.abort())
                })
        }));
        assert!(r.is_err(), "the handler's panic propagates");
        assert_eq!(attempts, 2);
    })
    .join()
    .unwrap();
    common::within(10, "the hourglass stayed held after the panic", || {
        atomically(|_| Ok(()))
    });
}

/// A panic raised by the runtime between attempts (here: `retry` in an
/// irrevocable transaction) leaves no retry state behind: the thread's next
/// transaction is a fresh first attempt, not an irrevocable retry.
#[test]
fn a_panic_between_attempts_leaves_no_retry_state() {
    let r = std::panic::catch_unwind(|| {
        TxOptions::new()
            .irrevocable(true)
            .run(|tx| Err::<(), _>(tx.retry()))
    });
    assert!(r.is_err(), "retry in an irrevocable transaction panics");
    let irrevocable = atomically(|tx| Ok(tx.is_irrevocable()));
    assert!(
        !irrevocable,
        "the next transaction inherited the retry state"
    );
}

/// A transaction that committed holding the hourglass releases it as it
/// ends, even if its thread runs no transaction for a long time afterwards
/// (the retry state is kept for the thread's next abort; its contention
/// manager's precedence is not).
#[test]
fn a_commit_releases_the_hourglass_while_its_thread_stays_idle() {
    let (committed_tx, committed_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let holder = thread::spawn(move || {
        let b = TBox::new(0u32);
        let attempts = holding_the_hourglass(|tx| b.set(tx, 1));
        committed_tx.send(attempts).unwrap();
        // Idle, with no transaction, until the other thread is done.
        release_rx.recv().unwrap();
    });
    // (Two attempts alone; more if another test's transaction held the
    // hourglass meanwhile.)
    let attempts = committed_rx.recv().unwrap();
    assert!(
        attempts >= 2,
        "took the hourglass after an abort, then committed"
    );
    common::within(10, "the hourglass stayed held after its commit", || {
        atomically(|_| Ok(()))
    });
    release_tx.send(()).unwrap();
    holder.join().unwrap();
}
