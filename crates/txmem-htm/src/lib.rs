//! The hardware-transactional-memory vocabulary of txmem: abort statuses and causes, the
//! lock-elision policies as pure state machines, and the counts of what elision did.
//!
//! # The problem
//!
//! A hardware transaction that fails says why in a machine-specific form: Intel RTM puts cause
//! bits, a retry hint and an 8-bit code in `eax`; POWER8 fills the `TEXASR` register with
//! its own causes and a "failure persistent" bit; txmem's simulator models MetaTM and the
//! POWER8 features and has causes of its own (an interrupt, a nesting overflow, a suspended
//! or rollback-only transaction). The code that reacts to an abort — retry, wait for a busy
//! lock, merge fewer sections, give up and take the lock — should not care which of these
//! produced it, and it should be written once: the real elided locks of `txmem-elide` and
//! the simulated elision of `txmem-sim` must make the same decisions, or the simulator
//! measures a different algorithm from the one that ships.
//!
//! # What is here
//!
//! * [`AbortStatus`] and [`HtmAbortCause`]: one status type for every backend, in RTM's bit
//!   layout extended with what the other backends can say (see the mapping table on
//!   [`AbortStatus`]); [`Footprint`] says which part of a transaction overflowed when the
//!   backend knows. [`LOCK_BUSY_CODE`] and [`REENTRY_CODE`] are the explicit codes that
//!   elided locks reserve.
//! * [`policy`]: XSync's adaptive retry limit with lock-busy waiting
//!   ([`RetryPolicy`](policy::RetryPolicy)) and adaptive transaction coarsening
//!   ([`CoarsenPolicy`](policy::CoarsenPolicy)), as state machines that take events and
//!   answer with actions.
//! * [`ElisionStats`] and [`AbortCounts`]: what elided sections did, counted the same way by
//!   the real locks and the simulated ones.
//!
//! The crate has no dependencies (but `serde`, optional, to serialize the counts), no
//! `unsafe` and needs no `std`, so both the lock library and the simulator can depend on it
//! without depending on each other.
//!
//! # Cargo features
//!
//! * `serde` (off by default): [`ElisionStats`] and [`AbortCounts`] implement
//!   `serde::Serialize`, for reports.
//!
//! # Not the STM's abort causes
//!
//! The software transactional memory in the `txmem` crate has its own `txmem::AbortCause`
//! (validation failed, opacity check, `retry`, an irrevocable writer, …). It describes why a
//! *software* transaction restarted and has nothing to do with [`HtmAbortCause`], which
//! describes what *hardware* (real or simulated) reported: hence the `Htm` in this one's
//! name, so that a reader never takes one for the other.
//!
//! ```
//! use txmem_htm::policy::{RetryAction, RetryConfig, RetryEvent, RetryPolicy};
//! use txmem_htm::AbortStatus;
//!
//! // A driver's loop, with the hardware's answers scripted.
//! let mut policy = RetryPolicy::new(RetryConfig::DEFAULT);
//! let answers = [Err(AbortStatus::conflict()), Err(AbortStatus::lock_busy()), Ok(())];
//! let mut answers = answers.into_iter();
//! let mut action = policy.on(RetryEvent::Start);
//! loop {
//!     match action {
//!         RetryAction::Attempt | RetryAction::WaitThenAttempt => match answers.next().unwrap() {
//!             Ok(()) => {
//!                 policy.on(RetryEvent::Commit);
//!                 break;
//!             }
//!             Err(status) => action = policy.on(RetryEvent::Abort(status)),
//!         },
//!         RetryAction::Fallback | RetryAction::Done => unreachable!("a conflict is retried"),
//!     }
//! }
//! assert_eq!(policy.limit(), 2); // dropped to 1 by the conflict, grown by the commit
//! ```

#![cfg_attr(not(test), no_std)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod policy;
mod stats;
mod status;

pub use stats::{AbortCounts, ElisionStats};
pub use status::{AbortStatus, Footprint, HtmAbortCause, LOCK_BUSY_CODE, REENTRY_CODE};
