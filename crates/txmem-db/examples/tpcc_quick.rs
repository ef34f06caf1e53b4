//! A quick TPC-C measurement: loads one warehouse and runs the standard
//! mix on one thread, then two warehouses with two threads, printing
//! committed transactions per second, per-kind aborts and rollbacks, and
//! the consistency check's verdict.
//!
//! ```text
//! cargo run --release -p txmem-db --example tpcc_quick [seconds] [--only KIND] [--phase 1|2] [--txns N] [--no-check]
//! ```
//!
//! `--only NewOrder` (or any kind name) runs that kind alone, for
//! profiling one transaction; `--phase` runs only the first (one thread)
//! or the second (two threads) measurement; `--txns N` runs N
//! transactions per thread instead of a timed interval (for counting
//! instructions or cache misses per transaction with `perf stat`, with
//! `--no-check` to leave the consistency check out of the count).

use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::SeedableRng;
use txmem_db::tpcc::{Config, Tpcc, TxKind, KIND_NAMES};
use txmem_db::Workload;

/// Per-kind totals of one thread.
#[derive(Clone, Copy, Default)]
struct Tally {
    runs: [u64; 5],
    aborts: [u64; 5],
    rolled_back: u64,
    /// Wall-clock nanoseconds spent in each kind (attempts included).
    nanos: [u64; 5],
    /// Nanoseconds the thread ran on a CPU (0 if unknown).
    cpu_ns: u64,
}

/// Nanoseconds the calling thread has run on a CPU (Linux's schedstat;
/// 0 elsewhere). On a machine shared with other work, throughput per CPU
/// second is steadier than per wall second.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// How long each thread runs.
#[derive(Clone, Copy)]
enum Length {
    Seconds(f64),
    Transactions(u64),
}

/// One thread's transactions (not inlined, so that profilers can count
/// just these: `valgrind --tool=callgrind --toggle-collect='*worker_loop*'`).
#[inline(never)]
fn worker_loop(
    db: &Tpcc,
    worker: usize,
    count: u64,
    deadline: Instant,
    only: Option<TxKind>,
) -> Tally {
    let mut rng = SmallRng::seed_from_u64(0x5eed + worker as u64);
    let mut t = Tally::default();
    let cpu_start = thread_cpu_ns();
    let home = db.home_warehouse(worker);
    let mut done = 0;
    loop {
        let batch = (count - done).min(64);
        for _ in 0..batch {
            let begin = Instant::now();
            let o = match only {
                Some(kind) => db.run_kind(kind, &mut rng, home),
                None => db.run_one(&mut rng, worker),
            };
            t.nanos[o.kind] += begin.elapsed().as_nanos() as u64;
            t.runs[o.kind] += 1;
            t.aborts[o.kind] += u64::from(o.attempts - 1);
            t.rolled_back += u64::from(o.rolled_back);
        }
        done += batch;
        if done >= count || Instant::now() >= deadline {
            t.cpu_ns = thread_cpu_ns() - cpu_start;
            return t;
        }
    }
}

fn run(db: &Tpcc, threads: usize, length: Length, only: Option<TxKind>) -> (Tally, f64) {
    let start = Instant::now();
    let (deadline, count) = match length {
        Length::Seconds(secs) => (start + Duration::from_secs_f64(secs), u64::MAX),
        Length::Transactions(n) => (start + Duration::from_secs(1 << 30), n),
    };
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|worker| s.spawn(move || worker_loop(db, worker, count, deadline, only)))
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let elapsed = start.elapsed().as_secs_f64();
    let mut total = Tally::default();
    for t in tallies {
        for k in 0..5 {
            total.runs[k] += t.runs[k];
            total.aborts[k] += t.aborts[k];
            total.nanos[k] += t.nanos[k];
        }
        total.rolled_back += t.rolled_back;
        total.cpu_ns += t.cpu_ns;
    }
    (total, elapsed)
}

fn report(
    label: &str,
    db: &Tpcc,
    threads: usize,
    length: Length,
    only: Option<TxKind>,
    check: bool,
) {
    let (t, elapsed) = run(db, threads, length, only);
    let n: u64 = t.runs.iter().sum();
    println!(
        "{label}: {n} transactions in {elapsed:.2} s = {:.0} txn/s ({} rolled back)",
        n as f64 / elapsed,
        t.rolled_back
    );
    if t.cpu_ns > 0 {
        let cpu = t.cpu_ns as f64 / 1e9;
        println!(
            "  on-CPU {cpu:.2} thread-seconds: {:.0} txn per CPU-second per thread",
            n as f64 / cpu
        );
    }
    for (k, name) in KIND_NAMES.iter().enumerate() {
        if t.runs[k] > 0 {
            println!(
                "  {name:<12} {:>9} runs {:>7} aborts ({:.3}%) {:>8.2} us each",
                t.runs[k],
                t.aborts[k],
                100.0 * t.aborts[k] as f64 / t.runs[k] as f64,
                t.nanos[k] as f64 / t.runs[k] as f64 / 1000.0
            );
        }
    }
    if !check {
        return;
    }
    let start = Instant::now();
    let verdict = db.check();
    println!(
        "  check: {} ({:.2} s)",
        verdict.as_ref().map_or_else(|e| e.as_str(), |()| "ok"),
        start.elapsed().as_secs_f64()
    );
    if let Err(e) = verdict {
        eprintln!("consistency check failed: {e}");
        std::process::exit(1);
    }
}

fn main() {
    let mut length = Length::Seconds(5.0);
    let mut only = None;
    let mut check = true;
    let mut phases = vec![(1u16, 1usize), (2, 2)];
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--only" {
            let name = args.next().expect("--only needs a kind");
            only = Some(
                *TxKind::ALL
                    .iter()
                    .find(|k| k.name().eq_ignore_ascii_case(&name))
                    .unwrap_or_else(|| panic!("unknown kind {name}; kinds: {KIND_NAMES:?}")),
            );
        } else if a == "--phase" {
            let p: usize = args
                .next()
                .and_then(|p| p.parse().ok())
                .expect("--phase 1 or 2");
            phases = vec![phases[p - 1]];
        } else if a == "--no-check" {
            check = false;
        } else if a == "--txns" {
            let n = args.next().and_then(|n| n.parse().ok()).expect("--txns N");
            length = Length::Transactions(n);
        } else {
            length = Length::Seconds(a.parse().expect("seconds"));
        }
    }
    for (warehouses, threads) in phases {
        let start = Instant::now();
        let db = Tpcc::new(Config::new(warehouses));
        println!(
            "loaded {warehouses} warehouse(s) in {:.2} s",
            start.elapsed().as_secs_f64()
        );
        let label = format!("{threads} thread(s), {warehouses} warehouse(s)");
        report(&label, &db, threads, length, only, check);
    }
}
