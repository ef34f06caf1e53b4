//! Peers run by several suites: locks, the STM crates, libitm and
//! TinySTM's bank program. (The set
//! peers, which only `intset` runs, live with that suite.)

pub mod libitm;
pub mod locks;
pub mod stm_crates;
pub mod tinystm;
