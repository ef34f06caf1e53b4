//! The memory system: values, caches and the per-core cache hierarchy.

pub mod cache;
pub mod hierarchy;
pub mod settings;
pub mod values;
