//! Shared helpers for the integration tests (included with `mod common;`).
#![allow(dead_code)]

use txmem_sim::SimConfig;

/// A small machine with invariant checking on: 2 KB 2-way L1s so that evictions happen.
pub fn small(cores: usize) -> SimConfig {
    let mut c = SimConfig {
        cores,
        check_invariants: true,
        memory_bytes: 1 << 16,
        ..SimConfig::default()
    };
    c.l1.size_bytes = 2048;
    c.l1.ways = 2;
    c.llc.size_bytes = 16 * 1024;
    c.llc.ways = 4;
    c
}
