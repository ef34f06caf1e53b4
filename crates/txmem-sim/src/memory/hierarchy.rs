//! Per-core private caches (L1, optional L2), the shared last-level cache, main memory, the
//! coherence protocol that keeps the private caches consistent, and the on-chip network its
//! messages cross.
//!
//! The L2 either includes the L1 or is its victim cache (`l2.exclusive`). The last-level
//! cache is banked by line address and holds what the private caches evict; whether a line
//! read from memory is also kept there is the protocol's choice
//! ([`CoherenceProtocol::llc_allocates_on_fill`]). A line read from the shared levels is read
//! at its home tile and sent to the requester over the network; one read from memory goes
//! from the home to the line's memory controller, which sends the data to the requester.

use super::cache::{BankedCache, SetAssocCache};
use crate::coherence::{CoherenceProtocol, DataSource, LineState, Protocol, Request, RequestKind};
use crate::config::{ProtocolKind, SimConfig};
use crate::engine::per_core::PerCore;
use crate::engine::time::Cycle;
use crate::network::{Network, Payload};
use crate::stats::CacheStats;

/// Result of one access to the hierarchy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccessResult {
    /// Cycles until the data (and permission) is available.
    pub latency: Cycle,
    /// Lines that left the requester's L1 or L2 for capacity (0, 1 or 2 of them).
    pub evicted: [u64; 2],
    /// How many entries of `evicted` are valid.
    pub n_evicted: usize,
    /// Bit `k` set: `evicted[k]` left every private cache of the core (an L2 victim, or an
    /// L1 victim when there is no L2), not just the L1.
    pub left_core: u8,
    /// Bit mask of peer cores whose copy was invalidated.
    pub invalidated: u64,
    /// The protocol recalled lines from every private cache ([`Hierarchy::recalls`] lists
    /// them with the cores that lost them).
    pub recalled: bool,
}

impl AccessResult {
    /// The evicted lines that matter to transactions tracked in the L2 (`l2`) or the L1.
    pub fn tracked_victims(&self, l2: bool) -> impl Iterator<Item = u64> + '_ {
        (0..self.n_evicted)
            .filter(move |&k| !l2 || self.left_core & (1 << k) != 0)
            .map(|k| self.evicted[k])
    }
}

/// The whole cache hierarchy of the machine.
pub struct Hierarchy {
    l1: PerCore<SetAssocCache>,
    l1_latency: Cycle,
    l2: Option<Vec<SetAssocCache>>,
    l2_latency: Cycle,
    l2_exclusive: bool,
    llc: BankedCache,
    llc_latency: Cycle,
    llc_fill: bool,
    memory_latency: Cycle,
    /// The coherence protocol.
    pub proto: Protocol,
    /// The network the protocol's messages cross.
    pub net: Network,
    /// The lines the latest access recalled (when its result says so), with the cores that
    /// held them.
    pub recalls: Vec<(u64, u64)>,
    /// Hit and miss counters.
    pub stats: CacheStats,
}

impl std::fmt::Debug for Hierarchy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hierarchy")
            .field("protocol", &self.proto.name())
            .field("stats", &self.stats)
            .finish()
    }
}

fn cache(size: u64, ways: u32, line: u64) -> SetAssocCache {
    SetAssocCache::new((size / line) as usize, ways as usize)
}

impl Hierarchy {
    /// Builds the hierarchy described by a validated configuration.
    pub fn new(cfg: &SimConfig) -> Self {
        let lb = cfg.line_bytes;
        let lines = (cfg.memory_bytes / lb) as usize;
        // The directories cover what the private caches can hold: the outermost level, and
        // the L1 too beside an exclusive L2.
        let bytes = match (cfg.l2.enabled, cfg.l2.exclusive) {
            (false, _) => cfg.l1.size_bytes,
            (true, false) => cfg.l2.cache.size_bytes,
            (true, true) => cfg.l2.cache.size_bytes + cfg.l1.size_bytes,
        };
        let private_lines = cfg.cores * (bytes / lb) as usize;
        let proto = Protocol::new(&cfg.coherence, cfg.cores, lines, private_lines);
        let net = match cfg.coherence.protocol {
            ProtocolKind::MesiSnooping => Network::free(cfg.cores),
            _ => Network::new(&cfg.network, cfg.cores, lb),
        };
        Hierarchy {
            llc_fill: proto.llc_allocates_on_fill(),
            net,
            recalls: Vec::new(),
            l1: PerCore::new(
                cfg.cores,
                |_| cache(cfg.l1.size_bytes, cfg.l1.ways, lb),
                || SetAssocCache::new(1, 1),
            ),
            l1_latency: cfg.l1.latency,
            l2: cfg.l2.enabled.then(|| {
                (0..cfg.cores)
                    .map(|_| cache(cfg.l2.cache.size_bytes, cfg.l2.cache.ways, lb))
                    .collect()
            }),
            l2_latency: cfg.l2.cache.latency,
            l2_exclusive: cfg.l2.exclusive,
            llc: BankedCache::new(
                (cfg.llc.size_bytes / lb) as usize,
                cfg.llc.ways as usize,
                cfg.llc_banks as usize,
            ),
            llc_latency: cfg.llc.latency,
            memory_latency: cfg.memory_latency,
            proto,
            stats: CacheStats::default(),
        }
    }

    /// Latency of an access that must go all the way to memory (used for overflowed lines).
    pub fn memory_path_latency(&self) -> Cycle {
        self.l1_latency + self.llc_latency + self.memory_latency
    }

    /// Whether `core`'s L1 holds `line`.
    pub fn l1_contains(&self, core: usize, line: u64) -> bool {
        self.l1[core].contains(line)
    }

    /// Performs an access by `core` to `line` at time `now`, moving lines and coherence
    /// permissions as needed, and returns its latency and the lines it pushed out of the L1.
    #[inline(always)]
    pub fn access(&mut self, core: usize, line: u64, write: bool, now: Cycle) -> AccessResult {
        let st = self.proto.state(core, line);
        let permitted = if write { st.writable() } else { st.readable() };
        // The lookup refreshes the line's LRU position even when it lacks the permission.
        if self.l1[core].touch(line) && permitted {
            self.stats.l1.hits += 1;
            if write && st == LineState::Exclusive {
                self.proto.silent_upgrade(core, line);
            }
            return AccessResult {
                latency: self.l1_latency,
                ..AccessResult::default()
            };
        }
        let res = self.l1_miss(core, line, write, now, st, permitted);
        self.stats.miss_cycles += res.latency;
        res
    }

    /// The rest of [`Hierarchy::access`] after an L1 miss (or a hit without permission).
    #[inline(never)]
    fn l1_miss(
        &mut self,
        core: usize,
        line: u64,
        write: bool,
        now: Cycle,
        st: LineState,
        permitted: bool,
    ) -> AccessResult {
        let mut res = AccessResult {
            latency: self.l1_latency,
            ..AccessResult::default()
        };
        self.stats.l1.misses += 1;
        if let Some(l2) = &mut self.l2 {
            res.latency += self.l2_latency;
            if l2[core].touch(line) && permitted {
                self.stats.l2.hits += 1;
                if self.l2_exclusive {
                    // The line moves up; the L1's victim takes its place.
                    l2[core].remove(line);
                }
                if write && st == LineState::Exclusive {
                    self.proto.silent_upgrade(core, line);
                }
                self.fill_l1(core, line, now, &mut res);
                return res;
            }
            self.stats.l2.misses += 1;
        }
        let kind = if !write {
            RequestKind::GetS
        } else if st == LineState::Shared {
            RequestKind::Upgrade
        } else {
            RequestKind::GetM
        };
        let asked = now + res.latency;
        let r = self.proto.request(
            Request {
                core,
                line,
                kind,
                now: asked,
                in_llc: self.llc.contains(line),
            },
            &mut self.net,
        );
        let mut offchip = false;
        let done = match r.source {
            DataSource::Shared => {
                let (data, memory) = self.read_shared(core, line, asked + r.latency);
                offchip = memory;
                data.max(asked + r.acks)
            }
            DataSource::Peer(_) => {
                // A dirty owner's data is written back to the shared level as it moves.
                if self.llc_fill {
                    self.llc.insert(line);
                }
                asked + r.latency
            }
            DataSource::None => asked + r.latency,
        };
        res.latency = done - now;
        self.proto.settle(core, line, done);
        if r.recalled {
            self.recalls.clear();
            self.proto.take_recalls(&mut self.recalls);
            for k in 0..self.recalls.len() {
                // Every copy of a recalled line goes (its dirty data went home).
                let (v, holders) = self.recalls[k];
                self.drop_private(holders, v);
                self.llc.insert(v);
            }
            res.recalled = true;
        }
        res.invalidated = r.invalidated;
        self.drop_private(r.invalidated, line);
        match &mut self.l2 {
            Some(l2) if self.l2_exclusive => {
                // An upgraded line held in the L2 moves up.
                l2[core].remove(line);
            }
            Some(l2) => {
                if let Some(v) = l2[core].insert(line) {
                    // Inclusive L2: the victim leaves the L1 as well.
                    if self.l1[core].remove(v) {
                        self.stats.l1_evictions += 1;
                    }
                    // Reported even when the L1 had dropped it already: a transaction may
                    // still track it there (`htm.tracked_in = l2`).
                    self.left_core(core, v, now, &mut res);
                }
            }
            None => {}
        }
        self.fill_l1(core, line, now, &mut res);
        if offchip {
            self.stats.offchip += 1;
            self.stats.offchip_cycles += res.latency;
        }
        res
    }

    /// Reads `line` for `core` from the shared levels, at its home from `at`: the LLC bank
    /// there, or memory through the line's controller. Returns when the data reaches the core,
    /// and whether it came from memory.
    fn read_shared(&mut self, core: usize, line: u64, at: Cycle) -> (Cycle, bool) {
        let home = self.net.home(line);
        let read = at + self.llc_latency;
        if self.llc.touch(line) {
            self.stats.llc.hits += 1;
            return (self.net.send(home, core, Payload::Data, read), false);
        }
        self.stats.llc.misses += 1;
        if self.llc_fill {
            self.llc.insert(line);
        }
        let controller = self.net.memory_tile(line);
        let asked = self.net.send(home, controller, Payload::Control, read);
        let data = self
            .net
            .send(controller, core, Payload::Data, asked + self.memory_latency);
        (data, true)
    }

    /// Removes `line` from the private caches of every core in the mask `cores`.
    fn drop_private(&mut self, cores: u64, line: u64) {
        let mut rest = cores;
        while rest != 0 {
            let d = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            self.l1[d].remove(line);
            if let Some(l2) = &mut self.l2 {
                l2[d].remove(line);
            }
        }
    }

    /// `v` left every private cache of `core`: the protocol is told and the LLC keeps it.
    fn left_core(&mut self, core: usize, v: u64, now: Cycle, res: &mut AccessResult) {
        res.evicted[res.n_evicted] = v;
        res.left_core |= 1 << res.n_evicted;
        res.n_evicted += 1;
        self.proto.evict(core, v, now, &mut self.net);
        self.llc.insert(v);
    }

    fn fill_l1(&mut self, core: usize, line: u64, now: Cycle, res: &mut AccessResult) {
        let Some(v) = self.l1[core].insert(line) else {
            return;
        };
        self.stats.l1_evictions += 1;
        match &mut self.l2 {
            None => self.left_core(core, v, now, res),
            Some(l2) if self.l2_exclusive => {
                // The victim goes down to the L2, which may push its own out of the core.
                res.evicted[res.n_evicted] = v;
                res.n_evicted += 1;
                if let Some(v2) = l2[core].insert(v) {
                    self.left_core(core, v2, now, res);
                }
            }
            Some(_) => {
                res.evicted[res.n_evicted] = v;
                res.n_evicted += 1;
            }
        }
    }

    /// Checks that caches and protocol agree about `line`: a private cache holds it exactly
    /// when the protocol says the core has a valid copy, and the protocol's own invariants.
    pub fn check_line(&self, line: u64) -> Result<(), String> {
        self.proto.check_line(line)?;
        let holders = self.proto.holders(line);
        for (c, l1) in self.l1.iter().enumerate() {
            let in_private =
                l1.contains(line) || self.l2.as_ref().is_some_and(|l2| l2[c].contains(line));
            if in_private != (holders & (1 << c) != 0) {
                return Err(format!(
                    "line {line}: core {c} private caches {} it but the protocol says {:?}",
                    if in_private { "hold" } else { "do not hold" },
                    self.proto.state(c, line)
                ));
            }
            if l1.contains(line) && !self.proto.state(c, line).readable() {
                return Err(format!("line {line}: core {c} L1 holds an invalid line"));
            }
        }
        Ok(())
    }

    /// Every line present in some private cache.
    pub fn private_lines(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.l1.iter().flat_map(|c| c.lines()).collect();
        if let Some(l2) = &self.l2 {
            v.extend(l2.iter().flat_map(|c| c.lines()));
        }
        v.sort_unstable();
        v.dedup();
        v
    }
}
