//! Hardware transactional memory behind one trait, with three backends.
//!
//! * [`Rtm`]: Intel RTM (`xbegin`/`xend`/`xabort`/`xtest`) through stable `asm!`, enabled
//!   only after run-time detection (CPUID, the `RTM_ALWAYS_ABORT` bit, then a probe of
//!   trivial transactions). On a CPU without usable RTM it reports itself unavailable and
//!   never executes a transactional instruction. This is [`DefaultHtm`] on x86-64.
//! * [`MockHtm`]: a scriptable, deterministic stand-in for tests ("abort the 3rd begin with
//!   capacity", "conflict while a predicate holds").
//! * [`NoHtm`]: every `begin` fails at once, so callers always take their fallback path.
//!
//! # What may run inside a transaction
//!
//! Between a successful [`Htm::begin`] and [`Htm::end`] nothing may rely on a side effect
//! outside memory: a system call, I/O, a sleep, a futex wake or a page fault aborts a
//! hardware transaction before it takes effect, and the section is rolled back and retried
//! (eventually under the fallback lock). This is always *safe*, because the aborted attempt
//! leaves no trace, but sections that do such things will never commit in hardware and only
//! waste time. Deferred work belongs after the section; [`crate::TxCondvar`] does this for
//! wake-ups.
//!
//! # Abort statuses
//!
//! [`AbortStatus`], [`HtmAbortCause`] and the reserved codes are `txmem-htm`'s, re-exported: the
//! same types describe the aborts of the simulator's HTM, so the policies read one vocabulary
//! whichever backend produced the abort. Their layout is RTM's, so [`Rtm`] converts `eax`
//! with one mask; [`MockHtm`] and [`NoHtm`] build statuses with the constructors.

mod mock;
mod none;
mod rtm;

pub use mock::{MockEvent, MockHtm, MockOutcome, MockScript, MockStats, MOCK_LOG_CAPACITY};
pub use none::NoHtm;
pub use rtm::{Rtm, RtmDetection, RtmVerdict};
pub use txmem_htm::{AbortStatus, Footprint, HtmAbortCause, LOCK_BUSY_CODE, REENTRY_CODE};

/// The backend the crate's lock aliases use by default: [`Rtm`] on x86-64 (which degrades to
/// "unavailable" on CPUs without usable RTM), [`NoHtm`] elsewhere.
#[cfg(target_arch = "x86_64")]
pub type DefaultHtm = Rtm;
/// The backend the crate's lock aliases use by default: [`Rtm`] on x86-64 (which degrades to
/// "unavailable" on CPUs without usable RTM), [`NoHtm`] elsewhere.
#[cfg(not(target_arch = "x86_64"))]
pub type DefaultHtm = NoHtm;

/// Optional features a backend may offer beyond begin/end/abort/test.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// [`Htm::suspend`] and [`Htm::resume`] work (POWER8 `tsuspend.`/`tresume.`).
    pub suspend_resume: bool,
    /// [`Htm::begin_rollback_only`] works (POWER8 rollback-only transactions, which track
    /// stores but not loads).
    pub rollback_only: bool,
}

impl Capabilities {
    /// No optional capability.
    pub const NONE: Capabilities = Capabilities {
        suspend_resume: false,
        rollback_only: false,
    };
}

/// Returned when a backend lacks an optional capability.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Unsupported;

impl core::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("operation not supported by this HTM backend")
    }
}

impl std::error::Error for Unsupported {}

/// A hardware-transactional-memory backend.
///
/// Backends are small (usually zero-sized) handles to per-thread transactional state; the
/// elided locks embed one by value, which is why the trait carries a `const INIT`.
///
/// # The "returns twice" model
///
/// On real hardware an abort rolls back every register and every byte of memory the
/// transaction wrote, then resumes execution at the `begin` that started it, which now
/// reports the abort status. Because *all* state is rolled back, the program cannot tell
/// this apart from `begin` having returned that status in the first place; so `begin` can
/// be an ordinary function returning `Result<(), AbortStatus>`. Backends that cannot roll
/// back (the mock) decide the outcome at `begin` instead, before the section runs.
///
/// # Safety
///
/// The elided locks trust the backend for mutual exclusion, so implementing this trait is
/// `unsafe`. An implementation must guarantee that:
///
/// 1. code running between a successful [`begin`](Htm::begin) and the matching
///    [`end`](Htm::end) appears to execute atomically and in isolation with respect to
///    other such sections of the same backend;
/// 2. a location read inside such a section is *subscribed*: if another thread writes it
///    and then calls [`fallback_acquired`](Htm::fallback_acquired), either that call waits
///    until the section has ended, or the section is aborted and rolled back without any
///    visible effect;
/// 3. [`test`](Htm::test) is true exactly while the current thread is inside such a section;
/// 4. when [`available`](Htm::available) is false, `begin` never succeeds.
pub unsafe trait Htm: Send + Sync + 'static {
    /// The backend value embedded in a statically initialized lock.
    const INIT: Self;

    /// Short name for reports ("rtm", "mock", "none").
    fn name(&self) -> &'static str;

    /// Whether transactions can run at all. Callers skip elision entirely when false; for
    /// [`Rtm`] this is one relaxed load of a cached detection result.
    fn available(&self) -> bool;

    /// Starts a transaction (or a flat-nested one inside an active transaction). `Ok(())`
    /// means the thread now runs transactionally; `Err` carries the abort status of this
    /// attempt. On hardware, an abort later in the section resumes here with `Err`.
    fn begin(&self) -> Result<(), AbortStatus>;

    /// Commits the innermost transaction (the outermost commit publishes everything).
    ///
    /// # Panics
    ///
    /// Panics if no transaction is active.
    fn end(&self);

    /// Aborts the active transaction with an 8-bit `code`.
    ///
    /// On hardware this does not return: execution resumes at the outermost `begin`, which
    /// reports [`AbortStatus::explicit`]`(code)`. It returns only when there is nothing to
    /// roll back — no transaction is active, or the backend simulates transactions and
    /// aborts only at the start of a section (the mock) — and then hands back the status the
    /// `begin` would have reported, so the caller can continue as if `begin` had failed.
    fn abort(&self, code: u8) -> AbortStatus;

    /// True while the current thread runs inside a transaction of this backend.
    fn test(&self) -> bool;

    /// Must be called by a thread right after it acquires a lock *non-transactionally* that
    /// transactions of this backend may have subscribed to. Hardware backends need nothing
    /// (the lock write itself aborts subscribers), so the default is empty; simulated
    /// backends use it to wait for sections that cannot be rolled back.
    #[inline(always)]
    fn fallback_acquired(&self) {}

    /// The optional features this backend offers.
    fn capabilities(&self) -> Capabilities {
        Capabilities::NONE
    }

    /// Suspends the active transaction: until [`resume`](Htm::resume), memory accesses are
    /// non-transactional (POWER8 `tsuspend.`). Unsupported by default.
    fn suspend(&self) -> Result<(), Unsupported> {
        Err(Unsupported)
    }

    /// Resumes a suspended transaction. Unsupported by default.
    fn resume(&self) -> Result<(), Unsupported> {
        Err(Unsupported)
    }

    /// Starts a rollback-only transaction, which buffers stores but does not track loads
    /// (POWER8 ROT). The outer `Err` means the backend lacks the capability; the inner
    /// result is as for [`begin`](Htm::begin).
    fn begin_rollback_only(&self) -> Result<Result<(), AbortStatus>, Unsupported> {
        Err(Unsupported)
    }
}

/// True if the current thread is inside a transaction of any built-in backend ([`Rtm`] or
/// [`MockHtm`]). Used to decide whether side effects (such as condition-variable wake-ups)
/// must be deferred until the section commits.
#[inline]
pub fn in_transaction() -> bool {
    Rtm.test() || MockHtm.test()
}
