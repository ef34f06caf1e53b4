//! An energy proxy for the on-chip memory hierarchy: counted events times per-event energies.
//!
//! Flask's seed reports the memory hierarchy's energy-delay product from CACTI (caches) and
//! DSENT (network). Those tools are not reproduced here; instead every event the simulator
//! counts is charged a fixed energy ([`crate::config::EnergyConfig`], with documented
//! estimates as defaults), so that protocols can be compared by what they make the hardware
//! do. The raw counts are reported beside the sum, so a claim can be checked without trusting
//! the constants. Cores, memory and MESI's bus are not charged (the seed excludes the cores;
//! memory traffic is the same for every protocol but false-positive fetches).

pub mod settings;

use serde::{Deserialize, Serialize};

use crate::config::{ProtocolKind, SimConfig};
use crate::stats::Stats;

/// Energy of one run's memory hierarchy, by part, in picojoules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Energy {
    /// L1 lookups and fills.
    pub l1: f64,
    /// L2 lookups and fills.
    pub l2: f64,
    /// Last-level cache lookups.
    pub llc: f64,
    /// Directory lookups and updates at the homes.
    pub directory: f64,
    /// Filter lookups (Flask).
    pub filter: f64,
    /// Peers' tag lookups for others' requests (snoops, reconstructions, broadcasts).
    pub snoops: f64,
    /// Flits through routers.
    pub routers: f64,
    /// Flits over links.
    pub links: f64,
}

impl Energy {
    /// The energy `stats` stands for on the machine `cfg` describes.
    pub fn of(cfg: &SimConfig, stats: &Stats) -> Energy {
        let e = &cfg.energy;
        let (c, k, n) = (&stats.cache, &stats.coherence, &stats.network);
        let l1 = c.l1.hits + c.l1.misses;
        // An exclusive L2 also takes every L1 victim.
        let l2 = c.l2.hits
            + c.l2.misses
            + if cfg.l2.enabled && cfg.l2.exclusive {
                c.l1_evictions
            } else {
                0
            };
        let homes = match cfg.coherence.protocol {
            ProtocolKind::SparseDirectory | ProtocolKind::Flask | ProtocolKind::Mosaic => {
                // Every request, and every eviction notice, reads or updates its entry.
                k.get_s + k.get_m + k.upgrades + k.writebacks + k.clean_evictions
            }
            ProtocolKind::MesiSnooping | ProtocolKind::TokenB => 0,
        };
        let pj = |count: u64, each: f64| count as f64 * each;
        Energy {
            l1: pj(l1, e.l1_pj),
            l2: pj(l2, e.l2_pj),
            llc: pj(c.llc.hits + c.llc.misses, e.llc_pj),
            directory: pj(homes, e.directory_pj),
            filter: pj(k.filter_lookups, e.filter_pj),
            snoops: pj(k.snoops, e.snoop_pj),
            routers: pj(n.router_flits, e.router_flit_pj),
            links: pj(n.flit_hops, e.link_flit_pj),
        }
    }

    /// The whole, in picojoules.
    pub fn total(&self) -> f64 {
        self.l1
            + self.l2
            + self.llc
            + self.directory
            + self.filter
            + self.snoops
            + self.routers
            + self.links
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_event_is_charged_its_energy() {
        let mut cfg = SimConfig::flask();
        cfg.energy.l1_pj = 2.0;
        let mut s = Stats::default();
        s.cache.l1.hits = 10;
        s.cache.l1.misses = 5;
        s.network.flit_hops = 100;
        s.coherence.get_s = 3;
        let e = Energy::of(&cfg, &s);
        assert_eq!(e.l1, 30.0);
        assert_eq!(e.links, 100.0 * cfg.energy.link_flit_pj);
        assert_eq!(e.directory, 3.0 * cfg.energy.directory_pj);
        // TokenB has no directory to charge.
        cfg.coherence.protocol = ProtocolKind::TokenB;
        assert_eq!(Energy::of(&cfg, &s).directory, 0.0);
    }
}
