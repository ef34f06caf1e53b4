//! Lock peers: the same workload bodies run under a coarse `Mutex`, a
//! coarse `RwLock` (read-only operations share it), or fine-grained locks
//! (one per element or bucket, taken in ascending order: two-phase locking
//! without deadlock).
//!
//! The words are atomics accessed with `Relaxed` loads and stores: the lock
//! orders them, and atomics keep the shared array free of `unsafe`.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::lock_api::RawMutex as _;
use parking_lot::{Mutex, RawMutex, RwLock};

use crate::bench::mem::{Backend, Body, Conflict, Layout, Mem, Word};
use crate::bench::spec::{AbortCounting, Tally};

/// Which locking scheme a row uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    /// One `parking_lot::Mutex` around everything (system `mutex`).
    Mutex,
    /// One `parking_lot::RwLock`; read-only operations take it shared (system `rwlock`).
    RwLock,
    /// One `parking_lot` mutex per lock id of the workload (system `fine-locks`).
    Fine,
}

impl LockKind {
    pub const ALL: [LockKind; 3] = [LockKind::Mutex, LockKind::RwLock, LockKind::Fine];

    pub fn system(self) -> &'static str {
        match self {
            LockKind::Mutex => "mutex",
            LockKind::RwLock => "rwlock",
            LockKind::Fine => "fine-locks",
        }
    }

    pub fn note(self) -> &'static str {
        match self {
            LockKind::Mutex => "coarse parking_lot::Mutex",
            LockKind::RwLock => "coarse parking_lot::RwLock, readers shared",
            LockKind::Fine => "per-element/bucket mutexes taken in ascending order",
        }
    }
}

enum Scheme {
    Mutex(Mutex<()>),
    RwLock(RwLock<()>),
    Fine(Vec<RawMutex>),
}

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

impl Backend for Locked {
    #[inline]
    fn atomic<B: Body>(&self, _tally: &mut Tally, body: &B) -> B::Out {
        match &self.scheme {
            Scheme::Mutex(m) => {
                let _g = m.lock();
                under_lock(&self.words, body)
            }
            Scheme::RwLock(l) => {
                if body.read_only() {
                    let _g = l.read();
                    under_lock(&self.words, body)
                } else {
                    let _g = l.write();
                    under_lock(&self.words, body)
                }
            }
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
        AbortCounting::Never
    }
}
