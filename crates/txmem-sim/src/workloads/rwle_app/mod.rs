//! RW-LE's application benchmarks (§5.2, Figs 8–10) as simulated programs: a TPC-C-like
//! store, an STMBench7-like object graph and a Kyoto-Cabinet-"wicked"-like database, each
//! behind one reader-writer lock (any [`LockKind`](crate::locks::LockKind)).
//!
//! What the seed's results hinge on is kept: the size of the read and write sections against
//! the 64-line transactional capacity, which sections take the lock in read mode and which in
//! write mode, and (Kyoto) the per-slot mutexes nested inside the reader-writer lock. The data
//! live in simulated memory, one record per cache line; every parameter of an operation is
//! drawn before its section starts, so a speculative retry repeats the same operation, and the
//! value a section returns (counted on the host) comes from the run that took effect.
//!
//! * [`App::Tpcc`] — 4 warehouses × 10 districts × 100 customers, 1,000 items. Updates
//!   (`write_pct`%) are new-order (5–15 items: a district's order counter, the stock rows,
//!   an order and its lines; about 35 lines written), payment (warehouse, district, customer)
//!   and delivery (ten districts' newest orders, credited to their customers), 50:45:5. Reads
//!   are order-status (a customer's last order and its lines) and stock-level (the last 20
//!   orders of a district, their lines and each line's stock row: about 400 lines, past any
//!   transaction's capacity), half each.
//! * [`App::Stmbench7`] — a tree of assemblies (1 → 3 → 9 complex assemblies → 27 base
//!   assemblies), each base assembly using 3 of 100 composite parts, each composite part a
//!   document and a graph of 20 atomic parts with 3 connections each. Reads are a short
//!   traversal (a base assembly's composite parts, their documents and atomic graphs: about
//!   65 lines) or a query (one atomic part and its connections); updates swap the
//!   coordinates of every atomic part of one composite part (20 lines written) or advance one
//!   atomic part's build date. Long traversals and structural modifications are off, as in
//!   the seed.
//! * [`App::Kyoto`] — 16 slots, each a mutex and 64 buckets of binary search trees of
//!   records. Read-mode operations are gets and sets of one record: they take the outer lock
//!   in read mode and the record's slot mutex inside it (RW-LE elides only the outer lock;
//!   under HLE the inner mutex is elided too: a speculative section only reads it). Write-mode
//!   operations (`write_pct`%: the seed's 10%, 5% and under 1%) walk every tree of one slot
//!   and store its record count, as a whole-database operation would.
//!
//! Each run checks its data afterwards: TPC-C's year-to-date totals, balances, order
//! counters and stock against the operations counted; STMBench7's coordinate invariant and
//! build dates; Kyoto's trees (ordered, every key in its bucket) and values against the sets.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{RunResult, WorkloadConfig, WorkloadError};
use crate::config::SimConfig;
use crate::cpu::Cpu;
use crate::locks::{AnyLock, LockStats, RwLockAlgo};
use crate::simulation::executor::Sim;

mod kyoto;
mod stmbench7;
mod tpcc;

use kyoto::Kyoto;
use stmbench7::Stmbench7;
use tpcc::Tpcc;

/// Which application `rwle-app` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum App {
    /// TPC-C-like (Fig 10).
    Tpcc,
    /// STMBench7-like (Fig 8).
    Stmbench7,
    /// Kyoto Cabinet "wicked"-like (Fig 9).
    Kyoto,
}

impl App {
    /// Every application.
    pub const ALL: [App; 3] = [App::Tpcc, App::Stmbench7, App::Kyoto];

    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            App::Tpcc => "tpcc",
            App::Stmbench7 => "stmbench7",
            App::Kyoto => "kyoto",
        }
    }
}

/// Word `i` of the record (cache line) at `line`.
fn field(line: u64, i: u64) -> u64 {
    line + 8 * i
}

/// Host-side tallies of what committed sections did, per application.
#[derive(Default)]
struct Tally {
    /// TPC-C: payments' amounts, deliveries' credits, order lines' quantities, new orders.
    paid: u64,
    credited: u64,
    ordered: u64,
    new_orders: u64,
    /// STMBench7: build-date advances. Kyoto: successful sets.
    bumps: u64,
}

/// Runs `w.app` on CPUs `0..threads` under `w.lock`; checks its data afterwards.
pub fn run_rwle_app(cfg: &SimConfig, w: &WorkloadConfig) -> Result<RunResult, WorkloadError> {
    let threads = super::lock_threads(cfg, w)?;
    if w.write_pct > 100 {
        return Err(WorkloadError::Check("write_pct must be at most 100".into()));
    }
    let start = Instant::now();
    let total = Rc::new(RefCell::new(LockStats::default()));
    let tally = Rc::new(RefCell::new(Tally::default()));
    let (mut sim, check): (Sim, Checker) = match w.app {
        App::Tpcc => Tpcc::build(cfg, w, threads, &total, &tally)?,
        App::Stmbench7 => Stmbench7::build(cfg, w, threads, &total, &tally)?,
        App::Kyoto => Kyoto::build(cfg, w, threads, &total, &tally)?,
    };
    let run = super::run_checked(&mut sim, start, |sim| check(sim, &tally.borrow()))?;
    let locks = total.borrow().clone();
    Ok(RunResult { locks, ..run })
}

type Checker = Box<dyn Fn(&Sim, &Tally) -> Result<(), String>>;

/// Spawns the threads: each makes its share of `w.total_ops` operations, a write with
/// probability `write_pct`%, through `op(cpu, lock, write)`, then adds its lock's statistics
/// to `total`.
fn spawn_threads<F, Fut>(
    sim: &mut Sim,
    w: &WorkloadConfig,
    threads: usize,
    lock: &AnyLock,
    total: &Rc<RefCell<LockStats>>,
    op: F,
) where
    F: Fn(Cpu, Rc<RefCell<AnyLock>>, bool) -> Fut + Clone + 'static,
    Fut: Future<Output = ()> + 'static,
{
    for t in 0..threads {
        let n = super::share(w.total_ops, threads, t);
        let (lock, total, op, write_pct) = (
            Rc::new(RefCell::new(lock.clone())),
            total.clone(),
            op.clone(),
            w.write_pct,
        );
        sim.spawn(t, move |cpu| async move {
            for _ in 0..n {
                let write = cpu.random_below(100) < write_pct;
                op(cpu.clone(), lock.clone(), write).await;
            }
            *total.borrow_mut() += lock.borrow().stats();
        });
    }
}

// The lock handle is owned by one simulated thread and borrowed across its awaits only by
// that thread's single task, so the RefCell is never borrowed twice.
#[allow(clippy::await_holding_refcell_ref)]
async fn read<F, Fut, T>(cpu: &Cpu, lock: &RefCell<AnyLock>, section: F) -> T
where
    F: FnMut(Cpu) -> Fut,
    Fut: Future<Output = T>,
{
    lock.borrow_mut().read(cpu, section).await
}

#[allow(clippy::await_holding_refcell_ref)]
async fn write<F, Fut, T>(cpu: &Cpu, lock: &RefCell<AnyLock>, section: F) -> T
where
    F: FnMut(Cpu) -> Fut,
    Fut: Future<Output = T>,
{
    lock.borrow_mut().write(cpu, section).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::LockKind;
    use crate::workloads::{run, WorkloadKind};

    fn config(app: App, lock: LockKind, write_pct: u64) -> (SimConfig, WorkloadConfig) {
        let mut sim = SimConfig::power8();
        sim.cores = 1;
        sim.threads_per_core = 4;
        // A livelock shows up as a timed-out run, not a hung test.
        sim.max_cycles = 200_000_000;
        let w = WorkloadConfig {
            kind: WorkloadKind::RwleApp,
            app,
            lock,
            write_pct,
            total_ops: 120,
            ..WorkloadConfig::default()
        };
        (sim, w)
    }

    #[test]
    fn every_lock_keeps_every_app_consistent_and_is_deterministic() {
        for app in App::ALL {
            // Algorithm 1 has no fallback: a write section past the capacity retries forever.
            for lock in LockKind::ALL.into_iter().filter(|&l| l != LockKind::RwLe1) {
                for pct in [10, 60] {
                    let (sim, w) = config(app, lock, pct);
                    let what = format!("{} under {} at {pct}%", app.name(), lock.name());
                    let a = run(&sim, &w).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(!a.stats.timed_out, "{what}");
                    assert_eq!(a.locks.sections(), 120, "{what}");
                    assert!(a.locks.write_sections > 0, "{what}");
                    let b = run(&sim, &w).unwrap();
                    assert_eq!((a.stats, a.locks), (b.stats, b.locks), "{what}");
                }
            }
        }
    }

    #[test]
    fn stock_level_and_traversals_outgrow_htm_capacity() {
        // Read-only mixes under HLE: TPC-C's stock-level and STMBench7's traversals overflow
        // the 64-line capacity and fall back; Kyoto's small reads do not.
        for (app, overflows) in [
            (App::Tpcc, true),
            (App::Stmbench7, true),
            (App::Kyoto, false),
        ] {
            let (mut sim, w) = config(app, LockKind::Tle, 0);
            sim.threads_per_core = 1;
            let r = run(&sim, &w).unwrap();
            assert_eq!(
                r.locks.aborts.capacity > 0,
                overflows,
                "{}: {:?}",
                app.name(),
                r.locks
            );
            assert_eq!(r.locks.locked_sections > 0, overflows, "{}", app.name());
        }
    }

    #[test]
    fn kyoto_takes_its_slot_mutexes_only_outside_transactions() {
        // One thread, only read-mode operations. HLE commits every section in HTM (its slot
        // mutexes only read); RW-LE runs them all uninstrumented, taking the mutexes.
        for (lock, htm) in [(LockKind::Tle, 120), (LockKind::RwLeOpt, 0)] {
            let (mut sim, mut w) = config(App::Kyoto, lock, 0);
            sim.threads_per_core = 1;
            w.total_ops = 120;
            let r = run(&sim, &w).unwrap();
            assert_eq!(r.locks.htm_commits, htm, "{}", lock.name());
            assert_eq!(r.locks.uninstrumented_reads, 120 - htm, "{}", lock.name());
            // Each set or get of RW-LE acquires and releases a mutex: a CAS per section.
            assert_eq!(r.stats.rmws > 0, htm == 0, "{}", lock.name());
        }
    }
}
