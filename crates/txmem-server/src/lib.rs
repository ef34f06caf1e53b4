//! A memcached-compatible server whose every request is a txmem transaction.

pub mod store;
