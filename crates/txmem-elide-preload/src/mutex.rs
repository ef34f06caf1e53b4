//! The mutex entry points: `pthread_mutex_lock`, `_trylock`, `_timedlock`, `_unlock`.

use crate::real::{fast, mode, real};
use crate::{elide, entry, profile};
use libc::{c_int, pthread_mutex_t, timespec, EBUSY};

/// glibc's `__kind` bits that make a mutex one the library leaves alone: robust (16),
/// priority inheritance (32), priority protect (64), process-shared (128).
const UNTOUCHED_KINDS: c_int = 16 | 32 | 64 | 128;
/// glibc's elision hint bits, ignored when reading the type.
const ELISION_BITS: c_int = 256 | 512;

/// The mutex's `__kind` (glibc x86-64: the fifth `int` of the structure).
fn kind(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: an initialized glibc mutex has its kind at byte 16; a relaxed read of an
    // aligned int the C library writes only at initialization.
    unsafe { core::ptr::read_volatile((m as *const c_int).add(4)) }
}

/// True for mutexes every mode passes through untouched.
pub(crate) fn untouched(m: *mut pthread_mutex_t) -> bool {
    kind(m) & UNTOUCHED_KINDS != 0
}

/// True for the mutexes elision may take: normal (0) or adaptive (3).
fn elidable(m: *mut pthread_mutex_t) -> bool {
    matches!(kind(m) & !ELISION_BITS, 0 | 3)
}

unsafe extern "C" fn lock(m: *mut pthread_mutex_t, ret: usize) -> c_int {
    let Some(real) = real() else { return 0 };
    let mode = mode();
    // SAFETY (every call below): the program's own arguments, forwarded.
    if (!mode.profile && !mode.elide) || untouched(m) {
        return unsafe { (real.mutex_lock)(m) };
    }
    if mode.elide && elidable(m) {
        return unsafe { elide::lock(m, real, ret, mode.profile) };
    }
    profile::guarded(|| unsafe { profile::mutex(m, ret, real.mutex_trylock, real.mutex_lock) })
        .unwrap_or_else(|| unsafe { (real.mutex_lock)(m) })
}

unsafe extern "C" fn trylock(m: *mut pthread_mutex_t, ret: usize) -> c_int {
    let Some(real) = real() else { return 0 };
    // SAFETY: the program's own argument, forwarded.
    let r = unsafe { (real.mutex_trylock)(m) };
    if mode().profile && !untouched(m) {
        profile::guarded(|| match r {
            0 => profile::acquired(m as usize, ret, false, 0, false),
            EBUSY => profile::try_failed(m as usize, ret),
            _ => {}
        });
    }
    r
}

unsafe extern "C" fn timedlock(m: *mut pthread_mutex_t, ts: *const timespec, ret: usize) -> c_int {
    let Some(real) = real() else { return 0 };
    // SAFETY (both calls): the program's own arguments, forwarded.
    if !mode().profile || untouched(m) {
        return unsafe { (real.mutex_timedlock)(m, ts) };
    }
    let r = unsafe { (real.mutex_trylock)(m) };
    if r == 0 {
        profile::guarded(|| profile::acquired(m as usize, ret, false, 0, false));
        return 0;
    }
    let t0 = profile::now();
    let r = unsafe { (real.mutex_timedlock)(m, ts) };
    if r == 0 {
        profile::guarded(|| profile::acquired(m as usize, ret, true, profile::now() - t0, false));
    }
    r
}

unsafe extern "C" fn unlock(m: *mut pthread_mutex_t, _ret: usize) -> c_int {
    let Some(real) = real() else { return 0 };
    let mode = mode();
    if mode.elide {
        if let Some(r) = elide::unlock(m, mode.profile) {
            return r;
        }
    }
    if mode.profile && !untouched(m) {
        profile::guarded(|| profile::released(m as usize));
    }
    // SAFETY: the program's own argument, forwarded.
    unsafe { (real.mutex_unlock)(m) }
}

entry! {
    /// Locks a mutex (interposed).
    fn pthread_mutex_lock(m: *mut pthread_mutex_t), fast fast::MUTEX_LOCK, ret in "rsi", then lock
}
entry! {
    /// Tries to lock a mutex (interposed).
    fn pthread_mutex_trylock(m: *mut pthread_mutex_t), fast fast::MUTEX_TRYLOCK, ret in "rsi", then trylock
}
entry! {
    /// Locks a mutex with a deadline (interposed).
    fn pthread_mutex_timedlock(m: *mut pthread_mutex_t, ts: *const timespec), ret in "rdx", then timedlock
}
entry! {
    /// Unlocks a mutex (interposed).
    fn pthread_mutex_unlock(m: *mut pthread_mutex_t), fast fast::MUTEX_UNLOCK, ret in "rsi", then unlock
}
