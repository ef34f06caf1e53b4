//! Elision policies as pure state machines.
//!
//! Each policy consumes events (a section starts, a transaction commits, a transaction
//! aborts with some [`AbortStatus`](crate::htm::AbortStatus)) and answers with the next
//! action. Nothing here touches threads, atomics, clocks or hardware, so the same code drives
//! the real locks in this crate and simulated HTM in `txmem-sim`.
//!
//! * [`retry`]: XSync's adaptive retry limit (how many hardware attempts a section gets
//!   before taking the lock, and when to wait for a busy lock instead).
//! * [`coarsen`]: XSync's adaptive transaction coarsening (how many consecutive sections to
//!   merge into one hardware transaction).

pub mod coarsen;
pub mod retry;

pub use coarsen::{CoarsenConfig, CoarsenEvent, CoarsenPolicy};
pub use retry::{RetryAction, RetryConfig, RetryEvent, RetryPolicy};
