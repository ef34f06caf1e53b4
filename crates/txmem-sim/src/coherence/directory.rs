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
//! Timing: a request costs `directory_latency` at the home; a forward to an owner or a round
//! of invalidations costs `cache_to_cache_latency`; a recall costs one more invalidation
//! round. The interconnect is not modelled as a shared resource here.

use super::lines::{Dropped, LineTable};
use super::{CoherenceProtocol, DataSource, LineState, Request, RequestKind, Response};
use crate::config::CoherenceConfig;
use crate::engine::time::Cycle;
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
}

impl SparseDirectory {
    /// A directory of `entries` entries (at least one set of `cfg.directory_ways` ways) for
    /// `cores` cores and `lines` memory lines.
    pub fn new(cores: usize, lines: usize, entries: usize, cfg: CoherenceConfig) -> Self {
        SparseDirectory {
            lines: LineTable::new(cores, lines),
            entries: EntryArray::new(entries, cfg.directory_ways as usize),
            stats: CoherenceStats::default(),
            cfg,
        }
    }

    /// Directory entries.
    pub fn entries(&self) -> usize {
        self.entries.len()
    }

    /// Finds or allocates `line`'s entry. Returns the line recalled to make room, with its
    /// holders, if any.
    fn entry(&mut self, line: u64) -> Option<(u64, u64)> {
        if self.entries.touch(line) {
            return None;
        }
        let victim = self.entries.allocate(line)?;
        let (holders, dirty) = self.lines.drop_all(victim);
        let n = u64::from(holders.count_ones());
        self.stats.directory_recalls += 1;
        self.stats.invalidations += n;
        self.stats.recall_invalidations += n;
        self.stats.snoops += n;
        // An invalidation and an acknowledgement per copy; the dirty data goes home.
        self.stats.messages += 2 * n + u64::from(dirty);
        self.stats.writebacks += u64::from(dirty);
        Some((victim, holders))
    }
}

/// Serves `req` at its home once the home knows the line's holders, point to point: a read
/// is forwarded to the owner (whose dirty data also goes home) or served by the shared
/// levels; a write invalidates exactly the other holders. Applies the transition and counts
/// the messages. The response's latency is what this adds to the home's own: a forward or an
/// invalidation round costs `round`.
pub(crate) fn serve_at_home(
    lines: &mut LineTable,
    stats: &mut CoherenceStats,
    req: Request,
    round: Cycle,
) -> Response {
    let me = 1u64 << req.core;
    let l = lines.get(req.line);
    let others = l.holders & !me;
    let owner = l.owner_other_than(req.core);
    let mut latency = 0;
    stats.messages += 1; // the request to the home
    let (source, invalidated, downgraded, granted) = match req.kind {
        RequestKind::GetS => {
            stats.get_s += 1;
            let source = match owner {
                Some(o) => {
                    // Forward, data to the requester (and home, if dirty).
                    stats.cache_to_cache += 1;
                    stats.snoops += 1;
                    stats.messages += 2 + u64::from(l.dirty);
                    stats.writebacks += u64::from(l.dirty);
                    latency += round;
                    DataSource::Peer(o)
                }
                None => {
                    stats.from_shared += 1;
                    stats.messages += 1;
                    DataSource::Shared
                }
            };
            let granted = lines.grant_read(req.core, req.line);
            (source, 0, owner.map_or(0, |o| 1u64 << o), granted)
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
            stats.messages += 2 * n;
            if n > 0 {
                latency += round;
            }
            let source = if upgrade {
                DataSource::None
            } else if let Some(o) = owner {
                stats.cache_to_cache += 1;
                stats.messages += 1;
                DataSource::Peer(o)
            } else {
                stats.from_shared += 1;
                stats.messages += 1;
                DataSource::Shared
            };
            lines.grant_write(req.core, req.line);
            (source, others, 0, LineState::Modified)
        }
    };
    Response {
        latency,
        source,
        invalidated,
        downgraded,
        granted,
        recalled: None,
    }
}

/// `core` drops its copy of `line` and tells the home (a writeback if it was dirty); true if
/// no private copy is left.
pub(crate) fn drop_at_home(
    lines: &mut LineTable,
    stats: &mut CoherenceStats,
    core: usize,
    line: u64,
) -> bool {
    match lines.drop_copy(core, line) {
        Dropped::Absent => return false,
        Dropped::Dirty => stats.writebacks += 1,
        Dropped::Clean => stats.clean_evictions += 1,
    }
    stats.messages += 1;
    lines.get(line).holders == 0
}

impl CoherenceProtocol for SparseDirectory {
    fn name(&self) -> &'static str {
        "sparse-directory"
    }

    super::line_table_queries!();

    fn request(&mut self, req: Request) -> Response {
        let recalled = self.entry(req.line);
        let mut r = serve_at_home(
            &mut self.lines,
            &mut self.stats,
            req,
            self.cfg.cache_to_cache_latency,
        );
        r.latency += self.cfg.directory_latency;
        if recalled.is_some() {
            r.latency += self.cfg.cache_to_cache_latency;
        }
        r.recalled = recalled;
        r
    }

    fn evict(&mut self, core: usize, line: u64, _now: Cycle) -> Cycle {
        if drop_at_home(&mut self.lines, &mut self.stats, core, line) {
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

    #[test]
    fn a_full_set_recalls_its_least_recently_used_line() {
        let cfg = CoherenceConfig {
            directory_ways: 2,
            ..CoherenceConfig::default()
        };
        // One set of two ways.
        let mut d = SparseDirectory::new(4, 64, 2, cfg.clone());
        assert_eq!(d.request(req(0, 1, RequestKind::GetS)).recalled, None);
        assert_eq!(d.request(req(1, 1, RequestKind::GetS)).recalled, None);
        let r = d.request(req(2, 2, RequestKind::GetM));
        assert_eq!((r.recalled, r.latency), (None, cfg.directory_latency));
        // Line 1 was used least recently: the third line takes its entry, from both sharers.
        let r = d.request(req(3, 3, RequestKind::GetS));
        assert_eq!(r.recalled, Some((1, 0b11)));
        assert_eq!(
            r.latency,
            cfg.directory_latency + cfg.cache_to_cache_latency
        );
        assert_eq!(d.state(0, 1), LineState::Invalid);
        assert_eq!(d.stats().recall_invalidations, 2);
        for line in 0..4 {
            d.check_line(line).unwrap();
        }
        // Evicting the last copy frees the entry: no recall for the next line.
        d.evict(3, 3, 0);
        assert_eq!(d.request(req(0, 5, RequestKind::GetS)).recalled, None);
        // A write invalidates exactly the other holders.
        d.request(req(1, 5, RequestKind::GetS));
        let r = d.request(req(2, 5, RequestKind::GetM));
        assert_eq!(r.invalidated, 0b11);
        assert_eq!(d.state(2, 5), LineState::Modified);
    }
}
