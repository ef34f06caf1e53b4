//! SGL: one global test-and-test-and-set spinlock taken by readers and writers alike.

use super::{LockStats, RwLockAlgo};
use crate::cpu::Cpu;
use crate::elision::{spin_lock, spin_unlock};
use crate::simulation::executor::Sim;
use std::future::Future;

/// A single global lock: [`crate::elision::spin_lock`]'s TTAS word, which both kinds of
/// section take, so no two sections ever overlap.
#[derive(Clone, Debug)]
pub struct Sgl {
    lock: u64,
    stats: LockStats,
}

impl Sgl {
    /// Allocates the lock word (on its own line).
    pub fn new(sim: &mut Sim) -> Self {
        Sgl {
            lock: sim.alloc_lines(1),
            stats: LockStats::default(),
        }
    }

    async fn locked<F, Fut, T>(&mut self, cpu: &Cpu, mut section: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        spin_lock(cpu, self.lock).await;
        let v = section(cpu.clone()).await;
        spin_unlock(cpu, self.lock).await;
        self.stats.locked_sections += 1;
        v
    }
}

impl RwLockAlgo for Sgl {
    fn name(&self) -> &'static str {
        "SGL"
    }

    async fn read<F, Fut, T>(&mut self, cpu: &Cpu, section: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        let v = self.locked(cpu, section).await;
        self.stats.read_sections += 1;
        v
    }

    async fn write<F, Fut, T>(&mut self, cpu: &Cpu, section: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        let v = self.locked(cpu, section).await;
        self.stats.write_sections += 1;
        v
    }

    fn stats(&self) -> &LockStats {
        &self.stats
    }
}
