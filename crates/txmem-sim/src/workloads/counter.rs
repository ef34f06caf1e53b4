//! The TxLinux counter microbenchmark and its array variant.

use super::{RunResult, SyncKind, WorkloadConfig, WorkloadError};
use crate::config::SimConfig;
use crate::cpu::Cpu;
use crate::engine::executor::Sim;
use std::time::Instant;

/// Acquires a test-and-test-and-set spinlock at `lock`.
pub async fn spin_lock(cpu: &Cpu, lock: u64) {
    loop {
        if cpu.load(lock).await == 0 && cpu.cas(lock, 0, 1).await == 0 {
            return;
        }
    }
}

/// Releases the spinlock at `lock`.
pub async fn spin_unlock(cpu: &Cpu, lock: u64) {
    cpu.store(lock, 0).await;
}

/// Increments the word at `counter` under `sync` (`lock` is used by the spinlock).
pub async fn increment(cpu: &Cpu, sync: SyncKind, counter: u64, lock: u64) {
    match sync {
        SyncKind::Spinlock => {
            spin_lock(cpu, lock).await;
            let v = cpu.load(counter).await;
            cpu.store(counter, v + 1).await;
            spin_unlock(cpu, lock).await;
        }
        SyncKind::Tx => {
            cpu.transaction(|cpu| async move {
                let v = cpu.load(counter).await;
                cpu.store(counter, v + 1).await;
            })
            .await
        }
        SyncKind::Atomic => {
            cpu.fetch_add(counter, 1).await;
        }
    }
}

fn finish(
    sim: &mut Sim,
    start: Instant,
    check: impl FnOnce(&Sim) -> Result<(), String>,
) -> Result<RunResult, WorkloadError> {
    let stats = sim.run()?;
    let host_seconds = start.elapsed().as_secs_f64();
    if !stats.timed_out {
        check(sim).map_err(WorkloadError::Check)?;
    }
    Ok(RunResult {
        stats,
        host_seconds,
    })
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
    for core in 0..cfg.cores {
        sim.spawn(core, move |cpu| async move {
            for _ in 0..n {
                increment(&cpu, sync, counter, lock).await;
                if think > 0 {
                    cpu.compute(think).await;
                }
            }
        });
    }
    let expect = cfg.cores as u64 * n;
    finish(&mut sim, start, |sim| {
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
    for core in 0..cfg.cores {
        sim.spawn(core, move |cpu| async move {
            for _ in 0..n {
                let i = cpu.random_below(size);
                let counter = base + 2 * i * lb;
                increment(&cpu, sync, counter, counter + lb).await;
                if think > 0 {
                    cpu.compute(think).await;
                }
            }
        });
    }
    let expect = cfg.cores as u64 * n;
    finish(&mut sim, start, |sim| {
        let got: u64 = (0..size).map(|i| sim.read(base + 2 * i * lb)).sum();
        if got == expect {
            Ok(())
        } else {
            Err(format!("counters sum to {got}, expected {expect}"))
        }
    })
}
