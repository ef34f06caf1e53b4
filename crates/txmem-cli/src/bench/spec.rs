//! What a benchmark row is: a workload, a system that runs it, and how to
//! build a fresh instance of the pair.
//!
//! In-process systems implement [`Instance`]: the runner calls [`Instance::op`]
//! from every thread for the timed interval, then [`Instance::verify`]. The
//! libitm peer runs in a child process instead ([`Subject::External`]); it
//! does the same loop and check in C and reports the counts.

use std::time::Duration;

use rand::rngs::SmallRng;

/// Counts one thread accumulates while it runs a workload.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tally {
    /// Completed operations (committed transactions, or critical sections).
    pub ops: u64,
    /// Attempts, for systems that count them by running the closure
    /// (aborts = attempts - ops). Unused where the system has its own stats.
    pub attempts: u64,
    /// Workload-specific net effect used by the check: increments applied
    /// (micro), net inserts (intset).
    pub delta: i64,
    /// Failures a workload detected while running (e.g. an audit that saw a
    /// wrong total in a committed transaction).
    pub bad: u64,
}

impl Tally {
    /// Adds another thread's counts.
    pub fn merge(&mut self, o: &Tally) {
        self.ops += o.ops;
        self.attempts += o.attempts;
        self.delta += o.delta;
        self.bad += o.bad;
    }
}

/// How a system's aborts are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbortCounting {
    /// Read from `txmem::stats` around the run.
    TxmemStats,
    /// `Tally::attempts - Tally::ops` (closure invocations counted by the harness).
    Attempts,
    /// Locks: operations never abort.
    Never,
    /// Elided locks: hardware aborts, from `txmem_elide::stats` around the
    /// run (a section that aborts is retried, in the end on the fallback
    /// lock, so operations still never fail).
    Elision,
}

/// A prepared (workload, system) pair with its shared state.
pub trait Instance: Sync {
    /// Runs one operation (one transaction) on the calling thread.
    fn op(&self, rng: &mut SmallRng, tally: &mut Tally);

    /// Checks the state after the timed run against the sum of all threads'
    /// tallies since the instance was built (final totals, set contents).
    fn verify(&self, total: &Tally) -> Result<(), String>;

    /// Deliberately breaks the state the check looks at (test hook, see
    /// `INJECT_ENV` in `bench/mod.rs`), so a test can prove a wrong answer is
    /// reported as a failure.
    fn sabotage(&self);

    /// How aborts are counted.
    fn abort_counting(&self) -> AbortCounting;
}

/// Result of one external (child-process) run.
#[derive(Clone, Debug)]
pub struct ExternalRun {
    pub ops: u64,
    pub attempts: Option<u64>,
    pub elapsed: Duration,
}

/// Parameters of one external run.
#[derive(Clone, Copy, Debug)]
pub struct ExternalParams {
    pub threads: usize,
    pub duration: Duration,
    pub warmup: Duration,
    pub seed: u64,
    pub sabotage: bool,
}

/// Runs one repeat in a child process.
pub type ExternalRunner = Box<dyn Fn(&ExternalParams) -> Result<ExternalRun, String> + Send + Sync>;

/// How to run a row.
pub enum Subject {
    /// Built fresh for each thread count; runs in this process.
    InProcess(Box<dyn Fn() -> Box<dyn Instance> + Send + Sync>),
    /// Runs in a child process that warms up, times, checks and reports.
    External(ExternalRunner),
}

/// One row of a suite (before thread counts are applied).
pub struct Case {
    /// Suite name (`micro`, `intset`, `bank`).
    pub suite: &'static str,
    /// Workload with its parameters, e.g. `bank/accounts=1024/audit=20%`.
    pub workload: String,
    /// `txmem`, `txmem-<variant>`, or the peer's name.
    pub system: String,
    /// Short description for `--list` and the JSON.
    pub note: String,
    pub subject: Subject,
}

/// A row that cannot run here, with the reason (printed under the table).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Skip {
    pub workload: String,
    pub system: String,
    pub reason: String,
}

/// The cases and skips of a suite.
#[derive(Default)]
pub struct Plan {
    pub cases: Vec<Case>,
    pub skips: Vec<Skip>,
}

impl Plan {
    pub fn case(
        &mut self,
        suite: &'static str,
        workload: &str,
        system: &str,
        note: &str,
        make: impl Fn() -> Box<dyn Instance> + Send + Sync + 'static,
    ) {
        self.cases.push(Case {
            suite,
            workload: workload.to_string(),
            system: system.to_string(),
            note: note.to_string(),
            subject: Subject::InProcess(Box::new(make)),
        });
    }

    pub fn skip(&mut self, workload: &str, system: &str, reason: &str) {
        self.skips.push(Skip {
            workload: workload.to_string(),
            system: system.to_string(),
            reason: reason.to_string(),
        });
    }
}
