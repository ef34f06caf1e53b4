//! `atomically`: run a closure as a transaction until it commits.

use std::cell::{Cell, OnceCell, UnsafeCell};
use std::panic::{self, AssertUnwindSafe, Location};
use std::sync::Arc;

use crossbeam_utils::CachePadded;

use super::{Transaction, TxState};
use crate::clock;
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
    call: UnsafeCell<CallState>,
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
/// and its call site's row. Both point into the thread context's
/// `Counters`, which are never dropped before the thread exits, and are used
/// only by that thread.
#[derive(Clone, Copy)]
struct Recorder {
    stats: *const ThreadStats,
    site: *const SiteCounters,
}

impl Recorder {
    #[inline(always)]
    fn stats(&self) -> &ThreadStats {
        // SAFETY: see the type's documentation.
        unsafe { &*self.stats }
    }

    #[inline(always)]
    fn site(&self) -> &SiteCounters {
        // SAFETY: see the type's documentation.
        unsafe { &*self.site }
    }
}

impl ThreadContext {
    const fn new() -> Self {
        ThreadContext {
            state: UnsafeCell::new(TxState::new()),
            call: UnsafeCell::new(CallState::new()),
            active: Cell::new(false),
            counters: OnceCell::new(),
            defaults: Cell::new(TxOptions::BUILT_IN),
            default_mode: Cell::new(Mode::of(&TxOptions::BUILT_IN)),
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
    fn recorder(&self, site: &'static Location<'static>) -> Recorder {
        let (last, row) = self.last_site.get();
        let row = if std::ptr::eq(last, site) {
            row
        } else {
            let row: *const SiteCounters = self.sites.row(site);
            self.last_site.set((site, row));
            row
        };
        Recorder {
            stats: &**self.stats,
            // `row` points into `self.sites`, which this `Counters` keeps
            // alive (rows never move: the table is a fixed array).
            site: row,
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
        // SAFETY: no reference into the state or the call state is live when
        // this guard drops: it is declared before any such borrow, the run
        // loop's borrows end at each iteration, and `after_abort` holds none
        // while it runs handlers (whose panics may unwind through here).
        let (st, call) = unsafe { (&mut *self.0.state.get(), &mut *self.0.call.get()) };
        if !st.items.is_empty() || st.irrevocable.is_some() {
            st.finish(false);
        }
        // The program is unwinding past this transaction: its abort
        // handlers are dropped, not run, and the next call starts afresh.
        drop(st.take_ready_handlers());
        end_retrying(call);
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

/// The option bits an attempt needs, as cached per thread for the
/// runtime-wide defaults. Four aligned bytes, so that entering a transaction
/// copies them with one load and one store.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(4))]
struct Mode {
    opacity: Opacity,
    /// The options ask for an irrevocable transaction.
    irrevocable: bool,
    /// The contention policy orders writers by priority before they lock.
    priority: bool,
}

impl Mode {
    const fn of(options: &TxOptions) -> Mode {
        Mode {
            opacity: options.opacity,
            irrevocable: options.irrevocable,
            priority: options.contention.uses_priority(),
        }
    }
}

/// The state of the running `atomically` call that its attempts need: the
/// mode its options ask for, where it records statistics, and (after an
/// abort) its retry state. Kept in the thread context rather than in locals,
/// so that the attempt loop carries nothing but the context across the
/// program's closure.
pub(crate) struct CallState {
    mode: Mode,
    /// Where to record; null pointers while statistics are off.
    record: Recorder,
    /// Created at the first abort.
    retrying: Option<Box<Retrying>>,
}

impl CallState {
    const fn new() -> Self {
        CallState {
            mode: Mode::of(&TxOptions::BUILT_IN),
            record: Recorder {
                stats: std::ptr::null(),
                site: std::ptr::null(),
            },
            retrying: None,
        }
    }

    /// Where to record, if statistics are on.
    #[inline(always)]
    fn recorder(&self) -> Option<Recorder> {
        (!self.record.stats.is_null()).then_some(self.record)
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
/// The program's closure is wrapped to report its outcome as a small
/// [`Attempted`] and park its value, so the loop ([`run_attempts`]) does not
/// carry the result type around; everything after an abort is out of line
/// ([`after_abort`]).
pub(crate) fn run_with<'env, R, E>(
    options: Option<&TxOptions>,
    site: &'static Location<'static>,
    mut f: impl FnMut(&mut Transaction<'env>) -> Result<R, TxError<E>>,
) -> Result<R, E> {
    let mut result: Option<Result<R, E>> = None;
    run_attempts(
        options,
        site,
        &mut |tx: &mut Transaction<'env>| match f(tx) {
            Ok(value) => {
                result = Some(Ok(value));
                Attempted::Value
            }
            Err(TxError::User(e)) => {
                result = Some(Err(e));
                Attempted::UserError
            }
            Err(TxError::Abort(a)) => Attempted::Aborted(a.cause()),
        },
    );
    match result {
        Some(r) => r,
        None => unreachable!("a transaction ended without a result"),
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
/// into it in turn.
#[inline(always)]
fn run_attempts<'env>(
    options: Option<&TxOptions>,
    site: &'static Location<'static>,
    body: &mut impl FnMut(&mut Transaction<'env>) -> Attempted,
) {
    let ctx = ThreadContext::current();
    let active = ctx.enter(options, site);
    loop {
        // SAFETY: `active` guarantees these are the only live references to
        // the thread's state and call state; handlers run only after it is
        // released (abort handlers inside `after_abort`, which saves the
        // call state around them).
        let (st, call) = unsafe { (&mut *ctx.state.get(), &mut *ctx.call.get()) };
        match &call.retrying {
            None => st.begin(
                call.mode.opacity,
                call.mode.irrevocable,
                call.mode.irrevocable,
                false,
            ),
            Some(r) => st.begin(
                call.mode.opacity,
                r.irrevocable,
                call.mode.irrevocable,
                r.cm.holds_hourglass,
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
        after_abort(ctx, cause, options);
    }
    active.leave();
}

impl ThreadContext {
    /// Enters a transaction: marks the thread busy and sets up the call state.
    #[inline(always)]
    fn enter(
        &self,
        options: Option<&TxOptions>,
        site: &'static Location<'static>,
    ) -> ActiveGuard<'_> {
        if self.active.replace(true) {
            nested_transaction();
        }
        let active = ActiveGuard(self);
        // SAFETY: the thread is now active; nothing else references the call
        // state.
        let call = unsafe { &mut *self.call.get() };
        call.mode = match options {
            Some(o) => Mode::of(o),
            None => self.default_mode(),
        };
        match self.counters() {
            Some(c) => call.record = c.recorder(site),
            None => call.record.stats = std::ptr::null(),
        }
        active
    }
}

impl ActiveGuard<'_> {
    /// Leaves the transaction (its last attempt is over) and runs the
    /// handlers its outcome kept.
    #[inline(always)]
    fn leave(self) {
        // SAFETY: the attempt is over and holds no reference into the state.
        let st = unsafe { &mut *self.0.state.get() };
        let handlers = st.take_ready_handlers();
        self.release();
        if let Some(handlers) = handlers {
            run_handlers(handlers);
        }
    }
}

/// Commits an attempt whose closure returned a value and records it.
#[inline(always)]
fn commit_attempt(st: &mut TxState, call: &mut CallState) -> Result<(), AbortCause> {
    // A priority policy's writers defer to a higher published priority
    // before locking (read-only transactions never wait).
    if call.mode.priority && st.mutated {
        Contention::defer_to_priority(call.retrying.as_deref().map(|r| &r.cm));
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
            rec.stats()
                .record_hard_commit(consecutive, st.irrevocable.is_some());
        }
    }
    st.finish(true);
    end_retrying(call);
}

/// The closure returned the program's own error: the transaction ends
/// without committing (its abort handlers run), unless the attempt may have
/// seen an inconsistent state, in which case it aborts and retries.
#[cold]
#[inline(never)]
fn end_with_error(st: &mut TxState, call: &mut CallState) -> Result<(), AbortCause> {
    // Without opacity the error may come from an inconsistent view: only a
    // validated attempt may return it.
    if st.opacity == Opacity::None && !st.view_holds() {
        return Err(AbortCause::Validation);
    }
    end_without_commit(st, call);
    Ok(())
}

/// The closure panicked. A doomed attempt (its reads no longer valid) is an
/// abort; a valid one is aborted and the panic propagates.
#[cold]
#[inline(never)]
fn panicked(
    ctx: &ThreadContext,
    st: &mut TxState,
    call: &mut CallState,
    payload: Box<dyn std::any::Any + Send>,
) -> AbortCause {
    if !st.view_holds() {
        return AbortCause::Panic;
    }
    end_without_commit(st, call);
    // Leave the transaction before the abort handlers run (the run loop's
    // `ActiveGuard` clears the flag again as the panic unwinds).
    let handlers = st.take_ready_handlers();
    ctx.active.set(false);
    if let Some(handlers) = handlers {
        run_handlers(handlers);
    }
    panic::resume_unwind(payload);
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
/// panic that propagates): its attempt is aborted and its abort handlers
/// are kept to run.
fn end_without_commit(st: &mut TxState, call: &mut CallState) {
    st.finish(false);
    end_retrying(call);
}

/// Drops the retry state of a transaction that ended after aborts (its
/// contention manager releases whatever precedence it held as it drops).
/// Every way out of such a transaction passes here, unwinding included, so
/// the next call on this thread starts with none and a first-attempt commit
/// has nothing to reset.
fn end_retrying(call: &mut CallState) {
    call.retrying = None;
}

/// Everything after an aborted attempt: blocking `retry`, abort handlers,
/// statistics, waiting out an irrevocable transaction, contention
/// management and serialization after too many aborts.
#[cold]
#[inline(never)]
fn after_abort(ctx: &ThreadContext, cause: AbortCause, options: Option<&TxOptions>) {
    // SAFETY: as in `run_attempts`: the caller holds the thread's
    // `ActiveGuard` and no other reference to the state is live.
    let (st, call) = unsafe { (&mut *ctx.state.get(), &mut *ctx.call.get()) };
    let record = call.recorder();
    let requested = call.mode.irrevocable;
    let r = call.retrying.get_or_insert_with(|| {
        Box::new(Retrying {
            options: options.copied().unwrap_or_else(|| ctx.default_options()),
            cm: Contention::default(),
            irrevocable: requested,
            serialized: false,
        })
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
            rec.stats().blocking_waits.add(1);
        }
        // Never sleep holding precedence (the hourglass would stop every
        // other transaction from beginning, including the one this waiter
        // needs).
        r.cm.finish();
        st.clean_up_before_wait();
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
}

fn run_handlers(handlers: Vec<Box<dyn FnOnce()>>) {
    handlers.into_iter().for_each(|h| h());
}
