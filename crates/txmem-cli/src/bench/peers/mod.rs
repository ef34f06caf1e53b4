//! Peers: the systems txmem is compared with.

pub mod libitm;
pub mod locks;
pub mod sets;
pub mod stm_crates;
