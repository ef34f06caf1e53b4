//! The settings of the hardware transactional memory: versioning, conflict detection,
//! capacity, contention policy and backoff, and the costs of its operations.

use serde::{Deserialize, Serialize};

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
