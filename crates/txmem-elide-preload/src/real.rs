//! The C library's own lock functions, found with `dlsym(RTLD_NEXT)`, and the one-time
//! start-up that applies the mode `lib.rs` chooses.
//!
//! Start-up runs from the library's constructor, or from the first interposed call if that
//! comes earlier (another library's constructor). It calls no lock function of its own, and
//! on a CPU without the RTM bit it allocates nothing; where CPUID reports RTM,
//! `txmem-elide`'s detection reads `TXMEM_ELIDE_HTM` through `std`, which allocates once. If
//! that allocation, or the C library's `dlsym`, should call back into an interposed function
//! on the thread doing the start-up, that call is told "not ready" ([`real`] returns `None`)
//! and the hook treats it as the single-threaded no-op it is at that point.

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicI32, AtomicU8, AtomicUsize, Ordering};
use libc::{c_char, c_int, c_void, pthread_cond_t, pthread_mutex_t, pthread_rwlock_t, timespec};

/// `pthread_mutex_lock`, `trylock`, `unlock`.
pub(crate) type MutexFn = unsafe extern "C" fn(*mut pthread_mutex_t) -> c_int;
/// `pthread_mutex_timedlock`.
pub(crate) type MutexTimedFn = unsafe extern "C" fn(*mut pthread_mutex_t, *const timespec) -> c_int;
/// The reader-writer lock's lock, try-lock and unlock functions.
pub(crate) type RwFn = unsafe extern "C" fn(*mut pthread_rwlock_t) -> c_int;
/// The reader-writer lock's timed locks.
pub(crate) type RwTimedFn = unsafe extern "C" fn(*mut pthread_rwlock_t, *const timespec) -> c_int;
/// `pthread_cond_wait`.
pub(crate) type CondWaitFn =
    unsafe extern "C" fn(*mut pthread_cond_t, *mut pthread_mutex_t) -> c_int;
/// `pthread_cond_timedwait`.
pub(crate) type CondTimedFn =
    unsafe extern "C" fn(*mut pthread_cond_t, *mut pthread_mutex_t, *const timespec) -> c_int;
/// `pthread_cond_signal`, `broadcast`.
pub(crate) type CondFn = unsafe extern "C" fn(*mut pthread_cond_t) -> c_int;

/// The C library's definitions of every function the library interposes.
pub(crate) struct Real {
    pub mutex_lock: MutexFn,
    pub mutex_trylock: MutexFn,
    pub mutex_timedlock: MutexTimedFn,
    pub mutex_unlock: MutexFn,
    pub rw_rdlock: RwFn,
    pub rw_tryrdlock: RwFn,
    pub rw_timedrdlock: RwTimedFn,
    pub rw_wrlock: RwFn,
    pub rw_trywrlock: RwFn,
    pub rw_timedwrlock: RwTimedFn,
    pub rw_unlock: RwFn,
    pub cond_wait: CondWaitFn,
    pub cond_timedwait: CondTimedFn,
    pub cond_signal: CondFn,
    pub cond_broadcast: CondFn,
}

/// What the hooks do beyond calling the C library.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mode {
    /// `TXMEM_ELIDE_STATS` asked for the per-site profile.
    pub profile: bool,
    /// RTM is usable and not disabled: normal mutexes are elided.
    pub elide: bool,
}

const UNINIT: u8 = 0;
const BUSY: u8 = 1;
const READY: u8 = 2;

static STATE: AtomicU8 = AtomicU8::new(UNINIT);
static INIT_TID: AtomicI32 = AtomicI32::new(0);
static MODE: AtomicU8 = AtomicU8::new(0);

struct RealCell(UnsafeCell<MaybeUninit<Real>>);
// SAFETY: written once by the thread that moves STATE from BUSY to READY (with Release), and
// read only after an Acquire load of READY.
unsafe impl Sync for RealCell {}
static REAL: RealCell = RealCell(UnsafeCell::new(MaybeUninit::uninit()));

/// Index into [`FAST`] of each function that has a pass-through fast path.
pub(crate) mod fast {
    pub const MUTEX_LOCK: usize = 0;
    pub const MUTEX_TRYLOCK: usize = 1;
    pub const MUTEX_UNLOCK: usize = 2;
    pub const RW_RDLOCK: usize = 3;
    pub const RW_WRLOCK: usize = 4;
    pub const RW_UNLOCK: usize = 5;
    pub const COUNT: usize = 6;
}

/// The C library's function for each [`fast`] slot when the library has nothing to add
/// (no profile, no RTM), else 0: the hot hooks load one word and jump.
pub(crate) static FAST: [AtomicUsize; fast::COUNT] = [const { AtomicUsize::new(0) }; fast::COUNT];

/// The C library's functions, or `None` while start-up is running on this very thread.
#[inline]
pub(crate) fn real() -> Option<&'static Real> {
    if STATE.load(Ordering::Acquire) == READY {
        // SAFETY: READY is stored (Release) only after REAL was written.
        return Some(unsafe { (*REAL.0.get()).assume_init_ref() });
    }
    start()
}

/// The mode chosen at start-up (nothing added before it ends).
#[inline]
pub(crate) fn mode() -> Mode {
    let m = MODE.load(Ordering::Relaxed);
    Mode {
        profile: m & 1 != 0,
        elide: m & 2 != 0,
    }
}

fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

#[cold]
#[inline(never)]
fn start() -> Option<&'static Real> {
    let me = gettid();
    match STATE.compare_exchange(UNINIT, BUSY, Ordering::Acquire, Ordering::Acquire) {
        Ok(_) => {
            INIT_TID.store(me, Ordering::Relaxed);
            // SAFETY: only this thread (the one that won UNINIT -> BUSY) writes REAL, once.
            let real: &Real = unsafe { (*REAL.0.get()).write(resolve()) };
            let mode = crate::choose_mode();
            MODE.store(
                mode.profile as u8 | (mode.elide as u8) << 1,
                Ordering::Relaxed,
            );
            if !mode.profile && !mode.elide {
                let slots = [
                    (fast::MUTEX_LOCK, real.mutex_lock as usize),
                    (fast::MUTEX_TRYLOCK, real.mutex_trylock as usize),
                    (fast::MUTEX_UNLOCK, real.mutex_unlock as usize),
                    (fast::RW_RDLOCK, real.rw_rdlock as usize),
                    (fast::RW_WRLOCK, real.rw_wrlock as usize),
                    (fast::RW_UNLOCK, real.rw_unlock as usize),
                ];
                for (slot, f) in slots {
                    FAST[slot].store(f, Ordering::Relaxed);
                }
            }
            crate::started(mode);
            STATE.store(READY, Ordering::Release);
            real_ready()
        }
        Err(BUSY) if INIT_TID.load(Ordering::Relaxed) == me => None,
        Err(_) => {
            while STATE.load(Ordering::Acquire) != READY {
                core::hint::spin_loop();
            }
            real_ready()
        }
    }
}

fn real_ready() -> Option<&'static Real> {
    // SAFETY: called after READY was observed or stored by this thread.
    Some(unsafe { (*REAL.0.get()).assume_init_ref() })
}

/// Looks `name` up after this library, at `version` when given (the condition variables
/// have two versions in glibc, and plain `dlsym` may hand back the old one).
fn lookup(name: &[u8], version: Option<&[u8]>) -> *mut c_void {
    let n = name.as_ptr() as *const c_char;
    // SAFETY: name and version are NUL-terminated literals.
    let mut p = match version {
        Some(v) => unsafe { libc::dlvsym(libc::RTLD_NEXT, n, v.as_ptr() as *const c_char) },
        None => core::ptr::null_mut(),
    };
    if p.is_null() {
        // SAFETY: as above.
        p = unsafe { libc::dlsym(libc::RTLD_NEXT, n) };
    }
    if p.is_null() {
        let msg = b"libtxmem_elide_preload: a pthread function is missing after this library\n";
        // SAFETY: write(2) with a valid buffer; abort cannot be avoided without the function.
        unsafe {
            libc::write(2, msg.as_ptr() as *const c_void, msg.len());
            libc::abort();
        }
    }
    p
}

macro_rules! find {
    ($t:ty, $name:literal) => {
        // SAFETY: the C library's function of this name has this type.
        unsafe {
            core::mem::transmute::<*mut c_void, $t>(lookup(concat!($name, "\0").as_bytes(), None))
        }
    };
    ($t:ty, $name:literal @ $ver:literal) => {
        // SAFETY: as above.
        unsafe {
            core::mem::transmute::<*mut c_void, $t>(lookup(
                concat!($name, "\0").as_bytes(),
                Some(concat!($ver, "\0").as_bytes()),
            ))
        }
    };
}

fn resolve() -> Real {
    Real {
        mutex_lock: find!(MutexFn, "pthread_mutex_lock"),
        mutex_trylock: find!(MutexFn, "pthread_mutex_trylock"),
        mutex_timedlock: find!(MutexTimedFn, "pthread_mutex_timedlock"),
        mutex_unlock: find!(MutexFn, "pthread_mutex_unlock"),
        rw_rdlock: find!(RwFn, "pthread_rwlock_rdlock"),
        rw_tryrdlock: find!(RwFn, "pthread_rwlock_tryrdlock"),
        rw_timedrdlock: find!(RwTimedFn, "pthread_rwlock_timedrdlock"),
        rw_wrlock: find!(RwFn, "pthread_rwlock_wrlock"),
        rw_trywrlock: find!(RwFn, "pthread_rwlock_trywrlock"),
        rw_timedwrlock: find!(RwTimedFn, "pthread_rwlock_timedwrlock"),
        rw_unlock: find!(RwFn, "pthread_rwlock_unlock"),
        cond_wait: find!(CondWaitFn, "pthread_cond_wait" @ "GLIBC_2.3.2"),
        cond_timedwait: find!(CondTimedFn, "pthread_cond_timedwait" @ "GLIBC_2.3.2"),
        cond_signal: find!(CondFn, "pthread_cond_signal" @ "GLIBC_2.3.2"),
        cond_broadcast: find!(CondFn, "pthread_cond_broadcast" @ "GLIBC_2.3.2"),
    }
}

/// True if the environment variable `name` (NUL-terminated) is set, non-empty and not "0".
pub(crate) fn env_on(name: &[u8]) -> bool {
    // SAFETY: getenv with a NUL-terminated name; the result is read before any setenv could
    // run (start-up) and only up to its NUL.
    let v = unsafe { libc::getenv(name.as_ptr() as *const c_char) };
    if v.is_null() {
        return false;
    }
    // SAFETY: a non-null getenv result is a NUL-terminated string.
    let first = unsafe { *v } as u8;
    first != 0 && !(first == b'0' && unsafe { *v.add(1) } == 0)
}
