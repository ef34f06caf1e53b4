//! Simulator configuration: every parameter of the machine, with MetaTM §6 defaults.
//!
//! Every struct here is serde-(de)serializable, so a configuration can be read from TOML or
//! JSON, written into experiment reports, and changed field by field with
//! [`SimConfig::set_path`] (which `txmem sim sweep` uses).

use serde::{Deserialize, Serialize};

/// Largest number of physical cores (coherence keeps core sets in 64-bit masks).
pub const MAX_CORES: usize = 64;

/// Largest number of simulated CPUs, i.e. hardware threads (`cores * threads_per_core`;
/// the HTM keeps per-line sets of CPUs in 128-bit masks). 128 leaves room for POWER8's
/// 10 cores x SMT8.
pub const MAX_CPUS: usize = 128;

/// Geometry and hit latency of one set-associative cache.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    /// Capacity in bytes.
    pub size_bytes: u64,
    /// Associativity (ways per set).
    pub ways: u32,
    /// Latency in cycles added when an access is served by this level.
    pub latency: u64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        // MetaTM §6: 16 KB, 4-way L1 with a 1-cycle hit.
        CacheConfig {
            size_bytes: 16 * 1024,
            ways: 4,
            latency: 1,
        }
    }
}

/// Optional private (per-core) second-level cache.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PrivateL2Config {
    /// Whether each core has a private L2 between its L1 and the bus.
    pub enabled: bool,
    /// Geometry and latency of the private L2.
    pub cache: CacheConfig,
    /// Exclusive of the L1 (a victim cache): a line is in the L1 or the L2, never both; an
    /// L2 hit moves the line into the L1 and the L1's victim into the L2. Otherwise (the
    /// default) the L2 includes the L1.
    #[serde(default)]
    pub exclusive: bool,
}

impl Default for PrivateL2Config {
    fn default() -> Self {
        PrivateL2Config {
            enabled: false,
            cache: CacheConfig {
                size_bytes: 256 * 1024,
                ways: 8,
                latency: 8,
            },
            exclusive: false,
        }
    }
}

/// Which coherence protocol connects the private caches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProtocolKind {
    /// MESI with broadcast snooping on one shared, serialized bus.
    MesiSnooping,
    /// MESI kept by a sparse directory, inclusive of the private caches, sized by
    /// `directory_coverage_pct` (recalls make room).
    SparseDirectory,
    /// Flask: a directory (sized by `directory_coverage_pct`) of actively shared lines only,
    /// and a d-left counting Bloom filter of every line on chip.
    Flask,
    /// MOSAIC: a non-inclusive directory (sized by `directory_coverage_pct`) that gives every
    /// miss an entry and multicasts to rebuild a missing one.
    Mosaic,
    /// TokenB: no directory; every miss is broadcast to every core.
    #[serde(rename = "tokenb")]
    TokenB,
}

/// Coherence protocol and interconnect timing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CoherenceConfig {
    /// Protocol in use.
    pub protocol: ProtocolKind,
    /// Cycles a request (address phase) occupies the bus.
    pub bus_request_cycles: u64,
    /// Extra cycles a cache line of data occupies the bus.
    pub bus_data_cycles: u64,
    /// Latency for a peer cache to supply a line it holds in M or E.
    pub cache_to_cache_latency: u64,
    /// Sparse directory: entries as a percentage of the lines the private caches can hold
    /// (the outermost private level of every core; Flask's "SDE": 160 down to 5).
    pub directory_coverage_pct: u32,
    /// Sparse directory: ways per set.
    pub directory_ways: u32,
    /// Sparse directory: cycles of a lookup at the home.
    pub directory_latency: u64,
    /// Flask: how the controller's storage (the SDE budget, 8 units per set) is split
    /// between directory ways and filter sub-tables.
    pub flask_split: FlaskSplit,
    /// TokenB: cycles a transient request that raced with another waits before it is issued
    /// again.
    pub tokenb_timeout: u64,
    /// TokenB: transient requests tried before a persistent one.
    pub tokenb_transient_tries: u32,
}

/// How Flask splits each set of its controller's 8 storage units between directory ways and
/// filter sub-tables. Written as the number of directory ways (`1` to `7`) or `"adaptive"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FlaskSplit {
    /// This many directory ways, the rest filter sub-tables: 4 (half and half) is the seed's
    /// default; 1 suits private and numerical workloads, 7 commercial ones (seed §VI.C).
    Static(u32),
    /// Starts at 4 and moves a unit between directory and filter as the workload runs (see
    /// [`crate::coherence::flask`]).
    Adaptive(AdaptiveTag),
}

/// The name of [`FlaskSplit::Adaptive`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdaptiveTag {
    /// `"adaptive"`.
    Adaptive,
}

impl FlaskSplit {
    /// The adaptive split.
    pub const ADAPTIVE: FlaskSplit = FlaskSplit::Adaptive(AdaptiveTag::Adaptive);

    /// Directory ways to start with.
    pub fn initial_ways(self) -> u32 {
        match self {
            FlaskSplit::Static(n) => n,
            FlaskSplit::Adaptive(_) => 4,
        }
    }
}

impl Default for CoherenceConfig {
    fn default() -> Self {
        CoherenceConfig {
            protocol: ProtocolKind::MesiSnooping,
            bus_request_cycles: 2,
            bus_data_cycles: 8,
            cache_to_cache_latency: 16,
            directory_coverage_pct: 200,
            directory_ways: 8,
            directory_latency: 10,
            flask_split: FlaskSplit::Static(4),
            tokenb_timeout: 200,
            tokenb_transient_tries: 4,
        }
    }
}

/// How the tiles of a point-to-point protocol are connected ([`crate::network`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    /// Every message takes `ideal_latency` cycles; nothing is shared.
    Ideal,
    /// A 2-D mesh with X-Y routing, shared links and routers, and multicast.
    Mesh,
}

/// The on-chip network of the point-to-point protocols (MESI snooping uses its bus).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetworkConfig {
    /// Topology.
    pub topology: Topology,
    /// Ideal topology: cycles every message takes.
    pub ideal_latency: u64,
    /// Mesh: routers per row.
    pub mesh_width: u32,
    /// Mesh: rows. `mesh_width * mesh_height` tiles, at least one per core.
    pub mesh_height: u32,
    /// Mesh: cycles for a message's head to cross a router.
    pub router_latency: u64,
    /// Mesh: cycles for a message's head to cross a link.
    pub link_latency: u64,
    /// Mesh: bytes a link carries per cycle (a flit).
    pub link_bytes: u64,
    /// Bytes of a message's header (a control message is only a header; a data message is a
    /// header and a line).
    pub control_bytes: u64,
    /// Memory controllers, spread over the tiles.
    pub memory_controllers: u32,
}

impl Default for NetworkConfig {
    /// An ideal network; its mesh settings are Flask's Table I.
    fn default() -> Self {
        NetworkConfig {
            topology: Topology::Ideal,
            ideal_latency: 8,
            mesh_width: 4,
            mesh_height: 4,
            router_latency: 2,
            link_latency: 1,
            link_bytes: 16,
            control_bytes: 8,
            memory_controllers: 4,
        }
    }
}

/// Energy per event of the memory hierarchy's energy proxy ([`crate::energy`]), in
/// picojoules. The defaults are estimates of the order CACTI and DSENT give at 32 nm for
/// Flask's Table I parts (\[est\]); only their ratios matter to a comparison, and the raw
/// event counts are reported beside the sum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EnergyConfig {
    /// One L1 access (32 KB).
    pub l1_pj: f64,
    /// One L2 access (256 KB).
    pub l2_pj: f64,
    /// One LLC slice access (1 MB).
    pub llc_pj: f64,
    /// One directory lookup or update (a few KB of SRAM).
    pub directory_pj: f64,
    /// One filter lookup (d buckets of a small SRAM).
    pub filter_pj: f64,
    /// One tag lookup in a peer's private caches.
    pub snoop_pj: f64,
    /// One flit through a router.
    pub router_flit_pj: f64,
    /// One flit over a 1-cycle link.
    pub link_flit_pj: f64,
}

impl Default for EnergyConfig {
    fn default() -> Self {
        EnergyConfig {
            l1_pj: 15.0,
            l2_pj: 45.0,
            llc_pj: 150.0,
            directory_pj: 12.0,
            filter_pj: 6.0,
            snoop_pj: 10.0,
            router_flit_pj: 25.0,
            link_flit_pj: 12.0,
        }
    }
}

// Configurations compare by value; `SimConfig::validate` refuses a NaN energy, the one value
// that would not equal itself.
impl Eq for EnergyConfig {}

impl EnergyConfig {
    fn all(&self) -> [f64; 8] {
        [
            self.l1_pj,
            self.l2_pj,
            self.llc_pj,
            self.directory_pj,
            self.filter_pj,
            self.snoop_pj,
            self.router_flit_pj,
            self.link_flit_pj,
        ]
    }
}

/// Where speculative values live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Versioning {
    /// New values written in place; old values kept in an undo log (LogTM, MetaTM).
    Eager,
    /// New values kept in a private write buffer and written at commit (TCC).
    Lazy,
}

/// When conflicts are detected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Detection {
    /// At the conflicting access, through the coherence request.
    Eager,
    /// At commit: the committer wins and dooms every transaction that touched its writes.
    Lazy,
}

/// Conflict-detection granularity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Granularity {
    /// Whole cache lines (false sharing causes conflicts).
    Line,
    /// 8-byte words.
    Word,
}

/// What happens when a transactional line leaves the L1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Capacity {
    /// Transactions are bounded by the L1 geometry: evicting a transactional line aborts.
    Bounded,
    /// Transactions overflow into memory: the first overflow costs `overflow_penalty`
    /// cycles and later references to overflowed lines go to memory.
    Unbounded,
}

/// Which private cache holds the transactional state, so that a tracked line leaving it is a
/// capacity event (see [`Capacity`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrackLevel {
    /// The L1 (MetaTM; Intel RTM's write set): leaving the L1 is a capacity event.
    L1,
    /// The private L2 (POWER8's TMCAM sits beside the L2): a tracked line may leave the L1
    /// and stay tracked; only leaving the L2 is a capacity event. Requires `l2.enabled`.
    L2,
}

/// Contention-management policy (MetaTM Table 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyKind {
    /// The requesting access always wins.
    RequesterWins,
    /// The requester defers (restarts with backoff) up to `polite_threshold` times, then wins.
    Polite,
    /// The transaction with fewer unique references (kept across restarts) loses.
    Karma,
    /// Karma, and the winner's priority is added to the loser's.
    Eruption,
    /// Each transaction defers to another once; then timestamp.
    Kindergarten,
    /// The oldest transaction (first start, not refreshed on restart) wins.
    Timestamp,
    /// Writes win over reads; write/write conflicts by Karma; loser backs off by the priority gap.
    Polka,
    /// The larger working set (unique bytes) wins; timestamp after `size_matters_threshold` restarts.
    SizeMatters,
}

impl PolicyKind {
    /// All policies, in a fixed order.
    pub const ALL: [PolicyKind; 8] = [
        PolicyKind::RequesterWins,
        PolicyKind::Polite,
        PolicyKind::Karma,
        PolicyKind::Eruption,
        PolicyKind::Kindergarten,
        PolicyKind::Timestamp,
        PolicyKind::Polka,
        PolicyKind::SizeMatters,
    ];

    /// The kebab-case name used in configuration files.
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::RequesterWins => "requester-wins",
            PolicyKind::Polite => "polite",
            PolicyKind::Karma => "karma",
            PolicyKind::Eruption => "eruption",
            PolicyKind::Kindergarten => "kindergarten",
            PolicyKind::Timestamp => "timestamp",
            PolicyKind::Polka => "polka",
            PolicyKind::SizeMatters => "size-matters",
        }
    }
}

/// Backoff before a restarted transaction runs again (MetaTM §2.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackoffKind {
    /// `seed * 2^n` cycles, seed uniform in 1..=10, n = backoffs so far.
    Exponential,
    /// `seed * n` cycles, seed uniform in 1..=10.
    Linear,
    /// Uniform in 1..=`random_max` cycles.
    Random,
    /// Restart at once.
    None,
}

impl BackoffKind {
    /// All kinds, in a fixed order.
    pub const ALL: [BackoffKind; 4] = [
        BackoffKind::Exponential,
        BackoffKind::Linear,
        BackoffKind::None,
        BackoffKind::Random,
    ];

    /// The kebab-case name used in configuration files.
    pub fn name(self) -> &'static str {
        match self {
            BackoffKind::Exponential => "exponential",
            BackoffKind::Linear => "linear",
            BackoffKind::Random => "random",
            BackoffKind::None => "none",
        }
    }
}

/// Hardware transactional memory knobs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HtmConfig {
    /// Version management.
    pub versioning: Versioning,
    /// Conflict detection. `lazy` requires `versioning = "lazy"`.
    pub detection: Detection,
    /// Conflict-detection granularity.
    pub granularity: Granularity,
    /// Capacity model.
    pub capacity: Capacity,
    /// Which private cache holds the transactional lines.
    pub tracked_in: TrackLevel,
    /// Cycles charged once per transaction on its first overflow (MetaTM: 500).
    pub overflow_penalty: u64,
    /// Contention-management policy.
    pub policy: PolicyKind,
    /// Backoff policy applied before restarts.
    pub backoff: BackoffKind,
    /// Upper bound of the `random` backoff (MetaTM: 1000).
    pub random_backoff_max: u64,
    /// Cap on the exponent of the exponential backoff.
    pub max_backoff_exponent: u32,
    /// Polite: number of deferrals before the requester wins (MetaTM: 10).
    pub polite_threshold: u32,
    /// SizeMatters: restarts after which a transaction reverts to timestamp.
    pub size_matters_threshold: u32,
    /// Stall a transactional requester that loses a conflict instead of restarting it,
    /// unless stalling would close a waits-for cycle.
    pub stall_on_conflict: bool,
    /// Cycles between retries of a stalled access.
    pub stall_retry_cycles: u64,
    /// Cycles charged at every commit.
    pub commit_penalty: u64,
    /// Cycles charged at every abort, before backoff.
    pub abort_penalty: u64,
    /// Cycles of `xbegin` (register checkpoint).
    pub begin_cycles: u64,
    /// Deepest flat nesting before a `nesting` abort.
    pub max_nesting: u32,
    /// Deepest stack of suspended transactions (xpush / tsuspend) per core.
    pub max_suspended: u32,
    /// Transactional lines one *physical core* can track, summed over the live
    /// transactions (running or suspended) of all its hardware threads, like POWER8's
    /// per-core TMCAM; a transaction whose new line would exceed it aborts with cause
    /// `capacity`. 0: no such bound (only the L1 geometry bounds transactions).
    pub core_capacity_lines: u64,
    /// Cycles of POWER8 `tsuspend`.
    pub suspend_cycles: u64,
    /// Cycles of POWER8 `tresume`.
    pub resume_cycles: u64,
}

impl Default for HtmConfig {
    fn default() -> Self {
        HtmConfig {
            versioning: Versioning::Eager,
            detection: Detection::Eager,
            granularity: Granularity::Line,
            capacity: Capacity::Bounded,
            tracked_in: TrackLevel::L1,
            overflow_penalty: 500,
            policy: PolicyKind::SizeMatters,
            backoff: BackoffKind::Linear,
            random_backoff_max: 1000,
            max_backoff_exponent: 16,
            polite_threshold: 10,
            size_matters_threshold: 10,
            stall_on_conflict: false,
            stall_retry_cycles: 10,
            commit_penalty: 0,
            abort_penalty: 0,
            begin_cycles: 1,
            max_nesting: 8,
            max_suspended: 8,
            core_capacity_lines: 0,
            suspend_cycles: 1,
            resume_cycles: 1,
        }
    }
}

/// What the hardware does to a running transaction when an interrupt arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InterruptMode {
    /// Suspend it with `xpush` before the handler and resume it with `xpop` after (TxLinux).
    Xpush,
    /// Abort it with cause `interrupt` (most commercial HTMs).
    Abort,
}

/// Per-core periodic timer interrupts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InterruptConfig {
    /// Timer period in cycles; 0 disables interrupts.
    pub period: u64,
    /// Treatment of a transaction running when the interrupt is taken.
    pub mode: InterruptMode,
    /// Cycles to enter and to leave the handler.
    pub entry_cycles: u64,
}

impl Default for InterruptConfig {
    fn default() -> Self {
        InterruptConfig {
            period: 0,
            mode: InterruptMode::Xpush,
            entry_cycles: 20,
        }
    }
}

/// Per-hardware-thread translation lookaside buffer, the source of `paging` aborts.
///
/// Off by default, so machines without it behave exactly as before. When enabled, every
/// load and store looks its page up in the issuing hardware thread's TLB (set-associative,
/// LRU); a miss costs `miss_latency` cycles, and a miss inside a transaction aborts it
/// with probability `tx_miss_abort_ppm` / 1 000 000 — the way a page fault (or, on
/// POWER8, a translation the hardware cannot do transactionally) aborts a real HTM
/// transaction. Such aborts report cause `other` (page faults are `other` in RTM's
/// vocabulary) and are counted in `tx.aborts.paging` as well.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlbConfig {
    /// Whether the TLB is modelled at all.
    pub enabled: bool,
    /// Entries per hardware thread.
    pub entries: u32,
    /// Associativity (`entries / ways` must be a power of two).
    pub ways: u32,
    /// Page size in bytes (a power of two, at least `line_bytes`).
    pub page_bytes: u64,
    /// Cycles added by a miss (page walk).
    pub miss_latency: u64,
    /// Chance, in parts per million, that a miss inside a transaction aborts it:
    /// 1 000 000 always, 0 never.
    pub tx_miss_abort_ppm: u32,
    /// Whether a miss that aborts its transaction still installs the translation. `true`
    /// (a TLB miss: the walk completes, the retry hits); `false` models a page fault the
    /// hardware suppresses inside a transaction, so every transactional retry misses again
    /// until the page is touched non-transactionally (HLE thrashing on page faults). Then a
    /// transaction that always aborts on the miss needs a non-transactional fallback (a
    /// retry budget, as lock elision has): `Cpu::transaction` retries transient aborts
    /// without end.
    pub fill_on_abort: bool,
}

impl Default for TlbConfig {
    fn default() -> Self {
        // Haswell's L1 DTLB: 64 entries, 4-way, 4 KB pages.
        TlbConfig {
            enabled: false,
            entries: 64,
            ways: 4,
            page_bytes: 4096,
            miss_latency: 30,
            tx_miss_abort_ppm: 1_000_000,
            fill_on_abort: true,
        }
    }
}

/// The whole simulated machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimConfig {
    /// Number of physical cores (1..=64), each with its own private caches.
    pub cores: usize,
    /// Hardware threads (SMT) per physical core. The simulated CPUs that `Sim::spawn`
    /// addresses are hardware threads: CPU `c` runs on core `c / threads_per_core`, whose
    /// private caches and transactional capacity it shares with its siblings. 1 (the
    /// default): every CPU is a core of its own.
    pub threads_per_core: usize,
    /// Seed of every pseudo-random choice (backoff seeds, workload choices).
    pub seed: u64,
    /// Simulated memory size in bytes (a multiple of the line size).
    pub memory_bytes: u64,
    /// Cache-line size in bytes, shared by every level (power of two, >= 8).
    pub line_bytes: u64,
    /// Private L1 data cache.
    pub l1: CacheConfig,
    /// Optional private L2.
    pub l2: PrivateL2Config,
    /// Shared last-level cache (all banks together).
    pub llc: CacheConfig,
    /// Banks of the last-level cache, interleaved by line address; a point-to-point
    /// protocol finds a line's bank at its home tile.
    pub llc_banks: u32,
    /// Cycles to main memory, added after an LLC miss.
    pub memory_latency: u64,
    /// Coherence protocol and interconnect.
    pub coherence: CoherenceConfig,
    /// On-chip network of the point-to-point protocols.
    pub network: NetworkConfig,
    /// Energy per event of the memory hierarchy (a proxy; see [`crate::energy`]).
    pub energy: EnergyConfig,
    /// Hardware transactional memory.
    pub htm: HtmConfig,
    /// Timer interrupts.
    pub interrupts: InterruptConfig,
    /// Per-hardware-thread TLB (paging aborts); off by default.
    pub tlb: TlbConfig,
    /// Stop the run at this simulated time (a safety net against livelocked workloads).
    pub max_cycles: u64,
    /// Check coherence and value invariants after every event (slow; for tests).
    pub check_invariants: bool,
    /// Let spin-waits ([`crate::Cpu::spin_until`]) sleep until their line is written instead
    /// of simulating every re-read of a cached line. On by default; off polls, to compare.
    /// A sleeping core wakes when its next poll would have been issued, so the two take the
    /// same simulated time except where requests of the same cycle are ordered differently;
    /// the memory operations counted differ (the skipped re-reads are not counted).
    pub park_spinners: bool,
    /// Overlapped accesses ([`crate::Cpu::load_overlapped`]) one hardware thread may have in
    /// flight: its memory-level parallelism (at least 1).
    pub max_outstanding: u32,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            cores: 8,
            threads_per_core: 1,
            seed: 1,
            memory_bytes: 1 << 22,
            line_bytes: 64,
            l1: CacheConfig::default(),
            l2: PrivateL2Config::default(),
            llc: CacheConfig {
                size_bytes: 4 << 20,
                ways: 8,
                latency: 16,
            },
            llc_banks: 1,
            memory_latency: 200,
            coherence: CoherenceConfig::default(),
            network: NetworkConfig::default(),
            energy: EnergyConfig::default(),
            htm: HtmConfig::default(),
            interrupts: InterruptConfig::default(),
            tlb: TlbConfig::default(),
            max_cycles: 1 << 40,
            check_invariants: false,
            park_spinners: true,
            max_outstanding: 16,
        }
    }
}

/// A configuration that cannot be simulated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid simulator configuration: {}", self.0)
    }
}

impl std::error::Error for ConfigError {}

fn check_cache(name: &str, c: &CacheConfig, line: u64) -> Result<(), ConfigError> {
    if c.ways == 0 {
        return Err(ConfigError(format!("{name}.ways must be at least 1")));
    }
    let lines = c.size_bytes / line;
    if !c.size_bytes.is_multiple_of(line) || lines == 0 || !lines.is_multiple_of(u64::from(c.ways))
    {
        return Err(ConfigError(format!(
            "{name}.size_bytes ({}) must be a positive multiple of line_bytes * ways ({})",
            c.size_bytes,
            line * u64::from(c.ways)
        )));
    }
    let sets = lines / u64::from(c.ways);
    if !sets.is_power_of_two() {
        return Err(ConfigError(format!(
            "{name} must have a power-of-two number of sets (has {sets})"
        )));
    }
    Ok(())
}

impl SimConfig {
    /// A POWER8-like machine (RW-LE's IBM Power8 8284-22A, seed SPECS.md §3): 10 cores x
    /// SMT8 = 80 hardware threads sharing per-core private caches and transactional
    /// capacity. Sources: `\[seed\]` RW-LE §4 (10 physical cores, 8 hardware threads each);
    /// `\[U\]` public POWER8 descriptions, not in the seeds; `\[est\]` an estimate, a knob to
    /// tune.
    ///
    /// | field | value | source |
    /// |---|---|---|
    /// | `cores`, `threads_per_core` | 10, 8 | \[seed\] RW-LE §4 |
    /// | `line_bytes` | 128 | \[U\] POWER8 cache line |
    /// | `l1` | 64 KB, 8-way, 3 cycles | \[U\] POWER8 L1 D-cache |
    /// | `l2` | private 512 KB, 8-way, 13 cycles | \[U\] POWER8 L2 per core |
    /// | `llc` | 64 MB, 8-way, 27 cycles | \[U\] 8 MB eDRAM L3 region per core (80 MB for 10), rounded down to a power-of-two set count |
    /// | `memory_latency` | 250 | \[est\] |
    /// | `htm.core_capacity_lines` | 64 | \[U\] the L2 TMCAM: 64 x 128-B lines (8 KB) per core, shared by its SMT threads (SPECS.md §3.1) |
    /// | `htm.tracked_in` | l2 | \[U\] the TMCAM tracks L2 lines: a line the (write-through) L1 drops stays tracked |
    /// | `htm.policy` | requester-wins | \[U\] best-effort HTM: the conflicting access wins |
    /// | `htm.begin_cycles`, `htm.commit_penalty` | 30, 30 | \[est\] `tbegin.` / `tend.` |
    /// | `htm.suspend_cycles`, `htm.resume_cycles` | 15, 15 | \[est\] `tsuspend.` / `tresume.` |
    /// | `interrupts.mode` | abort | \[U\] an interrupt aborts a POWER8 transaction |
    /// | `tlb` | off; 48 entries fully associative, 64 KB pages, 30-cycle miss | \[U\] POWER8 D-ERAT, Linux/POWER 64 KB pages; \[est\] miss cost |
    pub fn power8() -> SimConfig {
        let mut c = SimConfig {
            cores: 10,
            threads_per_core: 8,
            line_bytes: 128,
            l1: CacheConfig {
                size_bytes: 64 * 1024,
                ways: 8,
                latency: 3,
            },
            l2: PrivateL2Config {
                enabled: true,
                cache: CacheConfig {
                    size_bytes: 512 * 1024,
                    ways: 8,
                    latency: 13,
                },
                exclusive: false,
            },
            llc: CacheConfig {
                size_bytes: 64 << 20,
                ways: 8,
                latency: 27,
            },
            memory_latency: 250,
            ..SimConfig::default()
        };
        c.htm.core_capacity_lines = 64;
        c.htm.tracked_in = TrackLevel::L2;
        c.htm.policy = PolicyKind::RequesterWins;
        c.htm.begin_cycles = 30;
        c.htm.commit_penalty = 30;
        c.htm.suspend_cycles = 15;
        c.htm.resume_cycles = 15;
        c.interrupts.mode = InterruptMode::Abort;
        c.tlb = TlbConfig {
            enabled: false,
            entries: 48,
            ways: 48,
            page_bytes: 64 * 1024,
            miss_latency: 30,
            ..TlbConfig::default()
        };
        c
    }

    /// A Haswell-like machine for XSync (Intel i7-4770, seed SPECS.md §2): 4 cores x 2
    /// hyperthreads = 8 hardware threads; each pair shares a 32 KB 8-way L1, so an
    /// RTM-like transaction is bounded by the L1 it shares with its sibling (bounded
    /// capacity: evicting a transactional line aborts) and conflicts are detected at
    /// line granularity. Sources as for [`SimConfig::power8`].
    ///
    /// | field | value | source |
    /// |---|---|---|
    /// | `cores`, `threads_per_core` | 4, 2 | \[seed\] XSync §5.1 (4 cores, 8 threads with HT) |
    /// | `l1` | 32 KB, 8-way, 4 cycles | \[seed\] XSync §2.2 (32 KB 8-way, shared by two hyperthreads); \[U\] latency |
    /// | `line_bytes` | 64 | \[U\] |
    /// | `l2` | private 256 KB, 8-way, 12 cycles | \[U\] Haswell L2 |
    /// | `llc` | 8 MB, 16-way, 36 cycles | \[seed\] XSync §5.1 (8 MB total cache); \[U\] geometry, latency |
    /// | `memory_latency` | 200 | \[est\] |
    /// | `htm.capacity`, `htm.granularity` | bounded, line | \[seed\] XSync §2.2 (write set in L1, line-granularity conflicts) |
    /// | `htm.policy` | requester-wins | \[U\] RTM: the conflicting request wins |
    /// | `htm.core_capacity_lines` | 0 (the L1 is the bound) | \[seed\] |
    /// | `htm.begin_cycles`, `htm.commit_penalty` | 40, 20 | \[est\] `xbegin` / `xend` |
    /// | `interrupts.mode` | abort | \[seed\] XSync §2.2 (kernel entries abort) |
    /// | `tlb` | off; 64 entries, 4-way, 4 KB pages, 30-cycle miss | \[U\] Haswell L1 DTLB; \[est\] miss cost |
    ///
    /// RTM tracks reads beyond the L1 (in a secondary structure); this model bounds reads
    /// by the L1 as well.
    pub fn haswell() -> SimConfig {
        let mut c = SimConfig {
            cores: 4,
            threads_per_core: 2,
            line_bytes: 64,
            l1: CacheConfig {
                size_bytes: 32 * 1024,
                ways: 8,
                latency: 4,
            },
            l2: PrivateL2Config {
                enabled: true,
                cache: CacheConfig {
                    size_bytes: 256 * 1024,
                    ways: 8,
                    latency: 12,
                },
                exclusive: false,
            },
            llc: CacheConfig {
                size_bytes: 8 << 20,
                ways: 16,
                latency: 36,
            },
            memory_latency: 200,
            ..SimConfig::default()
        };
        c.htm.capacity = Capacity::Bounded;
        c.htm.granularity = Granularity::Line;
        c.htm.policy = PolicyKind::RequesterWins;
        c.htm.begin_cycles = 40;
        c.htm.commit_penalty = 20;
        c.interrupts.mode = InterruptMode::Abort;
        c.tlb = TlbConfig::default();
        c
    }

    /// Flask's 16-core tiled CMP (Table I of the seed, SPECS.md §4.5): private L1 and an
    /// exclusive L2 per tile, a 16-bank shared LLC, a 4x4 mesh, out-of-order cores with 64
    /// misses in flight, and Flask as the protocol. Sources as for [`SimConfig::power8`].
    ///
    /// | field | value | source |
    /// |---|---|---|
    /// | `cores` | 16 | \[seed\] Table I |
    /// | `l1` | 32 KB, 4-way, 1 cycle (the data cache; instructions are not simulated) | \[seed\] |
    /// | `l2` | 256 KB, 8-way, 2 cycles, exclusive of the L1 | \[seed\] |
    /// | `llc`, `llc_banks` | 16 MB, 16-way, 6 cycles per slice; 16 banks by line address | \[seed\] |
    /// | `memory_latency` | 240 | \[seed\] (4 controllers, bandwidth over-provisioned: no queueing) |
    /// | `network` | 4x4 mesh, 1-cycle links of 16 bytes, 2-cycle routers, 8-byte headers, 4 memory controllers at the corners | \[seed\] links and mesh; routers "1–3 cycles": \[est\] 2; \[est\] header size |
    /// | `max_outstanding` | 64 | \[seed\] "up to 64 outstanding memory operations per core" |
    /// | `coherence.directory_latency` | 2 | \[est\] a small SRAM beside the 6-cycle slice |
    /// | `coherence.cache_to_cache_latency` | 3 | \[est\] a peer's L1 and L2 lookups |
    /// | `coherence.directory_coverage_pct`, `directory_ways` | 160, 8 | \[seed\] the reference point of the SDE sweep |
    ///
    /// Not modelled: the cores' instruction windows (only their memory-level parallelism,
    /// through overlapped accesses), instruction fetch, finite router buffers (10 KB), and
    /// memory bandwidth.
    pub fn flask() -> SimConfig {
        let mut c = SimConfig {
            cores: 16,
            line_bytes: 64,
            l1: CacheConfig {
                size_bytes: 32 * 1024,
                ways: 4,
                latency: 1,
            },
            l2: PrivateL2Config {
                enabled: true,
                cache: CacheConfig {
                    size_bytes: 256 * 1024,
                    ways: 8,
                    latency: 2,
                },
                exclusive: true,
            },
            llc: CacheConfig {
                size_bytes: 16 << 20,
                ways: 16,
                latency: 6,
            },
            llc_banks: 16,
            memory_latency: 240,
            max_outstanding: 64,
            ..SimConfig::default()
        };
        // The network's defaults are Table I's mesh (4x4, 16-byte links, 4 controllers).
        c.network.topology = Topology::Mesh;
        c.coherence.protocol = ProtocolKind::Flask;
        c.coherence.directory_latency = 2;
        c.coherence.cache_to_cache_latency = 3;
        c.coherence.directory_coverage_pct = 160;
        c.coherence.directory_ways = 8;
        c
    }

    /// Number of simulated CPUs (hardware threads): `cores * threads_per_core`.
    #[inline]
    pub fn cpus(&self) -> usize {
        self.cores * self.threads_per_core
    }

    /// The physical core that runs CPU (hardware thread) `cpu`.
    #[inline]
    pub fn core_of(&self, cpu: usize) -> usize {
        cpu / self.threads_per_core
    }

    /// Checks that the configuration describes a machine the simulator can run.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.cores == 0 || self.cores > MAX_CORES {
            return Err(ConfigError(format!(
                "cores must be in 1..={MAX_CORES} (got {})",
                self.cores
            )));
        }
        if self.threads_per_core == 0 || self.cpus() > MAX_CPUS {
            return Err(ConfigError(format!(
                "threads_per_core must be at least 1 and cores * threads_per_core at most \
                 {MAX_CPUS} (got {} x {})",
                self.cores, self.threads_per_core
            )));
        }
        if self.tlb.enabled {
            let t = &self.tlb;
            if t.ways == 0
                || t.entries == 0
                || !t.entries.is_multiple_of(t.ways)
                || !(t.entries / t.ways).is_power_of_two()
            {
                return Err(ConfigError(
                    "tlb.entries must be a positive multiple of tlb.ways with a power-of-two \
                     number of sets"
                        .into(),
                ));
            }
            if !t.page_bytes.is_power_of_two() || t.page_bytes < self.line_bytes {
                return Err(ConfigError(
                    "tlb.page_bytes must be a power of two, at least line_bytes".into(),
                ));
            }
            if t.tx_miss_abort_ppm > 1_000_000 {
                return Err(ConfigError(
                    "tlb.tx_miss_abort_ppm must be at most 1000000".into(),
                ));
            }
        }
        if !self.line_bytes.is_power_of_two() || self.line_bytes < 8 || self.line_bytes > 4096 {
            return Err(ConfigError(format!(
                "line_bytes must be a power of two in 8..=4096 (got {})",
                self.line_bytes
            )));
        }
        if self.memory_bytes == 0
            || !self.memory_bytes.is_multiple_of(self.line_bytes)
            || self.memory_bytes > 1 << 34
        {
            return Err(ConfigError(format!(
                "memory_bytes must be a positive multiple of line_bytes, at most 16 GiB (got {})",
                self.memory_bytes
            )));
        }
        check_cache("l1", &self.l1, self.line_bytes)?;
        if self.l2.enabled {
            check_cache("l2.cache", &self.l2.cache, self.line_bytes)?;
            if !self.l2.exclusive && self.l2.cache.size_bytes < self.l1.size_bytes {
                return Err(ConfigError(
                    "l2.cache must be at least as large as l1 (it is inclusive)".into(),
                ));
            }
        }
        check_cache("llc", &self.llc, self.line_bytes)?;
        let llc_lines = self.llc.size_bytes / self.line_bytes;
        if self.llc_banks == 0
            || !self.llc_banks.is_power_of_two()
            || !llc_lines.is_multiple_of(u64::from(self.llc_banks) * u64::from(self.llc.ways))
        {
            return Err(ConfigError(format!(
                "llc_banks must be a power of two dividing the LLC into banks of whole sets \
                 (got {} banks for {llc_lines} lines of {} ways)",
                self.llc_banks, self.llc.ways
            )));
        }
        if self.network.topology == Topology::Mesh {
            let n = &self.network;
            let tiles = u64::from(n.mesh_width) * u64::from(n.mesh_height);
            if tiles < self.cores as u64 || tiles > MAX_CORES as u64 {
                return Err(ConfigError(format!(
                    "a {}x{} mesh has {tiles} tiles; it needs one per core ({}) and at most \
                     {MAX_CORES}",
                    n.mesh_width, n.mesh_height, self.cores
                )));
            }
            if self.coherence.protocol == ProtocolKind::MesiSnooping {
                return Err(ConfigError(
                    "network.topology = \"mesh\" needs a point-to-point protocol: MESI \
                     snooping runs on its own bus"
                        .into(),
                ));
            }
            if n.link_bytes == 0 || n.link_bytes > 8 * 64 {
                return Err(ConfigError("network.link_bytes must be in 1..=512".into()));
            }
        }
        if self.htm.tracked_in == TrackLevel::L2 && !self.l2.enabled {
            return Err(ConfigError(
                "htm.tracked_in = \"l2\" needs a private L2 (l2.enabled = true)".into(),
            ));
        }
        if self.htm.detection == Detection::Lazy && self.htm.versioning == Versioning::Eager {
            return Err(ConfigError(
                "htm.detection = \"lazy\" needs htm.versioning = \"lazy\": eager versioning writes \
                 in place, so other cores would see uncommitted values"
                    .into(),
            ));
        }
        if self.htm.stall_on_conflict && self.htm.stall_retry_cycles == 0 {
            return Err(ConfigError(
                "htm.stall_retry_cycles must be at least 1".into(),
            ));
        }
        if let FlaskSplit::Static(n) = self.coherence.flask_split {
            if !(1..=7).contains(&n) {
                return Err(ConfigError(format!(
                    "coherence.flask_split must be 1 to 7 directory ways (of 8 storage units) \
                     or \"adaptive\" (got {n})"
                )));
            }
        }
        if self.energy.all().iter().any(|e| !e.is_finite() || *e < 0.0) {
            return Err(ConfigError(
                "energy.* must be finite and not negative (picojoules per event)".into(),
            ));
        }
        if self.max_outstanding == 0 {
            return Err(ConfigError("max_outstanding must be at least 1".into()));
        }
        if self.htm.max_nesting == 0 {
            return Err(ConfigError("htm.max_nesting must be at least 1".into()));
        }
        if self.htm.random_backoff_max == 0 {
            return Err(ConfigError(
                "htm.random_backoff_max must be at least 1".into(),
            ));
        }
        Ok(())
    }

    /// Sets one field, named by a dotted path such as `htm.policy` or `l1.size_bytes`, from a
    /// string: numbers, booleans and names are recognised.
    ///
    /// ```
    /// use txmem_sim::config::SimConfig;
    /// let mut c = SimConfig::default();
    /// c.set_path("htm.policy", "polka").unwrap();
    /// c.set_path("l1.ways", "8").unwrap();
    /// assert_eq!(c.l1.ways, 8);
    /// assert!(c.set_path("htm.no_such_knob", "1").is_err());
    /// ```
    pub fn set_path(&mut self, path: &str, value: &str) -> Result<(), ConfigError> {
        let mut doc = serde_json::to_value(&*self).map_err(|e| ConfigError(e.to_string()))?;
        set_json_path(&mut doc, path, value)?;
        *self = serde_json::from_value(doc)
            .map_err(|e| ConfigError(format!("cannot set {path} = {value}: {e}")))?;
        Ok(())
    }
}

/// Sets `path` (dot-separated) inside a JSON document to `value`, parsed as a number, a
/// boolean or else a string. The path must already exist.
pub fn set_json_path(
    doc: &mut serde_json::Value,
    path: &str,
    value: &str,
) -> Result<(), ConfigError> {
    let mut cur = doc;
    for part in path.split('.') {
        cur = match cur.get_mut(part) {
            Some(v) => v,
            None => {
                return Err(ConfigError(format!(
                    "unknown parameter `{path}` (no field `{part}`)"
                )))
            }
        };
    }
    *cur = parse_scalar(value);
    Ok(())
}

/// Parses a command-line scalar: integer, float, boolean, or string.
pub fn parse_scalar(value: &str) -> serde_json::Value {
    let clean = value.replace('_', "");
    if let Ok(i) = clean.parse::<u64>() {
        return serde_json::Value::from(i);
    }
    if let Ok(i) = clean.parse::<i64>() {
        return serde_json::Value::from(i);
    }
    if let Ok(f) = clean.parse::<f64>() {
        return serde_json::Value::from(f);
    }
    match value {
        "true" => serde_json::Value::Bool(true),
        "false" => serde_json::Value::Bool(false),
        _ => serde_json::Value::String(value.to_string()),
    }
}
