//! Flask (Menezo, Puente, Gregorio, HPCA 2015): a directory only for *actively shared*
//! lines, beside a d-left counting Bloom filter of every line on chip.
//!
//! A sparse directory must track every cached line, so when it is small it recalls lines the
//! caches still use. Flask tracks only lines that a second core touched while they were
//! cached; its directory is not inclusive, and losing an entry invalidates nothing. What it
//! does not track, the filter ([`super::dlcbf`]) remembers approximately: a line that is on
//! chip is always in it (no false negatives), so after a directory miss:
//!
//! * **filter miss** — the line is on no chip cache: memory at once, no entry; the line goes
//!   into the filter.
//! * **filter hit** — a *reconstruction*: a multicast to every core, each answering (cores
//!   without a copy too, since the hit may be false). If some core holds the line, it is
//!   actively shared: it gets an entry and the request proceeds as in a directory. If none
//!   does, the hit was a false positive and the request goes to memory after the wasted
//!   round.
//!
//! The line leaves the filter when its last private copy goes. An insert that would overflow
//! the filter (a saturated counter, every candidate bucket full) is kept exactly on the side
//! and counted; the seed invalidates the private-cache sets the filter portion covers instead,
//! which its sizing makes practically never necessary.
//!
//! The seed counts tokens for correctness; here the exact state of every line is known, so
//! tokens only show up as the messages they cost. The LLC is inclusive as everywhere in the
//! simulator (the seed's is not), and "leaving the chip" means leaving the private caches.
//!
//! Timing: as [`super::directory::SparseDirectory`] (the trip to the home and a lookup there;
//! a forward or an invalidation round), plus the reconstruction's round: a multicast from the
//! home to every other core and an answer from each.

use std::collections::HashMap;

use super::directory::{at_home, drop_at_home, serve_at_home, EntryArray};
use super::dlcbf::{Dlcbf, DlcbfConfig, Inserted};
use super::lines::LineTable;
use super::{CoherenceProtocol, LineState, Request, Response};
use crate::config::CoherenceConfig;
use crate::engine::time::Cycle;
use crate::network::{Network, Payload};
use crate::stats::CoherenceStats;

/// The Flask protocol. See the module docs.
#[derive(Debug)]
pub struct Flask {
    cfg: CoherenceConfig,
    cores: usize,
    lines: LineTable,
    /// Entries of actively shared lines (not inclusive).
    shared: EntryArray,
    filter: Dlcbf,
    /// Lines on chip that did not fit in the filter, with how many times each was inserted.
    overflow: HashMap<u64, u32>,
    stats: CoherenceStats,
}

impl Flask {
    /// A Flask controller with `entries` directory entries and a filter sized for
    /// `private_lines` on-chip lines at the seed's 75% load (d = 4, c = 8, r = 9), for `cores`
    /// cores and `lines` memory lines.
    pub fn new(
        cores: usize,
        lines: usize,
        entries: usize,
        private_lines: usize,
        cfg: CoherenceConfig,
    ) -> Self {
        let base = DlcbfConfig::default();
        let per_bucket = (base.subtables * base.cells) as f64 * 0.75;
        let buckets = ((private_lines as f64 / per_bucket).ceil() as u32)
            .max(1)
            .next_power_of_two();
        let filter = Dlcbf::new(DlcbfConfig { buckets, ..base })
            .expect("a power-of-two bucket count is a valid filter");
        Flask {
            shared: EntryArray::new(entries, cfg.directory_ways as usize),
            lines: LineTable::new(cores, lines),
            filter,
            overflow: HashMap::new(),
            stats: CoherenceStats::default(),
            cores,
            cfg,
        }
    }

    /// Whether the filter (or its overflow) says `line` may be on chip.
    fn may_be_on_chip(&self, line: u64) -> bool {
        self.filter.contains(line) || self.overflow.contains_key(&line)
    }

    /// Records that `line` came on chip.
    fn arrived(&mut self, line: u64) {
        match self.filter.insert(line) {
            Inserted::Ok => {}
            Inserted::Saturated => self.stats.filter_saturations += 1,
            Inserted::Overflow => {
                self.stats.filter_overflows += 1;
                *self.overflow.entry(line).or_default() += 1;
            }
        }
    }

    /// Records that `line`'s last private copy left.
    fn left(&mut self, line: u64) {
        self.shared.free(line);
        if let Some(n) = self.overflow.get_mut(&line) {
            *n -= 1;
            if *n == 0 {
                self.overflow.remove(&line);
            }
            return;
        }
        self.filter
            .remove(line)
            .expect("a line on chip is in the filter");
    }
}

impl CoherenceProtocol for Flask {
    fn name(&self) -> &'static str {
        "flask"
    }

    super::line_table_queries!();

    fn request(&mut self, req: Request, net: &mut Network) -> Response {
        let think = self.cfg.cache_to_cache_latency;
        let l = self.lines.get(req.line);
        let others = l.holders & !(1u64 << req.core);
        let mut ready = at_home(net, req, self.cfg.directory_latency);
        let directory_miss = !self.shared.touch(req.line);
        self.stats.filter_lookups += u64::from(directory_miss);
        if directory_miss && self.may_be_on_chip(req.line) {
            // Reconstruction: every other core answers the home, holder or not.
            ready = reconstruct(net, &mut self.stats, self.cores, req, ready, think);
            if l.holders == 0 {
                self.stats.multicasts_false += 1;
            } else {
                self.stats.multicasts_true += 1;
            }
            if others != 0 {
                // Actively shared now: an entry (an evicted one invalidates nothing).
                if self.shared.allocate(req.line).is_some() {
                    self.stats.directory_evictions += 1;
                }
            }
        }
        let r = serve_at_home(&mut self.lines, &mut self.stats, net, req, ready, think);
        if l.holders == 0 {
            self.arrived(req.line);
        }
        r
    }

    fn evict(&mut self, core: usize, line: u64, now: Cycle, net: &mut Network) -> Cycle {
        if drop_at_home(&mut self.lines, &mut self.stats, net, core, line, now) {
            self.left(line);
        }
        0
    }

    fn check_line(&self, line: u64) -> Result<(), String> {
        self.lines.check(line)?;
        if self.lines.get(line).holders != 0 && !self.may_be_on_chip(line) {
            return Err(format!(
                "line {line} is cached but the filter misses it (a false negative)"
            ));
        }
        Ok(())
    }
}

/// A reconstruction of `req.line`'s holders, whose home is ready at `at`: a multicast to
/// every core but the requester, each answering the home `think` cycles after it hears.
/// Returns when the last answer is in.
pub(crate) fn reconstruct(
    net: &mut Network,
    stats: &mut CoherenceStats,
    cores: usize,
    req: Request,
    at: Cycle,
    think: Cycle,
) -> Cycle {
    let peers = cores as u64 - 1;
    stats.reconstructions += 1;
    stats.snoops += peers;
    let everyone = if cores == 64 {
        u64::MAX
    } else {
        (1u64 << cores) - 1
    };
    let home = net.home(req.line);
    let to = everyone & !(1u64 << req.core);
    net.round(home, to, at, think, home, Payload::Control)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coherence::request_now as req;
    use crate::coherence::{DataSource, RequestKind};

    #[test]
    fn private_lines_skip_the_directory_and_shared_ones_get_an_entry() {
        let cfg = CoherenceConfig::default();
        let mut f = Flask::new(4, 1024, 8, 256, cfg.clone());
        let net = &mut Network::new(&crate::config::NetworkConfig::default(), 4, 64);
        let hop = crate::config::NetworkConfig::default().ideal_latency;
        // A private line: filter miss, straight to the shared levels, no entry (line 7's home
        // is tile 3).
        let r = f.request(req(0, 7, RequestKind::GetS), net);
        assert_eq!(
            (r.latency, r.source),
            (hop + cfg.directory_latency, DataSource::Shared)
        );
        assert_eq!(f.stats().reconstructions, 0);
        assert!(!f.shared.contains(7));
        // A second core: the filter hits, a reconstruction finds core 0, an entry follows.
        let r = f.request(req(1, 7, RequestKind::GetS), net);
        assert_eq!(f.stats().reconstructions, 1);
        assert_eq!(f.stats().multicasts_true, 1);
        assert_eq!(r.source, DataSource::Peer(0));
        assert!(f.shared.contains(7));
        // Now a directory hit: no multicast.
        f.request(req(2, 7, RequestKind::GetM), net);
        assert_eq!(f.stats().reconstructions, 1);
        assert_eq!(f.state(2, 7), LineState::Modified);
        // The last copy leaves: out of the filter and the directory; the next miss is a
        // filter miss again.
        f.evict(2, 7, 0, net);
        assert!(!f.shared.contains(7) && !f.filter.contains(7));
        f.request(req(3, 7, RequestKind::GetS), net);
        assert_eq!(f.stats().reconstructions, 1);
        for line in 0..16 {
            f.check_line(line).unwrap();
        }
    }
}
