//! Running an instance on several threads at once: for a fixed time
//! (`txmem bench`) or for a fixed number of operations shared out through
//! one counter (criterion's `iter_custom`). Both budgets start the threads
//! together, seed each thread's generator the same way and time from the
//! start signal to the last thread's finish, so a figure means the same
//! whichever tool produced it.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::harness::kinds::KindTallies;
use crate::harness::spec::{Instance, Tally};

/// Thread counts to measure, each a separate row: positive, distinct, at
/// most 1024, in the order given. Written `1,2,4`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadList(Vec<usize>);

impl ThreadList {
    /// 1, 2, 4, ... up to `cores`, and `cores` itself.
    pub fn up_to(cores: usize) -> ThreadList {
        let mut v: Vec<usize> = std::iter::successors(Some(1usize), |n| Some(n * 2))
            .take_while(|&n| n <= cores)
            .collect();
        if v.last() != Some(&cores.max(1)) {
            v.push(cores.max(1));
        }
        ThreadList(v)
    }

    /// The counts, in order.
    pub fn counts(&self) -> &[usize] {
        &self.0
    }
}

impl FromStr for ThreadList {
    type Err = String;

    fn from_str(s: &str) -> Result<ThreadList, String> {
        let mut out = Vec::new();
        for part in s.split(',') {
            let part = part.trim();
            let n: usize = part
                .parse()
                .map_err(|_| format!("`{part}` is not a thread count (expected e.g. 1,2,4)"))?;
            if n == 0 || n > 1024 {
                return Err(format!("thread count {n} out of range 1..=1024"));
            }
            if out.contains(&n) {
                return Err(format!("thread count {n} given twice"));
            }
            out.push(n);
        }
        Ok(ThreadList(out))
    }
}

impl fmt::Display for ThreadList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|n| n.to_string()).collect();
        f.write_str(&parts.join(","))
    }
}

/// How much work one run does.
#[derive(Clone, Copy, Debug)]
pub enum Budget<'a> {
    /// Every thread runs operations until `duration` has passed, or until
    /// `cancel` is set (checked about every 20 ms).
    Time {
        /// Timed length of the run.
        duration: Duration,
        /// Set from elsewhere (Ctrl-C) to stop early.
        cancel: &'a AtomicBool,
    },
    /// Exactly this many operations over all threads.
    ///
    /// The threads claim operations in chunks from one shared counter
    /// rather than each running a fixed share, so a thread that runs slower
    /// (its CPU busy with something else, or a placement that makes its
    /// misses dearer) does fewer of them, and the time measures the
    /// threads' combined throughput, as a timed run does, rather than the
    /// slowest thread's share.
    Ops(u64),
}

/// What one run of an instance did, summed over its threads.
#[derive(Debug)]
pub struct Run {
    /// The threads' tallies.
    pub tally: Tally,
    /// The threads' per-kind tallies (empty for instances without kinds).
    pub kinds: KindTallies,
    /// From the start signal until the last thread finished.
    pub elapsed: Duration,
}

/// Runs `inst` on `threads` threads within `budget` and returns the summed
/// tallies and the time from the start signal until the last thread
/// finished. Thread `i`'s generator is seeded from `seed` and `i`. A panic
/// in a thread is an error carrying its message.
pub fn run_threads(
    inst: &dyn Instance,
    threads: usize,
    budget: Budget<'_>,
    seed: u64,
) -> Result<(Tally, Duration), String> {
    run_threads_detailed(inst, threads, budget, seed).map(|r| (r.tally, r.elapsed))
}

/// [`run_threads`], with the per-kind tallies: thread `i` runs
/// [`Instance::op_as`] as worker `i`.
pub fn run_threads_detailed(
    inst: &dyn Instance,
    threads: usize,
    budget: Budget<'_>,
    seed: u64,
) -> Result<Run, String> {
    let stop = AtomicBool::new(false);
    let claimed = AtomicU64::new(0);
    let start = Barrier::new(threads + 1);
    let kinds = inst.kinds().len();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (stop, claimed, start) = (&stop, &claimed, &start);
                scope.spawn(move || {
                    let mut w = Worker {
                        index: i,
                        rng: SmallRng::seed_from_u64(
                            seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                        ),
                        tally: Tally::default(),
                        kinds: KindTallies::new(kinds),
                    };
                    start.wait();
                    match budget {
                        Budget::Time { .. } => until_stopped(inst, &mut w, stop),
                        Budget::Ops(ops) => shared_count(inst, &mut w, claimed, ops, threads),
                    }
                    (w.tally, w.kinds, Instant::now())
                })
            })
            .collect();
        start.wait();
        let t0 = Instant::now();
        if let Budget::Time { duration, cancel } = budget {
            let deadline = t0 + duration;
            loop {
                let now = Instant::now();
                if now >= deadline || cancel.load(Ordering::Relaxed) {
                    break;
                }
                std::thread::sleep((deadline - now).min(Duration::from_millis(20)));
            }
            stop.store(true, Ordering::Relaxed);
        }
        let mut total = Tally::default();
        let mut all_kinds = KindTallies::default();
        let mut last = t0;
        let mut panicked = None;
        for h in handles {
            match h.join() {
                Ok((t, k, end)) => {
                    total.merge(&t);
                    all_kinds.merge(&k);
                    last = last.max(end);
                }
                Err(p) => {
                    let msg = p
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| p.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "panic".into());
                    panicked = Some(format!("a worker thread panicked: {msg}"));
                }
            }
        }
        match panicked {
            Some(e) => Err(e),
            None => Ok(Run {
                tally: total,
                kinds: all_kinds,
                elapsed: last - t0,
            }),
        }
    })
}

/// One thread's state while it runs.
struct Worker {
    index: usize,
    rng: SmallRng,
    tally: Tally,
    kinds: KindTallies,
}

impl Worker {
    #[inline]
    fn op(&mut self, inst: &dyn Instance) {
        inst.op_as(self.index, &mut self.rng, &mut self.tally, &mut self.kinds);
    }
}

/// The timed loop: at least one operation per thread, so a loaded machine
/// cannot produce an empty (zero) sample.
fn until_stopped(inst: &dyn Instance, w: &mut Worker, stop: &AtomicBool) {
    loop {
        w.op(inst);
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
}

/// The counted loop: claims chunks of the `ops` operations until none are
/// left.
fn shared_count(
    inst: &dyn Instance,
    w: &mut Worker,
    claimed: &AtomicU64,
    ops: u64,
    threads: usize,
) {
    // At least ~64 claims per thread, so the last chunk is a small part of
    // the run; at most 256 operations, so a claim costs nothing measurable.
    let chunk = (ops / (threads as u64 * 64)).clamp(1, 256);
    loop {
        let first = claimed.fetch_add(chunk, Ordering::Relaxed);
        if first >= ops {
            break;
        }
        for _ in first..(first + chunk).min(ops) {
            w.op(inst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::spec::AbortCounting;

    struct Count;

    impl Instance for Count {
        fn op(&self, _: &mut SmallRng, t: &mut Tally) {
            t.ops += 1;
        }
        fn verify(&self, _: &Tally) -> Result<(), String> {
            Ok(())
        }
        fn abort_counting(&self) -> AbortCounting {
            AbortCounting::Never
        }
    }

    /// Counts each operation under its worker's index, as its kind.
    struct PerWorker;

    impl Instance for PerWorker {
        fn op(&self, _: &mut SmallRng, _: &mut Tally) {
            unreachable!("the driver calls op_as")
        }
        fn op_as(&self, worker: usize, _: &mut SmallRng, t: &mut Tally, kinds: &mut KindTallies) {
            t.ops += 1;
            kinds.record(worker, 2, worker == 1, None);
        }
        fn kinds(&self) -> &'static [&'static str] {
            &["worker 0", "worker 1", "worker 2"]
        }
        fn verify(&self, _: &Tally) -> Result<(), String> {
            Ok(())
        }
        fn abort_counting(&self) -> AbortCounting {
            AbortCounting::Attempts
        }
    }

    #[test]
    fn each_thread_runs_as_its_own_worker_and_its_kinds_add_up() {
        let run = run_threads_detailed(&PerWorker, 3, Budget::Ops(3000), 7).unwrap();
        let kinds = run.kinds.kinds();
        assert_eq!(kinds.len(), 3);
        let commits: u64 = kinds.iter().map(|k| k.commits).sum();
        assert_eq!(commits, run.tally.ops);
        assert_eq!(commits, 3000);
        for (worker, k) in kinds.iter().enumerate() {
            assert_eq!(k.aborts, k.commits, "one abort per operation");
            let rolled_back = if worker == 1 { k.commits } else { 0 };
            assert_eq!(k.rolled_back, rolled_back);
        }
    }

    #[test]
    fn thread_lists() {
        let list = |s: &str| s.parse::<ThreadList>().map(|l| l.counts().to_vec());
        assert_eq!(list("1,2,4"), Ok(vec![1, 2, 4]));
        assert!(list("0").unwrap_err().contains("thread count 0"));
        assert!(list("1,,2").is_err());
        assert!(list("2,2").unwrap_err().contains("twice"));
        assert!(list("x").unwrap_err().contains("not a thread count"));
        assert_eq!(ThreadList::up_to(1).counts(), [1]);
        assert_eq!(ThreadList::up_to(2).counts(), [1, 2]);
        assert_eq!(ThreadList::up_to(6).counts(), [1, 2, 4, 6]);
    }

    #[test]
    fn a_counted_run_does_exactly_its_operations() {
        for threads in [1, 3] {
            let (t, _) = run_threads(&Count, threads, Budget::Ops(1000), 7).unwrap();
            assert_eq!(t.ops, 1000);
        }
    }

    #[test]
    fn a_timed_run_lasts_about_its_duration_and_can_be_cancelled() {
        let cancel = AtomicBool::new(false);
        let timed = Budget::Time {
            duration: Duration::from_millis(30),
            cancel: &cancel,
        };
        let (t, elapsed) = run_threads(&Count, 2, timed, 7).unwrap();
        assert!(t.ops >= 2 && elapsed >= Duration::from_millis(30));
        cancel.store(true, Ordering::Relaxed);
        let long = Budget::Time {
            duration: Duration::from_secs(60),
            cancel: &cancel,
        };
        let (_, elapsed) = run_threads(&Count, 2, long, 7).unwrap();
        assert!(elapsed < Duration::from_secs(10));
    }
}
