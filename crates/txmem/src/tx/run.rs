//! `atomically` and its variants: run a closure as a transaction, retrying
//! it until it commits.
//!
//! The loop itself ([`run_attempts`]) is inlined into every call, with the
//! program's closure; what an attempt needs across the closure lives in the
//! thread's context (`context`), so the loop carries nothing else. Commit
//! and its bookkeeping are inline too; everything after an abort is out of
//! line ([`after_abort`]): blocking `retry` (`blocking`), abort handlers,
//! statistics, contention management and serialization. A closure that
//! returns the program's error or panics ends in `abandon`.

use std::panic::{self, AssertUnwindSafe, Location};
use std::task::Waker;

use super::abandon::{end_with_error, panicked};
use super::attempt::Snapshot;
use super::blocking;
use super::context::{end_retrying, CallState, Retrying, ThreadContext};
use super::handlers::run_handlers;
use super::state::TxState;
use super::transaction::Transaction;
use crate::clock;
use crate::contention::ContentionManager;
use crate::error::{AbortCause, TxError, TxResult};
use crate::options::TxOptions;
use crate::stats::Serialization;
use crate::wait;

/// Runs `f` as a transaction, retrying until it commits, and returns its result.
///
/// Operations on transactional objects return [`TxResult`]; an abort travels
/// out of `f` with `?` and the attempt is retried (with the contention
/// policy's backoff). Uses the runtime-wide defaults
/// ([`set_default_options`](crate::set_default_options)); use
/// [`TxOptions::run`] for per-transaction options.
///
/// Transactions do not nest: calling `atomically` inside a transaction on the
/// same thread panics (pass the `&mut Transaction` down instead).
///
/// A panic inside `f` aborts the attempt. If the attempt's reads were no
/// longer valid (it was doomed and may have seen an inconsistent state) the
/// panic is swallowed and the transaction retried; otherwise the panic
/// propagates after the attempt's abort handlers run. Either way no lock is
/// left held and nothing is half-installed.
///
/// ```
/// use txmem::{atomically, TBox};
/// let from = TBox::new(100i64);
/// let to = TBox::new(0i64);
/// atomically(|tx| {
///     let amount = 30;
///     let (a, b) = (from.get(tx)?, to.get(tx)?);
///     from.set(tx, a - amount)?;
///     to.set(tx, b + amount)
/// });
/// assert_eq!(from.load() + to.load(), 100);
/// ```
#[track_caller]
pub fn atomically<'env, R>(f: impl FnMut(&mut Transaction<'env>) -> TxResult<R>) -> R {
    run_to_commit(None, false, Location::caller(), f)
}

/// Like [`atomically`], but the closure may fail with the program's own
/// error: `Err(TxError::User(e))` discards the transaction's writes and
/// returns `Err(e)`. Aborts (`TxError::Abort`, what `?` makes of an
/// [`Abort`](crate::Abort)) are retried as usual.
///
/// ```
/// use txmem::{try_atomically, TBox, TxError};
/// let balance = TBox::new(10u64);
/// let r: Result<(), &str> = try_atomically(|tx| {
///     let b = balance.get(tx)?;
///     if b < 50 { return Err(TxError::User("insufficient funds")); }
///     balance.set(tx, b - 50)?;
///     Ok(())
/// });
/// assert_eq!(r, Err("insufficient funds"));
/// assert_eq!(balance.load(), 10);
/// ```
#[track_caller]
pub fn try_atomically<'env, R, E>(
    f: impl FnMut(&mut Transaction<'env>) -> Result<R, TxError<E>>,
) -> Result<R, E> {
    run_with(None, false, Location::caller(), f)
}

/// Like [`atomically`], for a transaction that only reads: the runtime-wide
/// defaults with the [`read_only`](TxOptions::read_only) hint. Its first
/// attempt reads from a snapshot without logging its reads; if it cannot
/// finish as a snapshot (it met a newer version, or wrote), it goes on as
/// an ordinary transaction, so a wrong hint costs time, never correctness.
///
/// ```
/// use txmem::{read_only, TArray};
/// let accounts = TArray::from_fn(16, |_| 10u64);
/// let total = read_only(|tx| {
///     let mut sum = 0;
///     for i in 0..accounts.len() {
///         sum += accounts.get(tx, i)?;
///     }
///     Ok(sum)
/// });
/// assert_eq!(total, 160);
/// ```
#[track_caller]
pub fn read_only<'env, R>(f: impl FnMut(&mut Transaction<'env>) -> TxResult<R>) -> R {
    run_to_commit(None, true, Location::caller(), f)
}

impl TxOptions {
    /// Runs `f` as a transaction with these options (see [`atomically`]).
    #[track_caller]
    pub fn run<'env, R>(&self, f: impl FnMut(&mut Transaction<'env>) -> TxResult<R>) -> R {
        run_to_commit(Some(self), false, Location::caller(), f)
    }

    /// Runs `f` as a transaction with these options (see [`try_atomically`]).
    #[track_caller]
    pub fn try_run<'env, R, E>(
        &self,
        f: impl FnMut(&mut Transaction<'env>) -> Result<R, TxError<E>>,
    ) -> Result<R, E> {
        run_with(Some(self), false, Location::caller(), f)
    }
}

/// [`run_with`] for a closure that has no error of its own: it ends only
/// by committing.
#[inline(always)]
fn run_to_commit<'env, R>(
    options: Option<&TxOptions>,
    read_only: bool,
    site: &'static Location<'static>,
    mut f: impl FnMut(&mut Transaction<'env>) -> TxResult<R>,
) -> R {
    let result: Result<R, std::convert::Infallible> =
        run_with(options, read_only, site, |tx| f(tx).map_err(TxError::Abort));
    match result {
        Ok(v) => v,
        Err(never) => match never {},
    }
}

/// The retry loop shared by every entry point.
///
/// `options` are the transaction's options, or `None` for the runtime-wide
/// defaults (cached per thread and refreshed when they change);
/// `read_only` adds the read-only hint to them.
///
/// The program's closure is wrapped to report its outcome as a small
/// [`Attempted`] and park its value, so the loop ([`run_attempts`]) does not
/// carry the result type around; everything after an abort is out of line
/// ([`after_abort`]).
#[inline(always)]
pub(crate) fn run_with<'env, R, E>(
    options: Option<&TxOptions>,
    read_only: bool,
    site: &'static Location<'static>,
    mut f: impl FnMut(&mut Transaction<'env>) -> Result<R, TxError<E>>,
) -> Result<R, E> {
    let mut result: Option<Result<R, E>> = None;
    let body = &mut |tx: &mut Transaction<'env>| match f(tx) {
        Ok(value) => {
            result = Some(Ok(value));
            Attempted::Value
        }
        Err(TxError::User(e)) => {
            result = Some(Err(e));
            Attempted::UserError
        }
        Err(TxError::Abort(a)) => Attempted::Aborted(a.cause()),
    };
    // (Without a waker, `retry` blocks in place: the loop never suspends.)
    let _never = run_attempts(options, read_only, site, body, None);
    match result {
        Some(r) => r,
        None => unreachable!("a transaction ended without a result"),
    }
}

/// The retry loop for an async transaction (`atomically_async`): runs
/// attempts until one commits (`Ok` with its value) or calls `retry` while
/// what it read is still current; then, instead of blocking, it registers
/// `waker` for a change to those reads and returns the registration
/// (`Err`), which the future keeps until it is polled again.
pub(crate) fn run_until_retry<'env, R>(
    options: Option<&TxOptions>,
    read_only: bool,
    site: &'static Location<'static>,
    f: &mut impl FnMut(&mut Transaction<'env>) -> TxResult<R>,
    waker: &Waker,
) -> Result<R, wait::Registration> {
    let mut result = None;
    let body = &mut |tx: &mut Transaction<'env>| match f(tx) {
        Ok(value) => {
            result = Some(value);
            Attempted::Value
        }
        Err(a) => Attempted::Aborted(a.cause()),
    };
    let suspended = run_attempts(options, read_only, site, body, Some(waker));
    // A suspension first: `result` may hold the value of an earlier attempt
    // whose commit failed, which must never be handed out. Without one, the
    // loop ended by a commit, and the committing attempt set `result` last.
    match (suspended, result) {
        (Some(registration), _) => Err(registration),
        (None, Some(value)) => Ok(value),
        (None, None) => unreachable!("a transaction ended without a result"),
    }
}

/// What an attempt's closure returned (its value, if any, is parked by the
/// wrapper in `run_with`).
#[derive(Clone, Copy)]
enum Attempted {
    Value,
    UserError,
    Aborted(AbortCause),
}

/// The retry loop, for a closure whose outcome is reported as [`Attempted`].
/// Inlined into each `atomically` call, so the program's closure is inlined
/// into it in turn. With a `waker` (async transactions), an attempt that
/// calls `retry` suspends the loop instead of blocking: it returns the
/// waker's registration.
#[inline(always)]
fn run_attempts<'env>(
    options: Option<&TxOptions>,
    read_only: bool,
    site: &'static Location<'static>,
    body: &mut impl FnMut(&mut Transaction<'env>) -> Attempted,
    waker: Option<&Waker>,
) -> Option<wait::Registration> {
    let ctx = ThreadContext::current();
    let active = ctx.enter(options, read_only, site);
    loop {
        // SAFETY: `active` guarantees these are the only live references to
        // the thread's state and call state; handlers run only after it is
        // released (abort handlers inside `after_abort`, which saves the
        // call state around them).
        let (st, call) = unsafe { (&mut *ctx.state.get(), &mut *ctx.call.get()) };
        st.set_tracking(call.mode.tracking);
        match &call.retrying {
            None => st.begin(
                call.mode.opacity,
                call.mode.irrevocable,
                call.mode.irrevocable,
                false,
                call.mode.snapshot,
            ),
            // (Further snapshot attempts follow only one that met a newer
            // version: a wrong hint costs one attempt.)
            Some(r) => st.begin(
                call.mode.opacity,
                r.irrevocable,
                call.mode.irrevocable,
                r.cm.holds_hourglass,
                r.snapshot,
            ),
        }
        let tx = Transaction::from_state(st);
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| body(tx)));
        let cause = match outcome {
            Ok(Attempted::Value) => match commit_attempt(st, call) {
                Ok(()) => break,
                Err(cause) => cause,
            },
            Ok(Attempted::UserError) => match end_with_error(st, call) {
                Ok(()) => break,
                Err(cause) => cause,
            },
            Ok(Attempted::Aborted(cause)) => cause,
            Err(payload) => panicked(ctx, st, call, payload),
        };
        if let Some(registration) = after_abort(ctx, cause, options, waker) {
            // An async transaction waits for a change: leave it; the next
            // poll starts afresh.
            active.leave();
            return Some(registration);
        }
    }
    active.leave();
    None
}

/// Commits an attempt whose closure returned a value and records it.
#[inline(always)]
fn commit_attempt(st: &mut TxState, call: &mut CallState) -> Result<(), AbortCause> {
    // A priority policy's writers defer to a higher published priority
    // before locking (read-only transactions never wait).
    if call.mode.priority && st.mutated {
        ContentionManager::defer_to_priority(call.retrying.as_deref().map(|r| &r.cm));
    }
    let done = st.commit()?;
    if let Some(rec) = call.recorder() {
        rec.stats()
            .record_commit(done.reads, done.writes, st.item_count());
        rec.site().commit();
    }
    // Irrevocability is among the attempt's rare extras: one test each for
    // the two ways a commit may need more than `finish`.
    if call.retrying.is_some() || st.rare {
        finish_unusual_commit(st, call);
    } else {
        st.finish(true);
    }
    Ok(())
}

/// Finishes a commit that came after aborts or used the attempt's rare
/// extras: the extra statistics of one that retried or ran irrevocably, and
/// the precedence its contention manager may hold.
#[cold]
#[inline(never)]
fn finish_unusual_commit(st: &mut TxState, call: &mut CallState) {
    if call.retrying.is_some() || st.irrevocable.is_some() {
        if let Some(rec) = call.recorder() {
            let consecutive = call.retrying.as_deref().map_or(0, |r| r.cm.consecutive);
            let why = st.irrevocable.is_some().then(|| {
                if call.mode.irrevocable {
                    Serialization::Started
                } else if call.retrying.as_deref().is_some_and(|r| r.serialized) {
                    Serialization::AfterAborts
                } else {
                    Serialization::Switched
                }
            });
            rec.stats().record_hard_commit(consecutive, why);
            if let Some(why) = why {
                rec.site().irrevocable(why);
            }
        }
    }
    st.finish(true);
    end_retrying(call);
}

/// Everything after an aborted attempt: blocking `retry`, abort handlers,
/// statistics, waiting out an irrevocable transaction, contention
/// management and serialization after too many aborts. With a `waker`, a
/// `retry` whose reads are still current registers it instead of blocking
/// and the registration is returned: the caller suspends.
#[cold]
#[inline(never)]
fn after_abort(
    ctx: &ThreadContext,
    cause: AbortCause,
    options: Option<&TxOptions>,
    waker: Option<&Waker>,
) -> Option<wait::Registration> {
    // SAFETY: as in `run_attempts`: the caller holds the thread's
    // `ActiveGuard` and no other reference to the state is live.
    let (st, call) = unsafe { (&mut *ctx.state.get(), &mut *ctx.call.get()) };
    let record = call.recorder();
    let requested = call.mode.irrevocable;
    let r = call.retrying_or(|| Retrying {
        options: options.copied().unwrap_or_else(|| ctx.default_options()),
        cm: ContentionManager::default(),
        irrevocable: requested,
        serialized: false,
        snapshot: Snapshot::Off,
    });
    r.snapshot = st.next_snapshot(cause, r.cm.consecutive);
    let items = st.item_count();
    // A snapshot attempt logged no reads to wait on: its rerun, an ordinary
    // attempt, reaches the `retry` again and waits then.
    let mut suspended = None;
    if cause == AbortCause::Retry && !st.snapshot {
        match waker {
            None => blocking::wait_for_change(st, r, record),
            Some(waker) => suspended = blocking::register_for_change(st, r, record, waker),
        }
    }
    if st.wants_irrevocable {
        r.irrevocable = true;
    }
    // Its conflicts were with recent commits: retry from a fresh snapshot.
    st.stale_start = true;
    st.finish(false);
    if let Some(handlers) = st.take_ready_handlers() {
        // Abort handlers may run transactions of their own, which use this
        // thread's call state: keep ours aside meanwhile.
        let saved = std::mem::replace(call, CallState::new());
        ctx.active.set(false);
        run_handlers(handlers);
        ctx.active.set(true);
        // SAFETY: the handlers are done; nothing else references the state.
        let call = unsafe { &mut *ctx.call.get() };
        *call = saved;
    }
    // SAFETY: as above (re-borrowed after the handlers ran).
    let call = unsafe { &mut *ctx.call.get() };
    let r = call.retrying.as_deref_mut().expect("created above");
    if let Some(rec) = record {
        rec.stats().aborts[cause.index()].add(1);
        rec.site().abort(cause);
    }
    if suspended.is_some() {
        // The task waits for a commit: no backoff, no serialization, and
        // its next poll is a new call (contention state included).
        end_retrying(call);
        return suspended;
    }
    if cause == AbortCause::Irrevocable {
        clock::wait_irrevocable_open();
    }
    if r.cm.consecutive == 0 {
        r.cm.reset(ctx.next_seed());
    }
    r.cm.after_abort(&r.options.contention, cause, items);
    if let Some(n) = r.options.serialize_after {
        if !r.irrevocable && r.cm.consecutive >= n {
            r.irrevocable = true;
            if let Some(rec) = record.filter(|_| !r.serialized) {
                rec.stats().serialized.add(1);
                rec.site().serialized();
            }
            r.serialized = true;
        }
    }
    None
}
