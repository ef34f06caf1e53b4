//! An elided mutex guarding a small shared table.
//!
//! `ElidedMutex` is a `lock_api` mutex: code locks it and uses the guard as
//! with any mutex. Where the CPU has Intel RTM, a critical section first runs
//! as a hardware transaction that only reads the lock word, so threads that
//! touch different parts of the table run in parallel; only when
//! transactions keep aborting does a thread take the lock for real. Without
//! RTM (or with `TXMEM_ELIDE_HTM=off`) it is a plain `parking_lot` mutex.
//! The program runs and checks its result either way, and prints which path
//! the sections took.
//!
//! `cargo run --release -p txmem-elide --example elided_lock`

use std::thread;

use txmem_elide::htm::{DefaultHtm, Htm, Rtm};
use txmem_elide::{stats, ElidedMutex, ElisionStatsExt};

const THREADS: usize = 4;
const OPS_PER_THREAD: usize = 20_000;
const BUCKETS: usize = 64;

/// The shared structure: per-bucket hit counts. Each thread mostly hits its
/// own buckets, so hardware transactions rarely conflict.
struct Table {
    hits: [u64; BUCKETS],
}

fn main() {
    let backend = DefaultHtm::default();
    let found = Rtm::detection();
    println!(
        "backend: {} ({}), RTM detection: {:?}",
        backend.name(),
        if backend.available() {
            "sections are elided"
        } else {
            "no HTM: every section takes the lock"
        },
        found.verdict
    );

    // Attempts and elided commits are counted per lock only on request,
    // because counting them puts a shared write on every section.
    stats::set_per_lock_counts(true);
    let table: ElidedMutex<Table> = ElidedMutex::new(Table { hits: [0; BUCKETS] });

    thread::scope(|s| {
        for t in 0..THREADS {
            let table = &table;
            s.spawn(move || {
                for i in 0..OPS_PER_THREAD {
                    // A short section that does only memory work: I/O or a
                    // system call in here would abort every hardware attempt.
                    let bucket = (t * (BUCKETS / THREADS) + i % 7) % BUCKETS;
                    table.lock().hits[bucket] += 1;
                }
            });
        }
    });

    let total: u64 = table.lock().hits.iter().sum();
    let expected = (THREADS * OPS_PER_THREAD) as u64;
    let st = table.elision_stats();
    println!(
        "{THREADS} threads x {OPS_PER_THREAD} increments: total {total} (expected {expected})"
    );
    println!(
        "this lock: {} hardware attempts, {} elided commits, {} fallback acquisitions",
        st.attempts, st.elided_commits, st.fallback_acquisitions
    );
    let a = st.aborts;
    println!(
        "aborts: {} total ({} conflict, {} lock busy, {} capacity, {} explicit, {} other)",
        a.total(),
        a.conflict,
        a.lock_busy,
        a.capacity,
        a.explicit,
        a.other
    );
    // The per-thread counters, summed. Only the elision path keeps them, so
    // without HTM they stay at zero while the per-lock count above does not.
    let all = stats::global();
    println!(
        "all threads (per-thread counters, elision path only): {} elided commits, {} fallback acquisitions",
        all.elided_commits, all.fallback_acquisitions
    );
    assert_eq!(total, expected, "an increment was lost");
    // Every section ran exactly once, one way or the other (the final read
    // of the table included).
    assert_eq!(st.elided_commits + st.fallback_acquisitions, expected + 1);
    println!("ok: no increment lost");
}
