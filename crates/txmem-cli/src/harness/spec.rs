//! What a benchmark row is: a workload, a system that runs it, and how to
//! build a fresh instance of the pair.
//!
//! In-process systems implement [`Instance`]: the runner calls
//! [`Instance::op_as`] (by default [`Instance::op`]) from every thread for
//! the timed interval, then [`Instance::verify`]. The
//! libitm peer runs in a child process instead ([`Subject::External`]); it
//! does the same loop and check in C and reports the counts.

use std::time::Duration;

use rand::rngs::SmallRng;

use crate::harness::kinds::KindTallies;
use crate::harness::system::System;

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

    /// Runs one operation as thread `worker` of the run (`0..threads`),
    /// recording its kind in `kinds` (sized by [`kinds`](Self::kinds)).
    /// The driver calls this; by default it runs [`op`](Self::op).
    #[inline]
    fn op_as(&self, worker: usize, rng: &mut SmallRng, tally: &mut Tally, kinds: &mut KindTallies) {
        let _ = (worker, kinds);
        self.op(rng, tally)
    }

    /// The names of the kinds its operations come in, for per-kind
    /// reporting (none by default).
    fn kinds(&self) -> &'static [&'static str] {
        &[]
    }

    /// Called before every run of the instance (warm-up and repeats), on
    /// the runner's thread: sets what the instance needs set process-wide
    /// (txmem's default options). Nothing by default.
    fn prepare(&self) {}

    /// Checks the state after the timed run against the sum of all threads'
    /// tallies since the instance was built (final totals, set contents).
    fn verify(&self, total: &Tally) -> Result<(), String>;

    /// Deliberately breaks the state the check looks at, so a test can
    /// prove that a wrong answer is reported as a failure (the
    /// `--break-check` test hook, which only builds with the `test-hooks`
    /// feature offer). Nothing by default.
    fn sabotage(&self) {}

    /// How aborts are counted.
    fn abort_counting(&self) -> AbortCounting;
}

/// Result of one external (child-process) run.
#[derive(Clone, Debug)]
pub struct ExternalRun {
    /// Completed operations.
    pub ops: u64,
    /// Attempts, where the child counts them.
    pub attempts: Option<u64>,
    /// Timed length of the run, as the child measured it.
    pub elapsed: Duration,
}

/// Parameters of one external run.
#[derive(Clone, Copy, Debug)]
pub struct ExternalParams {
    /// Worker threads.
    pub threads: usize,
    /// Timed length.
    pub duration: Duration,
    /// Untimed warm-up before it.
    pub warmup: Duration,
    /// Seed of the workload's generators.
    pub seed: u64,
    /// Break the state before the check (the `--break-check` test hook).
    pub sabotage: bool,
}

/// Runs one repeat in a child process.
pub type ExternalRunner = Box<dyn Fn(&ExternalParams) -> Result<ExternalRun, String> + Send + Sync>;

/// Builds an instance for a thread count, or says why it cannot. (Called
/// on the runner's thread only, so it need not be `Send` or `Sync`.)
pub type SizedBuilder = Box<dyn Fn(usize) -> Result<Box<dyn Instance>, String>>;

/// How to run a row.
pub enum Subject {
    /// Built fresh for each thread count; runs in this process.
    InProcess(Box<dyn Fn() -> Box<dyn Instance> + Send + Sync>),
    /// Built fresh for each thread count by a builder that takes the count
    /// (a database sized by its threads, such as TPC-C's one warehouse per
    /// thread) and may fail, which fails the row; runs in this process.
    Sized(SizedBuilder),
    /// Runs in a child process that warms up, times, checks and reports.
    External(ExternalRunner),
}

/// One row of a suite (before thread counts are applied).
pub struct Case {
    /// Suite name (`micro`, `intset`, `bank`).
    pub suite: &'static str,
    /// Workload with its parameters, e.g. `bank/accounts=1024/audit=20%`.
    pub workload: String,
    /// The system that runs it.
    pub system: System,
    /// Short description for `--list` and the JSON.
    pub note: String,
    /// How the row runs.
    pub subject: Subject,
}

/// A row that cannot run here, with the reason (printed under the table).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Skip {
    /// Workload name.
    pub workload: String,
    /// The system that cannot run it.
    pub system: System,
    /// Why, in one line.
    pub reason: String,
}

/// The cases and skips of a suite.
#[derive(Default)]
pub struct Plan {
    /// Rows that run, in order.
    pub cases: Vec<Case>,
    /// Rows that cannot run here.
    pub skips: Vec<Skip>,
}

impl Plan {
    /// Adds an in-process row; `make` builds a fresh instance of it.
    pub fn case(
        &mut self,
        suite: &'static str,
        workload: &str,
        system: System,
        note: &str,
        make: impl Fn() -> Box<dyn Instance> + Send + Sync + 'static,
    ) {
        self.cases.push(Case {
            suite,
            workload: workload.to_string(),
            system,
            note: note.to_string(),
            subject: Subject::InProcess(Box::new(make)),
        });
    }

    /// Adds an in-process row built for each thread count by `make`.
    pub fn case_sized(
        &mut self,
        suite: &'static str,
        workload: &str,
        system: System,
        note: &str,
        make: impl Fn(usize) -> Result<Box<dyn Instance>, String> + 'static,
    ) {
        self.cases.push(Case {
            suite,
            workload: workload.to_string(),
            system,
            note: note.to_string(),
            subject: Subject::Sized(Box::new(make)),
        });
    }

    /// Records a row that cannot run here, with the reason.
    pub fn skip(&mut self, workload: &str, system: System, reason: &str) {
        self.skips.push(Skip {
            workload: workload.to_string(),
            system,
            reason: reason.to_string(),
        });
    }

    /// Every system the plan names, run or skipped, sorted and once each.
    pub fn systems(&self) -> Vec<System> {
        let mut all: Vec<System> = self
            .cases
            .iter()
            .map(|c| c.system)
            .chain(self.skips.iter().map(|s| s.system))
            .collect();
        all.sort();
        all.dedup();
        all
    }

    /// Keeps the rows whose system and workload `keep` accepts.
    pub fn retain(&mut self, keep: impl Fn(System, &str) -> bool) {
        self.cases.retain(|c| keep(c.system, &c.workload));
        self.skips.retain(|s| keep(s.system, &s.workload));
    }

    /// Workload names in the order their first row appears.
    pub fn workloads(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for c in &self.cases {
            if !out.contains(&c.workload.as_str()) {
                out.push(&c.workload);
            }
        }
        out
    }
}
