//! The settings of the coherence protocols: which protocol, its latencies, and the directory's
//! and Flask's storage.

use serde::{Deserialize, Serialize};

/// Which coherence protocol connects the private caches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProtocolKind {
    /// MESI with broadcast snooping on one shared, serialized bus.
    MesiSnooping,
    /// MESI kept by a sparse directory, inclusive of the private caches, sized by
    /// `directory_coverage_pct` (recalls make room).
    SparseDirectory,
    /// Flask: a directory (sized by `directory_coverage_pct`) of actively shared lines only,
    /// and a d-left counting Bloom filter of every line on chip.
    Flask,
    /// MOSAIC: a non-inclusive directory (sized by `directory_coverage_pct`) that gives every
    /// miss an entry and multicasts to rebuild a missing one.
    Mosaic,
    /// TokenB: no directory; every miss is broadcast to every core.
    #[serde(rename = "tokenb")]
    TokenB,
}

/// Coherence protocol and interconnect timing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CoherenceConfig {
    /// Protocol in use.
    pub protocol: ProtocolKind,
    /// Cycles a request (address phase) occupies the bus.
    pub bus_request_cycles: u64,
    /// Extra cycles a cache line of data occupies the bus.
    pub bus_data_cycles: u64,
    /// Latency for a peer cache to supply a line it holds in M or E.
    pub cache_to_cache_latency: u64,
    /// Sparse directory: entries as a percentage of the lines the private caches can hold
    /// (the outermost private level of every core; Flask's "SDE": 160 down to 5).
    pub directory_coverage_pct: u32,
    /// Sparse directory: ways per set.
    pub directory_ways: u32,
    /// Sparse directory: cycles of a lookup at the home.
    pub directory_latency: u64,
    /// Flask: how the controller's storage (the SDE budget, 8 units per set) is split
    /// between directory ways and filter sub-tables.
    pub flask_split: FlaskSplit,
    /// TokenB: cycles a transient request that raced with another waits before it is issued
    /// again.
    pub tokenb_timeout: u64,
    /// TokenB: transient requests tried before a persistent one.
    pub tokenb_transient_tries: u32,
}

/// How Flask splits each set of its controller's 8 storage units between directory ways and
/// filter sub-tables. Written as the number of directory ways (`1` to `7`) or `"adaptive"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FlaskSplit {
    /// This many directory ways, the rest filter sub-tables: 4 (half and half) is the seed's
    /// default; 1 suits private and numerical workloads, 7 commercial ones (seed §VI.C).
    Static(u32),
    /// Starts at 4 and moves a unit between directory and filter as the workload runs (see
    /// [`crate::coherence::flask`]).
    Adaptive(AdaptiveTag),
}

/// The name of [`FlaskSplit::Adaptive`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdaptiveTag {
    /// `"adaptive"`.
    Adaptive,
}

impl FlaskSplit {
    /// The adaptive split.
    pub const ADAPTIVE: FlaskSplit = FlaskSplit::Adaptive(AdaptiveTag::Adaptive);

    /// Directory ways to start with.
    pub fn initial_ways(self) -> u32 {
        match self {
            FlaskSplit::Static(n) => n,
            FlaskSplit::Adaptive(_) => 4,
        }
    }
}

impl Default for CoherenceConfig {
    fn default() -> Self {
        CoherenceConfig {
            protocol: ProtocolKind::MesiSnooping,
            bus_request_cycles: 2,
            bus_data_cycles: 8,
            cache_to_cache_latency: 16,
            directory_coverage_pct: 200,
            directory_ways: 8,
            directory_latency: 10,
            flask_split: FlaskSplit::Static(4),
            tokenb_timeout: 200,
            tokenb_transient_tries: 4,
        }
    }
}
