//! `atomically`: run a closure as a transaction until it commits.

use std::cell::{Cell, OnceCell, UnsafeCell};
use std::panic::{self, AssertUnwindSafe, Location};
use std::sync::Arc;

use crossbeam_utils::CachePadded;

use super::{Transaction, TxState};
use crate::clock::{self, IRREVOCABLE};
use crate::contention::Contention;
use crate::error::{AbortCause, TxError, TxResult};
use crate::options::{self, Opacity, TxOptions};
use crate::stats::{self, SiteCounters, SiteTable, ThreadStats};
use crate::wait;

/// Everything a thread keeps between transactions. Built in a `const`
/// context so that reaching it costs one thread-local access and no lazy
/// initialization check; what needs allocation is created on first use.
struct ThreadContext {
    state: UnsafeCell<TxState>,
    active: Cell<bool>,
    /// Registered with the statistics on the first counted transaction.
    counters: OnceCell<Counters>,
    /// This thread's copy of the runtime-wide defaults, the mode bits taken
    /// from them, and the generation they were copied at.
    defaults: Cell<TxOptions>,
    default_mode: Cell<Mode>,
    defaults_generation: Cell<u64>,
    /// Seeds the contention manager's random backoff (see `next_seed`).
    seed: Cell<u64>,
}

/// This thread's statistics counters and per-call-site table.
struct Counters {
    stats: Arc<CachePadded<ThreadStats>>,
    sites: Arc<SiteTable>,
    /// The last call site and its row in `sites` (most loops call one site).
    last_site: Cell<(*const Location<'static>, *const SiteCounters)>,
}

/// Where one `atomically` call records its outcomes: the thread's counters
/// and its call site's row.
#[derive(Clone, Copy)]
struct Recorder<'a> {
    stats: &'a ThreadStats,
    site: &'a SiteCounters,
}

impl ThreadContext {
    const fn new() -> Self {
        ThreadContext {
            state: UnsafeCell::new(TxState::new()),
            active: Cell::new(false),
            counters: OnceCell::new(),
            defaults: Cell::new(TxOptions::BUILT_IN),
            default_mode: Cell::new(Mode {
                opacity: TxOptions::BUILT_IN.opacity,
                irrevocable: TxOptions::BUILT_IN.irrevocable,
                priority: false,
            }),
            // A generation no real one equals: the first use fetches them.
            defaults_generation: Cell::new(u64::MAX),
            seed: Cell::new(0),
        }
    }

    /// The mode bits of the runtime-wide defaults, refreshed if the defaults
    /// changed since last use.
    #[inline]
    fn default_mode(&self) -> Mode {
        if self.defaults_generation.get() != options::defaults_generation() {
            self.refresh_defaults();
        }
        self.default_mode.get()
    }

    /// The runtime-wide defaults (as of the last [`default_mode`](Self::default_mode)).
    fn default_options(&self) -> TxOptions {
        self.defaults.get()
    }

    #[cold]
    fn refresh_defaults(&self) {
        // Read the generation first: a change racing with this refresh
        // bumps it again, so the next call refreshes once more.
        let generation = options::defaults_generation();
        let fresh = TxOptions::current_defaults();
        self.defaults.set(fresh);
        self.default_mode.set(Mode::of(&fresh));
        self.defaults_generation.set(generation);
    }

    /// This thread's context. Fetched by a small inlined accessor (rather
    /// than running the whole transaction inside `LocalKey::with`) so that
    /// the thread-local lookup compiles to a direct TLS access.
    #[inline(always)]
    fn current<'a>() -> &'a ThreadContext {
        let ctx: *const ThreadContext = CONTEXT.with(|c| c as *const ThreadContext);
        // SAFETY: a thread-local lives until its thread exits, and the
        // reference is only used by the caller, on this thread, during the
        // call (`run_with` does not return it or store it anywhere).
        unsafe { &*ctx }
    }

    /// This thread's statistics counters, or `None` while statistics are off.
    #[inline]
    fn counters(&self) -> Option<&Counters> {
        if !stats::enabled() {
            return None;
        }
        Some(self.counters.get_or_init(|| Counters {
            stats: stats::register_thread(),
            sites: SiteTable::register(),
            last_site: Cell::new((std::ptr::null(), std::ptr::null())),
        }))
    }

    /// A fresh seed for a contention manager: a Weyl sequence started from
    /// this context's address, so that threads draw different backoffs.
    fn next_seed(&self) -> u64 {
        const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut seed = self.seed.get();
        if seed == 0 {
            seed = (self as *const Self as u64).wrapping_mul(GOLDEN) | 1;
        }
        seed = seed.wrapping_add(GOLDEN);
        self.seed.set(seed);
        seed
    }
}

impl Counters {
    /// The recorder for a call at `site`.
    #[inline]
    fn recorder(&self, site: &'static Location<'static>) -> Recorder<'_> {
        let (last, row) = self.last_site.get();
        let row = if std::ptr::eq(last, site) {
            row
        } else {
            let row: *const SiteCounters = self.sites.row(site);
            self.last_site.set((site, row));
            row
        };
        Recorder {
            stats: &self.stats,
            // SAFETY: `row` points into `self.sites`, which this `Counters`
            // keeps alive (rows never move: the table is a fixed array).
            site: unsafe { &*row },
        }
    }
}

impl Drop for ThreadContext {
    fn drop(&mut self) {
        if let Some(c) = self.counters.get() {
            stats::retire_thread(&c.stats);
        }
    }
}

#[cfg(not(txmem_loom))]
std::thread_local! {
    static CONTEXT: ThreadContext = const { ThreadContext::new() };
}
#[cfg(txmem_loom)]
loom::thread_local! {
    static CONTEXT: ThreadContext = ThreadContext::new();
}

/// True while a transaction runs on this thread (its closure or its commit;
/// not its handlers).
pub(crate) fn in_transaction() -> bool {
    ThreadContext::current().active.get()
}

/// Clears the "a transaction runs on this thread" flag when the run loop
/// exits. Normal exits have already finished the attempt and call
/// [`release`](Self::release); only an unwind (a panic escaping a handler
/// or the runtime itself) reaches `Drop`, which also discards the attempt.
struct ActiveGuard<'a>(&'a ThreadContext);

impl ActiveGuard<'_> {
    #[inline]
    fn release(self) {
        self.0.active.set(false);
        std::mem::forget(self);
    }
}

impl Drop for ActiveGuard<'_> {
    #[cold]
    fn drop(&mut self) {
        // SAFETY: the run loop holds no reference into the state when this
        // guard drops (it is declared before any such borrow and the loop's
        // borrows end at each iteration).
        let st = unsafe { &mut *self.0.state.get() };
        if !st.items.is_empty() || st.irrevocable.is_some() {
            drop(st.finish(false));
        }
        self.0.active.set(false);
    }
}

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
pub fn atomically<'env, R>(mut f: impl FnMut(&mut Transaction<'env>) -> TxResult<R>) -> R {
    let result: Result<R, std::convert::Infallible> =
        run_with(None, Location::caller(), |tx| f(tx).map_err(TxError::Abort));
    match result {
        Ok(v) => v,
        Err(never) => match never {},
    }
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
    run_with(None, Location::caller(), f)
}

impl TxOptions {
    /// Runs `f` as a transaction with these options (see [`atomically`]).
    #[track_caller]
    pub fn run<'env, R>(&self, mut f: impl FnMut(&mut Transaction<'env>) -> TxResult<R>) -> R {
        let r: Result<R, std::convert::Infallible> =
            run_with(Some(self), Location::caller(), |tx| {
                f(tx).map_err(TxError::Abort)
            });
        match r {
            Ok(v) => v,
            Err(never) => match never {},
        }
    }

    /// Runs `f` as a transaction with these options (see [`try_atomically`]).
    #[track_caller]
    pub fn try_run<'env, R, E>(
        &self,
        f: impl FnMut(&mut Transaction<'env>) -> Result<R, TxError<E>>,
    ) -> Result<R, E> {
        run_with(Some(self), Location::caller(), f)
    }
}

/// The few option bits the attempt path itself needs (the rest are read only
/// after an abort), small enough to copy on every call.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mode {
    opacity: Opacity,
    irrevocable: bool,
    /// The contention policy orders writers by priority before they lock.
    priority: bool,
}

impl Mode {
    fn of(options: &TxOptions) -> Mode {
        Mode {
            opacity: options.opacity,
            irrevocable: options.irrevocable,
            priority: options.contention.uses_priority(),
        }
    }
}

/// What a transaction keeps across attempts once one of them aborted (the
/// first attempt needs none of it).
struct Retrying {
    options: TxOptions,
    cm: Contention,
    /// Run the next attempt irrevocably.
    irrevocable: bool,
    /// Counted as serialized already.
    serialized: bool,
}

/// The retry loop shared by every entry point.
///
/// `options` are the transaction's options, or `None` for the runtime-wide
/// defaults (cached per thread and refreshed when they change).
///
/// The attempt path is kept lean (an attempt that commits touches no
/// contention or retry state); everything that happens after an abort is in
/// [`after_abort`], out of line.
pub(crate) fn run_with<'env, R, E>(
    options: Option<&TxOptions>,
    site: &'static Location<'static>,
    mut f: impl FnMut(&mut Transaction<'env>) -> Result<R, TxError<E>>,
) -> Result<R, E> {
    let ctx = ThreadContext::current();
    if ctx.active.replace(true) {
        nested_transaction();
    }
    let active = ActiveGuard(ctx);
    let mode = match options {
        Some(o) => Mode::of(o),
        None => ctx.default_mode(),
    };
    let record = ctx.counters().map(|c| c.recorder(site));
    let mut retrying: Option<Retrying> = None;
    loop {
        match attempt(ctx, &mut f, mode, record, &mut retrying) {
            Ok(done) => return active.finish(done),
            Err(cause) => after_abort(ctx, cause, options, mode, record, &mut retrying),
        }
    }
}

/// How a transaction ended without another attempt: its result (committed,
/// or the program's own error) and the handlers to run now.
struct Done<R, E> {
    result: Result<R, E>,
    handlers: Option<Vec<Box<dyn FnOnce()>>>,
}

impl ActiveGuard<'_> {
    /// Leaves the transaction and runs its handlers.
    #[inline]
    fn finish<R, E>(self, done: Done<R, E>) -> Result<R, E> {
        self.release();
        run_handlers(done.handlers);
        done.result
    }
}

/// Runs one attempt: the closure, then the commit or the abort. `Err` is the
/// cause of an abort; the caller runs [`after_abort`] and tries again.
#[inline(always)]
fn attempt<'env, R, E>(
    ctx: &ThreadContext,
    f: &mut impl FnMut(&mut Transaction<'env>) -> Result<R, TxError<E>>,
    mode: Mode,
    record: Option<Recorder<'_>>,
    retrying: &mut Option<Retrying>,
) -> Result<Done<R, E>, AbortCause> {
    // SAFETY: the caller holds the thread's `ActiveGuard`, so this is the only
    // live reference to the thread's state; handlers run only after the
    // attempt is over.
    let st = unsafe { &mut *ctx.state.get() };
    match retrying {
        None => st.begin(mode.opacity, mode.irrevocable, mode.irrevocable, false),
        Some(r) => st.begin(
            mode.opacity,
            r.irrevocable,
            mode.irrevocable,
            r.cm.holds_hourglass,
        ),
    }
    let tx = Transaction::from_state(st);
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| f(tx)));
    match outcome {
        Ok(Ok(value)) => {
            // A priority policy's writers defer to a higher published
            // priority before locking (read-only transactions never wait).
            if mode.priority && st.mutated {
                Contention::defer_to_priority(retrying.as_ref().map(|r| &r.cm));
            }
            let done = st.commit()?;
            if let Some(rec) = record {
                rec.stats
                    .record_commit(done.reads, done.writes, st.item_count());
                rec.site.commit();
                if retrying.is_some() || st.irrevocable.is_some() {
                    let consecutive = retrying.as_ref().map_or(0, |r| r.cm.consecutive);
                    rec.stats
                        .record_hard_commit(consecutive, st.irrevocable.is_some());
                }
            }
            let handlers = st.finish(true);
            if let Some(r) = retrying {
                r.cm.finish();
            }
            Ok(Done {
                result: Ok(value),
                handlers,
            })
        }
        // Without opacity the error may come from an inconsistent view: only
        // a validated attempt may return it.
        Ok(Err(TxError::User(_))) if st.opacity == Opacity::None && !st.validate_reads() => {
            Err(AbortCause::Validation)
        }
        Ok(Err(TxError::User(e))) => Ok(Done {
            result: Err(e),
            handlers: end_without_commit(st, retrying),
        }),
        Ok(Err(TxError::Abort(a))) => Err(a.cause()),
        Err(payload) => {
            if st.irrevocable.is_some() || st.validate_reads() {
                // A valid transaction panicked: abort it (the `ActiveGuard`
                // leaves the transaction as the panic unwinds) and propagate.
                let handlers = end_without_commit(st, retrying);
                ctx.active.set(false);
                run_handlers(handlers);
                panic::resume_unwind(payload);
            }
            Err(AbortCause::Panic)
        }
    }
}

#[cold]
#[inline(never)]
fn nested_transaction() -> ! {
    panic!(
        "txmem: transactions do not nest; pass the `&mut Transaction` to the inner code instead \
         of calling `atomically` again"
    )
}

/// Ends a transaction that returns without committing (a user error, or a
/// panic that propagates): its attempt is aborted; returns its abort handlers.
#[cold]
fn end_without_commit(
    st: &mut TxState,
    retrying: &mut Option<Retrying>,
) -> Option<Vec<Box<dyn FnOnce()>>> {
    let handlers = st.finish(false);
    if let Some(r) = retrying {
        r.cm.finish();
    }
    handlers
}

/// Everything after an aborted attempt: blocking `retry`, abort handlers,
/// statistics, waiting out an irrevocable transaction, contention
/// management and serialization after too many aborts.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn after_abort(
    ctx: &ThreadContext,
    cause: AbortCause,
    options: Option<&TxOptions>,
    mode: Mode,
    record: Option<Recorder<'_>>,
    retrying: &mut Option<Retrying>,
) {
    // SAFETY: as in `attempt`: the caller holds the thread's `ActiveGuard`
    // and no other reference to the state is live.
    let st = unsafe { &mut *ctx.state.get() };
    let r = retrying.get_or_insert_with(|| Retrying {
        options: options.copied().unwrap_or_else(|| ctx.default_options()),
        cm: Contention::default(),
        irrevocable: mode.irrevocable,
        serialized: false,
    });
    let items = st.item_count();
    if cause == AbortCause::Retry {
        assert!(
            !(st.user_irrevocable && st.irrevocable.is_some()),
            "txmem: retry() in an irrevocable transaction would block every writer forever"
        );
        // A transaction the runtime serialized may wait like any other: it
        // gives up irrevocability before sleeping and starts counting
        // aborts afresh.
        if st.irrevocable.is_some() {
            st.release_irrevocability();
            r.irrevocable = false;
            r.cm.consecutive = 0;
        }
        if let Some(rec) = record {
            rec.stats.blocking_waits.add(1);
        }
        // Never sleep holding precedence (the hourglass would stop every
        // other transaction from beginning, including the one this waiter
        // needs).
        r.cm.finish();
        let objects = st
            .items
            .iter()
            .filter(|it| it.is_read())
            .map(|it| it.object_addr())
            .collect();
        let st_ref: &TxState = st;
        wait::block_until_changed(objects, || st_ref.validate_reads());
    }
    if st.wants_irrevocable {
        r.irrevocable = true;
    }
    let handlers = st.finish(false);
    if handlers.is_some() {
        // Abort handlers may run transactions of their own.
        ctx.active.set(false);
        run_handlers(handlers);
        ctx.active.set(true);
    }
    if let Some(rec) = record {
        rec.stats.aborts[cause.index()].add(1);
        rec.site.abort(cause);
    }
    if cause == AbortCause::Irrevocable {
        clock::wait_open(IRREVOCABLE);
    }
    if r.cm.consecutive == 0 {
        r.cm.reset(ctx.next_seed());
    }
    r.cm.after_abort(&r.options.contention, cause, items);
    if let Some(n) = r.options.serialize_after {
        if !r.irrevocable && r.cm.consecutive >= n {
            r.irrevocable = true;
            if let Some(rec) = record.filter(|_| !r.serialized) {
                rec.stats.serialized.add(1);
                rec.site.serialized();
            }
            r.serialized = true;
        }
    }
}

#[inline]
fn run_handlers(handlers: Option<Vec<Box<dyn FnOnce()>>>) {
    if let Some(handlers) = handlers {
        handlers.into_iter().for_each(|h| h());
    }
}
