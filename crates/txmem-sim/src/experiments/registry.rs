//! The named experiments of `txmem sim`.

use super::sweep::{sweep, SweepSpec};
use super::{add_relative, report, ExperimentError, Progress, Report, RunConfig};
use crate::config::{BackoffKind, PolicyKind};
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
}

fn names<T: Copy>(all: &[T], f: fn(T) -> &'static str) -> Vec<String> {
    all.iter().map(|&x| f(x).to_string()).collect()
}

fn spec(param: &str, values: Vec<String>) -> SweepSpec {
    SweepSpec {
        param: param.into(),
        values,
        series_param: None,
        series_values: vec![],
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
                },
                None,
            )
        },
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
                },
                Some(0),
            )
        },
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
                },
                Some(2),
            )
        },
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
                },
                None,
            )
        },
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
        self.run_values(base, None, progress)
    }

    /// Runs it with `values` (if given) in place of the values it normally sweeps.
    pub fn run_values(
        &self,
        base: &RunConfig,
        values: Option<&[String]>,
        progress: Progress<'_>,
    ) -> Result<Report, ExperimentError> {
        let mut base = base.clone();
        base.workload.kind = self.workload;
        base.validate()?;
        let (mut spec, relative_to) = (self.build)();
        if let Some(v) = values {
            spec.values = v.to_vec();
        }
        let mut rows = sweep(&base, &spec, progress)?;
        if let Some(b) = relative_to {
            // Relative to row `b` of each series (rows come series by series).
            let chunk = spec.values.len().max(1);
            for group in rows.chunks_mut(chunk) {
                let b = b.min(group.len() - 1);
                add_relative(group, b);
            }
        }
        Ok(report(self.name, self.description, &base, rows))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_experiment_is_findable_and_builds_valid_configs() {
        for e in EXPERIMENTS {
            assert_eq!(find(e.name).unwrap().name, e.name);
            let s = e.sweep_spec();
            let mut rc = RunConfig::default();
            for v in &s.values {
                rc.set(&s.param, v).unwrap();
                rc.validate().unwrap();
            }
        }
        assert!(matches!(find("nope"), Err(ExperimentError::Unknown(_))));
    }
}
