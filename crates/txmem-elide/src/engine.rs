//! The elision driver shared by every lock: per-thread policy state, the retry loop around
//! `begin`, and the bookkeeping after a commit or a fallback acquisition.

use crate::htm::{AbortStatus, Htm, LOCK_BUSY_CODE, REENTRY_CODE};
use crate::policy::{
    CoarsenConfig, CoarsenEvent, CoarsenPolicy, RetryAction, RetryConfig, RetryEvent, RetryPolicy,
};
use crate::stats::{self, Counters, Stat};
use crossbeam_utils::Backoff;
use std::cell::Cell;

#[derive(Copy, Clone)]
struct ThreadPolicy {
    retry: RetryPolicy,
    coarsen: CoarsenPolicy,
}

thread_local! {
    static POLICY: Cell<ThreadPolicy> = const {
        Cell::new(ThreadPolicy {
            retry: RetryPolicy::new(RetryConfig::DEFAULT),
            coarsen: CoarsenPolicy::new(CoarsenConfig::DEFAULT),
        })
    };
}

/// Replaces the calling thread's retry and coarsening policies with fresh ones using these
/// configurations. Elision state is per thread (XSync keeps it thread-local so that updating
/// it never causes conflicts), so this affects every elided lock used by this thread.
///
/// ```
/// use txmem_elide::policy::{CoarsenConfig, RetryConfig};
///
/// txmem_elide::configure_thread(
///     RetryConfig { max_attempts: 3, ..RetryConfig::DEFAULT },
///     CoarsenConfig::DEFAULT,
/// );
/// assert_eq!(txmem_elide::thread_policy().0.limit(), 3);
/// ```
pub fn configure_thread(retry: RetryConfig, coarsen: CoarsenConfig) {
    POLICY.with(|p| {
        p.set(ThreadPolicy {
            retry: RetryPolicy::new(retry),
            coarsen: CoarsenPolicy::new(coarsen),
        })
    })
}

/// A copy of the calling thread's current retry and coarsening policy state.
pub fn thread_policy() -> (RetryPolicy, CoarsenPolicy) {
    let p = POLICY.with(Cell::get);
    (p.retry, p.coarsen)
}

#[inline]
fn retry_event(e: RetryEvent) -> RetryAction {
    POLICY.with(|p| {
        let mut s = p.get();
        let a = s.retry.on(e);
        p.set(s);
        a
    })
}

#[inline]
fn coarsen_event(e: CoarsenEvent) {
    POLICY.with(|p| {
        let mut s = p.get();
        s.coarsen.on(e);
        p.set(s);
    })
}

/// The group size the coarsening policy currently asks for.
pub(crate) fn coarsen_group_size() -> u32 {
    POLICY.with(|p| p.get().coarsen.group_size())
}

/// How a section was entered.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    /// Running inside a hardware transaction that has read (subscribed to) the lock.
    Elided,
    /// The policy gave up on elision: the caller must now acquire the fallback lock
    /// (non-transactionally) and then call [`fallback_acquired`].
    Fallback,
}

fn record_abort(lock: &Counters, status: AbortStatus) -> RetryAction {
    lock.add_shared(Stat::Abort(status));
    stats::thread_add(Stat::Abort(status));
    coarsen_event(CoarsenEvent::Aborted(status));
    retry_event(RetryEvent::Abort(status))
}

/// Waits, outside any transaction, until `busy` turns false: spinning with backoff first,
/// then handing over to `park` (which should block until the lock is released, e.g. by
/// acquiring and releasing it) if the holder takes long.
pub(crate) fn wait_while_busy(busy: impl Fn() -> bool, park: impl Fn()) {
    let backoff = Backoff::new();
    while busy() {
        if backoff.is_completed() {
            park();
            return;
        }
        backoff.snooze();
    }
}

/// Runs the retry policy for one section. `busy` reads the fallback lock's state inside the
/// transaction (subscribing to it); `wait` blocks until it is free.
///
/// Inside an already running transaction the section nests flatly into it and never takes
/// the fallback lock: if the lock is busy the whole enclosing transaction aborts.
pub(crate) fn acquire<H: Htm>(
    htm: &H,
    lock: &Counters,
    busy: impl Fn() -> bool,
    wait: impl Fn(),
) -> Path {
    if htm.test() {
        return match htm.begin() {
            Ok(()) => {
                if busy() {
                    // Hardware never returns from this; the mock panics (it cannot roll
                    // back an enclosing section).
                    htm.abort(LOCK_BUSY_CODE);
                    unreachable!("abort inside a nested section returned");
                }
                Path::Elided
            }
            // Only a backend without real nesting gets here: take the lock inside the
            // enclosing transaction, which makes the acquisition part of it.
            Err(_) => Path::Fallback,
        };
    }
    let mut action = retry_event(RetryEvent::Start);
    loop {
        match action {
            RetryAction::Attempt => {
                lock.add_shared(Stat::Attempt);
                stats::thread_add(Stat::Attempt);
                // Everything written before this point (policy state, counters) is
                // non-transactional and survives an abort; on hardware an abort anywhere in
                // the section resumes inside `begin` with `Err`.
                match htm.begin() {
                    Ok(()) => {
                        if !busy() {
                            return Path::Elided;
                        }
                        let status = htm.abort(LOCK_BUSY_CODE);
                        action = record_abort(lock, status);
                    }
                    Err(status) => action = record_abort(lock, status),
                }
            }
            RetryAction::WaitThenAttempt => {
                wait();
                action = RetryAction::Attempt;
            }
            RetryAction::Fallback | RetryAction::Done => return Path::Fallback,
        }
    }
}

/// A thread asked for a lock it already holds elided, in a conflicting mode (a mutex
/// locked twice, a write lock taken inside a read lock).
///
/// A real lock deadlocks here (`lock_api`'s contract for non-reentrant locks); an elided
/// one must not hand out a second guard that aliases the first. The section aborts with
/// [`REENTRY_CODE`]: on hardware everything since the outermost `begin` is rolled back, and
/// because an explicit abort is persistent the retry policy runs the section again on the
/// fallback lock, where the second acquisition waits for the first, the same deadlock as on
/// any non-reentrant lock. A backend that cannot roll back (the mock) returns from `abort`;
/// the only safe thing left is to panic.
#[cold]
#[inline(never)]
pub(crate) fn reacquire_by_holder<H: Htm>(htm: &H) -> ! {
    htm.abort(REENTRY_CODE);
    panic!(
        "txmem-elide: this thread already holds this lock in an elided section and asked for \
         it again in a conflicting mode (a non-reentrant lock taken twice would deadlock)"
    )
}

/// Bookkeeping after the caller acquired the fallback lock following [`Path::Fallback`]
/// (the caller counts the acquisition in its per-lock statistics itself).
pub(crate) fn fallback_acquired<H: Htm>(htm: &H) {
    htm.fallback_acquired();
    retry_event(RetryEvent::FallbackAcquired);
    stats::thread_add(Stat::Fallback);
}

/// Ends an elided section that covered `sections` critical sections. If this committed the
/// outermost transaction, informs the policies, counts it and runs deferred notifications.
pub(crate) fn commit<H: Htm>(htm: &H, lock: &Counters, sections: u32) {
    htm.end();
    if !htm.test() {
        retry_event(RetryEvent::Commit);
        coarsen_event(CoarsenEvent::Committed { sections });
        lock.add_shared(Stat::Commit);
        stats::thread_add(Stat::Commit);
        if sections > 1 {
            lock.add_shared(Stat::Coarsened(sections as u64));
            stats::thread_add(Stat::Coarsened(sections as u64));
        }
        crate::condvar::flush_deferred();
    }
}
