//! The TxLinux counter microbenchmark and its array variant.

use super::{RunResult, SyncKind, WorkloadConfig, WorkloadError};
use crate::config::SimConfig;
use crate::cpu::Cpu;
use crate::elision::{Elision, ElisionConfig, ElisionStats};
use crate::simulation::executor::Sim;
use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

pub use crate::elision::{spin_lock, spin_unlock};

/// Adds one to the word at `counter` (the critical section).
async fn add_one(cpu: &Cpu, counter: u64) {
    let v = cpu.load(counter).await;
    cpu.store(counter, v + 1).await;
}

/// Increments the word at `counter` under `sync` (`lock` is used by the spinlock).
///
/// `elided` runs with fresh policies each call; a thread that increments repeatedly keeps
/// one [`Elision`] instead, so that the policies adapt.
pub async fn increment(cpu: &Cpu, sync: SyncKind, counter: u64, lock: u64) {
    match sync {
        SyncKind::Spinlock => {
            spin_lock(cpu, lock).await;
            add_one(cpu, counter).await;
            spin_unlock(cpu, lock).await;
        }
        SyncKind::Tx => {
            cpu.transaction(|cpu| async move { add_one(&cpu, counter).await })
                .await
        }
        SyncKind::Atomic => {
            cpu.fetch_add(counter, 1).await;
        }
        SyncKind::Elided => {
            Elision::new(&ElisionConfig::default())
                .run(cpu, lock, |cpu| async move { add_one(&cpu, counter).await })
                .await
        }
    }
}

/// One core's way of incrementing: the synchronization, and the elision policies that adapt
/// across its increments when it is `elided`.
pub(super) struct Incrementer {
    sync: SyncKind,
    elision: Elision,
}

impl Incrementer {
    pub(super) fn new(sync: SyncKind, cfg: &ElisionConfig) -> Self {
        Incrementer {
            sync,
            elision: Elision::new(cfg),
        }
    }

    /// Increments the word at `counter` between 1 and `max` times (more than once only when
    /// elision coarsens sections); returns how many.
    pub(super) async fn increments(&mut self, cpu: &Cpu, counter: u64, lock: u64, max: u64) -> u64 {
        match self.sync {
            SyncKind::Elided => {
                self.elision
                    .run_group(
                        cpu,
                        lock,
                        max,
                        |cpu| async move { add_one(&cpu, counter).await },
                    )
                    .await
            }
            sync => {
                increment(cpu, sync, counter, lock).await;
                1
            }
        }
    }
}

/// What the elision policies decided so far (zero unless `elided`).
impl Incrementer {
    pub(super) fn elision_stats(&self) -> ElisionStats {
        self.elision.stats()
    }
}

pub(super) fn finish(
    sim: &mut Sim,
    start: Instant,
    elision: &Cell<ElisionStats>,
    check: impl FnOnce(&Sim) -> Result<(), String>,
) -> Result<RunResult, WorkloadError> {
    // Run first: the elision counts are only final once the simulation has ended.
    let run = super::run_checked(sim, start, check)?;
    Ok(RunResult {
        elision: elision.get(),
        ..run
    })
}

/// Adds a core's elision counts to the run's.
pub(super) fn add_to(total: &Cell<ElisionStats>, core: ElisionStats) {
    let mut t = total.get();
    t += core;
    total.set(t);
}

/// `cores` threads each increment one shared counter `increments` times; checks the total.
pub fn run_counter(cfg: &SimConfig, w: &WorkloadConfig) -> Result<RunResult, WorkloadError> {
    let start = Instant::now();
    let mut sim = Sim::new(cfg.clone()).map_err(|e| WorkloadError::Sim(e.into()))?;
    let lb = cfg.line_bytes;
    let counter = sim.alloc_lines(1);
    let lock = if w.lock_same_line && lb >= 16 {
        counter + 8
    } else {
        sim.alloc_lines(1)
    };
    let (sync, n, think) = (w.sync, w.increments, w.think_cycles);
    let elision = Rc::new(Cell::new(ElisionStats::default()));
    for core in 0..cfg.cpus() {
        let (ecfg, total) = (w.elision.clone(), elision.clone());
        sim.spawn(core, move |cpu| async move {
            let mut inc = Incrementer::new(sync, &ecfg);
            let mut done = 0;
            while done < n {
                let k = inc.increments(&cpu, counter, lock, n - done).await;
                done += k;
                if think > 0 {
                    // A coarsened group's think time comes after the whole group.
                    cpu.compute(think * k).await;
                }
            }
            add_to(&total, inc.elision.stats());
        });
    }
    let expect = cfg.cpus() as u64 * n;
    finish(&mut sim, start, &elision, |sim| {
        let got = sim.read(counter);
        if got == expect {
            Ok(())
        } else {
            Err(format!("counter is {got}, expected {expect}"))
        }
    })
}

/// `cores` threads each increment `increments` randomly chosen counters of an array of
/// `array_size` counters (one line each, with its own lock line); checks the sum.
pub fn run_counter_array(cfg: &SimConfig, w: &WorkloadConfig) -> Result<RunResult, WorkloadError> {
    if w.array_size == 0 {
        return Err(WorkloadError::Check("array_size must be at least 1".into()));
    }
    let start = Instant::now();
    let mut sim = Sim::new(cfg.clone()).map_err(|e| WorkloadError::Sim(e.into()))?;
    let lb = cfg.line_bytes;
    let lines = w.array_size.saturating_mul(2);
    let bytes = lines.saturating_mul(lb);
    if bytes > cfg.memory_bytes / 2 {
        return Err(WorkloadError::Check(format!(
            "array_size {} needs {bytes} bytes of simulated memory (a counter line and a lock \
             line each); raise memory_bytes (now {})",
            w.array_size, cfg.memory_bytes
        )));
    }
    let base = sim.alloc_lines(lines);
    let (sync, n, think, size) = (w.sync, w.increments, w.think_cycles, w.array_size);
    let elision = Rc::new(Cell::new(ElisionStats::default()));
    for core in 0..cfg.cpus() {
        let (ecfg, total) = (w.elision.clone(), elision.clone());
        sim.spawn(core, move |cpu| async move {
            let mut inc = Incrementer::new(sync, &ecfg);
            for _ in 0..n {
                let i = cpu.random_below(size);
                let counter = base + 2 * i * lb;
                // Each counter has its own lock, so sections are never coarsened here.
                inc.increments(&cpu, counter, counter + lb, 1).await;
                if think > 0 {
                    cpu.compute(think).await;
                }
            }
            add_to(&total, inc.elision.stats());
        });
    }
    let expect = cfg.cpus() as u64 * n;
    finish(&mut sim, start, &elision, |sim| {
        let got: u64 = (0..size).map(|i| sim.read(base + 2 * i * lb)).sum();
        if got == expect {
            Ok(())
        } else {
            Err(format!("counters sum to {got}, expected {expect}"))
        }
    })
}
