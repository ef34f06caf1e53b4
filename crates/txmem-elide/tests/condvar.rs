//! Producer/consumer with TxCondvar: no lost wake-ups, with and without deferral.

use std::collections::VecDeque;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::Duration;
use txmem_elide::htm::{DefaultHtm, Htm, MockHtm, MockScript};
use txmem_elide::{RawElidedMutex, TxCondvar};

const TIMEOUT: Duration = Duration::from_secs(20);

struct Queue<H: Htm> {
    items: lock_api::Mutex<RawElidedMutex<H>, (VecDeque<u64>, bool)>,
    not_empty: TxCondvar,
    not_full: TxCondvar,
}

fn producer_consumer<H: Htm>(per_producer: u64, capacity: usize, setup: fn()) {
    let q = Arc::new(Queue::<H> {
        items: lock_api::Mutex::new((VecDeque::new(), false)),
        not_empty: TxCondvar::new(),
        not_full: TxCondvar::new(),
    });
    let producers: Vec<_> = (0..2)
        .map(|p| {
            let q = q.clone();
            thread::spawn(move || {
                setup();
                for i in 0..per_producer {
                    let mut g = q.items.lock();
                    let timed_out = q
                        .not_full
                        .wait_while_timeout(&mut g, TIMEOUT, |(v, _)| v.len() >= capacity)
                        .timed_out();
                    assert!(!timed_out, "producer lost a wake-up");
                    g.0.push_back(p * per_producer + i + 1);
                    // Notified inside the section: deferred to its end when elided.
                    q.not_empty.notify_one();
                }
            })
        })
        .collect();
    let consumers: Vec<_> = (0..2)
        .map(|_| {
            let q = q.clone();
            thread::spawn(move || {
                setup();
                let mut sum = 0u64;
                let mut n = 0u64;
                loop {
                    let mut g = q.items.lock();
                    let timed_out = q
                        .not_empty
                        .wait_while_timeout(&mut g, TIMEOUT, |(v, closed)| v.is_empty() && !*closed)
                        .timed_out();
                    assert!(!timed_out, "consumer lost a wake-up");
                    match g.0.pop_front() {
                        Some(x) => {
                            sum += x;
                            n += 1;
                            q.not_full.notify_one();
                        }
                        None => return (sum, n),
                    }
                }
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    {
        let mut g = q.items.lock();
        g.1 = true;
        q.not_empty.notify_all();
    }
    let (sum, n) = consumers
        .into_iter()
        .map(|c| c.join().unwrap())
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    let total = 2 * per_producer;
    assert_eq!(n, total);
    assert_eq!(sum, total * (total + 1) / 2);
}

#[test]
fn producer_consumer_default_backend() {
    producer_consumer::<DefaultHtm>(5_000, 4, || {});
}

#[test]
fn producer_consumer_mock_deferred_notifications() {
    // Every section is "elided" by the mock, so every notification is deferred.
    producer_consumer::<MockHtm>(1_000, 2, || MockHtm::install(MockScript::new()));
}

#[test]
fn notifier_works_from_a_commit_handler_on_another_thread() {
    type Handler = Box<dyn FnOnce() + Send + 'static>;
    let m = Arc::new(lock_api::Mutex::<RawElidedMutex<DefaultHtm>, u32>::new(0));
    let cv = Arc::new(TxCondvar::new());
    let (tx, rx) = mpsc::channel::<Handler>();
    // Stands in for an STM runtime running `on_commit` handlers after commit.
    let runner = thread::spawn(move || {
        for h in rx {
            h();
        }
    });
    let waiter = {
        let (m, cv) = (m.clone(), cv.clone());
        thread::spawn(move || {
            let mut g = m.lock();
            let r = cv.wait_while_timeout(&mut g, TIMEOUT, |v| *v < 10);
            assert!(!r.timed_out(), "wake-up from the commit handler was lost");
            *g
        })
    };
    for _ in 0..10 {
        *m.lock() += 1;
        let n = cv.notifier();
        tx.send(Box::new(move || n.notify_all())).unwrap();
    }
    drop(tx);
    assert_eq!(waiter.join().unwrap(), 10);
    runner.join().unwrap();
    assert!(cv.notifications() >= 10);
}

#[test]
fn wait_timeout_times_out_without_notification() {
    let m = lock_api::Mutex::<RawElidedMutex<DefaultHtm>, ()>::new(());
    let cv = TxCondvar::new();
    let mut g = m.lock();
    assert!(cv
        .wait_timeout(&mut g, Duration::from_millis(20))
        .timed_out());
}
