//! The reader-writer lock entry points: read, write, try and timed locks, and unlock.
//! Profiled, never elided; process-shared locks pass through untouched.

use crate::real::{fast, mode, real, RwFn, RwTimedFn};
use crate::{entry, profile};
use libc::{c_int, pthread_rwlock_t, timespec, EBUSY};

/// True for a process-shared lock (glibc x86-64: `int __shared` at byte 28).
fn untouched(l: *mut pthread_rwlock_t) -> bool {
    // SAFETY: an initialized glibc rwlock has `__shared` at byte 28, written only at
    // initialization.
    unsafe { core::ptr::read_volatile((l as *const c_int).add(7)) != 0 }
}

/// Acquires `l` with `lock` after `try_`, recording a contended acquisition when `try_`
/// found it busy.
unsafe fn profiled(
    l: *mut pthread_rwlock_t,
    ret: usize,
    try_: RwFn,
    lock: RwFn,
    shared: bool,
) -> c_int {
    // SAFETY: forwarded with the caller's arguments.
    let r = unsafe { try_(l) };
    if r == 0 {
        profile::acquired(l as usize, ret, false, 0, shared);
        return 0;
    }
    let t0 = profile::now();
    // SAFETY: as above.
    let r = unsafe { lock(l) };
    if r == 0 {
        profile::acquired(l as usize, ret, true, profile::now() - t0, shared);
    }
    r
}

unsafe fn acquire(
    l: *mut pthread_rwlock_t,
    ret: usize,
    try_: RwFn,
    lock: RwFn,
    shared: bool,
) -> c_int {
    // SAFETY (both calls): the program's own arguments, forwarded.
    if !mode().profile || untouched(l) {
        return unsafe { lock(l) };
    }
    profile::guarded(|| unsafe { profiled(l, ret, try_, lock, shared) })
        .unwrap_or_else(|| unsafe { lock(l) })
}

unsafe fn try_acquire(l: *mut pthread_rwlock_t, ret: usize, try_: RwFn, shared: bool) -> c_int {
    // SAFETY: the program's own argument, forwarded.
    let r = unsafe { try_(l) };
    if mode().profile && !untouched(l) {
        profile::guarded(|| match r {
            0 => profile::acquired(l as usize, ret, false, 0, shared),
            EBUSY => profile::try_failed(l as usize, ret),
            _ => {}
        });
    }
    r
}

unsafe fn timed(
    l: *mut pthread_rwlock_t,
    ts: *const timespec,
    ret: usize,
    try_: RwFn,
    lock: RwTimedFn,
    shared: bool,
) -> c_int {
    // SAFETY (every call): the program's own arguments, forwarded.
    if !mode().profile || untouched(l) {
        return unsafe { lock(l, ts) };
    }
    if unsafe { try_(l) } == 0 {
        profile::guarded(|| profile::acquired(l as usize, ret, false, 0, shared));
        return 0;
    }
    let t0 = profile::now();
    let r = unsafe { lock(l, ts) };
    if r == 0 {
        profile::guarded(|| profile::acquired(l as usize, ret, true, profile::now() - t0, shared));
    }
    r
}

unsafe extern "C" fn rdlock(l: *mut pthread_rwlock_t, ret: usize) -> c_int {
    let Some(r) = real() else { return 0 };
    // SAFETY: forwarded.
    unsafe { acquire(l, ret, r.rw_tryrdlock, r.rw_rdlock, true) }
}
unsafe extern "C" fn wrlock(l: *mut pthread_rwlock_t, ret: usize) -> c_int {
    let Some(r) = real() else { return 0 };
    // SAFETY: forwarded.
    unsafe { acquire(l, ret, r.rw_trywrlock, r.rw_wrlock, false) }
}
unsafe extern "C" fn tryrdlock(l: *mut pthread_rwlock_t, ret: usize) -> c_int {
    let Some(r) = real() else { return 0 };
    // SAFETY: forwarded.
    unsafe { try_acquire(l, ret, r.rw_tryrdlock, true) }
}
unsafe extern "C" fn trywrlock(l: *mut pthread_rwlock_t, ret: usize) -> c_int {
    let Some(r) = real() else { return 0 };
    // SAFETY: forwarded.
    unsafe { try_acquire(l, ret, r.rw_trywrlock, false) }
}
unsafe extern "C" fn timedrdlock(
    l: *mut pthread_rwlock_t,
    ts: *const timespec,
    ret: usize,
) -> c_int {
    let Some(r) = real() else { return 0 };
    // SAFETY: forwarded.
    unsafe { timed(l, ts, ret, r.rw_tryrdlock, r.rw_timedrdlock, true) }
}
unsafe extern "C" fn timedwrlock(
    l: *mut pthread_rwlock_t,
    ts: *const timespec,
    ret: usize,
) -> c_int {
    let Some(r) = real() else { return 0 };
    // SAFETY: forwarded.
    unsafe { timed(l, ts, ret, r.rw_trywrlock, r.rw_timedwrlock, false) }
}
unsafe extern "C" fn unlock(l: *mut pthread_rwlock_t, _ret: usize) -> c_int {
    let Some(r) = real() else { return 0 };
    if mode().profile && !untouched(l) {
        profile::guarded(|| profile::released(l as usize));
    }
    // SAFETY: forwarded.
    unsafe { (r.rw_unlock)(l) }
}

entry! {
    /// Locks a reader-writer lock for reading (interposed).
    fn pthread_rwlock_rdlock(l: *mut pthread_rwlock_t), fast fast::RW_RDLOCK, ret in "rsi", then rdlock
}
entry! {
    /// Locks a reader-writer lock for writing (interposed).
    fn pthread_rwlock_wrlock(l: *mut pthread_rwlock_t), fast fast::RW_WRLOCK, ret in "rsi", then wrlock
}
entry! {
    /// Tries to lock a reader-writer lock for reading (interposed).
    fn pthread_rwlock_tryrdlock(l: *mut pthread_rwlock_t), ret in "rsi", then tryrdlock
}
entry! {
    /// Tries to lock a reader-writer lock for writing (interposed).
    fn pthread_rwlock_trywrlock(l: *mut pthread_rwlock_t), ret in "rsi", then trywrlock
}
entry! {
    /// Locks a reader-writer lock for reading, with a deadline (interposed).
    fn pthread_rwlock_timedrdlock(l: *mut pthread_rwlock_t, ts: *const timespec), ret in "rdx", then timedrdlock
}
entry! {
    /// Locks a reader-writer lock for writing, with a deadline (interposed).
    fn pthread_rwlock_timedwrlock(l: *mut pthread_rwlock_t, ts: *const timespec), ret in "rdx", then timedwrlock
}
entry! {
    /// Unlocks a reader-writer lock (interposed).
    fn pthread_rwlock_unlock(l: *mut pthread_rwlock_t), fast fast::RW_UNLOCK, ret in "rsi", then unlock
}
