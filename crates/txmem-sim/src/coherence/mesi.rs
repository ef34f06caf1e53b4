//! MESI coherence with broadcast snooping on one shared, serialized bus.

use super::lines::{Dropped, LineTable};
use super::{CoherenceProtocol, DataSource, LineState, Request, RequestKind, Response};
use crate::config::CoherenceConfig;
use crate::engine::time::Cycle;
use crate::network::Network;
use crate::stats::CoherenceStats;

/// MESI snooping protocol. Every request is a bus tenure that every other cache snoops; the
/// bus is one resource, so requests queue behind each other. Lines held in M or E are
/// supplied cache to cache; Shared lines come from the shared levels. Clean evictions are
/// silent; dirty ones write back over the bus (buffered, so the core does not wait).
#[derive(Debug)]
pub struct MesiSnooping {
    cores: usize,
    cfg: CoherenceConfig,
    lines: LineTable,
    bus_free_at: Cycle,
    stats: CoherenceStats,
}

impl MesiSnooping {
    /// A protocol instance for `cores` cores and `lines` memory lines.
    pub fn new(cores: usize, lines: usize, cfg: CoherenceConfig) -> Self {
        MesiSnooping {
            cores,
            cfg,
            lines: LineTable::new(cores, lines),
            bus_free_at: 0,
            stats: CoherenceStats::default(),
        }
    }

    /// Occupies the bus for `cycles` starting no earlier than `now`; returns the wait.
    fn bus(&mut self, now: Cycle, cycles: Cycle) -> Cycle {
        let start = now.max(self.bus_free_at);
        self.bus_free_at = start + cycles;
        self.stats.bus_transactions += 1;
        self.stats.bus_busy_cycles += cycles;
        self.stats.bus_wait_cycles += start - now;
        // Broadcast: every other cache looks the address up.
        self.stats.snoops += self.cores as u64 - 1;
        start - now
    }
}

impl CoherenceProtocol for MesiSnooping {
    fn name(&self) -> &'static str {
        "mesi-snooping"
    }

    super::line_table_queries!();

    #[inline]
    fn request(&mut self, req: Request, _net: &mut Network) -> Response {
        let me = 1u64 << req.core;
        let l = self.lines.get(req.line);
        let others = l.holders & !me;
        let owner = l.owner_other_than(req.core);
        let c = self.cfg.clone();
        match req.kind {
            RequestKind::GetS => {
                self.stats.get_s += 1;
                let wait = self.bus(req.now, c.bus_request_cycles + c.bus_data_cycles);
                // request + data response
                self.stats.messages += 2;
                let (source, latency, downgraded) = match owner {
                    Some(o) => {
                        self.stats.cache_to_cache += 1;
                        if l.dirty {
                            // The owner's dirty data also goes back to the shared level.
                            self.stats.writebacks += 1;
                            self.stats.messages += 1;
                        }
                        (DataSource::Peer(o), c.cache_to_cache_latency, 1u64 << o)
                    }
                    None => {
                        self.stats.from_shared += 1;
                        (DataSource::Shared, 0, 0)
                    }
                };
                let granted = self.lines.grant_read(req.core, req.line);
                Response {
                    latency: wait + c.bus_request_cycles + c.bus_data_cycles + latency,
                    source,
                    invalidated: 0,
                    downgraded,
                    granted,
                    ..Response::default()
                }
            }
            RequestKind::GetM | RequestKind::Upgrade => {
                let has_copy = l.holders & me != 0;
                let upgrade = req.kind == RequestKind::Upgrade && has_copy;
                let data = !upgrade;
                if upgrade {
                    self.stats.upgrades += 1;
                } else {
                    self.stats.get_m += 1;
                }
                let occupancy = c.bus_request_cycles + if data { c.bus_data_cycles } else { 0 };
                let wait = self.bus(req.now, occupancy);
                let invalidated = others;
                self.stats.invalidations += u64::from(invalidated.count_ones());
                // request, one ack per invalidated copy, data response when data moves
                self.stats.messages += 1 + u64::from(invalidated.count_ones()) + u64::from(data);
                let (source, extra) = if !data {
                    (DataSource::None, 0)
                } else if let Some(o) = owner {
                    self.stats.cache_to_cache += 1;
                    (DataSource::Peer(o), c.cache_to_cache_latency)
                } else {
                    self.stats.from_shared += 1;
                    (DataSource::Shared, 0)
                };
                self.lines.grant_write(req.core, req.line);
                Response {
                    latency: wait + occupancy + extra,
                    source,
                    invalidated,
                    downgraded: 0,
                    granted: LineState::Modified,
                    ..Response::default()
                }
            }
        }
    }

    fn evict(&mut self, core: usize, line: u64, now: Cycle, _net: &mut Network) -> Cycle {
        match self.lines.drop_copy(core, line) {
            Dropped::Absent => {}
            Dropped::Dirty => {
                self.stats.writebacks += 1;
                self.stats.messages += 1;
                let cycles = self.cfg.bus_request_cycles + self.cfg.bus_data_cycles;
                self.bus(now, cycles);
            }
            Dropped::Clean => self.stats.clean_evictions += 1,
        }
        0
    }

    fn check_line(&self, line: u64) -> Result<(), String> {
        self.lines.check(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coherence::request_now as req;

    #[test]
    fn mesi_transitions() {
        let mut p = MesiSnooping::new(4, 8, CoherenceConfig::default());
        let r = p.request(req(0, 3, RequestKind::GetS), &mut Network::free(4));
        assert_eq!(r.granted, LineState::Exclusive);
        assert_eq!(r.source, DataSource::Shared);
        p.silent_upgrade(0, 3);
        assert_eq!(p.state(0, 3), LineState::Modified);
        let r = p.request(req(1, 3, RequestKind::GetS), &mut Network::free(4));
        assert_eq!(r.source, DataSource::Peer(0));
        assert_eq!(r.downgraded, 1);
        assert_eq!(
            (p.state(0, 3), p.state(1, 3)),
            (LineState::Shared, LineState::Shared)
        );
        let r = p.request(req(1, 3, RequestKind::Upgrade), &mut Network::free(4));
        assert_eq!(r.invalidated, 1);
        assert_eq!(r.source, DataSource::None);
        assert_eq!(
            (p.state(0, 3), p.state(1, 3)),
            (LineState::Invalid, LineState::Modified)
        );
        p.check_line(3).unwrap();
        assert_eq!(p.stats().writebacks, 1);
        p.evict(1, 3, 100, &mut Network::free(4));
        assert_eq!(p.state(1, 3), LineState::Invalid);
        assert_eq!(p.stats().writebacks, 2);
        p.check_line(3).unwrap();
    }

    #[test]
    fn bus_serializes_requests() {
        let cfg = CoherenceConfig::default();
        let mut p = MesiSnooping::new(2, 8, cfg.clone());
        let a = p.request(req(0, 1, RequestKind::GetM), &mut Network::free(4));
        let b = p.request(req(1, 2, RequestKind::GetM), &mut Network::free(4));
        let occ = cfg.bus_request_cycles + cfg.bus_data_cycles;
        assert_eq!(a.latency, occ);
        assert_eq!(b.latency, 2 * occ);
        assert_eq!(p.stats().bus_wait_cycles, occ);
    }
}
