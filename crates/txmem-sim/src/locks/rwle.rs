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
//!   [`RwLeMode::Opt`] is HTM ×5 → ROT ×5 → NS; [`RwLeMode::Pes`] skips HTM: ROT ×5 → NS;
//!   [`RwLeMode::NoRot`] skips ROTs: HTM ×5 → NS.
//! * [`RwLeMode::Fair`] — RW-LE^FAIR (§3.3), evaluated like the seed with ROTs disabled
//!   (HTM ×5 → NS). The writer lock carries a version that every NS acquisition increments. A
//!   reader publishes the lock word it saw in its own *local lock*; if an NS writer holds the
//!   lock, it waits *with its clock odd* until that writer releases it, instead of backing off
//!   and re-entering. An NS writer waits only for readers inside a section whose local lock
//!   is older than its own version: readers that arrived after it wait for it, and readers
//!   that arrived before it are never overtaken.
//!
//! Of the paper's three optimizations, the split lock is a flag ([`RwLe::new`]'s `split`,
//! `workload.rwle_split_lock`): the ROT writers serialize on a lock of their own, HTM writers
//! subscribe to the NS lock when they start and to the ROT lock only just before they commit,
//! so HTM writers run beside a ROT writer instead of aborting on it (and falling, one after
//! the other, into the serialized ROT path). NS writers take both. The other two (a
//! single-traversal NS quiescence, the reader's wait moved after its clock store) save a
//! comparison or a pass over the clocks and are not implemented.

use super::{padded_words, LockStats, RwLockAlgo, MAX_TRIES};
use crate::cpu::Cpu;
use crate::simulation::executor::Sim;
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
            cpu.spin_until(c, |v| v != snap[i]).await;
        }
    }
    waited
}

/// The writer lock's state bits (the rest is the FAIR variant's version, 0 otherwise).
const STATE: u64 = 3;
/// One step of the FAIR variant's version.
const VERSION_STEP: u64 = 4;

/// Takes the TTAS writer lock at `wlock`, setting its state bits to `state` and keeping its
/// version; returns the word it wrote.
async fn acquire(cpu: &Cpu, wlock: u64, state: u64) -> u64 {
    acquire_with(cpu, wlock, |w| w | state).await
}

/// Takes the writer lock, writing `next(old)` over a free word `old`.
async fn acquire_with(cpu: &Cpu, wlock: u64, next: impl Fn(u64) -> u64) -> u64 {
    loop {
        let w = cpu.spin_until(wlock, |w| w & STATE == FREE).await;
        if cpu.cas(wlock, w, next(w)).await == w {
            return next(w);
        }
    }
}

/// Releases the writer lock taken as `held`, keeping its version.
async fn release(cpu: &Cpu, wlock: u64, held: u64) {
    cpu.store(wlock, held & !STATE).await;
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
    /// Algorithm 2 with ROTs disabled: [`MAX_TRIES`] HTM attempts, then NS (Fig 7's baseline).
    NoRot,
    /// RW-LE^FAIR with ROTs disabled, as in Fig 7: HTM attempts, then a fair NS path.
    Fair,
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
    /// The writer lock: NS and (unless split) ROT writers.
    wlock: u64,
    /// The lock of ROT writers: `wlock` itself unless split.
    rot_lock: u64,
    clocks: Vec<u64>,
    /// FAIR: each thread's copy of the lock word it saw when it entered a read section.
    local_locks: Vec<u64>,
    clock: u64,
    mode: RwLeMode,
    stats: LockStats,
}

impl RwLe {
    /// Allocates the writer lock (two with `split`, for modes with ROTs) and one clock per
    /// thread, each on its own line.
    pub fn new(sim: &mut Sim, threads: usize, mode: RwLeMode, split: bool) -> Self {
        let wlock = sim.alloc_lines(1);
        let rots = matches!(mode, RwLeMode::Opt | RwLeMode::Pes);
        RwLe {
            wlock,
            rot_lock: if split && rots {
                sim.alloc_lines(1)
            } else {
                wlock
            },
            clocks: padded_words(sim, threads),
            local_locks: if mode == RwLeMode::Fair {
                padded_words(sim, threads)
            } else {
                Vec::new()
            },
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
    (wlock, rot_lock): (u64, u64),
    clocks: &[u64],
    section: &mut F,
    waits: &mut u64,
) -> T
where
    F: FnMut(Cpu) -> Fut,
    Fut: Future<Output = T>,
{
    if cpu.load(wlock).await & STATE != FREE {
        cpu.xabort(LOCK_BUSY_CODE).await;
    }
    let v = section(cpu.clone()).await;
    cpu.tsuspend().await;
    *waits += synchronize(&cpu, clocks).await;
    cpu.tresume().await;
    // Split lock: the lazy subscription. A ROT writer running now may have read (untracked)
    // what this one wrote; one that starts later takes the lock and aborts this one.
    if rot_lock != wlock && cpu.load(rot_lock).await != FREE {
        cpu.xabort(LOCK_BUSY_CODE).await;
    }
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

/// The FAIR NS writer's quiescence: waits for every reader inside a section (odd clock)
/// whose local lock is older than `held`'s version, until its clock moves.
async fn synchronize_fair(cpu: &Cpu, clocks: &[u64], local_locks: &[u64], held: u64) -> u64 {
    let me = cpu.core();
    let mine = held & !STATE;
    let mut waited = 0;
    for (i, (&c, &l)) in clocks.iter().zip(local_locks).enumerate() {
        if i == me {
            continue;
        }
        let snap = cpu.load(c).await;
        if snap % 2 == 0 {
            continue;
        }
        let mut counted = false;
        loop {
            let (cv, lv) = (cpu.load(c).await, cpu.load(l).await);
            if cv != snap || lv & !STATE >= mine {
                break;
            }
            if !counted {
                waited += 1;
                counted = true;
            }
            cpu.wait_change(&[(c, cv), (l, lv)]).await;
        }
    }
    waited
}

impl RwLe {
    /// RW-LE^FAIR's reader: enter (clock odd), publish the lock word seen, and if an NS
    /// writer holds it, wait for that writer's release without leaving.
    async fn read_fair<F, Fut, T>(&mut self, cpu: &Cpu, mut section: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        let me = cpu.core();
        let (clock, local) = (self.clocks[me], self.local_locks[me]);
        clock_tick(cpu, clock, &mut self.clock).await;
        // Dekker with the NS writer's acquisition-then-scan, as in Algorithm 2.
        cpu.fence().await;
        let seen = cpu.load(self.wlock).await;
        cpu.store(local, seen).await;
        if seen & STATE == NS_LOCKED {
            // That writer does not wait for us (our local lock has its version): wait for it.
            cpu.spin_until(self.wlock, |w| w != seen).await;
        }
        let v = section(cpu.clone()).await;
        clock_tick(cpu, clock, &mut self.clock).await;
        self.stats.uninstrumented_reads += 1;
        self.stats.read_sections += 1;
        v
    }
}

impl RwLockAlgo for RwLe {
    fn name(&self) -> &'static str {
        match self.mode {
            RwLeMode::Opt => "RW-LE-OPT",
            RwLeMode::Pes => "RW-LE-PES",
            RwLeMode::NoRot => "RW-LE-NOROT",
            RwLeMode::Fair => "RW-LE-FAIR",
        }
    }

    async fn read<F, Fut, T>(&mut self, cpu: &Cpu, mut section: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        let clock = self.clocks[cpu.core()];
        if self.mode == RwLeMode::Fair {
            return self.read_fair(cpu, section).await;
        }
        loop {
            // Line 12: let a non-speculative writer finish.
            cpu.spin_until(self.wlock, |w| w & STATE != NS_LOCKED).await;
            clock_tick(cpu, clock, &mut self.clock).await;
            // Dekker with the NS writer's CAS-then-scan: the clock store is ordered before
            // the load of the writer lock.
            cpu.fence().await;
            if cpu.load(self.wlock).await & STATE != NS_LOCKED {
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
            RwLeMode::Opt | RwLeMode::NoRot | RwLeMode::Fair => (Path::Htm, MAX_TRIES),
            RwLeMode::Pes => (Path::Rot, MAX_TRIES),
        };
        let rots = matches!(self.mode, RwLeMode::Opt | RwLeMode::Pes);
        loop {
            // PATH(status, aborts), lines 28–40.
            if path == Path::Htm && trials == 0 {
                if rots {
                    path = Path::Rot;
                    trials = MAX_TRIES;
                } else {
                    path = Path::Ns;
                }
            }
            if path == Path::Rot && trials == 0 {
                path = Path::Ns;
            }
            trials = trials.saturating_sub(1);
            let r = match path {
                Path::Htm => {
                    // Let non-HTM writers finish before starting.
                    cpu.spin_until(self.wlock, |w| w & STATE == FREE).await;
                    cpu.xbegin(|cpu| {
                        htm_body(
                            cpu,
                            (self.wlock, self.rot_lock),
                            &self.clocks,
                            &mut section,
                            &mut self.stats.quiescence_waits,
                        )
                    })
                    .await
                }
                Path::Rot => {
                    let held = acquire(cpu, self.rot_lock, ROT_LOCKED).await;
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
                    release(cpu, self.rot_lock, held).await;
                    r
                }
                Path::Ns => {
                    cpu.forget_aborted();
                    let held = if self.mode == RwLeMode::Fair {
                        // A new version: readers that see it wait for us, and we wait only
                        // for readers that entered before it.
                        let held =
                            acquire_with(cpu, self.wlock, |w| (w + VERSION_STEP) | NS_LOCKED).await;
                        self.stats.quiescence_waits +=
                            synchronize_fair(cpu, &self.clocks, &self.local_locks, held).await;
                        held
                    } else {
                        if self.rot_lock != self.wlock {
                            // Split lock: keep ROT writers out first.
                            acquire(cpu, self.rot_lock, ROT_LOCKED).await;
                        }
                        let held = acquire(cpu, self.wlock, NS_LOCKED).await;
                        // Drain readers; new ones wait at line 12.
                        self.stats.quiescence_waits += synchronize(cpu, &self.clocks).await;
                        held
                    };
                    let v = section(cpu.clone()).await;
                    release(cpu, self.wlock, held).await;
                    if self.rot_lock != self.wlock {
                        release(cpu, self.rot_lock, ROT_LOCKED).await;
                    }
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
