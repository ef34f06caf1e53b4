//! The per-lock-site profile (`TXMEM_ELIDE_STATS=1`): what each (lock, call site) pair did.
//!
//! A *site* is a lock's address and the return address of the call that acquired it, so one
//! lock taken from three places has three rows. Each row counts acquisitions, contended
//! acquisitions (the lock was busy when asked for), and keeps two histograms: the time spent
//! waiting for the lock and the time it was then held. With RTM it also counts hardware
//! attempts, commits, aborts by cause and fallbacks.
//!
//! Everything lives in fixed static tables, so the hooks never allocate: the site table
//! (open addressing, [`SITES`] rows, claimed with one compare-and-swap) and, per thread, a
//! short stack of the locks it holds with their acquisition time. A thread's hook that is
//! re-entered (by a signal handler, or from inside the profiler) passes straight through.
//! The report ([`report`]) is written by the process that loaded the library, at exit.

mod hist;
mod report;

pub(crate) use hist::Hist;

use core::cell::Cell;
use core::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use txmem_htm::HtmAbortCause as AbortCause;

/// Rows in the site table.
pub const SITES: usize = 2048;
/// Locks one thread can hold at once and still have their hold times measured.
pub const HELD: usize = 32;
/// Abort causes counted per site (indexed by [`cause_index`]).
pub const CAUSES: usize = 8;

/// One (lock, call site) row.
pub(crate) struct Site {
    state: AtomicU8,
    lock: AtomicUsize,
    ret: AtomicUsize,
    /// Acquisitions (every successful lock, try-lock or re-acquisition after a wait).
    pub acquisitions: AtomicU64,
    /// Acquisitions that found the lock busy and waited.
    pub contended: AtomicU64,
    /// Try-locks that failed.
    pub try_failures: AtomicU64,
    /// Shared (reader) acquisitions among `acquisitions`.
    pub shared: AtomicU64,
    /// Nanoseconds waited, one sample per acquisition.
    pub wait: Hist,
    /// Nanoseconds held, one sample per release.
    pub hold: Hist,
    /// Hardware attempts started here.
    pub tx_attempts: AtomicU64,
    /// Hardware attempts that committed.
    pub tx_commits: AtomicU64,
    /// Hardware aborts by cause.
    pub tx_aborts: [AtomicU64; CAUSES],
    /// Sections that ended on the real lock after trying hardware.
    pub fallbacks: AtomicU64,
}

const EMPTY: u8 = 0;
const CLAIMING: u8 = 1;
const FILLED: u8 = 2;

impl Site {
    #[allow(clippy::declare_interior_mutable_const)]
    const NEW: Site = Site {
        state: AtomicU8::new(EMPTY),
        lock: AtomicUsize::new(0),
        ret: AtomicUsize::new(0),
        acquisitions: AtomicU64::new(0),
        contended: AtomicU64::new(0),
        try_failures: AtomicU64::new(0),
        shared: AtomicU64::new(0),
        wait: Hist::NEW,
        hold: Hist::NEW,
        tx_attempts: AtomicU64::new(0),
        tx_commits: AtomicU64::new(0),
        tx_aborts: [const { AtomicU64::new(0) }; CAUSES],
        fallbacks: AtomicU64::new(0),
    };

    /// The lock's address and the caller's return address.
    pub fn key(&self) -> (usize, usize) {
        (
            self.lock.load(Ordering::Relaxed),
            self.ret.load(Ordering::Relaxed),
        )
    }
}

static TABLE: [Site; SITES] = [const { Site::NEW }; SITES];
/// Acquisitions that found the table full and were not recorded.
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Acquisitions whose hold time was not measured (the thread held [`HELD`] locks already).
static UNTRACKED: AtomicU64 = AtomicU64::new(0);

/// The row of (`lock`, `ret`), created if new; `None` when the table is full.
pub(crate) fn site(lock: usize, ret: usize) -> Option<&'static Site> {
    let h = (lock ^ ret.rotate_left(17)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut i = h >> (usize::BITS - SITES.trailing_zeros());
    for _ in 0..SITES {
        let s = &TABLE[i];
        loop {
            match s.state.load(Ordering::Acquire) {
                FILLED => {
                    if s.key() == (lock, ret) {
                        return Some(s);
                    }
                    break;
                }
                EMPTY => {
                    if s.state
                        .compare_exchange(EMPTY, CLAIMING, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                    {
                        s.lock.store(lock, Ordering::Relaxed);
                        s.ret.store(ret, Ordering::Relaxed);
                        s.state.store(FILLED, Ordering::Release);
                        return Some(s);
                    }
                }
                _ => core::hint::spin_loop(),
            }
        }
        i = (i + 1) % SITES;
    }
    DROPPED.fetch_add(1, Ordering::Relaxed);
    None
}

/// Every filled row.
pub(crate) fn rows() -> impl Iterator<Item = &'static Site> {
    TABLE
        .iter()
        .filter(|s| s.state.load(Ordering::Acquire) == FILLED)
}

/// Monotonic nanoseconds (the vDSO's clock: no system call, no lock).
#[inline]
pub(crate) fn now() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[derive(Copy, Clone)]
struct Held {
    lock: usize,
    site: usize,
    since: u64,
}

thread_local! {
    static STACK: Cell<[Held; HELD]> =
        const { Cell::new([Held { lock: 0, site: 0, since: 0 }; HELD]) };
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` as this thread's only profiler call: `None` (without running it) when the thread
/// is already inside one (a signal handler interrupted a hook, or a hook re-entered).
#[inline]
pub(crate) fn guarded<R>(f: impl FnOnce() -> R) -> Option<R> {
    if INSIDE.with(|c| c.replace(true)) {
        return None;
    }
    let r = f();
    INSIDE.with(|c| c.set(false));
    Some(r)
}

/// Records that this thread acquired `lock` at `ret`, after `wait` ns (`contended`: it was
/// busy), starting its hold now.
pub(crate) fn acquired(lock: usize, ret: usize, contended: bool, wait: u64, shared: bool) {
    let Some(s) = site(lock, ret) else { return };
    s.acquisitions.fetch_add(1, Ordering::Relaxed);
    if contended {
        s.contended.fetch_add(1, Ordering::Relaxed);
    }
    if shared {
        s.shared.fetch_add(1, Ordering::Relaxed);
    }
    s.wait.record(wait);
    push(lock, s);
}

/// Starts a hold of `lock` at site `s`, now.
pub(crate) fn push(lock: usize, s: &'static Site) {
    let d = DEPTH.with(Cell::get);
    if d == HELD {
        UNTRACKED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    STACK.with(|st| {
        let mut a = st.get();
        a[d] = Held {
            lock,
            site: s as *const Site as usize,
            since: now(),
        };
        st.set(a);
    });
    DEPTH.with(|c| c.set(d + 1));
}

/// Ends this thread's most recent hold of `lock`, recording its length; returns its site.
pub(crate) fn released(lock: usize) -> Option<&'static Site> {
    let d = DEPTH.with(Cell::get);
    STACK.with(|st| {
        let mut a = st.get();
        let i = (0..d).rev().find(|&i| a[i].lock == lock)?;
        let h = a[i];
        a.copy_within(i + 1..d, i);
        st.set(a);
        DEPTH.with(|c| c.set(d - 1));
        // SAFETY: `site` was made from a `&'static Site` of TABLE in `push`.
        let s: &'static Site = unsafe { &*(h.site as *const Site) };
        s.hold.record(now().saturating_sub(h.since));
        Some(s)
    })
}

/// A try-lock of `lock` at `ret` found it busy.
pub(crate) fn try_failed(lock: usize, ret: usize) {
    if let Some(s) = site(lock, ret) {
        s.try_failures.fetch_add(1, Ordering::Relaxed);
    }
}

/// The slot of `tx_aborts` for `cause`.
pub(crate) fn cause_index(cause: AbortCause) -> usize {
    match cause {
        AbortCause::Conflict => 0,
        AbortCause::Capacity => 1,
        AbortCause::Explicit(txmem_htm::LOCK_BUSY_CODE) => 2,
        AbortCause::Explicit(_) => 3,
        AbortCause::Interrupt => 4,
        AbortCause::Nested | AbortCause::NestingOverflow => 5,
        AbortCause::Debug => 6,
        AbortCause::Other => 7,
    }
}

/// The names of `tx_aborts`' slots, for the report.
pub(crate) const CAUSE_NAMES: [&str; CAUSES] = [
    "conflict",
    "capacity",
    "lock-busy",
    "explicit",
    "interrupt",
    "nesting",
    "debug",
    "other",
];

/// Acquires `m` with `lock` after a `try_` that tells whether it was busy, recording the
/// acquisition at `ret`.
pub(crate) unsafe fn mutex(
    m: *mut libc::pthread_mutex_t,
    ret: usize,
    try_: crate::real::MutexFn,
    lock: crate::real::MutexFn,
) -> libc::c_int {
    // SAFETY: forwarded with the caller's arguments.
    let r = unsafe { try_(m) };
    if r == 0 {
        acquired(m as usize, ret, false, 0, false);
        return 0;
    }
    if r != libc::EBUSY {
        // SAFETY: as above.
        return unsafe { lock(m) };
    }
    let t0 = now();
    // SAFETY: as above.
    let r = unsafe { lock(m) };
    if r == 0 {
        acquired(m as usize, ret, true, now() - t0, false);
    }
    r
}

/// Registers the exit report (called once, at start-up, when the profile is on).
pub(crate) fn start() {
    report::arm();
}

/// Acquisitions lost to a full table and holds not measured, for the report.
pub(crate) fn losses() -> (u64, u64) {
    (
        DROPPED.load(Ordering::Relaxed),
        UNTRACKED.load(Ordering::Relaxed),
    )
}
