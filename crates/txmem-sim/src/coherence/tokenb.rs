//! TokenB (Martin, Hill, Wood), Flask's other baseline: no directory; every miss is a
//! transient request broadcast to every core, and the cores holding tokens answer.
//!
//! Token counting is what keeps TokenB correct when requests race; here every request is
//! served whole when it is issued (the simulator serializes them), so transient requests never
//! race and persistent requests are never needed. The exact state of every line stands for
//! the tokens; what TokenB costs is its broadcasts: every miss is one multicast from the
//! requester to every other tile (each core looks it up), and the token holders answer: the
//! owner with the data, the other holders of a line to be written with their tokens, the home
//! with the data when no core owns the line. No directory lookup is on the path; every miss
//! occupies the whole network, which on a mesh slows everything near the traffic.

use super::directory::{drop_at_home, transition};
use super::lines::LineTable;
use super::{CoherenceProtocol, DataSource, LineState, Request, Response};
use crate::config::{CoherenceConfig, MAX_CORES};
use crate::engine::time::Cycle;
use crate::network::{Network, Payload};
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

    fn request(&mut self, req: Request, net: &mut Network) -> Response {
        let peers = self.cores as u64 - 1;
        self.stats.snoops += peers;
        let tr = transition(&mut self.lines, &mut self.stats, req);
        let think = self.cfg.cache_to_cache_latency;
        let (me, home) = (req.core, net.home(req.line));
        // The broadcast: when it reaches each tile.
        let mut heard = [req.now; MAX_CORES];
        net.send_each(me, net.others(me), Payload::Control, req.now, |t, at| {
            heard[t] = at
        });
        let mut acks = req.now;
        let mut rest = tr.acknowledgers();
        while rest != 0 {
            let h = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            acks = acks.max(net.send(h, me, Payload::Control, heard[h] + think));
        }
        let done = match tr.source {
            DataSource::Shared => {
                let acks = if tr.acknowledgers() == 0 {
                    0
                } else {
                    acks - req.now
                };
                return tr.response(heard[home] - req.now, acks);
            }
            DataSource::Peer(o) => {
                if tr.dirty {
                    net.send(o, home, Payload::Data, heard[o] + think);
                }
                net.send(o, me, Payload::Data, heard[o] + think)
            }
            // The tokens no core held are at the home.
            DataSource::None => net.send(home, me, Payload::Control, heard[home]),
        };
        tr.response(done.max(acks) - req.now, 0)
    }

    fn evict(&mut self, core: usize, line: u64, now: Cycle, net: &mut Network) -> Cycle {
        drop_at_home(&mut self.lines, &mut self.stats, net, core, line, now);
        0
    }

    fn check_line(&self, line: u64) -> Result<(), String> {
        self.lines.check(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coherence::{request_now, RequestKind};
    use crate::config::NetworkConfig;

    #[test]
    fn every_miss_is_broadcast() {
        let cfg = CoherenceConfig::default();
        let mut t = TokenB::new(8, 64, cfg.clone());
        let net = &mut Network::new(&NetworkConfig::default(), 8, 64);
        let hop = NetworkConfig::default().ideal_latency;
        let req = |core, kind| request_now(core, 3, kind);
        // From the shared levels: one broadcast (7 deliveries, 7 lookups); the home (tile 3)
        // reads the line once the broadcast reaches it.
        let r = t.request(req(0, RequestKind::GetM), net);
        assert_eq!((r.source, r.latency), (DataSource::Shared, hop));
        assert_eq!((net.stats.deliveries, t.stats().snoops), (7, 7));
        // From the owner: 7 more deliveries and its data.
        let r = t.request(req(1, RequestKind::GetS), net);
        assert_eq!(
            (r.source, r.latency),
            (DataSource::Peer(0), hop + cfg.cache_to_cache_latency + hop)
        );
        // The owner's copy was dirty: its data also went home.
        assert_eq!(net.stats.deliveries, 7 + 7 + 2);
        assert_eq!(net.stats.messages, 1 + 1 + 2);
        t.check_line(3).unwrap();
    }
}
