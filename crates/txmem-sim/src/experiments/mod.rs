//! Experiments: named runs of workloads over parameter values, producing rows of
//! `{params, metrics}` in the JSON contract of `txmem sim`:
//! `{"experiment", "version", "config": {...}, "results": [{"params": {...}, "metrics": {...}}]}`.

pub mod registry;
pub mod sweep;
pub mod table;

use crate::config::{set_json_path, ConfigError, SimConfig};
use crate::workloads::{self, RunResult, WorkloadConfig, WorkloadError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Version of the report format and simulator, written into every report.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Everything one run needs: the machine and the workload.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunConfig {
    /// The simulated machine.
    pub sim: SimConfig,
    /// The workload.
    pub workload: WorkloadConfig,
}

impl RunConfig {
    /// Sets a parameter by dotted path: `workload.<field>`, `sim.<path>`, or a bare
    /// `<path>` into the machine configuration (e.g. `htm.policy`, `cores`).
    ///
    /// ```
    /// use txmem_sim::experiments::RunConfig;
    /// let mut rc = RunConfig::default();
    /// rc.set("htm.backoff", "exponential").unwrap();
    /// rc.set("workload.array_size", "16").unwrap();
    /// assert_eq!(rc.workload.array_size, 16);
    /// assert!(rc.set("htm.backoff", "sideways").is_err());
    /// ```
    pub fn set(&mut self, path: &str, value: &str) -> Result<(), ConfigError> {
        let full = if path.starts_with("workload.") || path.starts_with("sim.") {
            path.to_string()
        } else {
            format!("sim.{path}")
        };
        let mut doc = serde_json::to_value(&*self).map_err(|e| ConfigError(e.to_string()))?;
        set_json_path(&mut doc, &full, value)?;
        *self = serde_json::from_value(doc)
            .map_err(|e| ConfigError(format!("cannot set {path} = {value}: {e}")))?;
        Ok(())
    }

    /// Validates the machine configuration.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.sim.validate()
    }
}

/// One row of results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// What was varied, and its value.
    pub params: Map<String, Value>,
    /// What was measured.
    pub metrics: Map<String, Value>,
}

/// The report of one experiment, in the stable JSON contract.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Experiment name.
    pub experiment: String,
    /// Simulator version.
    pub version: String,
    /// Base configuration (before per-row parameters).
    pub config: Value,
    /// One row per run.
    pub results: Vec<Row>,
    /// What the rows reproduce, in words.
    pub description: String,
    /// Mean simulated memory operations per host second over all rows.
    pub host_ops_per_sec: f64,
}

/// Metrics of one run (all deterministic except the `host_*` ones).
pub fn metrics(rc: &RunConfig, r: &RunResult) -> Map<String, Value> {
    let s = &r.stats;
    let incs = (rc.sim.cpus() as u64 * rc.workload.increments).max(1) as f64;
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    put("cycles", s.total_cycles.into());
    put(
        "cycles_per_increment",
        (s.total_cycles as f64 / incs).into(),
    );
    put("timed_out", s.timed_out.into());
    put("commits", s.tx.commits.into());
    put("restarts", s.tx.restarts.into());
    put("unique_restarts", s.tx.unique_restarts.into());
    put("restart_rate", s.tx.restart_rate().into());
    put("unique_restart_rate", s.tx.unique_restart_rate().into());
    put("aborts_conflict", s.tx.aborts.conflict.into());
    put("aborts_capacity", s.tx.aborts.capacity.into());
    put("aborts_explicit", s.tx.aborts.explicit.into());
    put("aborts_nesting", s.tx.aborts.nesting.into());
    put("aborts_interrupt", s.tx.aborts.interrupt.into());
    put("backoff_cycles", s.tx.backoff_cycles.into());
    put(
        "mean_backoff_cycles",
        (s.tx.backoff_cycles as f64 / s.tx.backoffs.max(1) as f64).into(),
    );
    put("stall_cycles", s.tx.stall_cycles.into());
    put("stalls", s.tx.stalls.into());
    put("deadlocks_avoided", s.tx.deadlocks_avoided.into());
    put(
        "interrupted_transactions",
        s.tx.interrupted_transactions.into(),
    );
    put("l1_miss_rate", s.cache.l1.miss_rate().into());
    put("llc_miss_rate", s.cache.llc.miss_rate().into());
    put("bus_transactions", s.coherence.bus_transactions.into());
    put(
        "bus_transactions_per_increment",
        (s.coherence.bus_transactions as f64 / incs).into(),
    );
    put("coherence_messages", s.coherence.messages.into());
    put("snoops", s.coherence.snoops.into());
    put("invalidations", s.coherence.invalidations.into());
    put("mem_ops", s.mem_ops.into());
    if rc.sim.coherence.protocol != crate::config::ProtocolKind::MesiSnooping {
        // Only directory protocols have these, so MESI reports stay as they were.
        let c = &s.coherence;
        // Misses the protocol served (a TokenB broadcast each).
        put("requests", (c.get_s + c.get_m + c.upgrades).into());
        put("directory_recalls", c.directory_recalls.into());
        put("recall_invalidations", c.recall_invalidations.into());
        put("directory_evictions", c.directory_evictions.into());
        put("reconstructions", c.reconstructions.into());
        put("multicasts_true", c.multicasts_true.into());
        put("multicasts_false", c.multicasts_false.into());
        // The filter's false-positive rate: of the lookups for lines on no chip cache, the
        // share it answered "maybe" (the seed's metric); null for protocols without a filter.
        let absent = c.filter_lookups.saturating_sub(c.multicasts_true);
        put(
            "false_positive_rate",
            if c.filter_lookups > 0 {
                (c.multicasts_false as f64 / absent.max(1) as f64).into()
            } else {
                Value::Null
            },
        );
        put("filter_saturations", c.filter_saturations.into());
        put("filter_overflows", c.filter_overflows.into());
        put("filter_invalidations", c.filter_invalidations.into());
        put("split_changes", c.split_changes.into());
        put("home_waits", c.home_waits.into());
        put("transient_retries", c.transient_retries.into());
        put("persistent_requests", c.persistent_requests.into());
        let k = &s.cache;
        put("amat", k.amat(rc.sim.l1.latency).into());
        put("offchip_accesses", k.offchip.into());
        put(
            "offchip_latency",
            (k.offchip_cycles as f64 / k.offchip.max(1) as f64).into(),
        );
        let n = &s.network;
        put("control_bytes", n.control_bytes.into());
        put("data_bytes", n.data_bytes.into());
        put("traffic_bytes", (n.control_bytes + n.data_bytes).into());
        put("flit_hops", n.flit_hops.into());
        put("contention_cycles", n.contention_cycles.into());
        let e = crate::energy::Energy::of(&rc.sim, s);
        put("energy_nj", (e.total() / 1000.0).into());
        put("edp", (e.total() / 1000.0 * s.total_cycles as f64).into());
        put("energy_network_nj", ((e.routers + e.links) / 1000.0).into());
    }
    if rc.workload.elides() {
        // Only elided runs have these, so the other rows' reports stay as they were.
        let e = &r.elision;
        put("sections", e.sections.into());
        put("elided_commits", e.elided_commits.into());
        put("coarsened_sections", e.coarsened_sections.into());
        put("fallbacks", e.fallback_acquisitions.into());
        put(
            "fallback_rate",
            (e.fallback_acquisitions as f64 / e.sections.max(1) as f64).into(),
        );
        put("lock_busy_aborts", e.aborts.lock_busy.into());
        put("busy_waits", e.busy_waits.into());
        if rc.workload.kind == workloads::WorkloadKind::XsyncLeveldb {
            // The other causes, for xsync-leveldb only (the other reports stay as they were).
            put("conflict_aborts", e.aborts.conflict.into());
            put("capacity_aborts", e.aborts.capacity.into());
            put("explicit_aborts", e.aborts.explicit.into());
            put("other_aborts", e.aborts.other.into());
        }
    }
    if rc.workload.kind == workloads::WorkloadKind::XsyncLeveldb {
        let puts = rc.workload.total_ops as f64;
        put(
            "puts_per_kcycle",
            (puts * 1000.0 / s.total_cycles.max(1) as f64).into(),
        );
    }
    if matches!(
        rc.workload.kind,
        workloads::WorkloadKind::RwleHashmap | workloads::WorkloadKind::RwleApp
    ) {
        // Only lock-algorithm runs have these, so the other reports stay as they were.
        let l = &r.locks;
        let ops = l.sections().max(1) as f64;
        put("cycles_per_op", (s.total_cycles as f64 / ops).into());
        put("read_sections", l.read_sections.into());
        put("write_sections", l.write_sections.into());
        put("htm_commits", l.htm_commits.into());
        put("rot_commits", l.rot_commits.into());
        put("locked_sections", l.locked_sections.into());
        put("uninstrumented_reads", l.uninstrumented_reads.into());
        let a = &l.aborts;
        put("lock_aborts_conflict", a.conflict.into());
        put("lock_aborts_capacity", a.capacity.into());
        put("lock_aborts_explicit", a.explicit.into());
        put("lock_busy_aborts", l.lock_busy_aborts.into());
        put(
            "lock_aborts_other",
            (a.nesting + a.interrupt + a.other).into(),
        );
        put("rot_aborts", l.rot_aborts.into());
        put("quiescence_waits", l.quiescence_waits.into());
        // RW-LE's six abort classes.
        let c = &l.causes;
        put("abort_class_htm_tx", c.htm_conflict.into());
        put("abort_class_rot_tx", c.rot_conflict.into());
        put("abort_class_capacity", c.capacity.into());
        put("abort_class_lock", c.lock_busy.into());
        put("abort_class_non_tx", c.non_tx.into());
        put("abort_class_other", c.other.into());
    }
    put("host_seconds", r.host_seconds.into());
    put("host_ops_per_sec", r.host_ops_per_sec().into());
    m
}

/// Runs one configuration and returns its metrics.
pub fn run_one(rc: &RunConfig) -> Result<Map<String, Value>, WorkloadError> {
    let r = workloads::run(&rc.sim, &rc.workload)?;
    Ok(metrics(rc, &r))
}

/// Progress callback: (runs done, runs in all, label of the run just finished).
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize, &str);

/// A failed experiment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExperimentError {
    /// Bad parameter or configuration.
    Config(ConfigError),
    /// A run failed.
    Run(String),
    /// No experiment has this name.
    Unknown(String),
}

impl std::fmt::Display for ExperimentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExperimentError::Config(e) => e.fmt(f),
            ExperimentError::Run(m) => write!(f, "run failed: {m}"),
            ExperimentError::Unknown(n) => {
                write!(f, "unknown experiment `{n}` (see `txmem sim --list`)")
            }
        }
    }
}

impl std::error::Error for ExperimentError {}

impl From<ConfigError> for ExperimentError {
    fn from(e: ConfigError) -> Self {
        ExperimentError::Config(e)
    }
}

/// Adds `relative_time` and `relative_restart_rate` to every row, relative to row `base`.
pub fn add_relative(rows: &mut [Row], base: usize) {
    let get = |r: &Row, k: &str| r.metrics.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let (bt, br) = (get(&rows[base], "cycles"), get(&rows[base], "restart_rate"));
    for r in rows.iter_mut() {
        let t = get(r, "cycles");
        let rr = get(r, "restart_rate");
        r.metrics.insert(
            "relative_time".into(),
            if bt > 0.0 { t / bt } else { 0.0 }.into(),
        );
        r.metrics.insert(
            "relative_restart_rate".into(),
            if br > 0.0 { rr / br } else { 0.0 }.into(),
        );
    }
}

/// Metrics that [`add_normalized`] divides by the baseline's.
const NORMALIZED: [&str; 4] = ["cycles", "edp", "amat", "traffic_bytes"];

/// Adds `norm_<metric>` to every row: its metric over that of the row of the same point (same
/// x and group) in the series whose `series` parameter is `baseline`.
pub fn add_normalized(rows: &mut [Row], spec: &sweep::SweepSpec, series: &str, baseline: &str) {
    let x = sweep::short_name(&spec.param).to_string();
    let group = spec.group_param.as_deref().map(sweep::short_name);
    let key = |r: &Row| {
        (
            r.params.get(&x).cloned(),
            group.and_then(|g| r.params.get(g).cloned()),
        )
    };
    let is_base = |r: &Row| {
        r.params
            .get(series)
            .is_some_and(|v| v == &crate::config::parse_scalar(baseline))
    };
    let bases: Vec<(_, Map<String, Value>)> = rows
        .iter()
        .filter(|r| is_base(r))
        .map(|r| (key(r), r.metrics.clone()))
        .collect();
    for r in rows.iter_mut() {
        let Some((_, b)) = bases.iter().find(|(k, _)| *k == key(r)) else {
            continue;
        };
        for m in NORMALIZED {
            let (Some(v), Some(bv)) = (
                r.metrics.get(m).and_then(Value::as_f64),
                b.get(m).and_then(Value::as_f64),
            ) else {
                continue;
            };
            let norm = if bv > 0.0 { v / bv } else { 0.0 };
            r.metrics.insert(format!("norm_{m}"), norm.into());
        }
    }
}

/// The group value of the rows [`add_group_means`] appends.
pub const MEAN_GROUP: &str = "mean";

/// Appends, for every series and x of a grouped sweep, a row whose group is
/// [`MEAN_GROUP`]: the geometric mean over the groups of every ratio (`norm_*`,
/// `relative_*`) and the arithmetic mean of every other number.
pub fn add_group_means(rows: &mut Vec<Row>, spec: &sweep::SweepSpec) {
    let Some(group) = spec.group_param.as_deref().map(sweep::short_name) else {
        return;
    };
    let mut means: Vec<Row> = Vec::new();
    for r in rows.iter() {
        let mut params = r.params.clone();
        params.insert(group.to_string(), MEAN_GROUP.into());
        if means.iter().any(|m| m.params == params) {
            continue;
        }
        let members: Vec<&Row> = rows
            .iter()
            .filter(|o| {
                o.params
                    .iter()
                    .all(|(k, v)| k == group || r.params.get(k) == Some(v))
            })
            .collect();
        let mut metrics = Map::new();
        for k in r.metrics.keys() {
            let vs: Vec<f64> = members
                .iter()
                .filter_map(|m| m.metrics.get(k)?.as_f64())
                .collect();
            if vs.len() != members.len() {
                continue;
            }
            let n = vs.len() as f64;
            let ratio = k.starts_with("norm_") || k.starts_with("relative_");
            let mean = if ratio && vs.iter().all(|&v| v > 0.0) {
                (vs.iter().map(|v| v.ln()).sum::<f64>() / n).exp()
            } else {
                vs.iter().sum::<f64>() / n
            };
            metrics.insert(k.clone(), mean.into());
        }
        means.push(Row { params, metrics });
    }
    rows.extend(means);
}

/// Builds a report from rows.
pub fn report(name: &str, description: &str, base: &RunConfig, results: Vec<Row>) -> Report {
    let ops: Vec<f64> = results
        .iter()
        .filter_map(|r| r.metrics.get("host_ops_per_sec")?.as_f64())
        .collect();
    let host_ops_per_sec = if ops.is_empty() {
        0.0
    } else {
        ops.iter().sum::<f64>() / ops.len() as f64
    };
    Report {
        experiment: name.to_string(),
        version: VERSION.to_string(),
        config: serde_json::to_value(base).unwrap_or(Value::Null),
        results,
        description: description.to_string(),
        host_ops_per_sec,
    }
}
