//! A sparse directory: MESI kept by a set-associative directory at the home of each line,
//! inclusive of the private caches, with point-to-point messages instead of broadcasts.
//!
//! Every line some private cache holds has an entry naming its holders, so a request goes to
//! the home, which forwards it to the owner or invalidates exactly the sharers. The directory
//! is smaller than the private caches it covers can be (its size is a share of their lines,
//! `directory_coverage_pct`, the "SDE" of Flask's figures): a line that needs an entry when its
//! set is full takes the least recently used entry, and the line that entry tracked is
//! *recalled*: every private copy is invalidated (and a dirty one written back) before the
//! request goes on. Those recalls are what makes a small sparse directory slow, and they can
//! take a line from a running transaction, which then aborts as on any other eviction.
//!
//! Timing: every message crosses the network ([`crate::network`]): the request to the home,
//! `directory_latency` there, a forward to the owner or invalidations to the sharers (each
//! answering `cache_to_cache_latency` cycles after it hears), the data or acknowledgements
//! to the requester. A recall is a round of invalidations from the home that the request
//! waits for.

use super::lines::{Dropped, LineTable};
use super::{CoherenceProtocol, DataSource, LineState, Request, RequestKind, Response};
use crate::config::CoherenceConfig;
use crate::engine::time::Cycle;
use crate::network::{Network, Payload};
use crate::stats::CoherenceStats;

/// An empty directory way.
const EMPTY: u64 = u64::MAX;

/// A set-associative array of directory entries with LRU replacement: which lines have an
/// entry. Sparse directories and Flask's shared-block directory are both one.
#[derive(Debug)]
pub(crate) struct EntryArray {
    sets: usize,
    ways: usize,
    /// Per set and way: the line tracked, or [`EMPTY`].
    tags: Vec<u64>,
    /// Per set and way: when it was last used (for LRU).
    used: Vec<u64>,
    clock: u64,
}

impl EntryArray {
    /// `entries` entries (at least one set) of `ways` ways.
    pub fn new(entries: usize, ways: usize) -> Self {
        let ways = ways.max(1);
        let sets = (entries / ways).max(1);
        EntryArray {
            sets,
            ways,
            tags: vec![EMPTY; sets * ways],
            used: vec![0; sets * ways],
            clock: 0,
        }
    }

    /// Entries in all.
    pub fn len(&self) -> usize {
        self.sets * self.ways
    }

    fn set_of(&self, line: u64) -> usize {
        (line % self.sets as u64) as usize * self.ways
    }

    fn find(&self, line: u64) -> Option<usize> {
        let s = self.set_of(line);
        (s..s + self.ways).find(|&k| self.tags[k] == line)
    }

    /// Whether `line` has an entry.
    pub fn contains(&self, line: u64) -> bool {
        self.find(line).is_some()
    }

    /// Marks `line`'s entry used; false if it has none.
    pub fn touch(&mut self, line: u64) -> bool {
        self.clock += 1;
        match self.find(line) {
            Some(k) => {
                self.used[k] = self.clock;
                true
            }
            None => false,
        }
    }

    /// Gives `line` an entry (it has none), taking a free way or the least recently used
    /// one; returns the line whose entry was taken, if any.
    pub fn allocate(&mut self, line: u64) -> Option<u64> {
        self.clock += 1;
        let s = self.set_of(line);
        let k = (s..s + self.ways)
            .find(|&k| self.tags[k] == EMPTY)
            .unwrap_or_else(|| {
                (s..s + self.ways)
                    .min_by_key(|&k| self.used[k])
                    .unwrap_or(s)
            });
        let victim = (self.tags[k] != EMPTY).then_some(self.tags[k]);
        self.tags[k] = line;
        self.used[k] = self.clock;
        victim
    }

    /// The lines that have an entry.
    pub fn lines(&self) -> impl Iterator<Item = u64> + '_ {
        self.tags.iter().copied().filter(|&t| t != EMPTY)
    }

    /// Frees `line`'s entry, if it has one.
    pub fn free(&mut self, line: u64) {
        if let Some(k) = self.find(line) {
            self.tags[k] = EMPTY;
        }
    }
}

/// The sparse directory protocol. See the module docs.
#[derive(Debug)]
pub struct SparseDirectory {
    cfg: CoherenceConfig,
    lines: LineTable,
    entries: EntryArray,
    stats: CoherenceStats,
    /// The line the last request recalled, with its holders.
    recall: Option<(u64, u64)>,
}

impl SparseDirectory {
    /// A directory of `entries` entries (at least one set of `cfg.directory_ways` ways) for
    /// `cores` cores and `lines` memory lines.
    pub fn new(cores: usize, lines: usize, entries: usize, cfg: CoherenceConfig) -> Self {
        SparseDirectory {
            lines: LineTable::new(cores, lines),
            entries: EntryArray::new(entries, cfg.directory_ways as usize),
            stats: CoherenceStats::default(),
            recall: None,
            cfg,
        }
    }

    /// Directory entries.
    pub fn entries(&self) -> usize {
        self.entries.len()
    }

    /// Finds or allocates `line`'s entry at its home, looked up at `at`. Returns when the
    /// entry is ready, and the line recalled to make room with its holders, if any: the home
    /// invalidates every copy of it and waits for the acknowledgements (the dirty copy's with
    /// its data).
    fn entry(&mut self, net: &mut Network, line: u64, at: Cycle) -> (Cycle, Option<(u64, u64)>) {
        if self.entries.touch(line) {
            return (at, None);
        }
        let Some(victim) = self.entries.allocate(line) else {
            return (at, None);
        };
        let (holders, dirty) = self.lines.drop_all(victim);
        let n = u64::from(holders.count_ones());
        self.stats.directory_recalls += 1;
        self.stats.invalidations += n;
        self.stats.recall_invalidations += n;
        self.stats.snoops += n;
        self.stats.writebacks += u64::from(dirty);
        let home = net.home(line);
        let answer = if dirty {
            Payload::Data
        } else {
            Payload::Control
        };
        let think = self.cfg.cache_to_cache_latency;
        let ready = net.round(home, holders, at, think, home, answer);
        (ready, Some((victim, holders)))
    }
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

/// Decides and applies `req` (see [`Transition`]). With `sharers_supply` (a protocol whose
/// LLC is not inclusive), a line cached only as shared copies and missing from the LLC is
/// supplied by one of those copies, which holds its owner token; otherwise such a line comes
/// from the shared levels.
pub(crate) fn transition(
    lines: &mut LineTable,
    stats: &mut CoherenceStats,
    req: Request,
    sharers_supply: bool,
) -> Transition {
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

/// Serves `req` at its home, which knows the line's holders at `at_home`: a read is forwarded
/// to the owner (whose dirty data also goes home) or served by the shared levels; a write
/// invalidates exactly the other holders, which acknowledge to the requester; an upgrade
/// without other holders is granted by the home. A peer answers `think` cycles after a
/// message reaches it. Applies the transition (see [`transition`] for `sharers_supply`) and
/// sends its messages over `net`.
pub(crate) fn serve_at_home(
    lines: &mut LineTable,
    stats: &mut CoherenceStats,
    net: &mut Network,
    req: Request,
    at_home: Cycle,
    think: Cycle,
    sharers_supply: bool,
) -> Response {
    let tr = transition(lines, stats, req, sharers_supply);
    let (home, me) = (net.home(req.line), req.core);
    let acks = net.round(
        home,
        tr.acknowledgers(),
        at_home,
        think,
        me,
        Payload::Control,
    );
    let done = match tr.source {
        DataSource::Shared => {
            let acks = if tr.acknowledgers() == 0 {
                0
            } else {
                acks - req.now
            };
            return tr.response(at_home - req.now, acks);
        }
        DataSource::Peer(o) => {
            let heard = net.send(home, o, Payload::Control, at_home) + think;
            if tr.dirty {
                net.send(o, home, Payload::Data, heard);
            }
            net.send(o, me, Payload::Data, heard)
        }
        DataSource::None => net.send(home, me, Payload::Control, at_home),
    };
    tr.response(done.max(acks) - req.now, 0)
}

/// `core` drops its copy of `line` and tells the home at `now` (a writeback with the data if
/// it was dirty); true if no private copy is left.
pub(crate) fn drop_at_home(
    lines: &mut LineTable,
    stats: &mut CoherenceStats,
    net: &mut Network,
    core: usize,
    line: u64,
    now: Cycle,
) -> bool {
    let payload = match lines.drop_copy(core, line) {
        Dropped::Absent => return false,
        Dropped::Dirty => {
            stats.writebacks += 1;
            Payload::Data
        }
        Dropped::Clean => {
            stats.clean_evictions += 1;
            Payload::Control
        }
    };
    net.send(core, net.home(line), payload, now);
    lines.get(line).holders == 0
}

/// The time a request from `req.core` has been looked up at its line's home: the request's
/// trip there, a wait while the home is busy with the line's previous request (a blocking
/// directory holds racing requests back until the last one's requester has its data), and
/// `lookup` cycles.
pub(crate) fn at_home(
    net: &mut Network,
    lines: &LineTable,
    stats: &mut CoherenceStats,
    req: Request,
    lookup: Cycle,
) -> Cycle {
    let arrived = net.send(req.core, net.home(req.line), Payload::Control, req.now);
    let (free, _) = lines.busy_until(req.line);
    if free > arrived {
        stats.home_waits += 1;
        stats.home_wait_cycles += free - arrived;
    }
    arrived.max(free) + lookup
}

impl CoherenceProtocol for SparseDirectory {
    fn name(&self) -> &'static str {
        "sparse-directory"
    }

    super::line_table_queries!();

    fn request(&mut self, req: Request, net: &mut Network) -> Response {
        let looked_up = at_home(
            net,
            &self.lines,
            &mut self.stats,
            req,
            self.cfg.directory_latency,
        );
        let (ready, recalled) = self.entry(net, req.line, looked_up);
        let think = self.cfg.cache_to_cache_latency;
        let mut r = serve_at_home(
            &mut self.lines,
            &mut self.stats,
            net,
            req,
            ready,
            think,
            false,
        );
        r.recalled = recalled.is_some();
        self.recall = recalled;
        r
    }

    fn take_recalls(&mut self, into: &mut Vec<(u64, u64)>) {
        into.extend(self.recall.take());
    }

    fn evict(&mut self, core: usize, line: u64, now: Cycle, net: &mut Network) -> Cycle {
        if drop_at_home(&mut self.lines, &mut self.stats, net, core, line, now) {
            self.entries.free(line);
        }
        0
    }

    fn check_line(&self, line: u64) -> Result<(), String> {
        self.lines.check(line)?;
        if self.lines.get(line).holders != 0 && !self.entries.contains(line) {
            return Err(format!(
                "line {line} is cached but has no directory entry (the directory is inclusive)"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coherence::request_now as req;
    use crate::config::NetworkConfig;

    #[test]
    fn a_full_set_recalls_its_least_recently_used_line() {
        let cfg = CoherenceConfig {
            directory_ways: 2,
            ..CoherenceConfig::default()
        };
        // One set of two ways.
        let mut d = SparseDirectory::new(4, 64, 2, cfg.clone());
        let hop = NetworkConfig::default().ideal_latency;
        let net = &mut Network::new(&NetworkConfig::default(), 4, 64);
        assert!(!d.request(req(0, 1, RequestKind::GetS), net).recalled);
        assert!(!d.request(req(1, 1, RequestKind::GetS), net).recalled);
        let r = d.request(req(2, 2, RequestKind::GetM), net);
        assert_eq!((r.recalled, r.latency), (false, cfg.directory_latency));
        // (Lines 2 and 3 have their home on their requester's tile: no trip there.)
        // Line 1 was used least recently: the third line takes its entry, from both sharers,
        // and waits for their acknowledgements.
        let r = d.request(req(3, 3, RequestKind::GetS), net);
        let mut recalls = Vec::new();
        d.take_recalls(&mut recalls);
        assert_eq!((r.recalled, recalls), (true, vec![(1, 0b11)]));
        assert_eq!(
            r.latency,
            cfg.directory_latency + hop + cfg.cache_to_cache_latency + hop
        );
        assert_eq!(d.state(0, 1), LineState::Invalid);
        assert_eq!(d.stats().recall_invalidations, 2);
        for line in 0..4 {
            d.check_line(line).unwrap();
        }
        // Evicting the last copy frees the entry: no recall for the next line.
        d.evict(3, 3, 0, net);
        assert!(!d.request(req(0, 5, RequestKind::GetS), net).recalled);
        // A write invalidates exactly the other holders.
        d.request(req(1, 5, RequestKind::GetS), net);
        let r = d.request(req(2, 5, RequestKind::GetM), net);
        assert_eq!(r.invalidated, 0b11);
        assert_eq!(d.state(2, 5), LineState::Modified);
    }

    #[test]
    fn the_home_holds_a_racing_request_until_the_last_one_completes() {
        let cfg = CoherenceConfig::default();
        let mut d = SparseDirectory::new(4, 64, 64, cfg.clone());
        let net = &mut Network::new(&NetworkConfig::default(), 4, 64);
        let hop = NetworkConfig::default().ideal_latency;
        let at = |core, now| Request {
            core,
            line: 2,
            kind: RequestKind::GetM,
            now,
            in_llc: true,
        };
        d.request(at(0, 0), net);
        d.settle(0, 2, 500);
        // Core 1's request reaches the home (tile 2) at 108 and waits there until 500.
        let r = d.request(at(1, 100), net);
        assert_eq!(
            (d.stats().home_waits, d.stats().home_wait_cycles),
            (1, 500 - 100 - hop)
        );
        let think = cfg.cache_to_cache_latency;
        assert_eq!(
            100 + r.latency,
            500 + cfg.directory_latency + hop + think + hop
        );
    }
}
