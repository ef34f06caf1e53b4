//! Elision policies as pure state machines.
//!
//! Each policy consumes events (a section starts, a transaction commits, a transaction
//! aborts with some [`AbortStatus`](crate::AbortStatus)) and answers with the next action.
//! Nothing here touches threads, atomics, clocks or hardware, which is what lets one
//! implementation serve two drivers: the per-thread elision engine of `txmem-elide`'s locks,
//! and the simulated elided lock of `txmem-sim` (its `elision` module), where the same
//! decisions play out on simulated caches and a simulated HTM.
//!
//! * [`retry`]: XSync's adaptive retry limit (how many hardware attempts a section gets
//!   before taking the lock, and when to wait for a busy lock instead).
//! * [`coarsen`]: XSync's adaptive transaction coarsening (how many consecutive sections to
//!   merge into one hardware transaction).
//!
//! A driver keeps one of each per thread (XSync keeps them thread-local so that updating
//! them never causes a conflict) and feeds every abort to both.

pub mod coarsen;
pub mod retry;

pub use coarsen::{CoarsenConfig, CoarsenEvent, CoarsenPolicy};
pub use retry::{RetryAction, RetryConfig, RetryEvent, RetryPolicy};
