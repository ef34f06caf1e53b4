//! How the simulated HTM reports an abort: in `txmem-htm`'s vocabulary, the one the RTM
//! backend of `txmem-elide` uses too, so the shared elision policies read simulated aborts
//! exactly as they read real ones.
//!
//! Every simulated abort has one cause. What the simulator knows beyond it travels as the
//! status's details: [`AbortStatus::is_suspended`] for a transaction doomed while suspended
//! (`xpush`, POWER8 `tsuspend`), [`AbortStatus::is_rollback_only`] for a POWER8
//! rollback-only transaction, and [`AbortStatus::capacity_footprint`] for which part of the
//! footprint left the L1.

pub use txmem_htm::{AbortStatus, Footprint, HtmAbortCause};

/// The status the simulated HTM reports for an abort with `cause`.
///
/// The retry hint is clear only for capacity and nesting overflow, the causes that repeat
/// when the same transaction runs again; [`Cpu::transaction`](crate::Cpu::transaction) runs
/// the body in serial mode after those. An explicit abort keeps the hint, unlike RTM's
/// `xabort`: MetaTM's `xabort` says nothing about the next attempt, and `transaction`
/// retries it like a conflict (POWER8's `tabort.` lets software choose, too).
///
/// ```
/// use txmem_sim::htm::status::status;
/// use txmem_sim::HtmAbortCause;
///
/// assert!(status(HtmAbortCause::Capacity).is_persistent());
/// assert!(status(HtmAbortCause::Explicit(3)).is_transient());
/// assert_eq!(status(HtmAbortCause::Conflict).cause(), HtmAbortCause::Conflict);
/// ```
#[inline]
pub fn status(cause: HtmAbortCause) -> AbortStatus {
    let repeats = matches!(
        cause,
        HtmAbortCause::Capacity | HtmAbortCause::NestingOverflow
    );
    AbortStatus::from_cause(cause).with_retry(!repeats)
}

/// The status of a capacity abort caused by a line of the given part of the footprint.
#[inline]
pub fn capacity(part: Footprint) -> AbortStatus {
    AbortStatus::capacity_of(part)
}
