//! The settings of the memory hierarchy: one cache's geometry and latency, the private L2.

use serde::{Deserialize, Serialize};

/// Geometry and hit latency of one set-associative cache.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    /// Capacity in bytes.
    pub size_bytes: u64,
    /// Associativity (ways per set).
    pub ways: u32,
    /// Latency in cycles added when an access is served by this level.
    pub latency: u64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        // MetaTM §6: 16 KB, 4-way L1 with a 1-cycle hit.
        CacheConfig {
            size_bytes: 16 * 1024,
            ways: 4,
            latency: 1,
        }
    }
}

/// Optional private (per-core) second-level cache.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PrivateL2Config {
    /// Whether each core has a private L2 between its L1 and the bus.
    pub enabled: bool,
    /// Geometry and latency of the private L2.
    pub cache: CacheConfig,
    /// Exclusive of the L1 (a victim cache): a line is in the L1 or the L2, never both; an
    /// L2 hit moves the line into the L1 and the L1's victim into the L2. Otherwise (the
    /// default) the L2 includes the L1.
    #[serde(default)]
    pub exclusive: bool,
}

impl Default for PrivateL2Config {
    fn default() -> Self {
        PrivateL2Config {
            enabled: false,
            cache: CacheConfig {
                size_bytes: 256 * 1024,
                ways: 8,
                latency: 8,
            },
            exclusive: false,
        }
    }
}
