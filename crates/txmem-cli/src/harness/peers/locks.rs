//! Lock peers: the same workload bodies run under a coarse `Mutex`, a
//! coarse `RwLock` (read-only operations share it), the same two coarse
//! schemes with lock elision (`txmem_elide::ElidedMutex`/`ElidedRwLock`:
//! sections run as hardware transactions where RTM is usable, on the
//! fallback lock otherwise), or fine-grained locks (one per element or
//! bucket, taken in ascending order: two-phase locking without deadlock).
//!
//! The words are atomics accessed with `Relaxed` loads and stores: the lock
//! orders them, and atomics keep the shared array free of `unsafe`. Inside an
//! elided section they are plain loads and stores of a hardware transaction.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::lock_api::RawMutex as _;
use parking_lot::{lock_api, Mutex, RawMutex, RwLock};
use txmem_elide::htm::{DefaultHtm, Htm};
use txmem_elide::stats::{AbortCounts, ElisionStats};
use txmem_elide::{ElidedMutex, ElidedRwLock};

use crate::harness::mem::{Backend, Body, Conflict, Layout, Mem, Word};
use crate::harness::rtm::rtm_verdict;
use crate::harness::spec::{AbortCounting, Tally};
use crate::harness::system::System;

/// Which locking scheme a row uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    /// One `parking_lot::Mutex` around everything (system `mutex`).
    Mutex,
    /// One `parking_lot::RwLock`; read-only operations take it shared (system `rwlock`).
    RwLock,
    /// One `txmem_elide::ElidedMutex` around everything (system `elided-mutex`).
    ElidedMutex,
    /// One `txmem_elide::ElidedRwLock`; read-only operations take it shared
    /// (system `elided-rwlock`).
    ElidedRwLock,
    /// One `parking_lot` mutex per lock id of the workload (system `fine-locks`).
    Fine,
}

impl LockKind {
    /// Every scheme.
    pub const ALL: [LockKind; 5] = [
        LockKind::Mutex,
        LockKind::RwLock,
        LockKind::ElidedMutex,
        LockKind::ElidedRwLock,
        LockKind::Fine,
    ];

    /// The quick suite's selection: one elided scheme (the reader-writer
    /// one) beside the plain locks, to stay near a minute.
    pub const QUICK: [LockKind; 4] = [
        LockKind::Mutex,
        LockKind::RwLock,
        LockKind::ElidedRwLock,
        LockKind::Fine,
    ];

    /// The system of the rows that use this scheme.
    pub fn system(self) -> System {
        match self {
            LockKind::Mutex => System::Mutex,
            LockKind::RwLock => System::RwLock,
            LockKind::ElidedMutex => System::ElidedMutex,
            LockKind::ElidedRwLock => System::ElidedRwLock,
            LockKind::Fine => System::FineLocks,
        }
    }

    /// True for the schemes whose sections may run as hardware transactions.
    pub fn elided(self) -> bool {
        matches!(self, LockKind::ElidedMutex | LockKind::ElidedRwLock)
    }

    /// The row's note; for the elided kinds it says whether this machine
    /// elides at all (RTM usable) or runs them on their fallback locks.
    pub fn note(self) -> String {
        let base = match self {
            LockKind::Mutex => "coarse parking_lot::Mutex",
            LockKind::RwLock => "coarse parking_lot::RwLock, readers shared",
            LockKind::ElidedMutex => "coarse txmem_elide::ElidedMutex",
            LockKind::ElidedRwLock => "coarse txmem_elide::ElidedRwLock, readers shared",
            LockKind::Fine => "per-element/bucket mutexes taken in ascending order",
        };
        if !self.elided() {
            return base.to_string();
        }
        let fallback = match self {
            LockKind::ElidedMutex => "parking_lot mutex",
            _ => "reader-biased rwlock",
        };
        let htm = DefaultHtm::INIT;
        if htm.available() {
            format!(
                "{base}; RTM usable: sections elided ({}, adaptive retry), fallback {fallback}",
                htm.name()
            )
        } else {
            format!(
                "{base}; RTM not usable ({}): every section on its fallback {fallback}",
                rtm_verdict()
            )
        }
    }
}

// The elided reader-writer lock carries its reader slots inline (4 KiB+).
// One `Locked` exists per row, on the heap inside the row's instance, so the
// enum's size costs nothing, while boxing would add a pointer chase to every
// section.
#[allow(clippy::large_enum_variant)]
enum Scheme {
    Mutex(Mutex<()>),
    RwLock(RwLock<()>),
    ElidedMutex(ElidedMutex<()>),
    ElidedRwLock(ElidedRwLock<()>),
    Fine(Vec<RawMutex>),
}

/// Words as atomics, under the locks of one [`LockKind`].
pub struct Locked {
    words: Vec<AtomicU64>,
    scheme: Scheme,
}

impl Locked {
    /// `None` if the workload has no fine-grained scheme and `kind` is `Fine`.
    pub fn new(layout: &Layout, kind: LockKind) -> Option<Self> {
        let scheme = match kind {
            LockKind::Mutex => Scheme::Mutex(Mutex::new(())),
            LockKind::RwLock => Scheme::RwLock(RwLock::new(())),
            LockKind::ElidedMutex => Scheme::ElidedMutex(ElidedMutex::new(())),
            LockKind::ElidedRwLock => Scheme::ElidedRwLock(ElidedRwLock::new(())),
            LockKind::Fine => Scheme::Fine(
                (0..layout.fine_locks?.max(1))
                    .map(|_| RawMutex::INIT)
                    .collect(),
            ),
        };
        Some(Locked {
            words: layout.init.iter().map(|&w| AtomicU64::new(w)).collect(),
            scheme,
        })
    }
}

/// [`Mem`] for a thread that holds the locks covering what it touches.
struct Held<'a>(&'a [AtomicU64]);

impl Mem for Held<'_> {
    #[inline]
    fn read(&mut self, i: usize) -> Result<Word, Conflict> {
        Ok(self.0[i].load(Ordering::Relaxed))
    }
    #[inline]
    fn write(&mut self, i: usize, v: Word) -> Result<(), Conflict> {
        self.0[i].store(v, Ordering::Relaxed);
        Ok(())
    }
}

thread_local! {
    /// Lock ids of the current operation, reused to avoid an allocation per operation.
    static IDS: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

fn under_lock<B: Body>(words: &[AtomicU64], body: &B) -> B::Out {
    match body.run(&mut Held(words)) {
        Ok(v) => v,
        // Under a lock nothing changes behind the body's back, so a body
        // that reports an inconsistent state found a bug in the workload.
        Err(Conflict) => panic!("workload saw an inconsistent state under a lock"),
    }
}

/// The coarse mutex schemes (plain and elided): one lock around the body.
#[inline]
fn exclusive<R: lock_api::RawMutex, B: Body>(
    m: &lock_api::Mutex<R, ()>,
    words: &[AtomicU64],
    body: &B,
) -> B::Out {
    let _g = m.lock();
    under_lock(words, body)
}

/// The coarse reader-writer schemes (plain and elided): read-only bodies
/// take the lock shared.
#[inline]
fn shared_if_read_only<R: lock_api::RawRwLock, B: Body>(
    l: &lock_api::RwLock<R, ()>,
    words: &[AtomicU64],
    body: &B,
) -> B::Out {
    if body.read_only() {
        let _g = l.read();
        under_lock(words, body)
    } else {
        let _g = l.write();
        under_lock(words, body)
    }
}

impl Backend for Locked {
    #[inline]
    fn atomic<B: Body>(&self, _tally: &mut Tally, body: &B) -> B::Out {
        match &self.scheme {
            Scheme::Mutex(m) => exclusive(m, &self.words, body),
            Scheme::ElidedMutex(m) => exclusive(m, &self.words, body),
            Scheme::RwLock(l) => shared_if_read_only(l, &self.words, body),
            Scheme::ElidedRwLock(l) => shared_if_read_only(l, &self.words, body),
            Scheme::Fine(locks) => IDS.with(|ids| {
                let mut ids = ids.borrow_mut();
                ids.clear();
                body.lock_ids(&mut ids);
                for id in ids.iter_mut() {
                    *id %= locks.len();
                }
                ids.sort_unstable();
                ids.dedup();
                for &id in ids.iter() {
                    locks[id].lock();
                }
                // Unlock even if the body panics, so a failing row cannot
                // wedge the other threads of the run.
                struct Unlock<'a>(&'a [RawMutex], &'a [usize]);
                impl Drop for Unlock<'_> {
                    fn drop(&mut self) {
                        for &id in self.1 {
                            // SAFETY: this thread locked exactly these ids
                            // (sorted, deduplicated) just above and has not
                            // unlocked them; each is unlocked once here.
                            unsafe { self.0[id].unlock() };
                        }
                    }
                }
                let _unlock = Unlock(locks, &ids);
                under_lock(&self.words, body)
            }),
        }
    }
    fn load(&self, i: usize) -> Word {
        self.words[i].load(Ordering::Acquire)
    }
    fn abort_counting(&self) -> AbortCounting {
        match self.scheme {
            Scheme::ElidedMutex(_) | Scheme::ElidedRwLock(_) => AbortCounting::Elision,
            _ => AbortCounting::Never,
        }
    }
}

/// What the elided locks did over a timed interval: the change in
/// txmem-elide's per-thread counters summed over every thread (exited ones
/// included, see `txmem_elide::stats::global`). Rows run one at a time, so
/// the change is the row's own. Per-lock counts stay off: counting attempts
/// per lock puts a shared atomic add into every section.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ElisionCounts {
    /// Whether sections could run as hardware transactions (RTM usable).
    pub hardware: bool,
    /// Hardware transactions started for sections.
    pub attempts: u64,
    /// Sections that committed in hardware.
    pub hw_commits: u64,
    /// Hardware aborts by cause.
    pub aborts: AbortCounts,
}

impl ElisionCounts {
    /// The counters now, to pass to [`ElisionCounts::since`] later.
    pub fn snapshot() -> ElisionStats {
        txmem_elide::stats::global()
    }

    /// What happened since `before` was taken.
    pub fn since(before: &ElisionStats) -> ElisionCounts {
        let now = txmem_elide::stats::global();
        // The counters only grow; saturate rather than wrap if that ever broke.
        ElisionCounts {
            hardware: DefaultHtm::INIT.available(),
            attempts: now.attempts.saturating_sub(before.attempts),
            hw_commits: now.elided_commits.saturating_sub(before.elided_commits),
            aborts: now.aborts.since(&before.aborts),
        }
    }

    /// Adds another interval's counts.
    pub fn merge(&mut self, o: &ElisionCounts) {
        self.hardware |= o.hardware;
        self.attempts += o.attempts;
        self.hw_commits += o.hw_commits;
        self.aborts = self.aborts + o.aborts;
    }
}
