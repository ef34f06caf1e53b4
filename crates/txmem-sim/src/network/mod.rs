//! The on-chip network that point-to-point coherence protocols send their messages over.
//!
//! Tiles are numbered from 0; core `c` sits on tile `c`, and every line has a *home* tile
//! (`line % tiles`), where its directory entry and its last-level-cache bank live. Memory
//! controllers sit on tiles of their own choosing ([`Network::memory_tile`]).
//!
//! Two topologies:
//!
//! * **ideal** — every message takes `network.ideal_latency` cycles, whatever else is in
//!   flight: protocols compared by their message counts and rounds alone.
//! * **mesh** — a `mesh_width` x `mesh_height` mesh ([`mesh`]): routers and links are shared
//!   and occupied, so a broadcast-heavy protocol slows every message near its traffic. This
//!   is where TokenB's broadcasts cost what they cost.
//!
//! Virtual networks keep one message class (requests, forwards, responses) from waiting
//! behind another's in a router's buffers, which real routers need against protocol
//! deadlock. Links here are reserved rather than buffered, so no message ever holds a buffer
//! another waits for; every class shares the links' bandwidth, as the classes of a real
//! router do.
//!
//! MESI snooping keeps its own bus ([`crate::coherence::mesi`]) and sends nothing here.

mod links;
pub mod mesh;
pub mod settings;

use crate::config::{NetworkConfig, Topology};
use crate::engine::time::Cycle;
use crate::stats::NetworkStats;
use mesh::Mesh;

/// What a message carries, which sets its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// A request, forward, invalidation, acknowledgement or token count: a header.
    Control,
    /// A cache line and its header.
    Data,
}

/// The on-chip network: its topology, its tiles, and what crossed it.
#[derive(Debug)]
pub struct Network {
    mesh: Option<Mesh>,
    ideal_latency: Cycle,
    tiles: usize,
    memory_tiles: Vec<usize>,
    control_bytes: u64,
    data_bytes: u64,
    control_flits: u32,
    data_flits: u32,
    hop_cycles: Cycle,
    /// Whether sends are counted (not for the free network of MESI snooping).
    counted: bool,
    /// Traffic counters.
    pub stats: NetworkStats,
}

impl Network {
    /// The network `cfg` describes, for `cores` cores and `line_bytes`-byte lines.
    pub fn new(cfg: &NetworkConfig, cores: usize, line_bytes: u64) -> Self {
        let mesh = (cfg.topology == Topology::Mesh).then(|| {
            Mesh::new(
                cfg.mesh_width as usize,
                cfg.mesh_height as usize,
                cfg.router_latency,
                cfg.link_latency,
            )
        });
        let tiles = mesh.as_ref().map_or(cores, Mesh::tiles);
        let controllers = (cfg.memory_controllers as usize).clamp(1, tiles);
        let flits = |bytes: u64| bytes.div_ceil(cfg.link_bytes.max(1)).max(1) as u32;
        Network {
            mesh,
            ideal_latency: cfg.ideal_latency,
            tiles,
            // Spread over the tiles: the four corners of a 4x4 mesh for four controllers.
            memory_tiles: (0..controllers)
                .map(|k| {
                    if controllers == 1 {
                        0
                    } else {
                        k * (tiles - 1) / (controllers - 1)
                    }
                })
                .collect(),
            control_bytes: cfg.control_bytes,
            data_bytes: cfg.control_bytes + line_bytes,
            control_flits: flits(cfg.control_bytes),
            data_flits: flits(cfg.control_bytes + line_bytes),
            hop_cycles: cfg.router_latency + cfg.link_latency,
            counted: true,
            stats: NetworkStats::default(),
        }
    }

    /// A network that costs nothing and counts nothing: for MESI snooping, which has its own
    /// bus, and for unit tests.
    pub fn free(cores: usize) -> Self {
        let mut net = Network::new(
            &NetworkConfig {
                ideal_latency: 0,
                ..NetworkConfig::default()
            },
            cores,
            64,
        );
        net.counted = false;
        net
    }

    /// Tiles (the mesh's, or one per core).
    pub fn tiles(&self) -> usize {
        self.tiles
    }

    /// The home tile of `line`: its directory entry and last-level-cache bank.
    #[inline]
    pub fn home(&self, line: u64) -> usize {
        (line % self.tiles as u64) as usize
    }

    /// The tile of the memory controller that serves `line`.
    #[inline]
    pub fn memory_tile(&self, line: u64) -> usize {
        let n = self.memory_tiles.len() as u64;
        self.memory_tiles[((line / self.tiles as u64) % n) as usize]
    }

    /// Every tile but `tile`, as a mask.
    pub fn others(&self, tile: usize) -> u64 {
        let all = if self.tiles == 64 {
            u64::MAX
        } else {
            (1u64 << self.tiles) - 1
        };
        all & !(1u64 << tile)
    }

    fn size(&self, p: Payload) -> (u64, u32) {
        match p {
            Payload::Control => (self.control_bytes, self.control_flits),
            Payload::Data => (self.data_bytes, self.data_flits),
        }
    }

    /// Sends `payload` from tile `from` to every tile of the mask `to` at `at`; calls
    /// `arrived(tile, time)` for each. A message to one's own tile costs nothing.
    pub fn send_each(
        &mut self,
        from: usize,
        to: u64,
        payload: Payload,
        at: Cycle,
        mut arrived: impl FnMut(usize, Cycle),
    ) {
        let mut to = to;
        if to & (1 << from) != 0 {
            arrived(from, at);
            to &= !(1 << from);
        }
        if to == 0 {
            return;
        }
        let (bytes, flits) = self.size(payload);
        let (links, routers, contention) = match &mut self.mesh {
            None => {
                let mut rest = to;
                while rest != 0 {
                    let d = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    arrived(d, at + self.ideal_latency);
                }
                // One link and one router to each destination.
                let n = u64::from(to.count_ones());
                (n, n, 0)
            }
            Some(mesh) => {
                let hop = self.hop_cycles;
                let mut contention = 0;
                let width = mesh.width();
                let cost = mesh.send(from, to, flits, at, |d, t| {
                    let routers = mesh::routers_between(width, from, d);
                    let unloaded = at + routers * hop + Cycle::from(flits) - 1;
                    contention += t.saturating_sub(unloaded);
                    arrived(d, t);
                });
                (cost.links, cost.routers, contention)
            }
        };
        if !self.counted {
            return;
        }
        let s = &mut self.stats;
        s.messages += 1;
        s.deliveries += u64::from(to.count_ones());
        match payload {
            Payload::Control => s.control_bytes += bytes,
            Payload::Data => s.data_bytes += bytes,
        }
        s.flit_hops += u64::from(flits) * links;
        s.router_flits += u64::from(flits) * routers;
        s.contention_cycles += contention;
    }

    /// Sends `payload` from `from` to `to` at `at`; returns when it has arrived.
    #[inline]
    pub fn send(&mut self, from: usize, to: usize, payload: Payload, at: Cycle) -> Cycle {
        let mut when = at;
        self.send_each(from, 1 << to, payload, at, |_, t| when = t);
        when
    }

    /// A round: `from` sends a control message (an invalidation, a query) to every tile of
    /// `to` at `at`, and each, `think` cycles after it hears, answers `answer_to` with
    /// `answer`. Returns when the last answer has arrived (`at` if `to` is empty).
    pub fn round(
        &mut self,
        from: usize,
        to: u64,
        at: Cycle,
        think: Cycle,
        answer_to: usize,
        answer: Payload,
    ) -> Cycle {
        if to == 0 {
            return at;
        }
        let mut heard = [(0usize, 0 as Cycle); 64];
        let mut n = 0;
        self.send_each(from, to, Payload::Control, at, |d, t| {
            heard[n] = (d, t);
            n += 1;
        });
        heard[..n]
            .iter()
            .map(|&(d, t)| self.send(d, answer_to, answer, t + think))
            .max()
            .unwrap_or(at)
    }
}
