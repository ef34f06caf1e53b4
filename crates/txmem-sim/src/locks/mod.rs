//! Lock algorithms written against the simulated machine, for reader-writer workloads.
//!
//! Every algorithm implements [`RwLockAlgo`]: a workload hands it a *read section* or a
//! *write section* (a closure building the section's future) and the algorithm runs it under
//! its synchronization — a lock, a transaction, or both in turn. Speculative algorithms may
//! run a section several times (once per attempt); only the run that commits, or the one on a
//! non-speculative path, takes effect, so sections must be idempotent up to their simulated
//! memory effects (host-side side effects must check [`Cpu::xtest`]).
//!
//! A lock value is one thread's *handle*: the shared words live in simulated memory (laid out
//! by the algorithm's `new`, which takes the [`Sim`]), the per-thread state (retry budgets,
//! statistics) in the value. Clone one handle per simulated thread, before the run; the
//! thread index is the core ([`Cpu::core`]).
//!
//! | algorithm | module | readers | writers |
//! |---|---|---|---|
//! | [`Sgl`] | [`sgl`] | TTAS spinlock | TTAS spinlock |
//! | [`PthreadRwLock`] | [`rwlock`] | shared count (reader-preferring) | writer flag |
//! | [`BrLock`] | [`brlock`] | own per-thread mutex | every mutex |
//! | [`Tle`] | [`tle`] | elided single lock, 5 tries, lock | same as readers |
//! | [`RwLe1`] | [`rwle`] | uninstrumented, per-thread clock | HTM under a writer lock, quiescence while suspended |
//! | [`RwLe`] (OPT, PES, NOROT) | [`rwle`] | uninstrumented, clock, wait for NS writers | HTM ×5 → ROT ×5 → NS (OPT), ROT ×5 → NS (PES), HTM ×5 → NS (NOROT) |
//! | [`RwLe`] (FAIR) | [`rwle`] | uninstrumented, clock, local lock; never overtaken | HTM ×5 → NS, waiting only for older readers |
//!
//! Each handle counts what its sections did in a [`LockStats`].

pub mod brlock;
pub mod rwle;
pub mod rwlock;
pub mod sgl;
pub mod tle;

pub use brlock::BrLock;
pub use rwle::{RwLe, RwLe1, RwLeMode};
pub use rwlock::PthreadRwLock;
pub use sgl::Sgl;
pub use tle::Tle;

use crate::cpu::Cpu;
use crate::htm::AbortStatus;
use crate::simulation::executor::Sim;
use crate::stats::HardwareAbortCounts;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::ops::AddAssign;

/// The retry budget of the speculative paths: RW-LE's MAX-HTM = MAX-ROT, and HLE/TLE's
/// number of hardware attempts (RW-LE §4.1: 5, "the best value on average").
pub const MAX_TRIES: u32 = 5;

/// A reader-writer synchronization algorithm on the simulated machine (one thread's handle).
///
/// The sections are `FnMut` because speculative algorithms re-run them after an abort.
/// Async functions in this trait are fine: the simulator's executor is single-threaded, so
/// no `Send` bound is ever needed.
#[allow(async_fn_in_trait)]
pub trait RwLockAlgo {
    /// Short name, as in the RW-LE paper's plots.
    fn name(&self) -> &'static str;

    /// Runs `section` as a read-side critical section and returns its value.
    async fn read<F, Fut, T>(&mut self, cpu: &Cpu, section: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>;

    /// Runs `section` as a write-side critical section and returns its value.
    async fn write<F, Fut, T>(&mut self, cpu: &Cpu, section: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>;

    /// What this handle's sections did so far.
    fn stats(&self) -> &LockStats;
}

/// What one handle's (or, summed, all handles') sections did, path by path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LockStats {
    /// Read sections completed.
    pub read_sections: u64,
    /// Write sections completed.
    pub write_sections: u64,
    /// Sections (read or write) that committed as a hardware transaction.
    pub htm_commits: u64,
    /// Write sections that committed as a rollback-only transaction.
    pub rot_commits: u64,
    /// Sections run non-speculatively holding a lock that excludes writers: every section
    /// of the lock-based algorithms, TLE's fallbacks, RW-LE's NS-path writers.
    pub locked_sections: u64,
    /// Read sections run uninstrumented, concurrently with speculative writers (RW-LE).
    pub uninstrumented_reads: u64,
    /// Hardware (HTM or ROT) attempts that aborted, by cause.
    pub aborts: HardwareAbortCounts,
    /// Of the aborts, those of rollback-only transactions.
    pub rot_aborts: u64,
    /// Of the explicit aborts, those that found the lock held ([`txmem_htm::LOCK_BUSY_CODE`]).
    pub lock_busy_aborts: u64,
    /// Times a writer waited in RW-LE's quiescence for a reader inside its section.
    pub quiescence_waits: u64,
    /// The aborts again, in the six classes of RW-LE's plots.
    pub causes: AbortClasses,
}

/// Aborted hardware attempts in the six classes RW-LE's plots use; each abort is in exactly
/// one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbortClasses {
    /// Conflicts of an HTM transaction with another transaction.
    pub htm_conflict: u64,
    /// Conflicts of a rollback-only transaction with another transaction.
    pub rot_conflict: u64,
    /// Capacity overflows (HTM or ROT).
    pub capacity: u64,
    /// Explicit aborts on finding the lock held.
    pub lock_busy: u64,
    /// Aborts caused by non-transactional code: a plain access (a lock acquirer, an
    /// uninstrumented reader) or the paging system.
    pub non_tx: u64,
    /// Everything else (other explicit aborts, interrupts, nesting).
    pub other: u64,
}

impl AbortClasses {
    /// Counts one abort in its class.
    pub fn count(&mut self, st: AbortStatus) {
        let class = if st.is_lock_busy() {
            &mut self.lock_busy
        } else if st.is_non_tx() {
            &mut self.non_tx
        } else if st.is_conflict() && st.is_rollback_only() {
            &mut self.rot_conflict
        } else if st.is_conflict() {
            &mut self.htm_conflict
        } else if st.is_capacity() {
            &mut self.capacity
        } else {
            &mut self.other
        };
        *class += 1;
    }
}

impl AddAssign<&AbortClasses> for AbortClasses {
    fn add_assign(&mut self, o: &AbortClasses) {
        self.htm_conflict += o.htm_conflict;
        self.rot_conflict += o.rot_conflict;
        self.capacity += o.capacity;
        self.lock_busy += o.lock_busy;
        self.non_tx += o.non_tx;
        self.other += o.other;
    }
}

impl LockStats {
    /// Counts one aborted hardware attempt.
    pub fn count_abort(&mut self, st: AbortStatus) {
        self.aborts.count(st.cause());
        self.causes.count(st);
        if st.is_lock_busy() {
            self.lock_busy_aborts += 1;
        }
        if st.is_rollback_only() {
            self.rot_aborts += 1;
        }
    }

    /// All sections completed.
    pub fn sections(&self) -> u64 {
        self.read_sections + self.write_sections
    }
}

impl AddAssign<&LockStats> for LockStats {
    fn add_assign(&mut self, o: &LockStats) {
        self.read_sections += o.read_sections;
        self.write_sections += o.write_sections;
        self.htm_commits += o.htm_commits;
        self.rot_commits += o.rot_commits;
        self.locked_sections += o.locked_sections;
        self.uninstrumented_reads += o.uninstrumented_reads;
        self.aborts += &o.aborts;
        self.rot_aborts += o.rot_aborts;
        self.lock_busy_aborts += o.lock_busy_aborts;
        self.quiescence_waits += o.quiescence_waits;
        self.causes += &o.causes;
    }
}

/// Which algorithm: a name for each, to build any of them with [`AnyLock::new`]. Serialized
/// (in workload configurations) by [`LockKind::name`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LockKind {
    /// [`Sgl`].
    #[serde(rename = "sgl")]
    Sgl,
    /// [`PthreadRwLock`].
    #[serde(rename = "rwlock")]
    PthreadRw,
    /// [`BrLock`].
    #[serde(rename = "brlock")]
    BrLock,
    /// [`Tle`].
    #[serde(rename = "tle")]
    Tle,
    /// [`RwLe1`] (RW-LE Algorithm 1).
    #[serde(rename = "rwle1")]
    RwLe1,
    /// [`RwLe`] in [`RwLeMode::Opt`].
    #[serde(rename = "rwle-opt")]
    RwLeOpt,
    /// [`RwLe`] in [`RwLeMode::Pes`].
    #[serde(rename = "rwle-pes")]
    RwLePes,
    /// [`RwLe`] in [`RwLeMode::NoRot`] (Algorithm 2 without ROTs).
    #[serde(rename = "rwle-norot")]
    RwLeNoRot,
    /// [`RwLe`] in [`RwLeMode::Fair`] (RW-LE^FAIR, without ROTs).
    #[serde(rename = "rwle-fair")]
    RwLeFair,
}

impl LockKind {
    /// Every algorithm.
    pub const ALL: [LockKind; 9] = [
        LockKind::Sgl,
        LockKind::PthreadRw,
        LockKind::BrLock,
        LockKind::Tle,
        LockKind::RwLe1,
        LockKind::RwLeOpt,
        LockKind::RwLePes,
        LockKind::RwLeNoRot,
        LockKind::RwLeFair,
    ];

    /// The configuration name (as in RW-LE's plots, lower-case).
    pub fn name(self) -> &'static str {
        match self {
            LockKind::Sgl => "sgl",
            LockKind::PthreadRw => "rwlock",
            LockKind::BrLock => "brlock",
            LockKind::Tle => "tle",
            LockKind::RwLe1 => "rwle1",
            LockKind::RwLeOpt => "rwle-opt",
            LockKind::RwLePes => "rwle-pes",
            LockKind::RwLeNoRot => "rwle-norot",
            LockKind::RwLeFair => "rwle-fair",
        }
    }
}

/// Any of the algorithms, dispatched by a `match` (the trait's generic async methods make it
/// unusable as a trait object).
#[derive(Clone, Debug)]
pub enum AnyLock {
    /// See [`Sgl`].
    Sgl(Sgl),
    /// See [`PthreadRwLock`].
    PthreadRw(PthreadRwLock),
    /// See [`BrLock`].
    BrLock(BrLock),
    /// See [`Tle`].
    Tle(Tle),
    /// See [`RwLe1`].
    RwLe1(RwLe1),
    /// See [`RwLe`].
    RwLe(RwLe),
}

impl AnyLock {
    /// Lays out algorithm `kind` for `threads` threads (cores `0..threads`) in `sim`'s memory;
    /// `split` is RW-LE's split-lock optimization (see [`RwLe::new`]).
    pub fn new(kind: LockKind, sim: &mut Sim, threads: usize, split: bool) -> AnyLock {
        match kind {
            LockKind::Sgl => AnyLock::Sgl(Sgl::new(sim)),
            LockKind::PthreadRw => AnyLock::PthreadRw(PthreadRwLock::new(sim)),
            LockKind::BrLock => AnyLock::BrLock(BrLock::new(sim, threads)),
            LockKind::Tle => AnyLock::Tle(Tle::new(sim)),
            LockKind::RwLe1 => AnyLock::RwLe1(RwLe1::new(sim, threads)),
            LockKind::RwLeOpt => AnyLock::RwLe(RwLe::new(sim, threads, RwLeMode::Opt, split)),
            LockKind::RwLePes => AnyLock::RwLe(RwLe::new(sim, threads, RwLeMode::Pes, split)),
            LockKind::RwLeNoRot => AnyLock::RwLe(RwLe::new(sim, threads, RwLeMode::NoRot, split)),
            LockKind::RwLeFair => AnyLock::RwLe(RwLe::new(sim, threads, RwLeMode::Fair, split)),
        }
    }
}

/// Forwards a call to the variant's algorithm.
macro_rules! dispatch {
    ($self:expr, $l:ident => $e:expr) => {
        match $self {
            AnyLock::Sgl($l) => $e,
            AnyLock::PthreadRw($l) => $e,
            AnyLock::BrLock($l) => $e,
            AnyLock::Tle($l) => $e,
            AnyLock::RwLe1($l) => $e,
            AnyLock::RwLe($l) => $e,
        }
    };
}

impl RwLockAlgo for AnyLock {
    fn name(&self) -> &'static str {
        dispatch!(self, l => l.name())
    }

    async fn read<F, Fut, T>(&mut self, cpu: &Cpu, section: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        dispatch!(self, l => l.read(cpu, section).await)
    }

    async fn write<F, Fut, T>(&mut self, cpu: &Cpu, section: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        dispatch!(self, l => l.write(cpu, section).await)
    }

    fn stats(&self) -> &LockStats {
        dispatch!(self, l => l.stats())
    }
}

/// Allocates `n` words, each alone on its own cache line (no false sharing), and returns
/// their addresses.
pub(crate) fn padded_words(sim: &mut Sim, n: usize) -> Vec<u64> {
    let lb = sim.config().line_bytes;
    let base = sim.alloc_lines(n as u64);
    (0..n as u64).map(|i| base + i * lb).collect()
}
