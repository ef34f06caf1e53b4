//! Cache coherence behind a protocol trait.
//!
//! The private hierarchy of each core (L1 and optional L2) asks the protocol for permission
//! when it lacks it; the protocol answers with the time it costs, where the data comes from,
//! and which peer copies must be invalidated or downgraded. The protocol owns the coherence
//! state of every line and its counters. MESI snooping on a bus is [`mesi::MesiSnooping`];
//! the point-to-point protocols send their messages over the on-chip network
//! ([`crate::network`]), which times them: a sparse directory
//! [`directory::SparseDirectory`], Flask's shared-block directory and filter
//! [`flask::Flask`], MOSAIC [`mosaic::Mosaic`] and TokenB [`tokenb::TokenB`].
//! The hierarchy holds the configured protocol as a [`Protocol`] (an enum with one variant
//! per implementation), so its calls are direct and can be inlined.

pub mod directory;
pub mod dlcbf;
pub mod flask;
mod home;
mod lines;
pub mod mesi;
pub mod mosaic;
pub mod settings;
pub mod tokenb;

use crate::config::{CoherenceConfig, ProtocolKind};
use crate::engine::time::Cycle;
use crate::network::Network;
use crate::stats::CoherenceStats;

/// Stable state of a line in one core's private hierarchy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LineState {
    /// Not present.
    #[default]
    Invalid,
    /// Read-only, possibly shared.
    Shared,
    /// Read-write, clean, the only copy.
    Exclusive,
    /// Read-write, dirty, the only copy.
    Modified,
}

impl LineState {
    /// Whether a load may be served locally.
    #[inline]
    pub fn readable(self) -> bool {
        self != LineState::Invalid
    }

    /// Whether a store may be served locally (E upgrades to M silently).
    #[inline]
    pub fn writable(self) -> bool {
        matches!(self, LineState::Exclusive | LineState::Modified)
    }
}

/// What a core asks of the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// Read permission and data.
    GetS,
    /// Write permission and data.
    GetM,
    /// Write permission for a line held Shared (no data needed).
    Upgrade,
}

/// A coherence request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Requesting core.
    pub core: usize,
    /// Line number (address / line size).
    pub line: u64,
    /// What is asked.
    pub kind: RequestKind,
    /// Simulated time of the request.
    pub now: Cycle,
    /// Whether the last-level cache holds the line: under a non-inclusive LLC it may not,
    /// and then only a private copy can supply it.
    pub in_llc: bool,
}

/// Where the data of a response comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DataSource {
    /// No data moves (upgrade).
    #[default]
    None,
    /// A peer cache supplies the line.
    Peer(usize),
    /// The shared levels (LLC, then memory) supply the line; the hierarchy adds their latency.
    Shared,
}

/// The protocol's answer to a [`Request`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Response {
    /// Cycles from the request until the requester has the data and permission, every
    /// acknowledgement included. When `source` is [`DataSource::Shared`]: until the line's
    /// home may read it from the shared levels, which the hierarchy then times (and `acks`
    /// says when the acknowledgements are in).
    pub latency: Cycle,
    /// With [`DataSource::Shared`]: cycles from the request until the last invalidation
    /// acknowledgement reaches the requester (0 if none was needed).
    pub acks: Cycle,
    /// Where the data comes from.
    pub source: DataSource,
    /// Cores whose copies must be invalidated (bit per core).
    pub invalidated: u64,
    /// Cores whose copies drop to Shared (bit per core).
    pub downgraded: u64,
    /// State granted to the requester.
    pub granted: LineState,
    /// The protocol took lines from every private cache to make room in its bookkeeping (a
    /// sparse directory's evicted entry, the lines a Flask filter bucket covered);
    /// [`CoherenceProtocol::take_recalls`] lists them.
    pub recalled: bool,
}

/// A request at time 0, for the protocols' unit tests.
#[cfg(test)]
pub(crate) fn request_now(core: usize, line: u64, kind: RequestKind) -> Request {
    Request {
        core,
        line,
        kind,
        now: 0,
        in_llc: true,
    }
}

/// A cache-coherence protocol.
pub trait CoherenceProtocol {
    /// Short name, e.g. `"mesi-snooping"`.
    fn name(&self) -> &'static str;

    /// State of `line` in `core`'s private hierarchy.
    fn state(&self, core: usize, line: u64) -> LineState;

    /// Serves a request, updating the protocol state and counters; its messages go over
    /// `net`, which times them.
    fn request(&mut self, req: Request, net: &mut Network) -> Response;

    /// A store hit a line held Exclusive: it becomes Modified without traffic.
    fn silent_upgrade(&mut self, core: usize, line: u64);

    /// `core`'s private hierarchy dropped `line` for capacity; returns cycles the core waits
    /// (0 when the writeback is buffered). A notice or writeback goes over `net`.
    fn evict(&mut self, core: usize, line: u64, now: Cycle, net: &mut Network) -> Cycle;

    /// Whether a line filled from memory is also kept in the last-level cache (the default).
    /// A protocol whose LLC is non-inclusive keeps lines there only as the private caches
    /// evict them.
    fn llc_allocates_on_fill(&self) -> bool {
        true
    }

    /// `core`'s request for `line`, which the protocol answered last, completes at `done`
    /// (its data and acknowledgements in). Until then another request for the line races
    /// with it: a directory's home holds it back, another core's TokenB transient request
    /// fails.
    fn settle(&mut self, core: usize, line: u64, done: Cycle) {
        let _ = (core, line, done);
    }

    /// Moves the lines the last request recalled (see [`Response::recalled`]), each with the
    /// cores that held it, into `into`.
    fn take_recalls(&mut self, into: &mut Vec<(u64, u64)>) {
        let _ = into;
    }

    /// Traffic counters so far.
    fn stats(&self) -> &CoherenceStats;

    /// Checks the protocol invariants of `line`: at most one writer, or any number of readers.
    fn check_line(&self, line: u64) -> Result<(), String>;

    /// Bit mask of cores holding `line` in any valid state.
    fn holders(&self, line: u64) -> u64;
}

/// The [`CoherenceProtocol`] methods every protocol answers the same way, from its line table
/// and its counters: `self.lines` and `self.stats` (MESI snooping), or those of `self.homes`
/// (the point-to-point protocols, whose homes also learn when each request completes).
macro_rules! line_table_queries {
    () => {
        $crate::coherence::line_table_queries!(@queries);
    };
    // The point-to-point protocols: their `Homes` also learn when each request completes.
    (homes) => {
        $crate::coherence::line_table_queries!(@queries homes);

        fn settle(&mut self, core: usize, line: u64, done: Cycle) {
            self.homes.settle(core, line, done);
        }
    };
    (@queries $($field:ident)?) => {
        #[inline]
        fn state(&self, core: usize, line: u64) -> LineState {
            self$(.$field)?.lines.state(core, line)
        }

        fn silent_upgrade(&mut self, core: usize, line: u64) {
            self$(.$field)?.lines.silent_upgrade(core, line);
        }

        fn stats(&self) -> &CoherenceStats {
            &self$(.$field)?.stats
        }

        fn holders(&self, line: u64) -> u64 {
            self$(.$field)?.lines.get(line).holders
        }
    };
}
pub(crate) use line_table_queries;

/// The configured coherence protocol, one variant per implementation. It implements
/// [`CoherenceProtocol`] by dispatching to the variant: a `match` the compiler can inline
/// instead of a virtual call on every cache access.
#[derive(Debug)]
pub enum Protocol {
    /// MESI snooping on a serialized bus.
    MesiSnooping(mesi::MesiSnooping),
    /// MESI kept by a sparse, inclusive directory.
    SparseDirectory(directory::SparseDirectory),
    /// Flask: a directory of shared lines and a filter of lines on chip.
    Flask(flask::Flask),
    /// MOSAIC: a non-inclusive directory for every line, reconstructed by multicast.
    Mosaic(mosaic::Mosaic),
    /// TokenB: every miss broadcast, no directory.
    TokenB(tokenb::TokenB),
}

impl Protocol {
    /// The protocol `cfg` names, for `cores` cores and `lines` lines of memory.
    /// `private_lines` is how many lines the private caches hold together: the directories
    /// have `directory_coverage_pct` percent of that many entries.
    pub fn new(cfg: &CoherenceConfig, cores: usize, lines: usize, private_lines: usize) -> Self {
        let entries = private_lines.saturating_mul(cfg.directory_coverage_pct as usize) / 100;
        let c = cfg.clone();
        match cfg.protocol {
            ProtocolKind::MesiSnooping => {
                Protocol::MesiSnooping(mesi::MesiSnooping::new(cores, lines, c))
            }
            ProtocolKind::TokenB => Protocol::TokenB(tokenb::TokenB::new(cores, lines, c)),
            ProtocolKind::Flask => Protocol::Flask(flask::Flask::new(cores, lines, entries, c)),
            ProtocolKind::Mosaic => Protocol::Mosaic(mosaic::Mosaic::new(cores, lines, entries, c)),
            ProtocolKind::SparseDirectory => {
                Protocol::SparseDirectory(directory::SparseDirectory::new(cores, lines, entries, c))
            }
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $p:ident => $e:expr) => {
        match $self {
            Protocol::MesiSnooping($p) => $e,
            Protocol::SparseDirectory($p) => $e,
            Protocol::Flask($p) => $e,
            Protocol::Mosaic($p) => $e,
            Protocol::TokenB($p) => $e,
        }
    };
}

impl CoherenceProtocol for Protocol {
    fn name(&self) -> &'static str {
        dispatch!(self, p => p.name())
    }

    #[inline]
    fn state(&self, core: usize, line: u64) -> LineState {
        dispatch!(self, p => p.state(core, line))
    }

    #[inline]
    fn request(&mut self, req: Request, net: &mut Network) -> Response {
        dispatch!(self, p => p.request(req, net))
    }

    #[inline]
    fn silent_upgrade(&mut self, core: usize, line: u64) {
        dispatch!(self, p => p.silent_upgrade(core, line))
    }

    #[inline]
    fn evict(&mut self, core: usize, line: u64, now: Cycle, net: &mut Network) -> Cycle {
        dispatch!(self, p => p.evict(core, line, now, net))
    }

    fn llc_allocates_on_fill(&self) -> bool {
        dispatch!(self, p => p.llc_allocates_on_fill())
    }

    fn take_recalls(&mut self, into: &mut Vec<(u64, u64)>) {
        dispatch!(self, p => p.take_recalls(into))
    }

    #[inline]
    fn settle(&mut self, core: usize, line: u64, done: Cycle) {
        dispatch!(self, p => p.settle(core, line, done))
    }

    fn stats(&self) -> &CoherenceStats {
        dispatch!(self, p => p.stats())
    }

    fn check_line(&self, line: u64) -> Result<(), String> {
        dispatch!(self, p => p.check_line(line))
    }

    fn holders(&self, line: u64) -> u64 {
        dispatch!(self, p => p.holders(line))
    }
}
