//! The named experiments of `txmem sim`.

use super::sweep::{short_name, sweep, Runner, SweepSpec};
use super::{
    add_group_means, add_normalized, add_relative, report, ExperimentError, Progress, Report,
    RunConfig,
};
use crate::config::{BackoffKind, PolicyKind, SimConfig};
use crate::locks::LockKind;
use crate::workloads::{WorkloadKind, XsyncScheme};

/// A named experiment.
#[derive(Clone, Copy, Debug)]
pub struct Experiment {
    /// Name on the command line.
    pub name: &'static str,
    /// One-line description.
    pub description: &'static str,
    /// Workload it runs.
    pub workload: WorkloadKind,
    /// Metrics shown in its table.
    pub columns: &'static [&'static str],
    /// Metric on the y axis of its plot.
    pub plot_metric: &'static str,
    /// Parameter on the x axis of its plot.
    pub plot_x: &'static str,
    build: fn() -> (SweepSpec, Option<usize>),
    /// The machine it runs on unless the user gave one (`--preset`, `--config`, or a base
    /// changed from the default machine).
    pub machine: Option<fn() -> SimConfig>,
    /// A value of the series parameter whose rows the others are normalized to, point by
    /// point (`norm_*` metrics), as figures normalized to a baseline protocol are.
    pub baseline: Option<&'static str>,
    /// Parameters this experiment sets in its base configuration, each only where the base
    /// still holds [`RunConfig::default`]'s value (so the user's `--set` wins).
    pub defaults: &'static [(&'static str, &'static str)],
}

fn names<T: Copy>(all: &[T], f: fn(T) -> &'static str) -> Vec<String> {
    all.iter().map(|&x| f(x).to_string()).collect()
}

fn spec(param: &str, values: Vec<String>) -> SweepSpec {
    SweepSpec {
        param: param.into(),
        values,
        ..SweepSpec::default()
    }
}

const MAIN: &[&str] = &[
    "cycles",
    "relative_time",
    "commits",
    "restarts",
    "restart_rate",
    "unique_restart_rate",
    "bus_transactions_per_increment",
    "l1_miss_rate",
    "host_ops_per_sec",
];

/// The columns of the lock-algorithm experiments: time, commit paths, RW-LE's abort classes.
const RWLE_COLUMNS: &[&str] = &[
    "cycles",
    "cycles_per_op",
    "htm_commits",
    "rot_commits",
    "locked_sections",
    "uninstrumented_reads",
    "abort_class_htm_tx",
    "abort_class_rot_tx",
    "abort_class_capacity",
    "abort_class_lock",
    "abort_class_non_tx",
    "abort_class_other",
    "host_ops_per_sec",
];

/// The algorithms of RW-LE's figures: the four baselines, then RW-LE OPT and PES.
const RWLE_FIGURE_LOCKS: [LockKind; 6] = [
    LockKind::Sgl,
    LockKind::PthreadRw,
    LockKind::BrLock,
    LockKind::Tle,
    LockKind::RwLeOpt,
    LockKind::RwLePes,
];

/// Thread counts 1 to 80 (RW-LE's x axis), one series per lock algorithm.
fn thread_sweep(locks: &[LockKind]) -> SweepSpec {
    SweepSpec {
        param: "workload.threads".into(),
        values: ["1", "2", "4", "8", "16", "32", "64", "80"]
            .map(String::from)
            .to_vec(),
        series_param: Some("workload.lock".into()),
        series_values: locks.iter().map(|k| k.name().to_string()).collect(),
        ..SweepSpec::default()
    }
}

/// The columns of Flask's experiments: time (also against the baseline protocol), latency,
/// energy-delay, traffic and what the directory and filter did.
const FLASK_COLUMNS: &[&str] = &[
    "cycles",
    "norm_cycles",
    "relative_time",
    "amat",
    "offchip_latency",
    "norm_edp",
    "traffic_bytes",
    "norm_traffic_bytes",
    "reconstructions",
    "multicasts_false",
    "false_positive_rate",
    "directory_recalls",
    "filter_invalidations",
    "host_ops_per_sec",
];

/// Simulated memory operations per Flask run: enough that the cold start is a small part.
const FLASK_OPS: &str = "2000000";

const FLASK_DEFAULTS: &[(&str, &str)] = &[("workload.total_ops", FLASK_OPS)];

/// `param` by `series`, once for every Table II workload.
fn flask_sweep(param: &str, values: &[&str], series: &str, series_values: &[&str]) -> SweepSpec {
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    SweepSpec {
        param: param.into(),
        values: owned(values),
        series_param: Some(series.into()),
        series_values: owned(series_values),
        group_param: Some("workload.flask_app".into()),
        group_values: crate::workloads::flask_app::FlaskApp::ALL
            .iter()
            .map(|a| a.name().to_string())
            .collect(),
    }
}

/// Every experiment, in listing order.
pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "counter",
        description: "TxLinux Table 4: N cores increment one shared counter; spinlock vs transaction (vs atomic add)",
        workload: WorkloadKind::Counter,
        columns: MAIN,
        plot_metric: "cycles",
        plot_x: "sync",
        build: || (spec("workload.sync", vec!["spinlock".into(), "tx".into(), "atomic".into()]), Some(0)),
        machine: None,
        baseline: None,
        defaults: &[],
    },
    Experiment {
        name: "counter-array",
        description: "Counters spread over an array: contention falls as the array grows; spinlock vs transaction",
        workload: WorkloadKind::CounterArray,
        columns: MAIN,
        plot_metric: "cycles",
        plot_x: "array_size",
        build: || {
            (
                SweepSpec {
                    param: "workload.array_size".into(),
                    values: ["1", "4", "16", "64", "256"].map(String::from).to_vec(),
                    series_param: Some("workload.sync".into()),
                    series_values: vec!["spinlock".into(), "tx".into()],
                    ..SweepSpec::default()
                },
                None,
            )
        },
        machine: None,
        baseline: None,
        defaults: &[],
    },
    Experiment {
        name: "backoff",
        description: "MetaTM Table 7: backoff policy (exponential, linear, none, random) on the counter",
        workload: WorkloadKind::Counter,
        columns: &[
            "cycles",
            "relative_time",
            "restarts",
            "restart_rate",
            "mean_backoff_cycles",
            "backoff_cycles",
            "host_ops_per_sec",
        ],
        plot_metric: "cycles",
        plot_x: "backoff",
        build: || (spec("htm.backoff", names(&BackoffKind::ALL, BackoffKind::name)), Some(1)),
        machine: None,
        baseline: None,
        defaults: &[],
    },
    Experiment {
        name: "stall",
        description: "MetaTM Table 8: eager restart vs stall-on-conflict on the counter, per contention policy",
        workload: WorkloadKind::Counter,
        columns: &[
            "cycles",
            "relative_time",
            "restarts",
            "restart_rate",
            "stalls",
            "stall_cycles",
            "deadlocks_avoided",
            "host_ops_per_sec",
        ],
        plot_metric: "restart_rate",
        plot_x: "stall_on_conflict",
        build: || {
            (
                SweepSpec {
                    param: "htm.stall_on_conflict".into(),
                    values: vec!["false".into(), "true".into()],
                    series_param: Some("htm.policy".into()),
                    series_values: ["size-matters", "timestamp", "polka", "requester-wins"].map(String::from).to_vec(),
                    ..SweepSpec::default()
                },
                Some(0),
            )
        },
        machine: None,
        baseline: None,
        defaults: &[],
    },
    Experiment {
        name: "policies",
        description: "MetaTM Figures 9-10: contention policies on the counter, relative to SizeMatters",
        workload: WorkloadKind::Counter,
        columns: &[
            "cycles",
            "relative_time",
            "restarts",
            "restart_rate",
            "relative_restart_rate",
            "backoff_cycles",
            "host_ops_per_sec",
        ],
        plot_metric: "relative_time",
        plot_x: "policy",
        build: || (spec("htm.policy", names(&PolicyKind::ALL, PolicyKind::name)), Some(7)),
        machine: None,
        baseline: None,
        defaults: &[],
    },
    Experiment {
        name: "elision",
        description: "XSync lock elision of the counter's spinlock: hardware attempts per section before taking the lock (txmem-htm's retry policy, as txmem-elide runs it)",
        workload: WorkloadKind::Counter,
        columns: &[
            "cycles",
            "relative_time",
            "elided_commits",
            "fallbacks",
            "fallback_rate",
            "restarts",
            "lock_busy_aborts",
            "busy_waits",
            "host_ops_per_sec",
        ],
        plot_metric: "cycles",
        plot_x: "max_attempts",
        build: || {
            (
                SweepSpec {
                    param: "workload.elision.max_attempts".into(),
                    values: ["1", "2", "5", "10"].map(String::from).to_vec(),
                    // One series: it is what makes every row elide the lock.
                    series_param: Some("workload.sync".into()),
                    series_values: vec!["elided".into()],
                    ..SweepSpec::default()
                },
                Some(2),
            )
        },
        machine: None,
        baseline: None,
        defaults: &[],
    },
    Experiment {
        name: "xsync-counters",
        description: "XSync Fig 2: random increments of N counters packed in lines, under a coarse lock, fine locks, bare HTM, or either lock elided",
        workload: WorkloadKind::XsyncCounters,
        columns: &[
            "cycles",
            "relative_time",
            "commits",
            "restarts",
            "restart_rate",
            "elided_commits",
            "fallbacks",
            "fallback_rate",
            "lock_busy_aborts",
            "l1_miss_rate",
            "host_ops_per_sec",
        ],
        plot_metric: "cycles",
        plot_x: "array_size",
        build: || {
            (
                SweepSpec {
                    param: "workload.array_size".into(),
                    // 64 to 2^20 counters, by fours.
                    values: ["64", "256", "1024", "4096", "16384", "65536", "262144", "1048576"]
                        .map(String::from)
                        .to_vec(),
                    series_param: Some("workload.xsync_scheme".into()),
                    series_values: XsyncScheme::ALL.iter().map(|s| s.name().to_string()).collect(),
                    ..SweepSpec::default()
                },
                None,
            )
        },
        machine: None,
        baseline: None,
        defaults: &[],
    },
    Experiment {
        name: "xsync-leveldb",
        description: "XSync Figs 3-4: LevelDB's write path (writers' queue with group commit under the DB mutex, skiplist insert outside) by threads, under the lock or elided; the group is coarsening off/on",
        workload: WorkloadKind::XsyncLeveldb,
        columns: &[
            "cycles",
            "puts_per_kcycle",
            "elided_commits",
            "coarsened_sections",
            "fallbacks",
            "fallback_rate",
            "conflict_aborts",
            "capacity_aborts",
            "lock_busy_aborts",
            "other_aborts",
            "host_ops_per_sec",
        ],
        plot_metric: "cycles",
        plot_x: "threads",
        build: || {
            (
                SweepSpec {
                    param: "workload.threads".into(),
                    values: (1..=8).map(|t| t.to_string()).collect(),
                    series_param: Some("workload.sync".into()),
                    series_values: vec!["spinlock".into(), "elided".into()],
                    group_param: Some("workload.elision.coarsen".into()),
                    group_values: vec!["false".into(), "true".into()],
                },
                None,
            )
        },
        machine: Some(SimConfig::haswell),
        baseline: None,
        // XsyncLeveldb's own defaults: 4,000 Puts, 8,000 cycles outside the mutex a Put
        // (the log append and skiplist insert; see workloads/leveldb.rs for the calibration).
        defaults: &[
            ("workload.total_ops", "4000"),
            ("workload.think_cycles", "8000"),
        ],
    },
    Experiment {
        name: "rwle-hashmap",
        description: "RW-LE Figs 3-6: a hashmap of sorted lists behind one reader-writer lock (choose the figure with --scenario, the write share with workload.write_pct), by thread count and lock algorithm",
        workload: WorkloadKind::RwleHashmap,
        columns: RWLE_COLUMNS,
        plot_metric: "cycles",
        plot_x: "threads",
        build: || (thread_sweep(&RWLE_FIGURE_LOCKS), None),
        machine: None,
        baseline: None,
        defaults: &[],
    },
    Experiment {
        name: "rwle-app",
        description: "RW-LE Figs 8-10: TPC-C-, STMBench7- or Kyoto-Cabinet-like applications (workload.app = tpcc, stmbench7, kyoto; the write share with workload.write_pct) behind one reader-writer lock, by thread count and lock algorithm",
        workload: WorkloadKind::RwleApp,
        columns: RWLE_COLUMNS,
        plot_metric: "cycles",
        plot_x: "threads",
        build: || (thread_sweep(&RWLE_FIGURE_LOCKS), None),
        machine: None,
        baseline: None,
        defaults: &[],
    },
    Experiment {
        name: "rwle-fair",
        description: "RW-LE Fig 7: RW-LE FAIR against Algorithm 2, both without rollback-only transactions, on the high-capacity high-contention hashmap (one list of 200 items)",
        workload: WorkloadKind::RwleHashmap,
        columns: RWLE_COLUMNS,
        plot_metric: "cycles",
        plot_x: "threads",
        build: || (thread_sweep(&[LockKind::RwLeNoRot, LockKind::RwLeFair]), None),
        machine: None,
        baseline: None,
        defaults: &[("workload.buckets", "1"), ("workload.items_per_bucket", "200")],
    },
    Experiment {
        name: "flask",
        description: "Flask Figs 3-7 and 11: directory storage (SDE) 160% down to 5% of the private caches' lines for TokenB, a sparse directory, MOSAIC and Flask, on Flask's 16-core mesh, for each Table II workload (workload.flask_app); norm_* metrics are relative to TokenB at the same point, relative_time to the protocol's own 160%",
        workload: WorkloadKind::FlaskApp,
        columns: FLASK_COLUMNS,
        plot_metric: "norm_cycles",
        plot_x: "directory_coverage_pct",
        build: || {
            (
                flask_sweep(
                    "coherence.directory_coverage_pct",
                    &["160", "80", "40", "20", "10", "5"],
                    "coherence.protocol",
                    &["tokenb", "sparse-directory", "mosaic", "flask"],
                ),
                Some(0),
            )
        },
        machine: Some(SimConfig::flask),
        baseline: Some("tokenb"),
        defaults: FLASK_DEFAULTS,
    },
    Experiment {
        name: "flask-assoc",
        description: "Flask Fig 10: a sparse directory at 20% SDE with 1 to 64 ways against Flask with a 1-way directory (flask_split = 1; its row repeats at every x), for each Table II workload; norm_* metrics are relative to the sparse directory with as many ways",
        workload: WorkloadKind::FlaskApp,
        columns: FLASK_COLUMNS,
        plot_metric: "cycles",
        plot_x: "directory_ways",
        build: || {
            (
                flask_sweep(
                    "coherence.directory_ways",
                    &["1", "2", "4", "8", "16", "32", "64"],
                    "coherence.protocol",
                    &["sparse-directory", "flask"],
                ),
                None,
            )
        },
        machine: Some(SimConfig::flask),
        baseline: Some("sparse-directory"),
        defaults: &[
            ("workload.total_ops", FLASK_OPS),
            ("coherence.directory_coverage_pct", "20"),
            ("coherence.flask_split", "1"),
        ],
    },
    Experiment {
        name: "flask-split",
        description: "Flask Figs 8-9: Flask's storage split between directory ways and filter sub-tables (4 of 8 ways, 1, 7, or adaptive) at 40% down to 5% SDE, for each Table II workload; norm_* metrics are relative to the even split at the same point, relative_time to the split's own 40%",
        workload: WorkloadKind::FlaskApp,
        columns: FLASK_COLUMNS,
        plot_metric: "norm_cycles",
        plot_x: "directory_coverage_pct",
        build: || {
            (
                flask_sweep(
                    "coherence.directory_coverage_pct",
                    &["40", "20", "10", "5"],
                    "coherence.flask_split",
                    &["4", "1", "7", "adaptive"],
                ),
                Some(0),
            )
        },
        machine: Some(SimConfig::flask),
        baseline: Some("4"),
        defaults: FLASK_DEFAULTS,
    },
];

/// Looks an experiment up by name.
pub fn find(name: &str) -> Result<&'static Experiment, ExperimentError> {
    EXPERIMENTS
        .iter()
        .find(|e| e.name == name)
        .ok_or_else(|| ExperimentError::Unknown(name.into()))
}

impl Experiment {
    /// The sweep it performs.
    pub fn sweep_spec(&self) -> SweepSpec {
        (self.build)().0
    }

    /// Runs it on top of `base` (its workload kind is forced to the experiment's).
    pub fn run(&self, base: &RunConfig, progress: Progress<'_>) -> Result<Report, ExperimentError> {
        self.run_values(base, None, &Runner::parallel(), progress)
    }

    /// Runs it with `values` (if given) in place of the values it normally sweeps.
    pub fn run_values(
        &self,
        base: &RunConfig,
        values: Option<&[String]>,
        runner: &Runner,
        progress: Progress<'_>,
    ) -> Result<Report, ExperimentError> {
        let (base, spec) = self.prepare(base, values)?;
        let mut rows = sweep(&base, &spec, runner, progress)?;
        if let Some(b) = (self.build)().1 {
            // Relative to row `b` of each series (rows come series by series).
            let chunk = spec.values.len().max(1);
            for group in rows.chunks_mut(chunk) {
                let b = b.min(group.len() - 1);
                add_relative(group, b);
            }
        }
        if let (Some(baseline), Some(series)) = (self.baseline, &spec.series_param) {
            add_normalized(&mut rows, &spec, short_name(series), baseline);
        }
        if spec.group_param.is_some() {
            add_group_means(&mut rows, &spec);
        }
        Ok(report(self.name, self.description, &base, rows))
    }

    /// The base configuration it runs on (the experiment's workload and defaults applied to
    /// `base`) and the sweep it performs, with `values` (if given) in place of its own.
    pub fn prepare(
        &self,
        base: &RunConfig,
        values: Option<&[String]>,
    ) -> Result<(RunConfig, SweepSpec), ExperimentError> {
        let mut base = base.clone();
        base.workload.kind = self.workload;
        if let Some(machine) = self.machine {
            if base.sim == SimConfig::default() {
                base.sim = machine();
            }
        }
        let (pristine, given) = (
            serde_json::to_value(RunConfig::default()).unwrap_or_default(),
            serde_json::to_value(&base).unwrap_or_default(),
        );
        for (path, value) in self.defaults {
            let pointer = format!("/{}", path.replace('.', "/"));
            if pristine.pointer(&pointer) == given.pointer(&pointer) {
                base.set(path, value)?;
            }
        }
        base.validate()?;
        let mut spec = (self.build)().0;
        if let Some(v) = values {
            spec.values = v.to_vec();
        }
        Ok((base, spec))
    }
}

#[cfg(test)]
mod tests;
