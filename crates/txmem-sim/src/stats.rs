//! Statistics of one simulation run, serde-serializable and comparable bit for bit.

use serde::{Deserialize, Serialize};

/// A histogram with power-of-two buckets: bucket 0 counts zeros, bucket `i > 0` counts values
/// in `2^(i-1) ..= 2^i - 1`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Histogram {
    /// Counts per bucket (trailing empty buckets omitted).
    pub buckets: Vec<u64>,
    /// Number of samples.
    pub count: u64,
    /// Sum of all samples.
    pub sum: u64,
    /// Largest sample.
    pub max: u64,
}

impl Histogram {
    /// Adds one sample.
    #[inline]
    pub fn record(&mut self, value: u64) {
        let b = (64 - value.leading_zeros()) as usize;
        if self.buckets.len() <= b {
            self.buckets.resize(b + 1, 0);
        }
        self.buckets[b] += 1;
        self.count += 1;
        self.sum += value;
        self.max = self.max.max(value);
    }

    /// Adds `n` samples equal to `value`.
    pub fn record_n(&mut self, value: u64, n: u64) {
        if n == 0 {
            return;
        }
        let b = (64 - value.leading_zeros()) as usize;
        if self.buckets.len() <= b {
            self.buckets.resize(b + 1, 0);
        }
        self.buckets[b] += n;
        self.count += n;
        self.sum += value * n;
        self.max = self.max.max(value);
    }

    /// Mean of the samples (0 when empty).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// Human-readable label of bucket `i`, e.g. `"4-7"`.
    pub fn bucket_label(i: usize) -> String {
        match i {
            0 => "0".into(),
            1 => "1".into(),
            _ => format!("{}-{}", 1u64 << (i - 1), (1u64 << i) - 1),
        }
    }
}

/// Footprint sizes of committed transactions waiting to be added to the six footprint
/// histograms of [`TxStats`]: consecutive commits with the same sizes (the common case in a
/// loop) are added as one run. Histograms do not depend on the order of their samples, so
/// the result is the same as recording every commit.
#[derive(Clone, Debug, Default)]
pub(crate) struct FootprintRuns {
    /// Read bytes, read lines, written bytes, written lines, working-set bytes and lines.
    sizes: [u64; 6],
    /// Commits with these sizes not yet recorded.
    runs: u64,
}

impl FootprintRuns {
    /// One commit with footprint `sizes` (in the order of [`FootprintRuns::sizes`]).
    #[inline]
    pub(crate) fn add(&mut self, sizes: [u64; 6], tx: &mut TxStats) {
        // (Compared element by element: an array comparison becomes a `memcmp` call.)
        if self.runs > 0 && sizes.iter().zip(&self.sizes).all(|(a, b)| a == b) {
            self.runs += 1;
        } else {
            self.flush(tx);
            self.sizes = sizes;
            self.runs = 1;
        }
    }

    /// Records the pending commits into `tx`.
    pub(crate) fn flush(&mut self, tx: &mut TxStats) {
        let (s, n) = (self.sizes, self.runs);
        tx.read_set_bytes.record_n(s[0], n);
        tx.read_set_lines.record_n(s[1], n);
        tx.write_set_bytes.record_n(s[2], n);
        tx.write_set_lines.record_n(s[3], n);
        tx.working_set_bytes.record_n(s[4], n);
        tx.working_set_lines.record_n(s[5], n);
        self.runs = 0;
    }
}

/// The simulated hardware's aborts, counted by the cause it raised: finer
/// than `txmem_htm::AbortCounts`, which counts what an elision runtime saw
/// of them (it has no nesting, interrupt or paging bucket, and a lock-busy
/// one the hardware knows nothing of).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HardwareAbortCounts {
    /// `xabort(code)`.
    pub explicit: u64,
    /// Lost a conflict with another transaction or a non-transactional access.
    pub conflict: u64,
    /// A transactional line left the L1 (bounded capacity).
    pub capacity: u64,
    /// Flat nesting or the suspend stack went too deep.
    pub nesting: u64,
    /// Aborted by an interrupt (interrupt mode `abort`).
    pub interrupt: u64,
    /// Causes of the shared vocabulary that the simulated HTM never raises (debug, nested,
    /// other): always zero, kept so that every cause has a bucket.
    #[serde(default)]
    pub other: u64,
    /// Of `other`: TLB misses inside a transaction that aborted it (`tlb` knobs); they
    /// report cause `other`, as page faults do on RTM, so they are counted there too.
    #[serde(default)]
    pub paging: u64,
}

impl HardwareAbortCounts {
    /// Counts one abort of `cause` in its bucket.
    pub fn count(&mut self, cause: crate::htm::HtmAbortCause) {
        use crate::htm::HtmAbortCause;
        match cause {
            HtmAbortCause::Explicit(_) => self.explicit += 1,
            HtmAbortCause::Conflict => self.conflict += 1,
            HtmAbortCause::Capacity => self.capacity += 1,
            HtmAbortCause::NestingOverflow => self.nesting += 1,
            HtmAbortCause::Interrupt => self.interrupt += 1,
            HtmAbortCause::Debug | HtmAbortCause::Nested | HtmAbortCause::Other => self.other += 1,
        }
    }

    /// Sum over all causes.
    pub fn total(&self) -> u64 {
        self.explicit + self.conflict + self.capacity + self.nesting + self.interrupt + self.other
    }
}

/// Transactional statistics.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxStats {
    /// Transaction attempts started (`xbegin` of an outermost transaction).
    pub begins: u64,
    /// Committed transactions ("Total Transactions" in TxLinux: unique transactions).
    pub commits: u64,
    /// Rollback-only transactions among the commits.
    pub rot_commits: u64,
    /// Aborted attempts (TxLinux's non-unique restarts).
    pub restarts: u64,
    /// Committed transactions that restarted at least once (TxLinux's unique restarts).
    pub unique_restarts: u64,
    /// Aborts by cause.
    pub aborts: HardwareAbortCounts,
    /// Aborts whose status carried the persistent hint.
    pub persistent_aborts: u64,
    /// Cycles spent in backoff before restarts.
    pub backoff_cycles: u64,
    /// Number of backoff periods.
    pub backoffs: u64,
    /// Cycles spent stalled on conflicts (stall-on-conflict).
    pub stall_cycles: u64,
    /// Accesses that stalled at least once.
    pub stalls: u64,
    /// Stalls refused because they would have closed a waits-for cycle.
    pub deadlocks_avoided: u64,
    /// Transactions that overflowed the L1 (unbounded capacity).
    pub overflows: u64,
    /// Transactional regions that ran in serial (irrevocable) mode after a persistent abort.
    pub serialized: u64,
    /// Transactions running when an interrupt was taken.
    pub interrupted_transactions: u64,
    /// Suspended transactions (xpush or tsuspend) doomed by a conflict while suspended.
    pub doomed_while_suspended: u64,
    /// Committed read sets, unique bytes.
    pub read_set_bytes: Histogram,
    /// Committed read sets, unique lines.
    pub read_set_lines: Histogram,
    /// Committed write sets, unique bytes.
    pub write_set_bytes: Histogram,
    /// Committed write sets, unique lines.
    pub write_set_lines: Histogram,
    /// Committed working sets (read ∪ write), unique bytes.
    pub working_set_bytes: Histogram,
    /// Committed working sets (read ∪ write), unique lines.
    pub working_set_lines: Histogram,
}

impl TxStats {
    /// Restart rate as TxLinux defines it: restarts / (restarts + transactions).
    pub fn restart_rate(&self) -> f64 {
        let d = self.restarts + self.commits;
        if d == 0 {
            0.0
        } else {
            self.restarts as f64 / d as f64
        }
    }

    /// Unique restarts / transactions.
    pub fn unique_restart_rate(&self) -> f64 {
        if self.commits == 0 {
            0.0
        } else {
            self.unique_restarts as f64 / self.commits as f64
        }
    }
}

/// Hits and misses of one cache level.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelStats {
    /// Accesses served at this level.
    pub hits: u64,
    /// Accesses that went past this level.
    pub misses: u64,
}

impl LevelStats {
    /// misses / (hits + misses).
    pub fn miss_rate(&self) -> f64 {
        let t = self.hits + self.misses;
        if t == 0 {
            0.0
        } else {
            self.misses as f64 / t as f64
        }
    }
}

/// Cache statistics of the whole hierarchy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheStats {
    /// Private L1s (summed over cores). A hit needs the right permission too.
    pub l1: LevelStats,
    /// Private L2s (zero when disabled).
    pub l2: LevelStats,
    /// Shared last-level cache.
    pub llc: LevelStats,
    /// Lines evicted from L1s.
    pub l1_evictions: u64,
    /// Latencies of the accesses that missed the L1, summed (the hits cost the L1's latency
    /// each): see [`CacheStats::amat`].
    #[serde(default)]
    pub miss_cycles: u64,
    /// Accesses whose line came from memory.
    #[serde(default)]
    pub offchip: u64,
    /// Their latencies, from the core's request to the data: over `offchip`, the off-chip
    /// access latency.
    #[serde(default)]
    pub offchip_cycles: u64,
}

impl CacheStats {
    /// The average memory access time, for an L1 of `l1_latency` cycles: every access hits
    /// or misses the L1.
    pub fn amat(&self, l1_latency: u64) -> f64 {
        let accesses = self.l1.hits + self.l1.misses;
        let cycles = self.l1.hits * l1_latency + self.miss_cycles;
        cycles as f64 / accesses.max(1) as f64
    }
}

/// Coherence traffic, counted honestly for the protocol in use.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoherenceStats {
    /// Read requests (GetS).
    pub get_s: u64,
    /// Read-for-ownership requests (GetM).
    pub get_m: u64,
    /// Upgrades from S to M (no data).
    pub upgrades: u64,
    /// Writebacks of dirty lines (PutM).
    pub writebacks: u64,
    /// Clean evictions that the protocol was told about (PutS/PutE).
    pub clean_evictions: u64,
    /// Messages on the interconnect (requests, data responses, invalidation acks...).
    pub messages: u64,
    /// Cache tag lookups caused by other cores' requests (snoops).
    pub snoops: u64,
    /// Copies invalidated in peer caches.
    pub invalidations: u64,
    /// Lines supplied by a peer cache.
    pub cache_to_cache: u64,
    /// Lines supplied by the LLC or memory.
    pub from_shared: u64,
    /// Interconnect transactions (bus tenures).
    pub bus_transactions: u64,
    /// Cycles requests waited for the interconnect.
    pub bus_wait_cycles: u64,
    /// Cycles the interconnect was busy.
    pub bus_busy_cycles: u64,
    /// Directory entries evicted to make room, each recalling its line from every cache.
    #[serde(default)]
    pub directory_recalls: u64,
    /// Private copies invalidated by those recalls (also counted in `invalidations`).
    #[serde(default)]
    pub recall_invalidations: u64,
    /// Flask: directory entries evicted (which invalidates nothing).
    #[serde(default)]
    pub directory_evictions: u64,
    /// Flask: directory misses, each of which asked the filter.
    #[serde(default)]
    pub filter_lookups: u64,
    /// Flask: multicasts to find a line's holders after a directory miss and a filter hit.
    #[serde(default)]
    pub reconstructions: u64,
    /// Flask: reconstructions of a line that was on chip.
    #[serde(default)]
    pub multicasts_true: u64,
    /// Flask: reconstructions of a line on no chip cache (the filter's false positives).
    #[serde(default)]
    pub multicasts_false: u64,
    /// Flask: filter inserts that left a counter at its maximum.
    #[serde(default)]
    pub filter_saturations: u64,
    /// Flask: filter inserts that found every candidate bucket full (or a counter at its
    /// maximum).
    #[serde(default)]
    pub filter_overflows: u64,
    /// Flask: private copies invalidated to empty a filter bucket after a saturation or an
    /// overflow (also counted in `invalidations`).
    #[serde(default)]
    pub filter_invalidations: u64,
    /// Flask: changes of the directory/filter split by the adaptive policy.
    #[serde(default)]
    pub split_changes: u64,
    /// Requests a home held back while it was busy with the line's previous request.
    #[serde(default)]
    pub home_waits: u64,
    /// Cycles those requests waited.
    #[serde(default)]
    pub home_wait_cycles: u64,
    /// TokenB: transient requests that raced with another request for the line, timed out
    /// and were issued again.
    #[serde(default)]
    pub transient_retries: u64,
    /// TokenB: persistent requests (after `tokenb_transient_tries` failed transient ones).
    #[serde(default)]
    pub persistent_requests: u64,
}

/// What crossed the on-chip network ([`crate::network`]) of a point-to-point protocol.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkStats {
    /// Messages injected (a multicast is one).
    pub messages: u64,
    /// Messages delivered (a multicast counts each destination).
    pub deliveries: u64,
    /// Bytes of control messages injected.
    pub control_bytes: u64,
    /// Bytes of data messages injected.
    pub data_bytes: u64,
    /// Flits times links crossed.
    pub flit_hops: u64,
    /// Flits times routers crossed.
    pub router_flits: u64,
    /// Cycles deliveries waited for taken links, beyond an unloaded network's latency.
    pub contention_cycles: u64,
}

/// Per-core summary.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoreStats {
    /// Simulated time at which the core's thread finished.
    pub cycles: u64,
    /// Memory operations (loads, stores, CAS, fetch-add, fences) issued.
    pub mem_ops: u64,
    /// Commits on this core.
    pub commits: u64,
    /// Aborted attempts on this core.
    pub restarts: u64,
    /// Backoff cycles on this core.
    pub backoff_cycles: u64,
    /// Stall cycles on this core.
    pub stall_cycles: u64,
    /// Interrupts taken.
    pub interrupts: u64,
}

/// Everything a run measured. Equal configurations and seeds give equal `Stats`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Simulated time at which the last thread finished.
    pub total_cycles: u64,
    /// Whether the run stopped at `max_cycles` before every thread finished.
    pub timed_out: bool,
    /// Per-core figures.
    pub per_core: Vec<CoreStats>,
    /// Memory operations issued (all cores).
    pub mem_ops: u64,
    /// Loads.
    pub loads: u64,
    /// Stores.
    pub stores: u64,
    /// Read-modify-writes (CAS, fetch-add).
    pub rmws: u64,
    /// Fences.
    pub fences: u64,
    /// Events processed by the executor.
    pub events: u64,
    /// Interrupts taken.
    pub interrupts: u64,
    /// Transactions.
    pub tx: TxStats,
    /// Caches.
    pub cache: CacheStats,
    /// Coherence traffic.
    pub coherence: CoherenceStats,
    /// What crossed the on-chip network (point-to-point protocols).
    #[serde(default)]
    pub network: NetworkStats,
    /// TLB hits (all hardware threads; 0 unless `tlb.enabled`).
    #[serde(default)]
    pub tlb_hits: u64,
    /// TLB misses (all hardware threads; 0 unless `tlb.enabled`).
    #[serde(default)]
    pub tlb_misses: u64,
    /// Spin-waits that slept until their line was written (`park_spinners`).
    #[serde(default)]
    pub parked_waits: u64,
    /// Simulated cycles cores spent asleep in those spin-waits (all cores).
    #[serde(default)]
    pub parked_cycles: u64,
    /// Overlapped accesses ([`crate::Cpu::load_overlapped`]) that went into a core's window.
    #[serde(default)]
    pub overlapped: u64,
    /// Times an overlapped access waited because its core's window was full.
    #[serde(default)]
    pub window_full_waits: u64,
}

impl std::ops::AddAssign<&HardwareAbortCounts> for HardwareAbortCounts {
    fn add_assign(&mut self, o: &HardwareAbortCounts) {
        self.explicit += o.explicit;
        self.conflict += o.conflict;
        self.capacity += o.capacity;
        self.nesting += o.nesting;
        self.interrupt += o.interrupt;
        self.other += o.other;
        self.paging += o.paging;
    }
}
