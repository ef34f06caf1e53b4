//! The settings of the energy proxy: energy per event of the memory hierarchy.

use serde::{Deserialize, Serialize};

/// Energy per event of the memory hierarchy's energy proxy ([`crate::energy`]), in
/// picojoules. The defaults are estimates of the order CACTI and DSENT give at 32 nm for
/// Flask's Table I parts (\[est\]); only their ratios matter to a comparison, and the raw
/// event counts are reported beside the sum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EnergyConfig {
    /// One L1 access (32 KB).
    pub l1_pj: f64,
    /// One L2 access (256 KB).
    pub l2_pj: f64,
    /// One LLC slice access (1 MB).
    pub llc_pj: f64,
    /// One directory lookup or update (a few KB of SRAM).
    pub directory_pj: f64,
    /// One filter lookup (d buckets of a small SRAM).
    pub filter_pj: f64,
    /// One tag lookup in a peer's private caches.
    pub snoop_pj: f64,
    /// One flit through a router.
    pub router_flit_pj: f64,
    /// One flit over a 1-cycle link.
    pub link_flit_pj: f64,
}

impl Default for EnergyConfig {
    fn default() -> Self {
        EnergyConfig {
            l1_pj: 15.0,
            l2_pj: 45.0,
            llc_pj: 150.0,
            directory_pj: 12.0,
            filter_pj: 6.0,
            snoop_pj: 10.0,
            router_flit_pj: 25.0,
            link_flit_pj: 12.0,
        }
    }
}

// Configurations compare by value; `SimConfig::validate` refuses a NaN energy, the one value
// that would not equal itself.
impl Eq for EnergyConfig {}

impl EnergyConfig {
    pub(crate) fn all(&self) -> [f64; 8] {
        [
            self.l1_pj,
            self.l2_pj,
            self.llc_pj,
            self.directory_pj,
            self.filter_pj,
            self.snoop_pj,
            self.router_flit_pj,
            self.link_flit_pj,
        ]
    }
}
