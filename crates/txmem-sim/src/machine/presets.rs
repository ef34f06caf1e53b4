//! The machine presets: whole machines a paper describes, as [`SimConfig`]s that start from
//! the default machine and set what the paper gives. Each preset's table says where every
//! value comes from.

use crate::config::{
    CacheConfig, Capacity, Granularity, InterruptMode, PolicyKind, PrivateL2Config, ProtocolKind,
    SimConfig, TlbConfig, Topology, TrackLevel,
};

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
}
