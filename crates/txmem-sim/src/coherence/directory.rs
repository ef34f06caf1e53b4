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

use super::home::Homes;
use super::{CoherenceProtocol, LineState, Request, Response};
use crate::config::CoherenceConfig;
use crate::engine::time::Cycle;
use crate::network::Network;
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
    homes: Homes,
    entries: EntryArray,
    /// The line the last request recalled, with its holders.
    recall: Option<(u64, u64)>,
}

impl SparseDirectory {
    /// A directory of `entries` entries (at least one set of `cfg.directory_ways` ways) for
    /// `cores` cores and `lines` memory lines.
    pub fn new(cores: usize, lines: usize, entries: usize, cfg: CoherenceConfig) -> Self {
        SparseDirectory {
            entries: EntryArray::new(entries, cfg.directory_ways as usize),
            recall: None,
            homes: Homes::new(cores, lines, cfg),
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
        let (holders, ready) = self.homes.recall(net, victim, net.home(line), at);
        let n = u64::from(holders.count_ones());
        self.homes.stats.directory_recalls += 1;
        self.homes.stats.recall_invalidations += n;
        self.homes.stats.snoops += n;
        (ready, Some((victim, holders)))
    }
}

impl CoherenceProtocol for SparseDirectory {
    fn name(&self) -> &'static str {
        "sparse-directory"
    }

    super::line_table_queries!(homes);

    fn request(&mut self, req: Request, net: &mut Network) -> Response {
        let looked_up = self.homes.arrive(net, req);
        let (ready, recalled) = self.entry(net, req.line, looked_up);
        let mut r = self.homes.serve(net, req, ready, false);
        r.recalled = recalled.is_some();
        self.recall = recalled;
        r
    }

    fn take_recalls(&mut self, into: &mut Vec<(u64, u64)>) {
        into.extend(self.recall.take());
    }

    fn evict(&mut self, core: usize, line: u64, now: Cycle, net: &mut Network) -> Cycle {
        if self.homes.drop_copy(net, core, line, now) {
            self.entries.free(line);
        }
        0
    }

    fn check_line(&self, line: u64) -> Result<(), String> {
        self.homes.lines.check(line)?;
        if self.homes.lines.get(line).holders != 0 && !self.entries.contains(line) {
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
    use crate::coherence::RequestKind;
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
