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
//!   round. A read of a line that is cached only as clean shared copies and is in the LLC
//!   needs no reconstruction: in the seed's token counting the LLC then holds its owner token
//!   and answers it (its "resolved by the LLC" case), and it gets no entry.
//!
//! The LLC is not inclusive: a line read from memory goes to the requester only and reaches
//! the LLC when the private caches evict it. A shared line the LLC lacks is supplied by one
//! of its private copies (the owner token's holder) rather than read from memory again.
//!
//! The line leaves the filter when its last private copy goes.
//!
//! **Storage.** The controller has the SRAM of `directory_coverage_pct` (the seed's SDE) of a
//! sparse directory's entries, as sets of [`UNITS`] units; each unit is a directory way or a
//! filter sub-table of as many buckets as there are sets (`flask_split` of them
//! ways, half by default). A small budget therefore means a small filter too: at 5% SDE on
//! 16 cores it has a few thousand cells for tens of thousands of private lines.
//!
//! **Saturation.** An insert that leaves a counter at its maximum, or finds every candidate
//! bucket full, empties the bucket concerned first: every other line it records is recalled
//! from the private caches (invalidated, a dirty copy written back), as the seed invalidates
//! the private-cache sets mapped onto that portion of the filter. Transactions that tracked a
//! recalled line abort, as on any eviction. The seed reports this never happened in its runs;
//! here it is counted (`filter_saturations`, `filter_overflows`, `filter_invalidations`).
//!
//! **Adaptive split** (`flask_split = "adaptive"`). Every 4,096 requests the controller looks at the
//! epoch: if the filter had to recall lines, a directory way becomes a filter sub-table;
//! otherwise, if the directory lost entries and more reconstructions found holders than not
//! (the shared working set does not fit) and the smaller filter would stay at most 3/4 full,
//! a sub-table becomes a way; if the directory lost none and false positives outnumber true
//! reconstructions (the data are private and the filter is too small), a way becomes a
//! sub-table. At least one of each stays. The directory keeps the entries that fit its new
//! shape (losing one invalidates nothing); the filter is rebuilt from its members, which the
//! seed can do in hardware since its permutations are invertible. The seed describes this
//! policy but evaluated only static per-class splits.
//!
//! The seed counts tokens for correctness; here the exact state of every line is known, so
//! tokens only show up as the messages they cost. "On chip" means in some private cache.
//!
//! Timing: as [`super::directory::SparseDirectory`] (the trip to the home and a lookup there;
//! a forward or an invalidation round), plus the reconstruction's round: a multicast from the
//! home to every other core and an answer from each.

use super::directory::EntryArray;
use super::dlcbf::{Dlcbf, DlcbfConfig, Inserted};
use super::home::Homes;
use super::{CoherenceProtocol, LineState, Request, RequestKind, Response};
use crate::config::{CoherenceConfig, FlaskSplit};
use crate::engine::time::Cycle;
use crate::network::Network;
use crate::stats::CoherenceStats;

/// Storage units per directory set: each is a directory way or a filter sub-table (of as
/// many buckets as the directory has sets), which cost about the same SRAM (seed §IV.B).
pub const UNITS: u32 = 8;

/// Requests between two decisions of the adaptive split.
const EPOCH: u64 = 4096;

/// The Flask protocol. See the module docs.
#[derive(Debug)]
pub struct Flask {
    homes: Homes,
    /// Sets of the controller's storage (directory sets, filter buckets per sub-table).
    sets: usize,
    /// Units given to the directory (ways); the rest are filter sub-tables.
    directory_units: u32,
    /// Entries of actively shared lines (not inclusive).
    shared: EntryArray,
    filter: Dlcbf,
    /// Per filter bucket, the lines on chip it records: what the seed's hardware finds by the
    /// private-cache sets a filter portion covers, when it must empty it.
    members: Vec<Vec<u64>>,
    /// Lines recalled by the latest request, with their holders.
    recalls: Vec<(u64, u64)>,
    /// The counters at the start of the adaptive split's epoch.
    epoch_start: EpochCounts,
    requests: u64,
}

impl Flask {
    /// A Flask controller for `cores` cores and `lines` memory lines, with the storage of
    /// `entries` sparse-directory entries (the SDE budget): `entries / 8` sets of
    /// [`UNITS`] units, `cfg.flask_split` of them directory ways and the rest
    /// sub-tables of a d-left filter (c = 8 cells of r = 9-bit remainders and 3-bit
    /// counters per bucket, the seed's choice), with a power-of-two number of buckets near the
    /// set count.
    pub fn new(cores: usize, lines: usize, entries: usize, cfg: CoherenceConfig) -> Self {
        let sets = (entries / UNITS as usize).max(1);
        let units = cfg.flask_split.initial_ways().clamp(1, UNITS - 1);
        Flask {
            shared: EntryArray::new(sets * units as usize, units as usize),
            filter: filter(sets, UNITS - units),
            members: Vec::new(),
            sets,
            directory_units: units,
            recalls: Vec::new(),
            epoch_start: EpochCounts::default(),
            requests: 0,
            homes: Homes::new(cores, lines, cfg),
        }
    }

    /// Directory ways now (the adaptive split changes them).
    pub fn directory_units(&self) -> u32 {
        self.directory_units
    }

    /// Records that `line` came on chip. An insert that fails or leaves a counter at its
    /// maximum empties the bucket concerned first: every other line it records is recalled
    /// from the private caches (the seed invalidates the private-cache sets that map to that
    /// portion of the filter), and its invalidations are sent from `home` at `at`.
    fn arrived(&mut self, line: u64, net: &mut Network, home: usize, at: Cycle) {
        let bucket = loop {
            match self.filter.insert_into(line) {
                (Inserted::Ok, Some(bucket)) => break bucket,
                (Inserted::Saturated, _) => {
                    self.homes.stats.filter_saturations += 1;
                    self.filter.remove(line).expect("just inserted");
                }
                _ => self.homes.stats.filter_overflows += 1,
            }
            let bucket = self.filter.blocking_bucket(line);
            self.empty_bucket(bucket, net, home, at);
        };
        if self.members.len() <= bucket {
            self.members.resize_with(bucket + 1, Vec::new);
        }
        self.members[bucket].push(line);
    }

    /// Recalls every line `bucket` records.
    fn empty_bucket(&mut self, bucket: usize, net: &mut Network, home: usize, at: Cycle) {
        let victims = self.members.get_mut(bucket).map(std::mem::take);
        for v in victims.unwrap_or_default() {
            // Off the request's path: the controller does not wait for the answers.
            let (holders, _) = self.homes.recall(net, v, home, at);
            self.homes.stats.filter_invalidations += u64::from(holders.count_ones());
            // The bucket's list is taken already: only the filter and directory forget it.
            self.shared.free(v);
            self.filter.remove(v).expect("a member is in the filter");
            self.recalls.push((v, holders));
        }
    }

    /// Records that `line`'s last private copy left.
    fn left(&mut self, line: u64) {
        self.shared.free(line);
        // A member's record is in the one bucket its hash's cell is in (the permutations are
        // bijections, so no other hash's cell matches it).
        let bucket = self
            .filter
            .remove(line)
            .expect("a line on chip is in the filter");
        let list = &mut self.members[bucket];
        let k = list
            .iter()
            .position(|&l| l == line)
            .expect("listed on arrival");
        list.swap_remove(k);
    }

    /// The adaptive split, once an epoch. A filter that had to recall lines (a saturated
    /// counter, full buckets) takes a directory way as a sub-table. Otherwise a directory
    /// that keeps losing entries of lines found shared again (true reconstructions, more
    /// than false ones) takes a sub-table as a way, if the filter left would stay at most
    /// 3/4 full (the seed's sizing load); and a directory that loses none while false
    /// positives outnumber true reconstructions gives a way to the filter.
    fn adapt(&mut self, net: &mut Network, home: usize, at: Cycle) {
        let now = EpochCounts::of(&self.homes.stats);
        let e = std::mem::replace(&mut self.epoch_start, now);
        let evicted = now.evicted - e.evicted;
        let truly = now.truly - e.truly;
        let falsely = now.falsely - e.falsely;
        let pressed = now.pressed - e.pressed;
        let ways = self.directory_units;
        let members = self.filter.len() as f64;
        let cells_left = f64::from(UNITS - ways - 1)
            * f64::from(self.filter.config().buckets)
            * f64::from(self.filter.config().cells);
        let units = if pressed > 0 && ways > 1 {
            ways - 1
        } else if pressed == 0
            && evicted > 0
            && truly > falsely
            && ways < UNITS - 1
            && members <= 0.75 * cells_left
        {
            ways + 1
        } else if evicted == 0 && falsely > truly && ways > 1 {
            ways - 1
        } else {
            return;
        };
        self.homes.stats.split_changes += 1;
        self.directory_units = units;
        // The directory keeps what fits in its new shape (losing entries invalidates nothing).
        let mut shared = EntryArray::new(self.sets * units as usize, units as usize);
        for line in self.shared.lines() {
            shared.allocate(line);
        }
        self.shared = shared;
        // The filter is rebuilt from its members (the seed moves them sub-table by
        // sub-table, which its invertible permutations allow).
        let mut members: Vec<u64> = self.members.drain(..).flatten().collect();
        members.sort_unstable();
        self.filter = filter(self.sets, UNITS - units);
        for line in members {
            if self.homes.lines.get(line).holders != 0 {
                self.arrived(line, net, home, at);
            }
        }
    }
}

/// The counters the adaptive split compares from one epoch to the next.
#[derive(Clone, Copy, Debug, Default)]
struct EpochCounts {
    evicted: u64,
    truly: u64,
    falsely: u64,
    pressed: u64,
}

impl EpochCounts {
    fn of(s: &CoherenceStats) -> Self {
        EpochCounts {
            evicted: s.directory_evictions,
            truly: s.multicasts_true,
            falsely: s.multicasts_false,
            pressed: s.filter_overflows + s.filter_saturations,
        }
    }
}

/// A d-left filter of `subtables` sub-tables with about `sets` buckets each (the seed's
/// cells, remainders and counters).
fn filter(sets: usize, subtables: u32) -> Dlcbf {
    // The power of two nearest the set count (by ratio).
    let low = 1usize << (usize::BITS - 1 - sets.leading_zeros());
    let buckets = if sets * sets >= 2 * low * low {
        2 * low
    } else {
        low
    };
    Dlcbf::new(DlcbfConfig {
        subtables,
        buckets: buckets as u32,
        ..DlcbfConfig::default()
    })
    .expect("a power-of-two bucket count is a valid filter")
}

impl CoherenceProtocol for Flask {
    fn name(&self) -> &'static str {
        "flask"
    }

    super::line_table_queries!(homes);

    fn request(&mut self, req: Request, net: &mut Network) -> Response {
        let l = self.homes.lines.get(req.line);
        let others = l.holders & !(1u64 << req.core);
        let mut ready = self.homes.arrive(net, req);
        let directory_miss = !self.shared.touch(req.line);
        self.homes.stats.filter_lookups += u64::from(directory_miss);
        // A read of a line cached only as clean shared copies and held by the LLC is served
        // there, since the LLC holds its owner token (the seed's "resolved by the LLC"): no
        // need to find the copies. Writes must find them all, and so must a read of a line
        // the LLC lacks (one of the copies holds the owner token and supplies it).
        let clean_shared_read = req.kind == RequestKind::GetS
            && req.in_llc
            && l.holders != 0
            && l.owner_other_than(req.core).is_none();
        if directory_miss && !clean_shared_read && self.filter.contains(req.line) {
            // Reconstruction: every other core answers the home, holder or not.
            ready = self.homes.reconstruct(net, req, l.holders, ready);
            if others != 0 {
                // Actively shared now: an entry (an evicted one invalidates nothing).
                if self.shared.allocate(req.line).is_some() {
                    self.homes.stats.directory_evictions += 1;
                }
            }
        }
        let mut r = self.homes.serve(net, req, ready, true);
        let home = net.home(req.line);
        self.recalls.clear();
        if l.holders == 0 {
            self.arrived(req.line, net, home, ready);
        }
        self.requests += 1;
        if self.homes.cfg.flask_split == FlaskSplit::ADAPTIVE && self.requests.is_multiple_of(EPOCH)
        {
            self.adapt(net, home, ready);
        }
        r.recalled = !self.recalls.is_empty();
        r
    }

    fn take_recalls(&mut self, into: &mut Vec<(u64, u64)>) {
        into.append(&mut self.recalls);
    }

    /// The seed's LLC is non-inclusive under Flask: a line read from memory goes to the
    /// requester only, and reaches the LLC when the private caches evict it.
    fn llc_allocates_on_fill(&self) -> bool {
        false
    }

    fn evict(&mut self, core: usize, line: u64, now: Cycle, net: &mut Network) -> Cycle {
        if self.homes.drop_copy(net, core, line, now) {
            self.left(line);
        }
        0
    }

    fn check_line(&self, line: u64) -> Result<(), String> {
        self.homes.lines.check(line)?;
        if self.homes.lines.get(line).holders != 0 && !self.filter.contains(line) {
            return Err(format!(
                "line {line} is cached but the filter misses it (a false negative)"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coherence::request_now as req;
    use crate::coherence::{DataSource, RequestKind};

    #[test]
    fn private_lines_skip_the_directory_and_shared_ones_get_an_entry() {
        let cfg = CoherenceConfig::default();
        let mut f = Flask::new(4, 1024, 64, cfg.clone());
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

    #[test]
    fn the_adaptive_split_gives_an_overloaded_directory_more_ways() {
        let cfg = CoherenceConfig {
            flask_split: FlaskSplit::ADAPTIVE,
            ..CoherenceConfig::default()
        };
        // 8 sets: 32 directory entries, 4 filter sub-tables of 8 buckets.
        let mut f = Flask::new(4, 4096, 64, cfg);
        let net = &mut Network::free(4);
        // 48 lines written by one core and read by another, over and over: 48 shared lines
        // do not fit 32 entries, so lines lose their entries and are found shared again.
        let mut n = 0;
        while n < 2 * EPOCH {
            for line in 0..48 {
                f.request(req(0, line, RequestKind::GetM), net);
                f.request(req(1, line, RequestKind::GetS), net);
                n += 2;
            }
        }
        assert!(f.directory_units() > 4, "{:?}", f.stats());
        assert!(f.stats().split_changes > 0);
        for line in 0..4096 {
            f.check_line(line).unwrap();
        }
    }
}
