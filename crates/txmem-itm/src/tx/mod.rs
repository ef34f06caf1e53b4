//! The transaction runtime under the ABI, in three layers, each using only those before it:
//!
//! | file | holds |
//! |---|---|
//! | `desc` | the per-thread descriptor and its logs, the pool of descriptors, the thread's slot |
//! | `gate` | the serial gate, the hourglass, the waits for privatization safety |
//! | `lifecycle` | begin, commit, abort and restart, cancel, going irrevocable |
//!
//! The methods (`method/`) sit between `desc` and `gate`: they work on a descriptor's logs,
//! and the gate and the lifecycle call them.

pub(crate) mod desc;
pub(crate) mod gate;
pub(crate) mod lifecycle;
