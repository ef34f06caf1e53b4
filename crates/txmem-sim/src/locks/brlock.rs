//! BRLock (big-reader lock): one mutex per thread; a reader takes its own, a writer takes
//! all of them, in thread order (so writers cannot deadlock), with compare-and-swap, as in
//! RW-LE's baseline (§4).

use super::{padded_words, LockStats, RwLockAlgo};
use crate::cpu::Cpu;
use crate::elision::{spin_lock, spin_unlock};
use crate::simulation::executor::Sim;
use std::future::Future;

/// Per-thread TTAS mutexes, each on its own cache line.
#[derive(Clone, Debug)]
pub struct BrLock {
    mutexes: Vec<u64>,
    stats: LockStats,
}

impl BrLock {
    /// Allocates one mutex per thread (threads run on cores `0..threads`).
    pub fn new(sim: &mut Sim, threads: usize) -> Self {
        BrLock {
            mutexes: padded_words(sim, threads),
            stats: LockStats::default(),
        }
    }
}

impl RwLockAlgo for BrLock {
    fn name(&self) -> &'static str {
        "BRLock"
    }

    async fn read<F, Fut, T>(&mut self, cpu: &Cpu, mut section: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        let mine = self.mutexes[cpu.core()];
        spin_lock(cpu, mine).await;
        let r = section(cpu.clone()).await;
        spin_unlock(cpu, mine).await;
        self.stats.locked_sections += 1;
        self.stats.read_sections += 1;
        r
    }

    async fn write<F, Fut, T>(&mut self, cpu: &Cpu, mut section: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        for &m in &self.mutexes {
            spin_lock(cpu, m).await;
        }
        let r = section(cpu.clone()).await;
        for &m in &self.mutexes {
            spin_unlock(cpu, m).await;
        }
        self.stats.locked_sections += 1;
        self.stats.write_sections += 1;
        r
    }

    fn stats(&self) -> &LockStats {
        &self.stats
    }
}
