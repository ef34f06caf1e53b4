//! Simulator configuration: the whole machine ([`SimConfig`]), assembled from each part's
//! settings, which live beside the part (`memory/settings.rs`, `coherence/settings.rs`,
//! `network/settings.rs`, `htm/settings.rs`, `machine/settings.rs`, `energy/settings.rs`) and
//! are re-exported here; validation. MetaTM §6 gives the defaults; the machine presets
//! ([`SimConfig::power8`], [`SimConfig::haswell`], [`SimConfig::flask`]) live beside the
//! machine, in `machine/presets.rs`.
//!
//! Every struct here is serde-(de)serializable, so a configuration can be read from TOML or
//! JSON, written into experiment reports, and changed field by field with
//! [`SimConfig::set_path`] (which `txmem sim sweep` uses).

use serde::{Deserialize, Serialize};

pub use crate::coherence::settings::{AdaptiveTag, CoherenceConfig, FlaskSplit, ProtocolKind};
pub use crate::energy::settings::EnergyConfig;
pub use crate::htm::settings::{
    BackoffKind, Capacity, Detection, Granularity, HtmConfig, PolicyKind, TrackLevel, Versioning,
};
pub use crate::machine::settings::{InterruptConfig, InterruptMode, TlbConfig};
pub use crate::memory::settings::{CacheConfig, PrivateL2Config};
pub use crate::network::settings::{NetworkConfig, Topology};

/// Largest number of physical cores (coherence keeps core sets in 64-bit masks).
pub const MAX_CORES: usize = 64;

/// Largest number of simulated CPUs, i.e. hardware threads (`cores * threads_per_core`;
/// the HTM keeps per-line sets of CPUs in 128-bit masks). 128 leaves room for POWER8's
/// 10 cores x SMT8.
pub const MAX_CPUS: usize = 128;

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
