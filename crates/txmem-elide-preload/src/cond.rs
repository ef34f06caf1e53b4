//! The condition variable entry points. A wait releases its mutex and takes it again before
//! it returns, so the profile ends the mutex's hold at the wait and counts the re-acquisition
//! as an acquisition at the wait's call site; with RTM, a wait inside an elided section first
//! aborts it (`elide::before_wait`).

use crate::mutex::untouched;
use crate::real::{mode, real};
use crate::{elide, entry, profile};
use libc::{c_int, pthread_cond_t, pthread_mutex_t, timespec, ETIMEDOUT};

fn before(m: *mut pthread_mutex_t) -> bool {
    let mode = mode();
    if mode.elide {
        elide::before_wait();
    }
    let track = mode.profile && !untouched(m);
    if track {
        profile::guarded(|| profile::released(m as usize));
    }
    track
}

fn after(m: *mut pthread_mutex_t, ret: usize, r: c_int) {
    if r == 0 || r == ETIMEDOUT {
        profile::guarded(|| profile::acquired(m as usize, ret, false, 0, false));
    }
}

unsafe extern "C" fn wait(c: *mut pthread_cond_t, m: *mut pthread_mutex_t, ret: usize) -> c_int {
    let Some(real) = real() else { return 0 };
    let track = before(m);
    // SAFETY: the program's own arguments, forwarded.
    let r = unsafe { (real.cond_wait)(c, m) };
    if track {
        after(m, ret, r);
    }
    r
}

unsafe extern "C" fn timedwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    ts: *const timespec,
    ret: usize,
) -> c_int {
    let Some(real) = real() else { return 0 };
    let track = before(m);
    // SAFETY: the program's own arguments, forwarded.
    let r = unsafe { (real.cond_timedwait)(c, m, ts) };
    if track {
        after(m, ret, r);
    }
    r
}

unsafe extern "C" fn signal(c: *mut pthread_cond_t, _ret: usize) -> c_int {
    let Some(real) = real() else { return 0 };
    // SAFETY: forwarded. Inside an elided section a wake-up's system call aborts it, and the
    // section re-runs until it signals outside a transaction: nothing to add here.
    unsafe { (real.cond_signal)(c) }
}

unsafe extern "C" fn broadcast(c: *mut pthread_cond_t, _ret: usize) -> c_int {
    let Some(real) = real() else { return 0 };
    // SAFETY: forwarded (as `signal`).
    unsafe { (real.cond_broadcast)(c) }
}

entry! {
    /// Waits on a condition variable (interposed).
    fn pthread_cond_wait(c: *mut pthread_cond_t, m: *mut pthread_mutex_t), ret in "rdx", then wait
}
entry! {
    /// Waits on a condition variable with a deadline (interposed).
    fn pthread_cond_timedwait(c: *mut pthread_cond_t, m: *mut pthread_mutex_t, ts: *const timespec), ret in "rcx", then timedwait
}
entry! {
    /// Wakes one waiter of a condition variable (interposed).
    fn pthread_cond_signal(c: *mut pthread_cond_t), ret in "rsi", then signal
}
entry! {
    /// Wakes every waiter of a condition variable (interposed).
    fn pthread_cond_broadcast(c: *mut pthread_cond_t), ret in "rsi", then broadcast
}
