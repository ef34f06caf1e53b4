//! Workloads: simulated programs that exercise the machine and check their own results.

pub mod barrier;
pub mod counter;
pub mod flask_app;
pub mod hashmap;
pub mod leveldb;
pub mod rwle_app;
pub mod xsync;

use crate::elision::{ElisionConfig, ElisionStats};
use crate::locks::{LockKind, LockStats};
use crate::simulation::executor::SimError;
use crate::stats::Stats;
use serde::{Deserialize, Serialize};
pub use xsync::XsyncScheme;

/// How a workload synchronizes its critical sections.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SyncKind {
    /// Test-and-test-and-set spinlock (Linux).
    Spinlock,
    /// Hardware transaction, restarted until it commits (TxLinux).
    Tx,
    /// One atomic fetch-and-add (a lower bound, no critical section).
    Atomic,
    /// The spinlock, elided: a hardware transaction subscribed to the lock, with retries,
    /// lock-busy waits, coarsening and the fallback to the lock decided by `txmem-htm`'s
    /// policies (see [`crate::elision`] and [`WorkloadConfig::elision`]).
    Elided,
}

impl SyncKind {
    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            SyncKind::Spinlock => "spinlock",
            SyncKind::Tx => "tx",
            SyncKind::Atomic => "atomic",
            SyncKind::Elided => "elided",
        }
    }
}

/// Which program to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// Every core increments one shared counter in a tight loop (TxLinux `counter`).
    Counter,
    /// Every core increments randomly chosen counters of an array (contention falls as the
    /// array grows); each counter has its own line and, for the spinlock, its own lock.
    CounterArray,
    /// XSync's counter array (Fig 2): random counters packed in lines, under a coarse lock,
    /// fine locks, bare transactions, or either lock elided (`xsync_scheme`).
    XsyncCounters,
    /// RW-LE's hashmap (§5.1): sorted bucket lists behind one reader-writer lock (`lock`),
    /// lookups and `write_pct`% updates, on CPUs `0..threads`.
    RwleHashmap,
    /// RW-LE's applications (§5.2): TPC-C-, STMBench7- or Kyoto-Cabinet-like (`app`) behind
    /// one reader-writer lock (`lock`), `write_pct`% of operations in write mode.
    RwleApp,
    /// Flask's Table II workloads (§V.B): SPEC-rate-like private streams beside an OS core,
    /// NPB-like kernels (MG, FT, LU) and commercial server mixes (`flask_app`), on every CPU,
    /// about `total_ops` memory operations in all.
    FlaskApp,
    /// LevelDB's write path (XSync Figs 3–4): a writers' queue with group commit under one
    /// DB mutex (`sync` = spinlock or elided), `total_ops` Puts on CPUs `0..threads`.
    XsyncLeveldb,
}

impl WorkloadKind {
    /// Every workload, in listing order.
    pub const ALL: [WorkloadKind; 7] = [
        WorkloadKind::Counter,
        WorkloadKind::CounterArray,
        WorkloadKind::XsyncCounters,
        WorkloadKind::RwleHashmap,
        WorkloadKind::RwleApp,
        WorkloadKind::FlaskApp,
        WorkloadKind::XsyncLeveldb,
    ];

    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Counter => "counter",
            WorkloadKind::CounterArray => "counter-array",
            WorkloadKind::XsyncCounters => "xsync-counters",
            WorkloadKind::RwleHashmap => "rwle-hashmap",
            WorkloadKind::RwleApp => "rwle-app",
            WorkloadKind::FlaskApp => "flask-app",
            WorkloadKind::XsyncLeveldb => "xsync-leveldb",
        }
    }
}

/// Workload parameters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkloadConfig {
    /// Program.
    pub kind: WorkloadKind,
    /// Synchronization.
    pub sync: SyncKind,
    /// Increments per core (`rwle-hashmap` uses `total_ops` instead).
    pub increments: u64,
    /// Counters in the array (`counter-array`).
    pub array_size: u64,
    /// Cycles of local work between increments (0 = tight loop).
    pub think_cycles: u64,
    /// Put the spinlock on the counter's line instead of its own line.
    pub lock_same_line: bool,
    /// Policy parameters of the `elided` synchronization (unused by the others).
    pub elision: ElisionConfig,
    /// The synchronization of `xsync-counters` (which ignores `sync`).
    pub xsync_scheme: XsyncScheme,
    /// The reader-writer lock of `rwle-hashmap`, by name (`sgl`, `rwlock`, `brlock`, `tle`,
    /// `rwle1`, `rwle-opt`, `rwle-pes`).
    pub lock: LockKind,
    /// Bucket lists of `rwle-hashmap` (the seed's `l`).
    pub buckets: u64,
    /// Initial items per bucket of `rwle-hashmap`: 200 (high capacity pressure) or 50 (low).
    pub items_per_bucket: u64,
    /// Percentage of `rwle-hashmap`'s operations that are updates (write sections).
    pub write_pct: u64,
    /// Threads of `rwle-hashmap`, on CPUs `0..threads` (0 = every CPU); the other workloads
    /// use every CPU.
    pub threads: usize,
    /// Operations of `rwle-hashmap` and `rwle-app` in all, split evenly over their threads (as the seed's
    /// benchmark splits them), so that time falls as threads are added where the lock scales.
    /// `flask-app` reads it as about how many memory operations to make in all: split over
    /// the working CPUs, or (NPB kernels) the size of the grid.
    pub total_ops: u64,
    /// RW-LE's split-lock optimization (HTM writers beside a ROT writer); the seed's
    /// experiments use it.
    pub rwle_split_lock: bool,
    /// The application of `rwle-app`.
    pub app: rwle_app::App,
    /// The Table II workload of `flask-app` (see [`flask_app`] for what each models and how
    /// its footprints were chosen).
    pub flask_app: flask_app::FlaskApp,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            kind: WorkloadKind::Counter,
            sync: SyncKind::Tx,
            increments: 1000,
            array_size: 64,
            think_cycles: 0,
            lock_same_line: false,
            elision: ElisionConfig::default(),
            xsync_scheme: XsyncScheme::Coarse,
            lock: LockKind::RwLeOpt,
            // RW-LE's low-contention l is 100,000; 1,000 keeps the 80-thread sweep within
            // minutes of host time and memory (contention is still low: 80 threads, 1,000 lists).
            buckets: 1000,
            items_per_bucket: 200,
            write_pct: 10,
            threads: 0,
            total_ops: 4000,
            rwle_split_lock: true,
            app: rwle_app::App::Tpcc,
            flask_app: flask_app::FlaskApp::Hmmer,
        }
    }
}

impl WorkloadConfig {
    /// True if the sections run under an elided lock (so the elision statistics mean
    /// something).
    pub fn elides(&self) -> bool {
        match self.kind {
            WorkloadKind::XsyncCounters => self.xsync_scheme.sync() == SyncKind::Elided,
            _ => self.sync == SyncKind::Elided,
        }
    }
}

/// A workload run that failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkloadError {
    /// The simulator could not run.
    Sim(SimError),
    /// The workload computed a wrong result (a simulator bug).
    Check(String),
}

impl std::fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkloadError::Sim(e) => e.fmt(f),
            WorkloadError::Check(m) => write!(f, "workload result check failed: {m}"),
        }
    }
}

impl std::error::Error for WorkloadError {}

impl From<SimError> for WorkloadError {
    fn from(e: SimError) -> Self {
        WorkloadError::Sim(e)
    }
}

/// Statistics of a checked workload run, and how long the host took.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// Simulator statistics (deterministic).
    pub stats: Stats,
    /// Host wall-clock seconds of the simulation (not deterministic).
    pub host_seconds: f64,
    /// What the elision policies decided, summed over the cores (zero unless the
    /// synchronization is `elided`).
    pub elision: ElisionStats,
    /// What the reader-writer lock's sections did, summed over the threads (zero unless the
    /// workload runs under a [`LockKind`]).
    pub locks: LockStats,
}

impl RunResult {
    /// Simulated memory operations per host second.
    pub fn host_ops_per_sec(&self) -> f64 {
        if self.host_seconds > 0.0 {
            self.stats.mem_ops as f64 / self.host_seconds
        } else {
            0.0
        }
    }
}

/// The threads of a lock-algorithm workload (`threads`, 0 for every CPU), checked against the
/// machine.
pub(crate) fn lock_threads(
    cfg: &crate::SimConfig,
    w: &WorkloadConfig,
) -> Result<usize, WorkloadError> {
    let threads = if w.threads == 0 {
        cfg.cpus()
    } else {
        w.threads
    };
    if threads > cfg.cpus() {
        return Err(WorkloadError::Check(format!(
            "threads ({threads}) exceeds the machine's {} CPUs",
            cfg.cpus()
        )));
    }
    Ok(threads)
}

/// Thread `t`'s share of `total` operations split over `threads` (the first `total % threads`
/// threads make one more).
pub(crate) fn share(total: u64, threads: usize, t: usize) -> u64 {
    let n = threads as u64;
    total / n + u64::from((t as u64) < total % n)
}

/// A machine configured by `cfg`, with enough simulated memory for `lines` cache lines (and
/// room to spare).
pub(crate) fn sim_with_lines(
    cfg: &crate::SimConfig,
    lines: u64,
) -> Result<crate::simulation::executor::Sim, WorkloadError> {
    let mut cfg = cfg.clone();
    let needed = lines
        .saturating_mul(cfg.line_bytes)
        .saturating_mul(2)
        .next_power_of_two();
    cfg.memory_bytes = cfg.memory_bytes.max(needed);
    crate::simulation::executor::Sim::new(cfg).map_err(|e| WorkloadError::Sim(e.into()))
}

/// Runs `sim` to the end, timing it on the host, and checks the workload's result with
/// `check` unless the run timed out. The elision and lock counts are left for the workload.
pub(crate) fn run_checked(
    sim: &mut crate::simulation::executor::Sim,
    start: std::time::Instant,
    check: impl FnOnce(&crate::simulation::executor::Sim) -> Result<(), String>,
) -> Result<RunResult, WorkloadError> {
    let stats = sim.run()?;
    let host_seconds = start.elapsed().as_secs_f64();
    if !stats.timed_out {
        check(sim).map_err(WorkloadError::Check)?;
    }
    Ok(RunResult {
        stats,
        host_seconds,
        elision: ElisionStats::default(),
        locks: Default::default(),
    })
}

/// Runs `w` on a machine configured by `sim` and checks its result.
pub fn run(sim: &crate::SimConfig, w: &WorkloadConfig) -> Result<RunResult, WorkloadError> {
    match w.kind {
        WorkloadKind::Counter => counter::run_counter(sim, w),
        WorkloadKind::CounterArray => counter::run_counter_array(sim, w),
        WorkloadKind::XsyncCounters => xsync::run_xsync_counters(sim, w),
        WorkloadKind::RwleHashmap => hashmap::run_rwle_hashmap(sim, w),
        WorkloadKind::RwleApp => rwle_app::run_rwle_app(sim, w),
        WorkloadKind::FlaskApp => flask_app::run_flask_app(sim, w),
        WorkloadKind::XsyncLeveldb => leveldb::run_xsync_leveldb(sim, w),
    }
}
