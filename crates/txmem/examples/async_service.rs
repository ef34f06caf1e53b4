//! An async producer/consumer service on txmem: request handlers (tokio
//! tasks) put jobs on a bounded `TQueue` and wait for their results in a
//! `THashMap`; workers (tasks too) take jobs, and a job and its result move
//! atomically with the service's counters. Waiting on an empty queue, on a
//! full one or for a result suspends the task (`atomically_async`), so a
//! two-thread runtime serves hundreds of waiting tasks.
//!
//! `cargo run --release -p txmem --example async_service`

use std::sync::Arc;
use std::time::Instant;

use txmem::{atomically, atomically_async, TCounter, THashMap, TQueue};

/// The service's shared state.
struct Service {
    /// Jobs: (id, input). Bounded, so request handlers wait when it is full.
    jobs: TQueue<(u64, u64)>,
    /// Results by job id, taken out by the request that waits for it.
    results: THashMap<u64, u64>,
    /// Jobs accepted and jobs done.
    accepted: TCounter,
    done: TCounter,
}

impl Service {
    /// A request: enqueue the job, then wait for its result.
    async fn request(&self, id: u64, input: u64) -> u64 {
        atomically_async(|tx| {
            self.jobs.push(tx, (id, input))?;
            self.accepted.increment(tx)
        })
        .await;
        atomically_async(|tx| match self.results.remove(tx, &id)? {
            Some(r) => Ok(r),
            None => Err(tx.retry()),
        })
        .await
    }

    /// A worker: take a job, publish its result and count it, in one
    /// transaction; stop on the job with id `u64::MAX`.
    async fn work(&self) {
        loop {
            let stop = atomically_async(|tx| {
                let (id, input) = self.jobs.pop(tx)?;
                if id == u64::MAX {
                    return Ok(true);
                }
                self.results.insert(tx, id, input * input)?;
                self.done.increment(tx)?;
                Ok(false)
            })
            .await;
            if stop {
                return;
            }
        }
    }
}

fn main() {
    const REQUESTS: u64 = 20_000;
    const CLIENTS: u64 = 200;
    const WORKERS: usize = 4;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let service = Arc::new(Service {
        jobs: TQueue::bounded(64),
        results: THashMap::new(),
        accepted: TCounter::new(0),
        done: TCounter::new(0),
    });
    let started = Instant::now();
    rt.block_on(async {
        let workers: Vec<_> = (0..WORKERS)
            .map(|_| {
                let s = service.clone();
                tokio::spawn(async move { s.work().await })
            })
            .collect();
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let s = service.clone();
                tokio::spawn(async move {
                    for id in (c..REQUESTS).step_by(CLIENTS as usize) {
                        let r = s.request(id, id % 1000).await;
                        assert_eq!(
                            r,
                            (id % 1000) * (id % 1000),
                            "job {id} got another's result"
                        );
                    }
                })
            })
            .collect();
        for c in clients {
            c.await.unwrap();
        }
        for _ in 0..WORKERS {
            atomically_async(|tx| service.jobs.push(tx, (u64::MAX, 0))).await;
        }
        for w in workers {
            w.await.unwrap();
        }
    });
    let elapsed = started.elapsed();
    let (accepted, done) = (service.accepted.load(), service.done.load());
    assert_eq!((accepted, done), (REQUESTS as i64, REQUESTS as i64));
    assert_eq!(atomically(|tx| service.results.len(tx)), 0);
    println!(
        "{REQUESTS} requests from {CLIENTS} client tasks, {WORKERS} worker tasks, 2 threads: \
         {:.0} requests/s",
        REQUESTS as f64 / elapsed.as_secs_f64()
    );
    let stats = txmem::stats::snapshot();
    println!("{stats}");
}
