//! Runs a plan: for every workload and thread count, every system side by
//! side; a brief untimed warm-up of each, then `repeats` rounds in which
//! each system runs one timed repeat followed by the workload's check.
//! Throughput is committed operations per second; a row's figure is the
//! median over its repeats. Before each round at two or more threads the
//! runner times a cache line's round trip between two threads (see
//! [`placement`]), so that a report can tell which placement of the CPUs
//! its rounds ran in.

use std::sync::atomic::{AtomicBool, Ordering};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::harness::drive::{run_threads_detailed, Budget};
use crate::harness::kinds::KindTallies;
use crate::harness::peers::locks::ElisionCounts;
use crate::harness::spec::{AbortCounting, Case, ExternalParams, Instance, Plan, Subject, Tally};
use crate::harness::system::System;
use crate::measure::placement;
use crate::measure::settings::Measurement;
use crate::measure::stats::median;

/// Set by the Ctrl-C handler: stop the current run, report what finished.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// True once Ctrl-C was pressed.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// How a row ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Every repeat ran and passed its check.
    Ok,
    /// The check after timing failed (or the run panicked): no number.
    Failed(String),
    /// Ctrl-C arrived before the row finished.
    Interrupted,
}

/// One measured row.
#[derive(Clone, Debug)]
pub struct Measured {
    /// Suite name.
    pub suite: &'static str,
    /// Workload name.
    pub workload: String,
    /// The system.
    pub system: System,
    /// What the system is (implementation, options).
    pub note: String,
    /// Thread count.
    pub threads: usize,
    /// Operations per second of each completed repeat.
    pub samples: Vec<f64>,
    /// Committed operations over the timed repeats.
    pub ops: u64,
    /// Aborted attempts over the timed repeats, where the system reports them.
    pub aborts: Option<u64>,
    /// Elided locks: what their sections did over the timed repeats.
    pub elision: Option<ElisionCounts>,
    /// The thread-to-thread round trip (ns) measured before each round of
    /// this row's workload and thread count, `None` where the probe gave no
    /// figure (empty at one thread).
    pub round_trips_ns: Vec<Option<f64>>,
    /// The names of the kinds the workload's operations come in (empty
    /// for workloads without kinds).
    pub kind_names: &'static [&'static str],
    /// Per-kind tallies over the timed repeats (empty without kinds).
    pub kinds: KindTallies,
    /// Seconds of the timed repeats, together.
    pub timed_secs: f64,
    /// How the row ended.
    pub status: Status,
}

impl Measured {
    /// Median ops/s over the repeats.
    pub fn median(&self) -> Option<f64> {
        median(&self.samples)
    }
    /// Lowest ops/s of a repeat.
    pub fn min(&self) -> Option<f64> {
        self.samples.iter().copied().reduce(f64::min)
    }
    /// Highest ops/s of a repeat.
    pub fn max(&self) -> Option<f64> {
        self.samples.iter().copied().reduce(f64::max)
    }
    /// Aborted attempts per committed operation.
    pub fn aborts_per_commit(&self) -> Option<f64> {
        let a = self.aborts?;
        (self.ops > 0).then(|| a as f64 / self.ops as f64)
    }
}

/// Runs every case at every thread count, grouped by workload so that all
/// systems of a workload run next to each other.
pub fn run(plan: &Plan, s: &Measurement) -> Vec<Measured> {
    let order = plan.workloads();
    let rows = (plan.cases.len() * s.threads.len()) as u64;
    // One progress step per repeat, so long rows move the bar too.
    let units = rows * s.repeats as u64;
    // Estimated in f64 seconds: Duration arithmetic panics on overflow.
    let per_row = s.warmup.as_secs_f64() + s.duration.as_secs_f64() * s.repeats as f64;
    let bar = if s.progress && per_row * rows as f64 > 3.0 {
        let b = ProgressBar::with_draw_target(Some(units), ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template("{bar:30} {percent:>3}% eta {eta} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    let mut out = Vec::new();
    let mut done = 0u64;
    'all: for w in order {
        for &threads in &s.threads {
            // Every system of this workload and thread count is built and
            // warmed up first; then the repeats go round-robin across them,
            // so a change in machine load hits all systems alike and the
            // ratios between them stay meaningful on a shared machine.
            let mut rows: Vec<Row> = plan
                .cases
                .iter()
                .filter(|c| c.workload == w)
                .map(|case| Row::new(case, threads, s))
                .collect();
            for row in rows.iter_mut() {
                if interrupted() {
                    break;
                }
                bar.set_message(format!(
                    "{} {} build and warm-up t={threads}",
                    row.m.workload, row.m.system
                ));
                row.warm_up(s);
            }
            let mut round_trips = Vec::new();
            for r in 0..s.repeats {
                if threads > 1 && !interrupted() {
                    round_trips.push(placement::round_trip_ns());
                }
                for row in rows.iter_mut().filter(|row| row.m.status == Status::Ok) {
                    if interrupted() {
                        row.m.status = Status::Interrupted;
                        break;
                    }
                    bar.set_message(format!("{} {} t={threads}", row.m.workload, row.m.system));
                    row.repeat(r, s);
                    done += 1;
                    bar.set_position(done);
                }
            }
            let stop = interrupted();
            for mut row in rows {
                row.m.round_trips_ns = round_trips.clone();
                out.push(row.finish());
            }
            if stop {
                break 'all;
            }
        }
    }
    bar.finish_and_clear();
    out
}

/// One system's row while its repeats run.
struct Row<'a> {
    case: &'a Case,
    threads: usize,
    /// The in-process instance (built once per thread count).
    inst: Option<Box<dyn Instance>>,
    /// Tallies since the instance was built (what the checks compare against).
    total: Tally,
    /// The test hook breaks this row's check after its first repeat.
    breaks_check: bool,
    m: Measured,
}

impl<'a> Row<'a> {
    fn new(case: &'a Case, threads: usize, s: &Measurement) -> Self {
        Row {
            case,
            threads,
            inst: None,
            total: Tally::default(),
            breaks_check: s.break_check.contains(&case.system),
            m: Measured {
                suite: case.suite,
                workload: case.workload.clone(),
                system: case.system,
                note: case.note.clone(),
                threads,
                samples: Vec::new(),
                ops: 0,
                aborts: Some(0),
                elision: None,
                round_trips_ns: Vec::new(),
                kind_names: &[],
                kinds: KindTallies::default(),
                timed_secs: 0.0,
                status: Status::Ok,
            },
        }
    }

    /// Builds the instance and runs the untimed warm-up (external systems
    /// warm up in their own process at every repeat).
    fn warm_up(&mut self, s: &Measurement) {
        let inst = match &self.case.subject {
            Subject::InProcess(make) => make(),
            Subject::Sized(make) => match make(self.threads) {
                Ok(inst) => inst,
                Err(e) => {
                    self.m.status = Status::Failed(format!("cannot build the workload: {e}"));
                    return;
                }
            },
            Subject::External(_) => return,
        };
        self.m.kind_names = inst.kinds();
        if !s.warmup.is_zero() {
            let budget = Budget::Time {
                duration: s.warmup,
                cancel: &INTERRUPTED,
            };
            inst.prepare();
            match run_threads_detailed(inst.as_ref(), self.threads, budget, s.seed ^ 0x5741_524d) {
                Ok(run) => self.total.merge(&run.tally),
                Err(e) => self.m.status = Status::Failed(e),
            }
        }
        self.inst = Some(inst);
    }

    /// One timed repeat, followed by the workload's check.
    fn repeat(&mut self, r: usize, s: &Measurement) {
        let seed = s.seed.wrapping_add(r as u64);
        match &self.case.subject {
            Subject::InProcess(_) | Subject::Sized(_) => {
                let Some(inst) = self.inst.as_deref() else {
                    return;
                };
                let counting = inst.abort_counting();
                let before = txmem::stats::snapshot();
                let elision_before =
                    (counting == AbortCounting::Elision).then(ElisionCounts::snapshot);
                let budget = Budget::Time {
                    duration: s.duration,
                    cancel: &INTERRUPTED,
                };
                inst.prepare();
                let run = match run_threads_detailed(inst, self.threads, budget, seed) {
                    Ok(run) => run,
                    Err(e) => {
                        self.m.status = Status::Failed(e);
                        return;
                    }
                };
                let (t, elapsed) = (run.tally, run.elapsed);
                let stats = txmem::stats::snapshot() - before;
                let elision = elision_before.as_ref().map(ElisionCounts::since);
                self.total.merge(&t);
                if interrupted() {
                    // The repeat was cut short: its figure would be wrong.
                    self.m.status = Status::Interrupted;
                    return;
                }
                if self.breaks_check && r == 0 {
                    inst.sabotage();
                }
                // The check comes after timing, so it costs the measurement
                // nothing, and a wrong answer can never be reported as a figure.
                if let Err(e) = inst.verify(&self.total) {
                    self.m.status = Status::Failed(e);
                    return;
                }
                self.m.samples.push(t.ops as f64 / elapsed.as_secs_f64());
                self.m.ops += t.ops;
                self.m.kinds.merge(&run.kinds);
                self.m.timed_secs += elapsed.as_secs_f64();
                let aborts = match counting {
                    AbortCounting::TxmemStats => stats.total_aborts(),
                    AbortCounting::Attempts => t.attempts.saturating_sub(t.ops),
                    AbortCounting::Never => 0,
                    AbortCounting::Elision => elision.map_or(0, |e| e.aborts.total()),
                };
                self.m.aborts = self.m.aborts.map(|a| a + aborts);
                if let Some(e) = &elision {
                    self.m.elision.get_or_insert_default().merge(e);
                }
            }
            Subject::External(run) => {
                let p = ExternalParams {
                    threads: self.threads,
                    duration: s.duration,
                    warmup: s.warmup,
                    seed,
                    sabotage: self.breaks_check,
                };
                let res = run(&p);
                if interrupted() {
                    self.m.status = Status::Interrupted;
                    return;
                }
                match res {
                    Ok(run) => {
                        self.m
                            .samples
                            .push(run.ops as f64 / run.elapsed.as_secs_f64());
                        self.m.ops += run.ops;
                        self.m.aborts = match (self.m.aborts, run.attempts) {
                            (Some(a), Some(att)) => Some(a + att.saturating_sub(run.ops)),
                            _ => None,
                        };
                    }
                    Err(e) => self.m.status = Status::Failed(e),
                }
            }
        }
    }

    fn finish(mut self) -> Measured {
        // A row that Ctrl-C reached before its first repeat has no figure.
        if self.m.status == Status::Ok && self.m.samples.is_empty() && interrupted() {
            self.m.status = Status::Interrupted;
        }
        if self.m.status != Status::Ok {
            self.m.samples.clear();
            self.m.kinds = KindTallies::default();
        }
        self.m
    }
}
