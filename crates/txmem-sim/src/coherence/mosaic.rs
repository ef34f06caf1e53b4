//! MOSAIC, Flask's comparison in its Fig 11: a non-inclusive directory that gives every miss
//! an entry and, when a line has none, reconstructs it by a multicast to every core.
//!
//! Like Flask, losing an entry invalidates nothing; unlike Flask, nothing tells a line that is
//! on no chip cache from one that is, so every directory miss pays a multicast (and private
//! lines compete with shared ones for entries). Timing and messages as in
//! [`super::flask::Flask`].

use super::directory::EntryArray;
use super::home::Homes;
use super::{CoherenceProtocol, LineState, Request, Response};
use crate::config::CoherenceConfig;
use crate::engine::time::Cycle;
use crate::network::Network;
use crate::stats::CoherenceStats;

/// The MOSAIC protocol. See the module docs.
#[derive(Debug)]
pub struct Mosaic {
    homes: Homes,
    entries: EntryArray,
}

impl Mosaic {
    /// A controller of `entries` directory entries for `cores` cores and `lines` lines.
    pub fn new(cores: usize, lines: usize, entries: usize, cfg: CoherenceConfig) -> Self {
        Mosaic {
            entries: EntryArray::new(entries, cfg.directory_ways as usize),
            homes: Homes::new(cores, lines, cfg),
        }
    }
}

impl CoherenceProtocol for Mosaic {
    fn name(&self) -> &'static str {
        "mosaic"
    }

    super::line_table_queries!(homes);

    fn request(&mut self, req: Request, net: &mut Network) -> Response {
        let mut ready = self.homes.arrive(net, req);
        if !self.entries.touch(req.line) {
            let holders = self.homes.lines.get(req.line).holders;
            ready = self.homes.reconstruct(net, req, holders, ready);
            if self.entries.allocate(req.line).is_some() {
                self.homes.stats.directory_evictions += 1;
            }
        }
        self.homes.serve(net, req, ready, false)
    }

    fn evict(&mut self, core: usize, line: u64, now: Cycle, net: &mut Network) -> Cycle {
        if self.homes.drop_copy(net, core, line, now) {
            self.entries.free(line);
        }
        0
    }

    fn check_line(&self, line: u64) -> Result<(), String> {
        self.homes.lines.check(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coherence::{request_now, RequestKind};

    #[test]
    fn every_directory_miss_multicasts_and_allocates() {
        let mut m = Mosaic::new(4, 64, 16, CoherenceConfig::default());
        let net = &mut Network::free(4);
        let req = |core, line| request_now(core, line, RequestKind::GetS);
        // A line on no chip cache: a multicast anyway (a "false" one), then an entry.
        m.request(req(0, 5), net);
        assert_eq!(
            (m.stats().reconstructions, m.stats().multicasts_false),
            (1, 1)
        );
        // Its entry serves the next core without a multicast.
        m.request(req(1, 5), net);
        assert_eq!(m.stats().reconstructions, 1);
        assert_eq!(m.state(1, 5), LineState::Shared);
        m.check_line(5).unwrap();
    }
}
