//! Database workloads on txmem: TPC-C and YCSB.
//!
//! Each workload is a database (tables on txmem's transactional maps, loaded
//! by [`Workload`]'s constructor) and a transaction mix. A driver (the
//! `txmem db` command) calls [`Workload::run_one`] from every thread for the
//! timed interval, then [`Workload::check`], which verifies the workload's
//! consistency conditions: a run whose check fails is a failure, never a
//! number.

pub mod hash;
pub mod tpcc;
pub mod ycsb;

use rand::rngs::SmallRng;

/// What one call of [`Workload::run_one`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Index of the transaction's kind in [`Workload::kinds`].
    pub kind: usize,
    /// Attempts the transaction took (1 if it committed first time).
    pub attempts: u32,
    /// True if the transaction rolled itself back on purpose (TPC-C's 1%
    /// of NewOrders with an invalid item): it ran, but changed nothing.
    pub rolled_back: bool,
}

/// A loaded database and its transaction mix, shared by every worker thread.
pub trait Workload: Sync {
    /// The names of the transaction kinds, for per-kind reporting
    /// (e.g. `["NewOrder", "Payment", …]`).
    fn kinds(&self) -> &'static [&'static str];

    /// Runs one transaction drawn from the mix on the calling thread;
    /// `worker` is the thread's index (`0..threads`), which workloads use to
    /// pick a home warehouse or a key range.
    fn run_one(&self, rng: &mut SmallRng, worker: usize) -> Outcome;

    /// Checks the database after a run: every consistency condition the
    /// workload defines, with a message naming the first that failed.
    fn check(&self) -> Result<(), String>;
}
