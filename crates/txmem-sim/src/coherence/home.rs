//! What the point-to-point protocols keep and do at a line's home: the state of every line,
//! the counters, and the steps they share (a request's trip to the home, the transition it
//! makes, the messages that serve it, a reconstruction of a line's holders, an eviction
//! notice). The sparse directory, Flask, MOSAIC and TokenB each hold a [`Homes`] and add what
//! is their own (a directory, a filter, a broadcast).

use super::lines::{Dropped, LineTable};
use super::{DataSource, LineState, Request, RequestKind, Response};
use crate::config::CoherenceConfig;
use crate::engine::time::Cycle;
use crate::network::{Network, Payload};
use crate::stats::CoherenceStats;

/// The homes of every line: their states and the protocol's counters and settings.
#[derive(Debug)]
pub(crate) struct Homes {
    pub cfg: CoherenceConfig,
    pub cores: usize,
    pub lines: LineTable,
    pub stats: CoherenceStats,
    /// Per line, when the latest request for it completes at its requester, and that
    /// requester: until then the line's home is busy with it (see [`Homes::busy_until`]).
    busy: Vec<(Cycle, u8)>,
}

/// What a request does to its line, decided where the line's holders are known (its home,
/// or every core for a broadcast): the data's source, the copies that go or drop to Shared,
/// the state granted. Applies it to `lines` and counts the request and the copies touched.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Transition {
    /// Where the data comes from.
    pub source: DataSource,
    /// Other holders whose copies go (a write), the supplying owner among them.
    pub invalidated: u64,
    /// The owner that drops to Shared (a read of a line held exclusively).
    pub downgraded: u64,
    /// State granted to the requester.
    pub granted: LineState,
    /// The supplying owner's copy was dirty: its data also goes home.
    pub dirty: bool,
}

impl Transition {
    /// The copies invalidated that do not supply the data: each only acknowledges.
    pub fn acknowledgers(&self) -> u64 {
        match self.source {
            DataSource::Peer(o) => self.invalidated & !(1u64 << o),
            _ => self.invalidated,
        }
    }

    /// The response to the hierarchy, with its timing.
    pub fn response(&self, latency: Cycle, acks: Cycle) -> Response {
        Response {
            latency,
            acks,
            source: self.source,
            invalidated: self.invalidated,
            downgraded: self.downgraded,
            granted: self.granted,
            recalled: false,
        }
    }
}

impl Homes {
    /// Every one of `lines` lines invalid in all of `cores` cores.
    pub fn new(cores: usize, lines: usize, cfg: CoherenceConfig) -> Self {
        Homes {
            cfg,
            cores,
            lines: LineTable::new(cores, lines),
            stats: CoherenceStats::default(),
            busy: vec![(0, 0); lines],
        }
    }

    /// When the latest request for `line` completes (0 if none is known), and which core
    /// made it.
    #[inline]
    pub fn busy_until(&self, line: u64) -> (Cycle, usize) {
        let (t, c) = self.busy[line as usize];
        (t, usize::from(c))
    }

    /// `core`'s request for `line` completes at `done`.
    #[inline]
    pub fn settle(&mut self, core: usize, line: u64, done: Cycle) {
        let b = &mut self.busy[line as usize];
        if done >= b.0 {
            *b = (done, core as u8);
        }
    }

    /// The time a request from `req.core` has been looked up at its line's home: the
    /// request's trip there, a wait while the home is busy with the line's previous request
    /// (a blocking directory holds racing requests back until the last one's requester has
    /// its data), and `directory_latency` cycles.
    pub fn arrive(&mut self, net: &mut Network, req: Request) -> Cycle {
        let arrived = net.send(req.core, net.home(req.line), Payload::Control, req.now);
        let (free, _) = self.busy_until(req.line);
        if free > arrived {
            self.stats.home_waits += 1;
            self.stats.home_wait_cycles += free - arrived;
        }
        arrived.max(free) + self.cfg.directory_latency
    }

    /// Decides and applies `req` (see [`Transition`]). With `sharers_supply` (a protocol
    /// whose LLC is not inclusive), a line cached only as shared copies and missing from the
    /// LLC is supplied by one of those copies, which holds its owner token; otherwise such a
    /// line comes from the shared levels.
    pub fn transition(&mut self, req: Request, sharers_supply: bool) -> Transition {
        let (lines, stats) = (&mut self.lines, &mut self.stats);
        let me = 1u64 << req.core;
        let l = lines.get(req.line);
        let others = l.holders & !me;
        let exclusive = l.owner_other_than(req.core);
        let owner = exclusive.or_else(|| {
            (sharers_supply && !req.in_llc && others != 0).then(|| others.trailing_zeros() as usize)
        });
        match req.kind {
            RequestKind::GetS => {
                stats.get_s += 1;
                let source = match owner {
                    Some(o) => {
                        stats.cache_to_cache += 1;
                        stats.snoops += 1;
                        stats.writebacks += u64::from(l.dirty);
                        DataSource::Peer(o)
                    }
                    None => {
                        stats.from_shared += 1;
                        DataSource::Shared
                    }
                };
                let granted = lines.grant_read(req.core, req.line);
                Transition {
                    source,
                    invalidated: 0,
                    downgraded: exclusive.map_or(0, |o| 1u64 << o),
                    granted,
                    dirty: owner.is_some() && l.dirty,
                }
            }
            RequestKind::GetM | RequestKind::Upgrade => {
                let upgrade = req.kind == RequestKind::Upgrade && l.holders & me != 0;
                if upgrade {
                    stats.upgrades += 1;
                } else {
                    stats.get_m += 1;
                }
                let n = u64::from(others.count_ones());
                stats.invalidations += n;
                stats.snoops += n;
                let source = if upgrade {
                    DataSource::None
                } else if let Some(o) = owner {
                    stats.cache_to_cache += 1;
                    DataSource::Peer(o)
                } else {
                    stats.from_shared += 1;
                    DataSource::Shared
                };
                lines.grant_write(req.core, req.line);
                Transition {
                    source,
                    invalidated: others,
                    downgraded: 0,
                    granted: LineState::Modified,
                    dirty: false,
                }
            }
        }
    }

    /// Serves `req` at its home, which knows the line's holders at `ready`: a read is
    /// forwarded to the owner (whose dirty data also goes home) or served by the shared
    /// levels; a write invalidates exactly the other holders, which acknowledge to the
    /// requester; an upgrade without other holders is granted by the home. A peer answers
    /// `cache_to_cache_latency` cycles after a message reaches it. Applies the transition
    /// (see [`Homes::transition`] for `sharers_supply`) and sends its messages over `net`.
    pub fn serve(
        &mut self,
        net: &mut Network,
        req: Request,
        ready: Cycle,
        sharers_supply: bool,
    ) -> Response {
        let tr = self.transition(req, sharers_supply);
        let think = self.cfg.cache_to_cache_latency;
        let home = net.home(req.line);
        let acks = net.round(
            home,
            tr.acknowledgers(),
            ready,
            think,
            req.core,
            Payload::Control,
        );
        self.complete(net, req, &tr, acks, ready, |net, o| {
            net.send(home, o, Payload::Control, ready)
        })
    }

    /// Completes `req` once its transition `tr` is decided: the last acknowledgement reaches
    /// the requester at `acks`; the home may act at `home_at`; `heard(net, o)` tells (sending
    /// what it must) when the supplying owner `o` hears of the request, which it answers
    /// `cache_to_cache_latency` cycles later with the data (and a writeback home if dirty).
    /// The shared levels' part of a read is left to the hierarchy.
    pub fn complete(
        &self,
        net: &mut Network,
        req: Request,
        tr: &Transition,
        acks: Cycle,
        home_at: Cycle,
        heard: impl FnOnce(&mut Network, usize) -> Cycle,
    ) -> Response {
        let (home, me) = (net.home(req.line), req.core);
        let done = match tr.source {
            DataSource::Shared => {
                let acks = if tr.acknowledgers() == 0 {
                    0
                } else {
                    acks - req.now
                };
                return tr.response(home_at - req.now, acks);
            }
            DataSource::Peer(o) => {
                let answer = heard(net, o) + self.cfg.cache_to_cache_latency;
                if tr.dirty {
                    net.send(o, home, Payload::Data, answer);
                }
                net.send(o, me, Payload::Data, answer)
            }
            DataSource::None => net.send(home, me, Payload::Control, home_at),
        };
        tr.response(done.max(acks) - req.now, 0)
    }

    /// A reconstruction of `req.line`'s `holders`, whose home is ready at `at`: a multicast
    /// to every core but the requester, each answering the home `cache_to_cache_latency`
    /// cycles after it hears. Counted as a true positive if some core holds the line.
    /// Returns when the last answer is in.
    pub fn reconstruct(
        &mut self,
        net: &mut Network,
        req: Request,
        holders: u64,
        at: Cycle,
    ) -> Cycle {
        let stats = &mut self.stats;
        stats.reconstructions += 1;
        stats.snoops += self.cores as u64 - 1;
        if holders == 0 {
            stats.multicasts_false += 1;
        } else {
            stats.multicasts_true += 1;
        }
        let everyone = if self.cores == 64 {
            u64::MAX
        } else {
            (1u64 << self.cores) - 1
        };
        let home = net.home(req.line);
        let to = everyone & !(1u64 << req.core);
        let think = self.cfg.cache_to_cache_latency;
        net.round(home, to, at, think, home, Payload::Control)
    }

    /// Takes `line` from every private cache: tile `from` invalidates each copy at `at`, and
    /// each answers it `cache_to_cache_latency` cycles after it hears (the dirty copy with its
    /// data). Counts the invalidations and the writeback. Returns the cores that held the line
    /// and when the last answer is in.
    pub fn recall(&mut self, net: &mut Network, line: u64, from: usize, at: Cycle) -> (u64, Cycle) {
        let (holders, dirty) = self.lines.drop_all(line);
        self.stats.invalidations += u64::from(holders.count_ones());
        self.stats.writebacks += u64::from(dirty);
        let answer = if dirty {
            Payload::Data
        } else {
            Payload::Control
        };
        let think = self.cfg.cache_to_cache_latency;
        (holders, net.round(from, holders, at, think, from, answer))
    }

    /// `core` drops its copy of `line` and tells the home at `now` (a writeback with the data
    /// if it was dirty); true if no private copy is left.
    pub fn drop_copy(&mut self, net: &mut Network, core: usize, line: u64, now: Cycle) -> bool {
        let payload = match self.lines.drop_copy(core, line) {
            Dropped::Absent => return false,
            Dropped::Dirty => {
                self.stats.writebacks += 1;
                Payload::Data
            }
            Dropped::Clean => {
                self.stats.clean_evictions += 1;
                Payload::Control
            }
        };
        net.send(core, net.home(line), payload, now);
        self.lines.get(line).holders == 0
    }
}
