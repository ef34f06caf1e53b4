//! TokenB (Martin, Hill, Wood), Flask's other baseline: no directory; every miss is a
//! transient request broadcast to every core, and the cores holding tokens answer.
//!
//! Token counting is what keeps TokenB correct when requests race. Here every request is
//! served whole when it is issued, and the simulator knows when the line's previous request
//! completes: a request issued before then races with it. Its transient broadcast finds the
//! tokens in flight, times out and is reissued; after a few tries it becomes a persistent
//! request through the home's arbiter (see [`TokenB`]'s `race`). The exact state of every
//! line stands for the tokens; what TokenB costs is its broadcasts: every miss is one multicast from the
//! requester to every other tile (each core looks it up), and the token holders answer: the
//! owner with the data, the other holders of a line to be written with their tokens, the home
//! with the data when no core owns the line. No directory lookup is on the path; every miss
//! occupies the whole network, which on a mesh slows everything near the traffic.

use super::home::Homes;
use super::{CoherenceProtocol, LineState, Request, Response};
use crate::config::{CoherenceConfig, MAX_CORES};
use crate::engine::time::Cycle;
use crate::network::{Network, Payload};
use crate::stats::CoherenceStats;

/// The TokenB protocol. See the module docs.
#[derive(Debug)]
pub struct TokenB {
    homes: Homes,
}

impl TokenB {
    /// A protocol instance for `cores` cores and `lines` memory lines.
    pub fn new(cores: usize, lines: usize, cfg: CoherenceConfig) -> Self {
        TokenB {
            homes: Homes::new(cores, lines, cfg),
        }
    }
}

impl TokenB {
    /// Where and when the broadcast that gets `req` its tokens starts. While the line's
    /// previous request is still completing, a transient request finds the tokens moving:
    /// it collects too few, times out (`tokenb_timeout`) and is broadcast again. After
    /// `tokenb_transient_tries` failures it becomes a persistent request: the home's arbiter
    /// activates it at every core (a broadcast from the home once the line is free), and every
    /// token goes to the requester; a deactivation broadcast follows.
    fn race(&mut self, req: Request, net: &mut Network) -> (usize, Cycle) {
        let (me, home) = (req.core, net.home(req.line));
        let (free, by) = self.homes.busy_until(req.line);
        if by == me {
            // The core's own earlier miss: the request waits for it (one miss register).
            return (me, req.now.max(free));
        }
        let peers = self.homes.cores as u64 - 1;
        let mut at = req.now;
        let mut tries = 0;
        while at < free {
            if tries == self.homes.cfg.tokenb_transient_tries {
                self.homes.stats.persistent_requests += 1;
                self.homes.stats.snoops += 2 * peers;
                let arbiter = net.send(me, home, Payload::Control, at).max(free);
                // Deactivation, once the requester has its tokens (off its path).
                net.send_each(home, net.others(home), Payload::Control, free, |_, _| {});
                return (home, arbiter);
            }
            self.homes.stats.transient_retries += 1;
            self.homes.stats.snoops += peers;
            net.send_each(me, net.others(me), Payload::Control, at, |_, _| {});
            at += self.homes.cfg.tokenb_timeout;
            tries += 1;
        }
        (me, at)
    }
}

impl CoherenceProtocol for TokenB {
    fn name(&self) -> &'static str {
        "tokenb"
    }

    super::line_table_queries!(homes);

    fn request(&mut self, req: Request, net: &mut Network) -> Response {
        let peers = self.homes.cores as u64 - 1;
        self.homes.stats.snoops += peers;
        let (me, home) = (req.core, net.home(req.line));
        let (origin, start) = self.race(req, net);
        let tr = self.homes.transition(req, false);
        let think = self.homes.cfg.cache_to_cache_latency;
        // The broadcast that succeeds: when it reaches each tile.
        let mut heard = [start; MAX_CORES];
        net.send_each(
            origin,
            net.others(origin),
            Payload::Control,
            start,
            |t, at| heard[t] = at,
        );
        let mut acks = req.now;
        let mut rest = tr.acknowledgers();
        while rest != 0 {
            let h = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            acks = acks.max(net.send(h, me, Payload::Control, heard[h] + think));
        }
        // The tokens no core holds are at the home, which hears the broadcast too.
        self.homes
            .complete(net, req, &tr, acks, heard[home], |_, o| heard[o])
    }

    fn evict(&mut self, core: usize, line: u64, now: Cycle, net: &mut Network) -> Cycle {
        self.homes.drop_copy(net, core, line, now);
        0
    }

    fn check_line(&self, line: u64) -> Result<(), String> {
        self.homes.lines.check(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coherence::{request_now, DataSource, RequestKind};
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

    #[test]
    fn a_racing_request_retries_then_persists() {
        let cfg = CoherenceConfig {
            tokenb_timeout: 10,
            tokenb_transient_tries: 2,
            ..CoherenceConfig::default()
        };
        let mut t = TokenB::new(4, 64, cfg);
        let net = &mut Network::new(&NetworkConfig::default(), 4, 64);
        let hop = NetworkConfig::default().ideal_latency;
        let at = |core, kind, now| Request {
            core,
            line: 3,
            kind,
            now,
            in_llc: true,
        };
        t.request(at(0, RequestKind::GetM, 0), net);
        t.settle(0, 3, 1000);
        // Core 1 asks at 100 while core 0's request completes at 1000: two transient tries
        // fail, then the home (tile 3) activates a persistent request once the line is free.
        let r = t.request(at(1, RequestKind::GetM, 100), net);
        assert_eq!(
            (t.stats().transient_retries, t.stats().persistent_requests),
            (2, 1)
        );
        // Activation from the home at 1000, core 0 answers with the data.
        let think = CoherenceConfig::default().cache_to_cache_latency;
        assert_eq!(r.source, DataSource::Peer(0));
        assert_eq!(100 + r.latency, 1000 + hop + think + hop);
        // A core's own earlier miss is no race: it waits for it, without retries.
        t.settle(1, 3, 2000);
        t.request(at(1, RequestKind::GetS, 1500), net);
        assert_eq!(t.stats().transient_retries, 2);
        t.check_line(3).unwrap();
    }
}
