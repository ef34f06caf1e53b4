//! A condition variable whose wake-ups are deferred to the end of the transaction that
//! issues them (XCondVar; Dudnik & Swift).
//!
//! Waking a thread needs a system call, which would abort a hardware transaction. So a
//! notification issued inside a transaction is queued (per thread) and delivered right after
//! the outermost elided section commits; if the transaction aborts instead, the queued entry
//! is rolled back with everything else and the re-executed section queues it again. Outside
//! a transaction (on the fallback path, or in no critical section at all) notifications are
//! delivered at once.
//!
//! No wake-up is lost. The condition variable keeps a sequence number. A waiter reads it
//! inside the critical section in which it found the condition false, leaves the section and
//! sleeps only if the number is unchanged (the check is atomic with going to sleep, through
//! `parking_lot_core`). A notifier bumps the number *after* its critical section (the one
//! that made the condition true) has committed, which is necessarily after the waiter's
//! section: so the waiter either sees the new number and does not sleep, or is asleep and is
//! woken.
//!
//! The [`Notifier`] handle is an `Arc` clone that is `Send + Sync + 'static`, for use from
//! commit handlers of software transactions (for example `tx.on_commit(move || n.notify_one())`
//! in txmem's STM): those run after commit, so the wake-up is delivered at once.

use crate::engine::{self, DeferredWake};
use crate::htm;
use lock_api::{MutexGuard, RawMutex};
use parking_lot_core::{ParkResult, DEFAULT_PARK_TOKEN, DEFAULT_UNPARK_TOKEN};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Default)]
struct Inner {
    seq: AtomicU64,
    waiters: AtomicUsize,
}

impl Inner {
    fn key(&self) -> usize {
        self as *const Inner as usize
    }

    fn deliver(&self, all: bool) {
        self.seq.fetch_add(1, SeqCst);
        if self.waiters.load(SeqCst) == 0 {
            return;
        }
        // SAFETY: the key is this condition variable's address, used only for it; the
        // callback does not panic or call into parking_lot.
        unsafe {
            if all {
                parking_lot_core::unpark_all(self.key(), DEFAULT_UNPARK_TOKEN);
            } else {
                parking_lot_core::unpark_one(self.key(), |_| DEFAULT_UNPARK_TOKEN);
            }
        }
    }
}

/// A transaction-friendly condition variable (see the module documentation).
///
/// ```
/// use std::sync::Arc;
/// use txmem_elide::{ElidedMutex, TxCondvar};
///
/// let state = Arc::new((ElidedMutex::<bool>::new(false), TxCondvar::new()));
/// let s2 = state.clone();
/// let t = std::thread::spawn(move || {
///     *s2.0.lock() = true;
///     s2.1.notify_one(); // deferred if called inside an elided section
/// });
/// let mut ready = state.0.lock();
/// state.1.wait_while(&mut ready, |r| !*r);
/// assert!(*ready);
/// drop(ready);
/// t.join().unwrap();
/// ```
#[derive(Debug, Default)]
pub struct TxCondvar {
    inner: Arc<Inner>,
}

/// A cheap, cloneable handle that notifies a [`TxCondvar`]; `Send + Sync + 'static`, so it
/// can be moved into commit handlers of software transactions.
///
/// Inside a hardware transaction its notifications are deferred until the outermost elided
/// section commits; elsewhere they are delivered immediately.
///
/// ```
/// use txmem_elide::TxCondvar;
///
/// let cv = TxCondvar::new();
/// let n = cv.notifier();
/// let on_commit: Box<dyn FnOnce() + Send + 'static> = Box::new(move || n.notify_all());
/// on_commit();
/// assert_eq!(cv.notifications(), 1);
/// ```
#[derive(Clone, Debug)]
pub struct Notifier {
    inner: Arc<Inner>,
}

/// Whether a timed wait returned because the timeout elapsed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    /// True if the wait timed out.
    pub fn timed_out(self) -> bool {
        self.0
    }
}

impl DeferredWake for Inner {
    fn wake(&self, all: bool) {
        self.deliver(all);
    }
}

fn notify(inner: &Arc<Inner>, all: bool) {
    if htm::in_transaction() {
        engine::defer(inner.clone(), all);
    } else {
        inner.deliver(all);
    }
}

/// Delivers the calling thread's deferred notifications now. The elided locks call this after
/// every outermost commit; call it yourself only after committing a transaction you started
/// directly through an [`Htm`](crate::htm::Htm) backend. Does nothing inside a transaction.
pub fn flush_deferred() {
    if htm::in_transaction() {
        return;
    }
    engine::deliver_deferred();
}

impl TxCondvar {
    /// A new condition variable.
    pub fn new() -> Self {
        Self::default()
    }

    /// A handle that notifies this condition variable (see [`Notifier`]).
    pub fn notifier(&self) -> Notifier {
        Notifier {
            inner: self.inner.clone(),
        }
    }

    /// Wakes one waiter (deferred to commit inside a transaction).
    pub fn notify_one(&self) {
        notify(&self.inner, false);
    }

    /// Wakes all waiters (deferred to commit inside a transaction).
    pub fn notify_all(&self) {
        notify(&self.inner, true);
    }

    /// Notifications delivered so far (deferred ones count once delivered).
    pub fn notifications(&self) -> u64 {
        self.inner.seq.load(SeqCst)
    }

    /// Releases the guard's lock (committing an elided section), sleeps until notified, then
    /// re-acquires the lock (possibly elided again). May wake spuriously; prefer
    /// [`wait_while`](TxCondvar::wait_while).
    pub fn wait<R: RawMutex, T: ?Sized>(&self, guard: &mut MutexGuard<'_, R, T>) {
        self.wait_inner(guard, None);
    }

    /// Waits until `condition` returns false, re-checking after every wake-up.
    pub fn wait_while<R: RawMutex, T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, R, T>,
        mut condition: impl FnMut(&mut T) -> bool,
    ) {
        while condition(&mut **guard) {
            self.wait(guard);
        }
    }

    /// Like [`wait`](TxCondvar::wait), giving up after `timeout`.
    pub fn wait_timeout<R: RawMutex, T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, R, T>,
        timeout: Duration,
    ) -> WaitTimeoutResult {
        WaitTimeoutResult(self.wait_inner(guard, Instant::now().checked_add(timeout)))
    }

    /// Like [`wait_while`](TxCondvar::wait_while), giving up after `timeout` overall; the
    /// result says whether it timed out (with the condition still true).
    pub fn wait_while_timeout<R: RawMutex, T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, R, T>,
        timeout: Duration,
        mut condition: impl FnMut(&mut T) -> bool,
    ) -> WaitTimeoutResult {
        let deadline = Instant::now().checked_add(timeout);
        while condition(&mut **guard) {
            if self.wait_inner(guard, deadline) {
                return WaitTimeoutResult(condition(&mut **guard));
            }
        }
        WaitTimeoutResult(false)
    }

    /// The current notification count, for waiting on a condition that no lock protects —
    /// for example state of txmem transactions that notify from an `on_commit` handler. Take
    /// the ticket *before* checking the condition; [`wait_for_ticket`](Self::wait_for_ticket)
    /// then sleeps only if no notification was delivered since, so a notification that races
    /// with the check is never lost.
    ///
    /// ```
    /// use txmem_elide::TxCondvar;
    /// let cv = TxCondvar::new();
    /// let ticket = cv.ticket();
    /// cv.notify_one(); // e.g. from another thread's commit handler
    /// cv.wait_for_ticket(ticket); // returns at once: a notification came after the ticket
    /// ```
    pub fn ticket(&self) -> WaitTicket {
        WaitTicket(self.inner.seq.load(SeqCst))
    }

    /// Sleeps until a notification is delivered after `ticket` was taken (at once if one
    /// already was). May wake spuriously: re-check the condition with a fresh ticket.
    pub fn wait_for_ticket(&self, ticket: WaitTicket) {
        self.park_while_unchanged(ticket.0, None);
    }

    /// Like [`wait_for_ticket`](Self::wait_for_ticket), giving up after `timeout`.
    pub fn wait_for_ticket_timeout(
        &self,
        ticket: WaitTicket,
        timeout: Duration,
    ) -> WaitTimeoutResult {
        WaitTimeoutResult(self.park_while_unchanged(ticket.0, Instant::now().checked_add(timeout)))
    }

    /// Returns true if it timed out.
    fn wait_inner<R: RawMutex, T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, R, T>,
        deadline: Option<Instant>,
    ) -> bool {
        // Read inside the critical section that observed the condition.
        let seen = self.inner.seq.load(SeqCst);
        MutexGuard::unlocked(guard, || self.park_while_unchanged(seen, deadline))
    }

    /// Sleeps while the notification count is still `seen`; true if it timed out.
    fn park_while_unchanged(&self, seen: u64, deadline: Option<Instant>) -> bool {
        let inner = &*self.inner;
        inner.waiters.fetch_add(1, SeqCst);
        // SAFETY: the key is this condition variable's address, used only for it; the
        // callbacks only load an atomic and do not panic or call into parking_lot.
        let result = unsafe {
            parking_lot_core::park(
                inner.key(),
                || inner.seq.load(SeqCst) == seen,
                || {},
                |_, _| {},
                DEFAULT_PARK_TOKEN,
                deadline,
            )
        };
        inner.waiters.fetch_sub(1, SeqCst);
        matches!(result, ParkResult::TimedOut)
    }
}

/// A notification count taken by [`TxCondvar::ticket`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitTicket(u64);

impl Notifier {
    /// Wakes one waiter (deferred to commit inside a transaction).
    pub fn notify_one(&self) {
        notify(&self.inner, false);
    }

    /// Wakes all waiters (deferred to commit inside a transaction).
    pub fn notify_all(&self) {
        notify(&self.inner, true);
    }
}
