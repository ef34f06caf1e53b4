//! What a thread keeps for its transactions: its [`TxState`], the state of
//! the running `atomically` call, its statistics handles and its copy of
//! the runtime-wide defaults, all in one thread-local; and the guard that
//! marks the thread as inside a transaction.

use std::cell::{Cell, OnceCell, UnsafeCell};
use std::panic::Location;
use std::sync::Arc;

use crossbeam_utils::CachePadded;

use super::attempt::Snapshot;
use super::handlers::run_handlers;
use super::state::{Tracking, TxState};
use crate::contention::ContentionManager;
use crate::options::{self, Opacity, TxOptions};
use crate::stats::{self, SiteCounters, SiteTable, ThreadStats};

/// Everything a thread keeps between transactions. Built in a `const`
/// context so that reaching it costs one thread-local access and no lazy
/// initialization check; what needs allocation is created on first use.
pub(super) struct ThreadContext {
    pub(super) state: UnsafeCell<TxState>,
    pub(super) call: UnsafeCell<CallState>,
    pub(super) active: Cell<bool>,
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
    /// The last call site and its row in `sites`: most loops call one.
    last_site: Cell<(*const Location<'static>, *const SiteCounters)>,
    /// Recent call sites and their rows, direct-mapped by the site's
    /// address, for a loop that calls a few in turn (a producer and a
    /// consumer, a transfer and an audit).
    recent_sites: [Cell<(*const Location<'static>, *const SiteCounters)>; RECENT_SITES],
}

/// The size of a thread's cache of recent call sites (a power of two).
const RECENT_SITES: usize = 4;

/// Where one `atomically` call records its outcomes: the thread's counters
/// and its call site's row. Both point into the thread context's
/// `Counters`, which are never dropped before the thread exits, and are used
/// only by that thread.
#[derive(Clone, Copy)]
pub(super) struct Recorder {
    stats: *const ThreadStats,
    site: *const SiteCounters,
}

impl Recorder {
    #[inline(always)]
    pub(super) fn stats(&self) -> &ThreadStats {
        // SAFETY: see the type's documentation.
        unsafe { &*self.stats }
    }

    #[inline(always)]
    pub(super) fn site(&self) -> &SiteCounters {
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
    pub(super) fn default_options(&self) -> TxOptions {
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
    pub(super) fn current<'a>() -> &'a ThreadContext {
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
            recent_sites: Default::default(),
        }))
    }

    /// A fresh seed for a contention manager: a Weyl sequence started from
    /// this context's address, so that threads draw different backoffs.
    pub(super) fn next_seed(&self) -> u64 {
        const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut seed = self.seed.get();
        if seed == 0 {
            seed = (self as *const Self as u64).wrapping_mul(GOLDEN) | 1;
        }
        seed = seed.wrapping_add(GOLDEN);
        self.seed.set(seed);
        seed
    }

    /// Enters a transaction: marks the thread busy and sets up the call
    /// state (`read_only` adds the read-only hint to the options).
    #[inline(always)]
    pub(super) fn enter(
        &self,
        options: Option<&TxOptions>,
        read_only: bool,
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
        if read_only {
            call.mode.snapshot = Snapshot::Plain;
        }
        match self.counters() {
            Some(c) => call.record = c.recorder(site),
            None => call.record.stats = std::ptr::null(),
        }
        active
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
            self.recent_row(site)
        };
        Recorder {
            stats: &**self.stats,
            // `row` points into `self.sites`, which this `Counters` keeps
            // alive (rows never move: the table is a fixed array).
            site: row,
        }
    }

    /// The row of a call site other than the last one: from the recent
    /// sites, else from the table.
    #[inline(never)]
    fn recent_row(&self, site: &'static Location<'static>) -> *const SiteCounters {
        // (`Location`s are at least 8 bytes apart.)
        let slot = &self.recent_sites[(site as *const _ as usize >> 3) % RECENT_SITES];
        let (cached, row) = slot.get();
        let row = if std::ptr::eq(cached, site) {
            row
        } else {
            let row: *const SiteCounters = self.sites.row(site);
            slot.set((site, row));
            row
        };
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
pub(super) struct ActiveGuard<'a>(&'a ThreadContext);

impl ActiveGuard<'_> {
    #[inline]
    fn release(self) {
        self.0.active.set(false);
        std::mem::forget(self);
    }
    /// Leaves the transaction (its last attempt is over) and runs the
    /// handlers its outcome kept.
    #[inline(always)]
    pub(super) fn leave(self) {
        // SAFETY: the attempt is over and holds no reference into the state.
        let st = unsafe { &mut *self.0.state.get() };
        let handlers = st.take_ready_handlers();
        self.release();
        if let Some(handlers) = handlers {
            run_handlers(handlers);
        }
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
        if st.mutated || !st.items.is_empty() || !st.reads.is_empty() || st.irrevocable.is_some() {
            st.finish(false);
        }
        // The program is unwinding past this transaction: its abort
        // handlers are dropped, not run, and the next call starts afresh.
        drop(st.take_ready_handlers());
        end_retrying(call);
        self.0.active.set(false);
    }
}

/// The option bits an attempt needs, as cached per thread for the
/// runtime-wide defaults. Four aligned bytes, so that entering a transaction
/// copies them with one load and one store.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(4))]
pub(super) struct Mode {
    pub(super) opacity: Opacity,
    /// The options ask for an irrevocable transaction.
    pub(super) irrevocable: bool,
    /// The contention policy orders writers by priority before they lock.
    pub(super) priority: bool,
    /// How reads are tracked: [`Tracking`] bits.
    pub(super) tracking: u8,
    /// The first attempt's kind: a snapshot attempt if the transaction is
    /// declared read-only.
    pub(super) snapshot: Snapshot,
}

impl Mode {
    const fn of(options: &TxOptions) -> Mode {
        let mut tracking = 0;
        if !options.untracked_reads {
            tracking |= Tracking::NO_UNTRACKED_READS;
        }
        if !options.read_my_writes {
            tracking |= Tracking::NO_READ_MY_WRITES;
        }
        Mode {
            opacity: options.opacity,
            irrevocable: options.irrevocable,
            priority: options.contention.uses_priority(),
            tracking,
            snapshot: if options.read_only {
                Snapshot::Plain
            } else {
                Snapshot::Off
            },
        }
    }
}

/// The state of the running `atomically` call that its attempts need: the
/// mode its options ask for, where it records statistics, and (after an
/// abort) its retry state. Kept in the thread context rather than in locals,
/// so that the attempt loop carries nothing but the context across the
/// program's closure.
pub(crate) struct CallState {
    pub(super) mode: Mode,
    /// Where to record; null pointers while statistics are off.
    record: Recorder,
    /// Created at the first abort.
    pub(super) retrying: Option<Box<Retrying>>,
    /// The allocation of an ended call's `retrying`, kept for the next
    /// call that aborts (an async transaction that waits aborts once per
    /// wait).
    spare: Option<Box<Retrying>>,
}

impl CallState {
    pub(super) const fn new() -> Self {
        CallState {
            mode: Mode::of(&TxOptions::BUILT_IN),
            record: Recorder {
                stats: std::ptr::null(),
                site: std::ptr::null(),
            },
            retrying: None,
            spare: None,
        }
    }

    /// The retry state, created from `fresh` at the first abort of the call.
    #[inline]
    pub(super) fn retrying_or(&mut self, fresh: impl FnOnce() -> Retrying) -> &mut Retrying {
        let spare = &mut self.spare;
        self.retrying.get_or_insert_with(|| match spare.take() {
            Some(mut r) => {
                *r = fresh();
                r
            }
            None => Box::new(fresh()),
        })
    }

    /// Where to record, if statistics are on.
    #[inline(always)]
    pub(super) fn recorder(&self) -> Option<Recorder> {
        (!self.record.stats.is_null()).then_some(self.record)
    }
}

/// What a transaction keeps across attempts once one of them aborted (the
/// first attempt needs none of it).
pub(super) struct Retrying {
    pub(super) options: TxOptions,
    pub(super) cm: ContentionManager,
    /// Run the next attempt irrevocably.
    pub(super) irrevocable: bool,
    /// Counted as serialized already.
    pub(super) serialized: bool,
    /// What kind of snapshot attempt the next attempt is.
    pub(super) snapshot: Snapshot,
}

#[cold]
#[inline(never)]
fn nested_transaction() -> ! {
    panic!(
        "txmem: transactions do not nest; pass the `&mut Transaction` to the inner code instead \
         of calling `atomically` again"
    )
}

/// Ends the retry state of a transaction that ended after aborts: its
/// contention manager releases whatever precedence it held, and the
/// allocation is kept for the next call that aborts. Every way out of such
/// a transaction passes here, unwinding included, so the next call on this
/// thread starts with none and a first-attempt commit has nothing to reset.
pub(super) fn end_retrying(call: &mut CallState) {
    if let Some(mut r) = call.retrying.take() {
        r.cm.finish();
        call.spare = Some(r);
    }
}
