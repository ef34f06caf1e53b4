//! Peers: the systems txmem is compared with.

pub mod libitm;
pub mod locks;
pub mod stm_crates;
