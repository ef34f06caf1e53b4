//! A pthread-like reader-writer lock: one word holding a reader count and a writer flag.
//!
//! Like glibc's default `pthread_rwlock` (`PTHREAD_RWLOCK_PREFER_READER_NP`) it is
//! **reader-preferring**: a reader enters whenever no writer *holds* the lock, even while
//! writers wait, and a writer enters only when the word is 0 (no reader, no writer). Writers
//! can starve under a steady stream of readers; a finite workload always ends.

use super::{LockStats, RwLockAlgo};
use crate::cpu::Cpu;
use crate::simulation::executor::Sim;
use std::future::Future;

/// The writer flag in the lock word; the low bits count readers inside.
pub const WRITER: u64 = 1 << 63;

/// Reader-preferring reader-writer lock (see the module docs).
#[derive(Clone, Debug)]
pub struct PthreadRwLock {
    word: u64,
    stats: LockStats,
}

impl PthreadRwLock {
    /// Allocates the lock word (on its own line).
    pub fn new(sim: &mut Sim) -> Self {
        PthreadRwLock {
            word: sim.alloc_lines(1),
            stats: LockStats::default(),
        }
    }
}

impl RwLockAlgo for PthreadRwLock {
    fn name(&self) -> &'static str {
        "RWL"
    }

    async fn read<F, Fut, T>(&mut self, cpu: &Cpu, mut section: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        loop {
            // Test before the CAS, so spinning readers share the line while a writer holds it.
            let v = cpu.spin_until(self.word, |v| v & WRITER == 0).await;
            if cpu.cas(self.word, v, v + 1).await == v {
                break;
            }
        }
        let r = section(cpu.clone()).await;
        cpu.fetch_add(self.word, u64::MAX).await; // -1: leave
        self.stats.locked_sections += 1;
        self.stats.read_sections += 1;
        r
    }

    async fn write<F, Fut, T>(&mut self, cpu: &Cpu, mut section: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        loop {
            cpu.spin_until(self.word, |v| v == 0).await;
            if cpu.cas(self.word, 0, WRITER).await == 0 {
                break;
            }
        }
        let r = section(cpu.clone()).await;
        // Only the writer changes the word while the flag is set (readers just test it).
        cpu.store(self.word, 0).await;
        self.stats.locked_sections += 1;
        self.stats.write_sections += 1;
        r
    }

    fn stats(&self) -> &LockStats {
        &self.stats
    }
}
