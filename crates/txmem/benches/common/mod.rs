//! Settings shared by the multi-threaded criterion benches.

/// The thread counts to measure: `TXMEM_BENCH_THREADS` as a comma-separated
/// list (for example `1,2,4,8,16` on a machine with more cores), or 1 and 2.
///
/// Panics with a message naming the variable if the list does not parse.
pub fn thread_counts() -> Vec<usize> {
    let Ok(list) = std::env::var("TXMEM_BENCH_THREADS") else {
        return vec![1, 2];
    };
    let counts: Vec<usize> = list
        .split(',')
        .map(|s| match s.trim().parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => panic!(
                "TXMEM_BENCH_THREADS: {s:?} is not a positive thread count \
                 (expected a comma-separated list such as 1,2,4)"
            ),
        })
        .collect();
    counts
}

/// A xorshift64 generator: cheap enough not to weigh on the operations it
/// picks, and the same sequence on every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Runs `iters` operations on `threads` threads and returns the wall time
/// from the start signal until the last one finished.
///
/// The threads claim operations in chunks from one shared counter rather
/// than each running a fixed share, so a thread that runs slower (its CPU
/// busy with something else, or a placement that makes its misses dearer)
/// does fewer of them, and the time measures the threads' combined
/// throughput, as a fixed-duration run would, rather than the slowest
/// thread's share. `worker(t)` builds thread `t`'s operation, called once
/// per operation.
pub fn run_shared<W>(
    threads: usize,
    iters: u64,
    worker: impl Fn(usize) -> W + Sync,
) -> std::time::Duration
where
    W: FnMut(),
{
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Barrier;
    use std::time::Instant;

    // At least ~64 claims per thread, so the last chunk is a small part of
    // the run; at most 256 operations, so a claim costs nothing measurable.
    let chunk = (iters / (threads as u64 * 64)).clamp(1, 256);
    let claimed = AtomicU64::new(0);
    let barrier = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (claimed, barrier, worker) = (&claimed, &barrier, &worker);
            s.spawn(move || {
                let mut op = worker(t);
                barrier.wait();
                loop {
                    let first = claimed.fetch_add(chunk, Ordering::Relaxed);
                    if first >= iters {
                        break;
                    }
                    for _ in first..(first + chunk).min(iters) {
                        op();
                    }
                }
                barrier.wait();
            });
        }
        barrier.wait();
        let start = Instant::now();
        barrier.wait();
        start.elapsed()
    })
}
