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
use crate::stats::{self, SiteRow, SiteTable, ThreadStats};
use crate::wait;

/// Everything a thread keeps between transactions. Built in a `const`
/// context so that reaching it costs one thread-local access and no lazy
/// initialization check; what needs allocation is created on first use.
struct ThreadContext {
    state: UnsafeCell<TxState>,
    active: Cell<bool>,
    /// Registered with the statistics on the first counted transaction.
    counters: OnceCell<Counters>,
    /// This thread's copy of the runtime-wide defaults and their generation.
    defaults: Cell<(u64, TxOptions)>,
    /// Seeds the contention manager's random backoff (see `next_seed`).
    seed: Cell<u64>,
}

/// This thread's statistics counters and per-call-site table.
struct Counters {
    stats: Arc<CachePadded<ThreadStats>>,
    sites: Arc<SiteTable>,
    /// The last call site and its row in `sites` (most loops call one site).
    last_site: Cell<(*const Location<'static>, SiteRow)>,
}

impl ThreadContext {
    const fn new() -> Self {
        ThreadContext {
            state: UnsafeCell::new(TxState::new()),
            active: Cell::new(false),
            counters: OnceCell::new(),
            // A generation no real one equals: the first use fetches them.
            defaults: Cell::new((u64::MAX, TxOptions::BUILT_IN)),
            seed: Cell::new(0),
        }
    }

    /// The runtime-wide defaults, refreshed if they changed since last use.
    #[inline]
    fn current_defaults(&self) -> TxOptions {
        let generation = options::defaults_generation();
        let (cached_generation, cached) = self.defaults.get();
        if cached_generation == generation {
            return cached;
        }
        let fresh = TxOptions::current_defaults();
        self.defaults.set((generation, fresh));
        fresh
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

    #[inline]
    fn counters(&self) -> &Counters {
        self.counters.get_or_init(|| Counters {
            stats: stats::register_thread(),
            sites: SiteTable::register(),
            last_site: Cell::new((std::ptr::null(), SiteRow::OVERFLOW)),
        })
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
    #[inline]
    fn site_row(&self, site: &'static Location<'static>) -> SiteRow {
        let (last, row) = self.last_site.get();
        if std::ptr::eq(last, site) {
            return row;
        }
        let row = self.sites.row(site);
        self.last_site.set((site, row));
        row
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

/// The retry loop shared by every entry point.
///
/// `options` are the transaction's options, or `None` for the runtime-wide
/// defaults (cached per thread and refreshed when they change).
pub(crate) fn run_with<'env, R, E>(
    options: Option<&TxOptions>,
    site: &'static Location<'static>,
    mut f: impl FnMut(&mut Transaction<'env>) -> Result<R, TxError<E>>,
) -> Result<R, E> {
    let ctx = ThreadContext::current();
    assert!(
        !ctx.active.replace(true),
        "txmem: transactions do not nest; pass the `&mut Transaction` to the inner code instead \
         of calling `atomically` again"
    );
    let active = ActiveGuard(ctx);
    let defaults;
    let opts = match options {
        Some(o) => o,
        None => {
            defaults = ctx.current_defaults();
            &defaults
        }
    };
    let counters = stats::enabled().then(|| ctx.counters());
    let row = counters.map_or(SiteRow::OVERFLOW, |c| c.site_row(site));
    let mut cm = Contention::default();
    let mut irrevocable = opts.irrevocable;
    let mut serialized = false;

    loop {
        // SAFETY: `active` guarantees this is the only live reference to
        // the thread's state; it is not used across the closure call by
        // anything else, and handlers run only after it is released.
        let st = unsafe { &mut *ctx.state.get() };
        let now = cm.before_begin(clock::now());
        st.begin(now, opts.opacity, irrevocable, opts.irrevocable);
        let tx = Transaction::from_state(st);
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| f(tx)));

        let cause = match outcome {
            Ok(Ok(value)) => match st.commit(|| cm.before_lock(&opts.contention)) {
                Ok(done) => {
                    if let Some(c) = counters {
                        c.stats.record_commit(
                            done.reads,
                            done.writes,
                            st.item_count(),
                            cm.consecutive,
                            st.irrevocable.is_some(),
                        );
                        c.sites.commit(row);
                    }
                    let handlers = st.finish(true);
                    cm.finish();
                    active.release();
                    run_handlers(handlers);
                    return Ok(value);
                }
                Err(cause) => cause,
            },
            // Without opacity the error may come from an inconsistent
            // view: only a validated attempt may return it.
            Ok(Err(TxError::User(_))) if st.opacity == Opacity::None && !st.validate_reads() => {
                AbortCause::Validation
            }
            Ok(Err(TxError::User(e))) => {
                let handlers = st.finish(false);
                cm.finish();
                active.release();
                run_handlers(handlers);
                return Err(e);
            }
            Ok(Err(TxError::Abort(a))) => a.cause(),
            Err(payload) => {
                if st.irrevocable.is_some() || st.validate_reads() {
                    // A valid transaction panicked: abort it and propagate.
                    let handlers = st.finish(false);
                    cm.finish();
                    active.release();
                    run_handlers(handlers);
                    panic::resume_unwind(payload);
                }
                AbortCause::Panic
            }
        };

        // The attempt aborted.
        let items = st.item_count();
        if cause == AbortCause::Retry {
            assert!(
                !(st.user_irrevocable && st.irrevocable.is_some()),
                "txmem: retry() in an irrevocable transaction would block every writer forever"
            );
            // A transaction the runtime serialized may wait like any
            // other: it gives up irrevocability before sleeping and
            // starts counting aborts afresh.
            if st.irrevocable.is_some() {
                st.release_irrevocability();
                irrevocable = false;
                cm.consecutive = 0;
            }
            if let Some(c) = counters {
                c.stats.blocking_waits.add(1);
            }
            // Never sleep holding precedence (the hourglass would stop
            // every other transaction from beginning, including the one
            // this waiter needs).
            cm.finish();
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
            irrevocable = true;
        }
        let handlers = st.finish(false);
        if handlers.is_some() {
            // Abort handlers may run transactions of their own.
            ctx.active.set(false);
            run_handlers(handlers);
            ctx.active.set(true);
        }
        if let Some(c) = counters {
            c.stats.aborts[cause.index()].add(1);
            c.sites.abort(row, cause);
        }
        if cause == AbortCause::Irrevocable {
            clock::wait_open(IRREVOCABLE);
        }
        if cm.consecutive == 0 {
            cm.reset(ctx.next_seed());
        }
        cm.after_abort(&opts.contention, cause, items);
        if let Some(n) = opts.serialize_after {
            if !irrevocable && cm.consecutive >= n {
                irrevocable = true;
                if let Some(c) = counters.filter(|_| !serialized) {
                    c.stats.serialized.add(1);
                    c.sites.serialized(row);
                }
                serialized = true;
            }
        }
    }
}

#[inline]
fn run_handlers(handlers: Option<Vec<Box<dyn FnOnce()>>>) {
    if let Some(handlers) = handlers {
        handlers.into_iter().for_each(|h| h());
    }
}
