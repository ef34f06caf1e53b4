//! Simulated time.

/// Simulated time, in processor cycles.
pub type Cycle = u64;
