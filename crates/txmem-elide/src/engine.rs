//! The elision driver shared by every lock: the per-thread context (policy state, records of
//! elided holds, statistics, work deferred to the next commit), the retry loop around
//! `begin`, and the bookkeeping after a commit or a fallback acquisition.
//!
//! Everything a thread keeps lives in one thread-local [`ThreadCtx`], so a lock operation
//! reaches it with a single thread-local access: on real hardware the whole elided path costs
//! little more than the `xbegin`/`xend` pair itself.
//!
//! The policies themselves are `txmem-htm`'s state machines; this module only feeds them the
//! backend's answers and acts on their decisions, as the simulator's elided lock does.

use crate::holds::{Check, Holds, Mode};
use crate::htm::{AbortStatus, Htm, LOCK_BUSY_CODE, REENTRY_CODE};
use crate::policy::{
    CoarsenConfig, CoarsenEvent, CoarsenPolicy, RetryAction, RetryConfig, RetryEvent, RetryPolicy,
};
use crate::stats::{Counters, Stat, ThreadCounters};
use crossbeam_utils::Backoff;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

#[derive(Copy, Clone)]
struct ThreadPolicy {
    retry: RetryPolicy,
    coarsen: CoarsenPolicy,
}

/// What one thread keeps for elision.
pub(crate) struct ThreadCtx {
    /// Updated in place (a `Cell` would copy the whole state in and out on every section).
    policy: RefCell<ThreadPolicy>,
    holds: Holds,
    counters: ThreadCounters,
    /// Set (inside the transaction) when a notification was deferred, so a commit looks at
    /// the queue only when there is something in it.
    deferred: Cell<bool>,
    /// Notifications deferred until the outermost elided section commits (see [`defer`]).
    queue: RefCell<Vec<(Arc<dyn DeferredWake>, bool)>>,
}

/// Something that wakes threads (a condition variable), and so cannot run inside a hardware
/// transaction: the system call would abort it.
pub(crate) trait DeferredWake {
    /// Wakes one waiter, or all of them.
    fn wake(&self, all: bool);
}

thread_local! {
    static CTX: ThreadCtx = const {
        ThreadCtx {
            policy: RefCell::new(ThreadPolicy {
                retry: RetryPolicy::new(RetryConfig::DEFAULT),
                coarsen: CoarsenPolicy::new(CoarsenConfig::DEFAULT),
            }),
            holds: Holds::new(),
            counters: ThreadCounters::new(),
            deferred: Cell::new(false),
            queue: RefCell::new(Vec::new()),
        }
    };
}

/// Runs `f` with the calling thread's context; `None` once the thread is being torn down
/// (its locks then skip elision).
#[inline]
fn with_ctx<R>(f: impl FnOnce(&ThreadCtx) -> R) -> Option<R> {
    CTX.try_with(f).ok()
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
    with_ctx(|t| {
        *t.policy.borrow_mut() = ThreadPolicy {
            retry: RetryPolicy::new(retry),
            coarsen: CoarsenPolicy::new(coarsen),
        }
    });
}

/// A copy of the calling thread's current retry and coarsening policy state.
pub fn thread_policy() -> (RetryPolicy, CoarsenPolicy) {
    let p = with_ctx(|t| *t.policy.borrow()).unwrap_or(ThreadPolicy {
        retry: RetryPolicy::new(RetryConfig::DEFAULT),
        coarsen: CoarsenPolicy::new(CoarsenConfig::DEFAULT),
    });
    (p.retry, p.coarsen)
}

/// The group size the coarsening policy currently asks for.
pub(crate) fn coarsen_group_size() -> u32 {
    with_ctx(|t| t.policy.borrow().coarsen.group_size()).unwrap_or(1)
}

/// Queues a wake-up issued inside the running transaction, to be delivered after the
/// outermost elided section commits. The push is transactional too, so an abort discards it
/// and the re-executed section queues it again.
pub(crate) fn defer(target: Arc<dyn DeferredWake>, all: bool) {
    // Moved into the queue, not cloned: every reference-count update would be one more
    // write inside the transaction.
    let mut target = Some(target);
    with_ctx(|t| {
        if let Some(target) = target.take() {
            t.queue.borrow_mut().push((target, all));
        }
        t.deferred.set(true);
    });
    if let Some(target) = target {
        // The thread is being torn down and has nowhere to keep it. Waking now is still
        // safe: inside a hardware transaction the system call aborts it, and the section
        // runs again on its fallback lock, outside any transaction.
        target.wake(all);
    }
}

/// Delivers the calling thread's deferred wake-ups now (the caller knows no transaction is
/// running).
pub(crate) fn deliver_deferred() {
    with_ctx(ThreadCtx::deliver_deferred);
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

/// Enters a section of the lock at `addr` in `mode`: elided (true, with a record of the hold
/// made inside the transaction, which `release` finds), or not (false: the caller must take
/// the fallback lock and then call [`fallback_acquired`]). `busy` reads the fallback lock's
/// state inside the transaction (subscribing to it); `wait` blocks until it is free.
#[inline]
pub(crate) fn enter<H: Htm>(
    htm: &H,
    lock: &Counters,
    addr: usize,
    mode: Mode,
    busy: impl Fn() -> bool,
    wait: impl Fn(),
) -> bool {
    with_ctx(|t| {
        match t.holds.check(addr, mode) {
            Check::Free => {}
            Check::Full => return false,
            Check::Conflict => reacquire_by_holder(htm),
        }
        match t.acquire(htm, lock, busy, wait) {
            Path::Elided => {
                // Inside the transaction: an abort erases the record with everything else.
                let pushed = t.holds.try_push(addr, mode);
                debug_assert!(pushed, "checked for room before beginning");
                true
            }
            Path::Fallback => false,
        }
    })
    .unwrap_or(false)
}

/// Ends a section of the lock at `addr` held in `mode`: if the thread holds it elided,
/// commits (see [`commit`]) and returns true; false means the hold is on the fallback lock,
/// which the caller must release.
#[inline]
pub(crate) fn release<H: Htm>(htm: &H, lock: &Counters, addr: usize, mode: Mode) -> bool {
    with_ctx(|t| {
        if !t.holds.take(addr, mode) {
            return false;
        }
        t.commit(htm, lock, 1);
        true
    })
    .unwrap_or(false)
}

/// True if the calling thread holds the lock at `addr` elided in a mode that excludes a
/// `wanted` acquisition (for `try_lock`, which must then fail).
#[inline]
pub(crate) fn holds_conflicting(addr: usize, wanted: Mode) -> bool {
    with_ctx(|t| t.holds.conflicting_hold(addr, wanted)).unwrap_or(false)
}

/// Runs the retry policy for one section without recording a hold (for [`crate::Batch`],
/// which tracks its open transaction itself).
pub(crate) fn acquire<H: Htm>(
    htm: &H,
    lock: &Counters,
    busy: impl Fn() -> bool,
    wait: impl Fn(),
) -> Path {
    with_ctx(|t| t.acquire(htm, lock, busy, wait)).unwrap_or(Path::Fallback)
}

/// Ends an elided section that covered `sections` critical sections (see
/// [`ThreadCtx::commit`]).
pub(crate) fn commit<H: Htm>(htm: &H, lock: &Counters, sections: u32) {
    if with_ctx(|t| t.commit(htm, lock, sections)).is_none() {
        // The thread is being torn down: no bookkeeping left to do, only the commit.
        htm.end();
    }
}

/// Bookkeeping after the caller acquired the fallback lock following [`Path::Fallback`]
/// (the caller counts the acquisition in its per-lock statistics itself).
pub(crate) fn fallback_acquired<H: Htm>(htm: &H) {
    htm.fallback_acquired();
    with_ctx(|t| {
        t.policy.borrow_mut().retry.on(RetryEvent::FallbackAcquired);
        t.counters.add(Stat::Fallback);
    });
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
fn reacquire_by_holder<H: Htm>(htm: &H) -> ! {
    htm.abort(REENTRY_CODE);
    panic!(
        "txmem-elide: this thread already holds this lock in an elided section and asked for \
         it again in a conflicting mode (a non-reentrant lock taken twice would deadlock)"
    )
}

impl ThreadCtx {
    /// Runs the retry policy for one section.
    ///
    /// Inside an already running transaction the section nests flatly into it and never
    /// takes the fallback lock: if the lock is busy the whole enclosing transaction aborts.
    #[inline]
    fn acquire<H: Htm>(
        &self,
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
        let mut action = self.policy.borrow_mut().retry.on(RetryEvent::Start);
        loop {
            match action {
                RetryAction::Attempt => {
                    lock.add_per_lock(Stat::Attempt);
                    self.counters.add(Stat::Attempt);
                    // Everything written before this point (policy state, counters) is
                    // non-transactional and survives an abort; on hardware an abort anywhere
                    // in the section resumes inside `begin` with `Err`.
                    match htm.begin() {
                        Ok(()) => {
                            if !busy() {
                                return Path::Elided;
                            }
                            let status = htm.abort(LOCK_BUSY_CODE);
                            action = self.aborted(lock, status);
                        }
                        Err(status) => action = self.aborted(lock, status),
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

    #[cold]
    fn aborted(&self, lock: &Counters, status: AbortStatus) -> RetryAction {
        lock.add_shared(Stat::Abort(status));
        self.counters.add(Stat::Abort(status));
        let mut p = self.policy.borrow_mut();
        p.coarsen.on(CoarsenEvent::Aborted(status));
        p.retry.on(RetryEvent::Abort(status))
    }

    /// Ends an elided section that covered `sections` critical sections. If this committed
    /// the outermost transaction, informs the policies, counts it and delivers deferred
    /// notifications.
    #[inline]
    fn commit<H: Htm>(&self, htm: &H, lock: &Counters, sections: u32) {
        htm.end();
        if htm.test() {
            return;
        }
        {
            let mut p = self.policy.borrow_mut();
            p.retry.on(RetryEvent::Commit);
            p.coarsen.on(CoarsenEvent::Committed { sections });
        }
        lock.add_per_lock(Stat::Commit);
        self.counters.add(Stat::Commit);
        if sections > 1 {
            lock.add_shared(Stat::Coarsened(sections as u64));
            self.counters.add(Stat::Coarsened(sections as u64));
        }
        if self.deferred.replace(false) {
            self.deliver_deferred();
        }
    }

    /// Delivers the queued wake-ups, including any queued while delivering.
    #[cold]
    fn deliver_deferred(&self) {
        loop {
            let batch = std::mem::take(&mut *self.queue.borrow_mut());
            if batch.is_empty() {
                return;
            }
            for (target, all) in batch {
                target.wake(all);
            }
        }
    }
}
