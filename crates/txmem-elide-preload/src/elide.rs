//! Elision of normal pthread mutexes with Intel RTM: XSync's adaptive retry through
//! `txmem-htm`'s [`RetryPolicy`], on `txmem-elide`'s [`Rtm`] backend.
//!
//! Where RTM is usable (the project's development machine, an Intel Xeon KVM guest, has it)
//! the integration tests run every C program through this path; elsewhere [`usable`] is
//! false and the hooks never enter it. It is kept small on purpose: normal mutexes only,
//! no coarsening.
//!
//! A section is elided the way glibc's own elision does it: `xbegin`, read the mutex's lock
//! word (so a thread that really acquires the mutex aborts the section), return 0 with the
//! transaction open; the matching unlock, seeing the word still free inside a transaction,
//! ends it. An abort resumes inside [`lock`] (all memory, the stack included, is rolled back),
//! where the per-thread policy decides: retry, wait outside for a busy lock, or take the
//! mutex for real. Locks taken inside an elided section only subscribe (flat nesting).
//!
//! `pthread_cond_wait` inside an elided section aborts it with [`COND_WAIT_CODE`]: an
//! explicit abort is persistent for the policy, so the section re-runs on the real mutex and
//! reaches the wait holding it, as the condition variable requires.

use crate::profile;
use crate::real::Real;
use core::cell::Cell;
use core::sync::atomic::{AtomicI32, Ordering};
use libc::{c_int, pthread_mutex_t};
use txmem_elide::htm::{Htm, Rtm, RtmVerdict};
use txmem_htm::policy::{RetryAction, RetryConfig, RetryEvent, RetryPolicy};
use txmem_htm::LOCK_BUSY_CODE;

/// The explicit abort code of a condition wait inside an elided section.
pub const COND_WAIT_CODE: u8 = 0xFD;

/// Spins a section waits, outside any transaction, for a busy mutex before it tries again.
const BUSY_SPINS: u32 = 1 << 14;

thread_local! {
    static POLICY: Cell<RetryPolicy> = const { Cell::new(RetryPolicy::new(RetryConfig::DEFAULT)) };
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static SITE: Cell<usize> = const { Cell::new(0) };
}

/// Whether RTM can be used: CPUID first (so that a CPU without it never reaches the
/// detection, which reads the environment through `std`), then `txmem-elide`'s probe.
pub(crate) fn usable() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{__cpuid, __cpuid_count};
        // CPUID exists on every x86-64 CPU; leaf 7 is read only if leaf 0 lists it.
        // SAFETY: CPUID only reads identification registers. The intrinsics are
        // `unsafe fn` on older toolchains (the declared rust-version among them), hence the allow.
        #[allow(unused_unsafe)]
        let rtm_bit = unsafe { __cpuid(0).eax >= 7 && __cpuid_count(7, 0).ebx & (1 << 11) != 0 };
        rtm_bit && Rtm::detection().verdict == RtmVerdict::Usable
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

fn word(m: *mut pthread_mutex_t) -> &'static AtomicI32 {
    // SAFETY: glibc's mutex starts with its `int __lock` word, 0 when free; the caller passes
    // a mutex the program initialized, and the reference does not outlive the call's use.
    unsafe { &*(m as *const AtomicI32) }
}

/// Runs the start of a critical section on `m` (a normal mutex): elided when the policy
/// allows, else on the real mutex.
///
/// # Safety
///
/// `m` is an initialized normal glibc mutex; RTM is usable ([`usable`] said so).
pub(crate) unsafe fn lock(m: *mut pthread_mutex_t, real: &Real, ret: usize, prof: bool) -> c_int {
    let w = word(m);
    if Rtm.test() {
        // Nested inside an elided section: subscribe to this mutex too.
        if w.load(Ordering::Relaxed) != 0 {
            Rtm.abort(LOCK_BUSY_CODE);
        }
        DEPTH.with(|d| d.set(d.get() + 1));
        return 0;
    }
    let site = if prof {
        profile::site(m as usize, ret)
    } else {
        None
    };
    let mut policy = POLICY.with(Cell::get);
    let mut action = policy.on(RetryEvent::Start);
    loop {
        match action {
            RetryAction::Attempt | RetryAction::WaitThenAttempt => {
                if action == RetryAction::WaitThenAttempt {
                    let mut n = 0;
                    while w.load(Ordering::Relaxed) != 0 && n < BUSY_SPINS {
                        core::hint::spin_loop();
                        n += 1;
                    }
                }
                if let Some(s) = site {
                    s.tx_attempts.fetch_add(1, Ordering::Relaxed);
                }
                match Rtm.begin() {
                    Ok(()) => {
                        if w.load(Ordering::Relaxed) != 0 {
                            Rtm.abort(LOCK_BUSY_CODE);
                        }
                        // Thread-local writes only: shared counters would make every elided
                        // section of every thread conflict.
                        DEPTH.with(|d| d.set(1));
                        SITE.with(|c| c.set(site.map_or(0, |s| s as *const _ as usize)));
                        POLICY.with(|c| c.set(policy));
                        if let Some(s) = site {
                            profile::push(m as usize, s);
                        }
                        return 0;
                    }
                    Err(status) => {
                        if let Some(s) = site {
                            let i = profile::cause_index(status.cause());
                            s.tx_aborts[i].fetch_add(1, Ordering::Relaxed);
                        }
                        action = policy.on(RetryEvent::Abort(status));
                    }
                }
            }
            RetryAction::Fallback | RetryAction::Done => {
                let r = match site {
                    Some(s) => {
                        s.fallbacks.fetch_add(1, Ordering::Relaxed);
                        // SAFETY: the program's mutex, forwarded.
                        unsafe { profile::mutex(m, ret, real.mutex_trylock, real.mutex_lock) }
                    }
                    // SAFETY: as above.
                    None => unsafe { (real.mutex_lock)(m) },
                };
                policy.on(RetryEvent::FallbackAcquired);
                POLICY.with(|c| c.set(policy));
                return r;
            }
        }
    }
}

/// Ends an elided section on `m` if this unlock closes one: `Some(0)`; `None` when `m` was
/// really acquired and the real unlock must run.
pub(crate) fn unlock(m: *mut pthread_mutex_t, prof: bool) -> Option<c_int> {
    if DEPTH.with(Cell::get) == 0 || !Rtm.test() || word(m).load(Ordering::Relaxed) != 0 {
        return None;
    }
    let d = DEPTH.with(|c| {
        let d = c.get() - 1;
        c.set(d);
        d
    });
    if d == 0 {
        Rtm.end();
        POLICY.with(|c| {
            let mut p = c.get();
            p.on(RetryEvent::Commit);
            c.set(p);
        });
        let s = SITE.with(Cell::get);
        if prof && s != 0 {
            // SAFETY: SITE holds a `&'static Site` of the profile's table.
            let s: &profile::Site = unsafe { &*(s as *const profile::Site) };
            s.tx_commits.fetch_add(1, Ordering::Relaxed);
            s.acquisitions.fetch_add(1, Ordering::Relaxed);
            s.wait.record(0);
            profile::released(m as usize);
        }
    }
    Some(0)
}

/// Called by a condition wait: aborts an elided section so it re-runs on the real mutex.
pub(crate) fn before_wait() {
    if Rtm.test() {
        Rtm.abort(COND_WAIT_CODE);
    }
}
