//! HLE/TLE: readers and writers alike elide one global lock (Rajwar & Goodman style), the
//! RW-LE paper's "HLE" baseline.
//!
//! A section runs as a hardware transaction that first reads the lock word — subscribing
//! to it, so a thread taking the lock aborts every elided section — and aborts itself with
//! [`LOCK_BUSY_CODE`] if the lock is held. After [`MAX_TRIES`] aborts (every abort counts,
//! lock-busy ones included), or at once after a persistent one, the section takes the lock
//! (the "GL" path). Before each attempt the thread waits, outside any transaction, until
//! the lock is free, so elided sections do not start only to abort on a held lock.

use super::{LockStats, RwLockAlgo, MAX_TRIES};
use crate::cpu::Cpu;
use crate::elision::{spin_lock, spin_unlock};
use crate::simulation::executor::Sim;
use std::future::Future;
use txmem_htm::LOCK_BUSY_CODE;

/// Transactional lock elision of one TTAS spinlock with a fixed retry budget.
#[derive(Clone, Debug)]
pub struct Tle {
    lock: u64,
    /// Hardware attempts per section before the fallback.
    pub max_tries: u32,
    stats: LockStats,
}

impl Tle {
    /// Allocates the lock word; the budget is [`MAX_TRIES`].
    pub fn new(sim: &mut Sim) -> Self {
        Tle {
            lock: sim.alloc_lines(1),
            max_tries: MAX_TRIES,
            stats: LockStats::default(),
        }
    }

    async fn section<F, Fut, T>(&mut self, cpu: &Cpu, mut section: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        for _ in 0..self.max_tries {
            cpu.spin_until(self.lock, |v| v == 0).await;
            match cpu.xbegin(|cpu| elided(cpu, self.lock, &mut section)).await {
                Ok(v) => {
                    self.stats.htm_commits += 1;
                    return v;
                }
                Err(st) => {
                    self.stats.count_abort(st);
                    if st.is_persistent() {
                        break;
                    }
                }
            }
        }
        // The aborted transaction is over: the section runs under the lock instead.
        cpu.forget_aborted();
        spin_lock(cpu, self.lock).await;
        let v = section(cpu.clone()).await;
        spin_unlock(cpu, self.lock).await;
        self.stats.locked_sections += 1;
        v
    }
}

/// The transaction body: subscribe to the lock (abort if held), then run the section.
async fn elided<F, Fut, T>(cpu: Cpu, lock: u64, section: &mut F) -> T
where
    F: FnMut(Cpu) -> Fut,
    Fut: Future<Output = T>,
{
    if cpu.load(lock).await != 0 {
        cpu.xabort(LOCK_BUSY_CODE).await;
    }
    section(cpu).await
}

impl RwLockAlgo for Tle {
    fn name(&self) -> &'static str {
        "HLE"
    }

    async fn read<F, Fut, T>(&mut self, cpu: &Cpu, section: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        let v = self.section(cpu, section).await;
        self.stats.read_sections += 1;
        v
    }

    async fn write<F, Fut, T>(&mut self, cpu: &Cpu, section: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        let v = self.section(cpu, section).await;
        self.stats.write_sections += 1;
        v
    }

    fn stats(&self) -> &LockStats {
        &self.stats
    }
}
