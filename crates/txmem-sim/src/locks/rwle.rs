//! RW-LE — hardware read-write lock elision (Felber, Issa, Matveev, Romano, EuroSys'16),
//! Algorithms 1 and 2 as reconstructed in `shared/seeds/SPECS.md` §3.
//!
//! Readers are *uninstrumented*: they only bump a per-thread clock (odd while inside a read
//! section) and read shared data with plain loads. Writers run speculatively and, before
//! committing, wait until every reader that was inside a section when they looked has left
//! it (RCU-like quiescence, [`synchronize`]). A reader that reads a location a speculative
//! writer wrote wins the conflict (strong isolation: the writer aborts, the reader sees the
//! old value), so a writer commits only if no reader that could have seen its old values is
//! still running — and readers that started after the quiescence either miss the write set
//! or abort the writer when it resumes.
//!
//! * [`RwLe1`] — Algorithm 1: writers serialized by a TTAS writer lock, each running as an
//!   HTM transaction that, at its end, suspends, releases the writer lock, waits for the
//!   readers, resumes and commits; blind retry.
//! * [`RwLe`] — Algorithm 2: writers try HTM (concurrently with each other, subscribed to the
//!   writer lock), then rollback-only transactions (serialized by the writer lock in state
//!   `ROT`), then a non-speculative path (lock in state `NS`, which readers wait for). Mode
//!   [`RwLeMode::Opt`] is HTM ×5 → ROT ×5 → NS; [`RwLeMode::Pes`] skips HTM: ROT ×5 → NS.
//!
//! Not implemented: the FAIR variant (versioned global lock) and the paper's three
//! optimizations (single-traversal NS synchronize, moved wait, split NS/ROT lock).

use super::{padded_words, LockStats, RwLockAlgo, MAX_TRIES};
use crate::cpu::Cpu;
use crate::engine::executor::Sim;
use std::cell::Cell;
use std::future::Future;
use txmem_htm::LOCK_BUSY_CODE;

/// Writer-lock word: free.
pub const FREE: u64 = 0;
/// Writer-lock word: held by an Algorithm-1 HTM writer, or an Algorithm-2 NS writer.
pub const NS_LOCKED: u64 = 1;
/// Writer-lock word: held by an Algorithm-2 rollback-only writer.
pub const ROT_LOCKED: u64 = 2;

/// RWLE_SYNCHRONIZE: snapshot every other thread's clock, then wait until each clock that
/// was odd (its reader inside a read section) has moved. Returns how many readers it
/// waited for. Its loads are whatever the caller's context makes them: non-transactional
/// when the caller is suspended, untracked inside a rollback-only transaction.
pub async fn synchronize(cpu: &Cpu, clocks: &[u64]) -> u64 {
    let me = cpu.core();
    let mut snap = Vec::with_capacity(clocks.len());
    for (i, &c) in clocks.iter().enumerate() {
        snap.push(if i == me { 0 } else { cpu.load(c).await });
    }
    let mut waited = 0;
    for (i, &c) in clocks.iter().enumerate() {
        if snap[i] % 2 == 1 {
            waited += 1;
            while cpu.load(c).await == snap[i] {}
        }
    }
    waited
}

/// Takes the TTAS writer lock at `wlock`, setting it to `state`.
async fn acquire(cpu: &Cpu, wlock: u64, state: u64) {
    loop {
        if cpu.load(wlock).await == FREE && cpu.cas(wlock, FREE, state).await == FREE {
            return;
        }
    }
}

/// Bumps the reader's own clock (odd: inside a read section, even: outside).
/// The clock is written only by its owner, so the handle keeps its value.
async fn clock_tick(cpu: &Cpu, clock: u64, value: &mut u64) {
    *value += 1;
    cpu.store(clock, *value).await;
}

/// RW-LE Algorithm 1 (HTM writers only). See the module docs.
///
/// One deviation from the listing: the writer lock is released (while suspended, so the
/// release survives an abort) *before* the quiescence, so a writer whose transaction then
/// aborts at resume no longer holds it; the listing's blind retry would go on unserialized
/// and its next unlock would free another writer's lock, so this writer re-acquires the
/// lock before retrying. Like the listing, a transaction that aborts persistently
/// (capacity) is retried forever: Algorithm 1 has no fallback.
#[derive(Clone, Debug)]
pub struct RwLe1 {
    wlock: u64,
    clocks: Vec<u64>,
    clock: u64,
    stats: LockStats,
}

impl RwLe1 {
    /// Allocates the writer lock and one clock per thread, each on its own line.
    pub fn new(sim: &mut Sim, threads: usize) -> Self {
        RwLe1 {
            wlock: sim.alloc_lines(1),
            clocks: padded_words(sim, threads),
            clock: 0,
            stats: LockStats::default(),
        }
    }
}

/// Algorithm 1's writer transaction: the section, then suspend, release the writer lock,
/// wait for readers, resume (aborting here if a reader touched the write set) — the commit
/// follows when the body returns.
async fn rwle1_body<F, Fut, T>(
    cpu: Cpu,
    wlock: u64,
    clocks: &[u64],
    section: &mut F,
    released: &Cell<bool>,
    waits: &mut u64,
) -> T
where
    F: FnMut(Cpu) -> Fut,
    Fut: Future<Output = T>,
{
    let v = section(cpu.clone()).await;
    cpu.tsuspend().await;
    cpu.store(wlock, FREE).await;
    released.set(true);
    *waits += synchronize(&cpu, clocks).await;
    cpu.tresume().await;
    v
}

impl RwLockAlgo for RwLe1 {
    fn name(&self) -> &'static str {
        "RW-LE1"
    }

    async fn read<F, Fut, T>(&mut self, cpu: &Cpu, mut section: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        let clock = self.clocks[cpu.core()];
        clock_tick(cpu, clock, &mut self.clock).await;
        // Order the clock before the section's loads (a writer's quiescence must see it).
        cpu.fence().await;
        let v = section(cpu.clone()).await;
        clock_tick(cpu, clock, &mut self.clock).await;
        self.stats.uninstrumented_reads += 1;
        self.stats.read_sections += 1;
        v
    }

    async fn write<F, Fut, T>(&mut self, cpu: &Cpu, mut section: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        acquire(cpu, self.wlock, NS_LOCKED).await;
        loop {
            let released = Cell::new(false);
            let r = cpu
                .xbegin(|cpu| {
                    rwle1_body(
                        cpu,
                        self.wlock,
                        &self.clocks,
                        &mut section,
                        &released,
                        &mut self.stats.quiescence_waits,
                    )
                })
                .await;
            match r {
                Ok(v) => {
                    self.stats.htm_commits += 1;
                    self.stats.write_sections += 1;
                    return v;
                }
                Err(st) => {
                    self.stats.count_abort(st);
                    if released.get() {
                        acquire(cpu, self.wlock, NS_LOCKED).await;
                    }
                }
            }
        }
    }

    fn stats(&self) -> &LockStats {
        &self.stats
    }
}

/// Which writer paths Algorithm 2 tries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RwLeMode {
    /// RW-LE^OPT: [`MAX_TRIES`] HTM attempts, then [`MAX_TRIES`] ROT attempts, then NS.
    Opt,
    /// RW-LE^PES: writers serialized from the start: [`MAX_TRIES`] ROT attempts, then NS.
    Pes,
}

/// A writer path of Algorithm 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    Htm,
    Rot,
    Ns,
}

/// RW-LE Algorithm 2 (HTM → ROT → non-speculative writers). See the module docs.
#[derive(Clone, Debug)]
pub struct RwLe {
    wlock: u64,
    clocks: Vec<u64>,
    clock: u64,
    mode: RwLeMode,
    stats: LockStats,
}

impl RwLe {
    /// Allocates the writer lock and one clock per thread, each on its own line.
    pub fn new(sim: &mut Sim, threads: usize, mode: RwLeMode) -> Self {
        RwLe {
            wlock: sim.alloc_lines(1),
            clocks: padded_words(sim, threads),
            clock: 0,
            mode,
            stats: LockStats::default(),
        }
    }
}

/// RWLE_WRITE_LOCK_HTM's transaction through RWLE_WRITE_UNLOCK's HTM branch: subscribe to
/// the writer lock (defer to ROT/NS writers), the section, then suspend, wait for readers,
/// resume; the commit follows.
async fn htm_body<F, Fut, T>(
    cpu: Cpu,
    wlock: u64,
    clocks: &[u64],
    section: &mut F,
    waits: &mut u64,
) -> T
where
    F: FnMut(Cpu) -> Fut,
    Fut: Future<Output = T>,
{
    if cpu.load(wlock).await != FREE {
        cpu.xabort(LOCK_BUSY_CODE).await;
    }
    let v = section(cpu.clone()).await;
    cpu.tsuspend().await;
    *waits += synchronize(&cpu, clocks).await;
    cpu.tresume().await;
    v
}

/// The ROT path's transaction: the section, then (no suspend needed: a ROT does not track
/// its loads) wait for readers; the commit follows.
async fn rot_body<F, Fut, T>(cpu: Cpu, clocks: &[u64], section: &mut F, waits: &mut u64) -> T
where
    F: FnMut(Cpu) -> Fut,
    Fut: Future<Output = T>,
{
    let v = section(cpu.clone()).await;
    *waits += synchronize(&cpu, clocks).await;
    v
}

impl RwLockAlgo for RwLe {
    fn name(&self) -> &'static str {
        match self.mode {
            RwLeMode::Opt => "RW-LE-OPT",
            RwLeMode::Pes => "RW-LE-PES",
        }
    }

    async fn read<F, Fut, T>(&mut self, cpu: &Cpu, mut section: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        let clock = self.clocks[cpu.core()];
        loop {
            // Line 12: let a non-speculative writer finish.
            while cpu.load(self.wlock).await == NS_LOCKED {}
            clock_tick(cpu, clock, &mut self.clock).await;
            // Dekker with the NS writer's CAS-then-scan: the clock store is ordered before
            // the load of the writer lock.
            cpu.fence().await;
            if cpu.load(self.wlock).await != NS_LOCKED {
                break;
            }
            // A new NS writer arrived: defer to it.
            clock_tick(cpu, clock, &mut self.clock).await;
        }
        let v = section(cpu.clone()).await;
        clock_tick(cpu, clock, &mut self.clock).await;
        self.stats.uninstrumented_reads += 1;
        self.stats.read_sections += 1;
        v
    }

    async fn write<F, Fut, T>(&mut self, cpu: &Cpu, mut section: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        let (mut path, mut trials) = match self.mode {
            RwLeMode::Opt => (Path::Htm, MAX_TRIES),
            RwLeMode::Pes => (Path::Rot, MAX_TRIES),
        };
        loop {
            // PATH(status, aborts), lines 28–40.
            if path == Path::Htm && trials == 0 {
                path = Path::Rot;
                trials = MAX_TRIES;
            }
            if path == Path::Rot && trials == 0 {
                path = Path::Ns;
            }
            trials = trials.saturating_sub(1);
            let r = match path {
                Path::Htm => {
                    // Let non-HTM writers finish before starting.
                    while cpu.load(self.wlock).await != FREE {}
                    cpu.xbegin(|cpu| {
                        htm_body(
                            cpu,
                            self.wlock,
                            &self.clocks,
                            &mut section,
                            &mut self.stats.quiescence_waits,
                        )
                    })
                    .await
                }
                Path::Rot => {
                    acquire(cpu, self.wlock, ROT_LOCKED).await;
                    let r = cpu
                        .xbegin_rot(|cpu| {
                            rot_body(
                                cpu,
                                &self.clocks,
                                &mut section,
                                &mut self.stats.quiescence_waits,
                            )
                        })
                        .await;
                    cpu.store(self.wlock, FREE).await;
                    r
                }
                Path::Ns => {
                    cpu.forget_aborted();
                    acquire(cpu, self.wlock, NS_LOCKED).await;
                    // Drain readers; new ones wait at line 12.
                    self.stats.quiescence_waits += synchronize(cpu, &self.clocks).await;
                    let v = section(cpu.clone()).await;
                    cpu.store(self.wlock, FREE).await;
                    self.stats.locked_sections += 1;
                    self.stats.write_sections += 1;
                    return v;
                }
            };
            match r {
                Ok(v) => {
                    if path == Path::Htm {
                        self.stats.htm_commits += 1;
                    } else {
                        self.stats.rot_commits += 1;
                    }
                    self.stats.write_sections += 1;
                    return v;
                }
                Err(st) => {
                    self.stats.count_abort(st);
                    if st.is_persistent() {
                        trials = 0;
                    }
                }
            }
        }
    }

    fn stats(&self) -> &LockStats {
        &self.stats
    }
}
