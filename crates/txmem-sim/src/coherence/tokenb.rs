//! TokenB (Martin, Hill, Wood), Flask's other baseline: no directory; every miss is a
//! transient request broadcast to every core, and the cores holding tokens answer.
//!
//! Token counting is what keeps TokenB correct when requests race; here every request is
//! served whole when it is issued (the simulator serializes them), so transient requests never
//! race and persistent requests are never needed. The exact state of every line stands for
//! the tokens; what TokenB costs is its broadcasts: every miss sends a request to every other
//! core (each looks it up), and a round to the holders when one supplies the line or gives up
//! its copy. No home lookup is on the path.

use super::directory::{drop_at_home, serve_at_home};
use super::lines::LineTable;
use super::{CoherenceProtocol, LineState, Request, Response};
use crate::config::CoherenceConfig;
use crate::engine::time::Cycle;
use crate::stats::CoherenceStats;

/// The TokenB protocol. See the module docs.
#[derive(Debug)]
pub struct TokenB {
    cfg: CoherenceConfig,
    cores: usize,
    lines: LineTable,
    stats: CoherenceStats,
}

impl TokenB {
    /// A protocol instance for `cores` cores and `lines` memory lines.
    pub fn new(cores: usize, lines: usize, cfg: CoherenceConfig) -> Self {
        TokenB {
            lines: LineTable::new(cores, lines),
            stats: CoherenceStats::default(),
            cores,
            cfg,
        }
    }
}

impl CoherenceProtocol for TokenB {
    fn name(&self) -> &'static str {
        "tokenb"
    }

    super::line_table_queries!();

    fn request(&mut self, req: Request) -> Response {
        // The broadcast: one request per other core, each looked up; the request to a home
        // that serve_at_home counts is one of them.
        let peers = self.cores as u64 - 1;
        self.stats.messages += peers.saturating_sub(1);
        self.stats.snoops += peers;
        serve_at_home(
            &mut self.lines,
            &mut self.stats,
            req,
            self.cfg.cache_to_cache_latency,
        )
    }

    fn evict(&mut self, core: usize, line: u64, _now: Cycle) -> Cycle {
        drop_at_home(&mut self.lines, &mut self.stats, core, line);
        0
    }

    fn check_line(&self, line: u64) -> Result<(), String> {
        self.lines.check(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coherence::{request_now, DataSource, RequestKind};

    #[test]
    fn every_miss_is_broadcast() {
        let cfg = CoherenceConfig::default();
        let mut t = TokenB::new(8, 64, cfg.clone());
        let req = |core, kind| request_now(core, 3, kind);
        // From memory: 7 requests, 7 lookups, one data response; no round to a holder.
        let r = t.request(req(0, RequestKind::GetM));
        assert_eq!((r.source, r.latency), (DataSource::Shared, 0));
        assert_eq!((t.stats().messages, t.stats().snoops), (8, 7));
        // From the owner: 7 more requests, its forward and data, one round.
        let r = t.request(req(1, RequestKind::GetS));
        assert_eq!(
            (r.source, r.latency),
            (DataSource::Peer(0), cfg.cache_to_cache_latency)
        );
        assert_eq!(t.stats().messages, 8 + 7 + 3);
        t.check_line(3).unwrap();
    }
}
