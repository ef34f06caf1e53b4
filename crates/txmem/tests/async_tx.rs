//! Async transactions under tokio: `retry` suspends tasks, never worker
//! threads; every item is delivered once; dropped futures lose nothing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use txmem::{atomically, atomically_async, TBox, TMVar, TQueue, TSem};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap()
}

/// 1,000 consumers wait on ten empty queues, more than the runtime has
/// worker threads by far. While they wait, a watchdog task must keep
/// running on the same two workers (a blocking `retry` would hold both
/// and starve it); then producers push 1,000 items and each consumer gets
/// exactly one of them.
#[test]
fn a_thousand_waiting_consumers_block_no_worker_and_get_every_item_once() {
    const CONSUMERS: usize = 1000;
    const QUEUES: usize = 10;
    let rt = runtime();
    rt.block_on(async {
        let queues: Arc<Vec<TQueue<usize>>> =
            Arc::new((0..QUEUES).map(|_| TQueue::new()).collect());
        let waiting = Arc::new(AtomicUsize::new(0));
        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|i| {
                let (queues, waiting) = (queues.clone(), waiting.clone());
                tokio::spawn(async move {
                    waiting.fetch_add(1, Ordering::SeqCst);
                    atomically_async(|tx| queues[i % QUEUES].pop(tx)).await
                })
            })
            .collect();
        // Every consumer has started (and found its queue empty) ...
        tokio::time::timeout(Duration::from_secs(30), async {
            while waiting.load(Ordering::SeqCst) < CONSUMERS {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .expect("the consumers never all started: a worker thread is blocked");
        // ... and still the watchdog gets the workers' time.
        let watchdog = tokio::spawn(async {
            for _ in 0..50 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        });
        tokio::time::timeout(Duration::from_secs(30), watchdog)
            .await
            .expect("the watchdog stalled: a transaction parked a worker thread")
            .unwrap();
        assert!(
            consumers.iter().all(|c| !c.is_finished()),
            "a consumer finished without an item"
        );
        // Producers, themselves tasks, push one item per consumer.
        let producers: Vec<_> = (0..4)
            .map(|p| {
                let queues = queues.clone();
                tokio::spawn(async move {
                    for item in (p..CONSUMERS).step_by(4) {
                        atomically_async(|tx| queues[item % QUEUES].push(tx, item)).await;
                        if item % 64 == 0 {
                            tokio::task::yield_now().await;
                        }
                    }
                })
            })
            .collect();
        for p in producers {
            p.await.unwrap();
        }
        let mut got = Vec::with_capacity(CONSUMERS);
        for c in consumers {
            let item = tokio::time::timeout(Duration::from_secs(30), c)
                .await
                .expect("a consumer was never woken")
                .unwrap();
            got.push(item);
        }
        got.sort_unstable();
        assert_eq!(
            got,
            (0..CONSUMERS).collect::<Vec<_>>(),
            "items lost or delivered twice"
        );
        assert!(queues.iter().all(|q| q.load_len() == 0));
    });
}

/// A future dropped while it waits takes nothing with it: the item pushed
/// afterwards stays in the queue for the next consumer.
#[test]
fn a_future_dropped_while_waiting_loses_nothing() {
    let rt = runtime();
    rt.block_on(async {
        let q = Arc::new(TQueue::<u32>::new());
        let waiter = {
            let q = q.clone();
            tokio::spawn(async move { q.pop_async().await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        waiter.abort();
        assert!(waiter.await.unwrap_err().is_cancelled());
        atomically(|tx| q.push(tx, 7));
        assert_eq!(q.load_vec(), vec![7]);
        assert_eq!(q.pop_async().await, 7);
    });
}

/// The async forms of the blocking collections: a bounded queue's push
/// waits for room, `TMVar` hands values over both ways, `TSem` waits for a
/// permit, and a plain `retry` on a `TBox` waits for its change.
#[test]
fn the_blocking_collections_wait_as_tasks() {
    let rt = runtime();
    rt.block_on(async {
        let q = Arc::new(TQueue::<u32>::bounded(1));
        q.push_async(1).await;
        let pusher = {
            let q = q.clone();
            tokio::spawn(async move { q.push_async(2).await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!pusher.is_finished(), "pushed into a full bounded queue");
        assert_eq!(q.pop_async().await, 1);
        pusher.await.unwrap();
        assert_eq!(q.pop_async().await, 2);

        let m = Arc::new(TMVar::<String>::new_empty());
        let taker = {
            let m = m.clone();
            tokio::spawn(async move { m.take_async().await })
        };
        m.put_async("a".to_string()).await;
        assert_eq!(taker.await.unwrap(), "a");

        let s = Arc::new(TSem::new(0));
        let acquirer = {
            let s = s.clone();
            tokio::spawn(async move { s.acquire_async().await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(
            !acquirer.is_finished(),
            "acquired a permit that did not exist"
        );
        atomically(|tx| s.release(tx));
        acquirer.await.unwrap();
        assert_eq!(s.load(), 0);

        let flag = Arc::new(TBox::new(false));
        let watcher = {
            let flag = flag.clone();
            tokio::spawn(async move {
                atomically_async(|tx| {
                    if flag.get(tx)? {
                        Ok(())
                    } else {
                        Err(tx.retry())
                    }
                })
                .await
            })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!watcher.is_finished());
        atomically(|tx| flag.set(tx, true));
        tokio::time::timeout(Duration::from_secs(30), watcher)
            .await
            .expect("the commit did not wake the task")
            .unwrap();
    });
}

/// An attempt that returned a value and then failed to commit must not
/// hand that value out when the next attempt suspends in `retry`: the
/// future is still pending, and what it finally returns comes from the
/// attempt that committed. (The first attempt reads `x` at 0 and writes
/// `y`; another thread changes `x` before it commits, so its commit fails
/// validation; the rerun sees 1 and waits.)
#[test]
fn a_value_from_an_attempt_that_failed_to_commit_is_never_returned() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};

    let x = TBox::new(0u64);
    let y = TBox::new(0u64);
    let attempts = AtomicUsize::new(0);
    let mut fut = std::pin::pin!(atomically_async(|tx| {
        let seen = x.get(tx)?;
        if attempts.fetch_add(1, Ordering::SeqCst) == 0 {
            std::thread::scope(|s| {
                s.spawn(|| atomically(|tx| x.set(tx, 1)));
            });
        }
        if seen == 1 {
            return Err(tx.retry());
        }
        y.set(tx, seen + 100)?;
        Ok(seen)
    }));
    let mut cx = Context::from_waker(Waker::noop());
    let first = fut.as_mut().poll(&mut cx);
    assert!(
        first.is_pending(),
        "the first poll returned {first:?}, a value whose commit failed"
    );
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    assert_eq!(y.load(), 0, "nothing committed");
    atomically(|tx| x.set(tx, 2));
    assert_eq!(fut.as_mut().poll(&mut cx), Poll::Ready(2));
    assert_eq!(y.load(), 102);
}
