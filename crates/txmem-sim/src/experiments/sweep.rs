//! Sweeps: run a workload for every value of one parameter (and optionally every value of
//! a second, "series" parameter, and of a third, "group" parameter: one panel per value).

use super::{run_one, ExperimentError, Progress, Row, RunConfig};
use crate::config::parse_scalar;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

/// What to sweep.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepSpec {
    /// Dotted parameter path (see [`RunConfig::set`]).
    pub param: String,
    /// Values, as strings.
    pub values: Vec<String>,
    /// Optional second parameter: one series (plot line) per value.
    pub series_param: Option<String>,
    /// Values of the series parameter.
    pub series_values: Vec<String>,
    /// Optional third parameter, outermost: the whole sweep once per value (one panel of a
    /// figure per workload, say).
    pub group_param: Option<String>,
    /// Values of the group parameter.
    pub group_values: Vec<String>,
}

/// Short column name of a parameter path (`htm.policy` -> `policy`).
pub fn short_name(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

/// How a sweep runs its points: how many at once, and where finished points are kept so that
/// an interrupted sweep resumes.
///
/// The simulator is deterministic and each point runs on a machine of its own, so the rows
/// are the same whatever `jobs` is, and a point read back from the checkpoint is the point
/// that would have been run (only its `host_*` metrics, which measure the host, differ).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Runner {
    /// Points run at once, each on a host thread of its own; 0 uses every host core. With
    /// more than one, the `host_*` metrics include the points' contention for the host.
    pub jobs: usize,
    /// A JSON-lines file of finished points. Points already in it (the same full
    /// configuration) are not run again; every point run is appended as it finishes.
    pub checkpoint: Option<PathBuf>,
}

impl Runner {
    /// Every host core, no checkpoint.
    pub fn parallel() -> Runner {
        Runner::default()
    }

    /// One point at a time (the `host_*` metrics then measure one run alone).
    pub fn sequential() -> Runner {
        Runner {
            jobs: 1,
            checkpoint: None,
        }
    }

    fn threads(&self, points: usize) -> usize {
        let n = match self.jobs {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        n.clamp(1, points.max(1))
    }
}

/// One point of a sweep: a whole configuration, and the swept parameters' values in it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The configuration to simulate.
    pub config: RunConfig,
    /// The swept parameters (short names) and their values, for the report.
    pub params: Map<String, Value>,
}

/// A finished point, as a checkpoint file holds it (one JSON object per line).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finished {
    /// The point's whole configuration: what identifies it.
    pub config: Value,
    /// The swept parameters and their values.
    pub params: Map<String, Value>,
    /// What the run measured.
    pub metrics: Map<String, Value>,
}

/// Simulates one point. An external engine (`scripts/sim-dask.py`) runs points this way,
/// through `txmem sim points`, and its finished points make a checkpoint file.
pub fn run_point(p: &Point) -> Result<Finished, ExperimentError> {
    let metrics = run_one(&p.config).map_err(|e| ExperimentError::Run(e.to_string()))?;
    Ok(Finished {
        config: serde_json::to_value(&p.config).unwrap_or_default(),
        params: p.params.clone(),
        metrics,
    })
}

/// The points of a sweep, group by group and, within a group, series by series; each
/// configuration is built and validated.
pub fn plan<'a>(base: &RunConfig, spec: &'a SweepSpec) -> Result<Vec<Point>, ExperimentError> {
    if spec.values.is_empty() {
        return Err(ExperimentError::Run(format!(
            "no values to sweep for `{}`",
            spec.param
        )));
    }
    // An axis without a parameter (or without values) is one pass with nothing set.
    let axis = |param: &Option<String>, values: &'a [String]| -> Vec<Option<&'a String>> {
        match param {
            Some(_) if !values.is_empty() => values.iter().map(Some).collect(),
            _ => vec![None],
        }
    };
    let series = axis(&spec.series_param, &spec.series_values);
    let groups = axis(&spec.group_param, &spec.group_values);
    let mut points = Vec::new();
    for (g, s) in groups
        .iter()
        .flat_map(|g| series.iter().map(move |s| (g, s)))
    {
        for v in &spec.values {
            let mut config = base.clone();
            let mut params = Map::new();
            if let (Some(gp), Some(gv)) = (&spec.group_param, g) {
                config.set(gp, gv)?;
                params.insert(short_name(gp).to_string(), parse_scalar(gv));
            }
            if let (Some(sp), Some(sv)) = (&spec.series_param, s) {
                config.set(sp, sv)?;
                params.insert(short_name(sp).to_string(), parse_scalar(sv));
            }
            config.set(&spec.param, v)?;
            config.validate()?;
            params.insert(short_name(&spec.param).to_string(), parse_scalar(v));
            points.push(Point { config, params });
        }
    }
    Ok(points)
}

/// The finished points of a checkpoint file (none if it does not exist yet).
fn read_checkpoint(path: &Path) -> Result<Vec<Finished>, ExperimentError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(ExperimentError::Run(format!(
                "cannot read checkpoint {}: {e}",
                path.display()
            )))
        }
    };
    let mut done = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Finished>(line) {
            Ok(f) => done.push(f),
            // A line cut short by an interruption is the last one: run that point again.
            Err(_) if i + 1 == text.lines().count() => {}
            Err(e) => {
                return Err(ExperimentError::Run(format!(
                    "checkpoint {} line {}: {e}",
                    path.display(),
                    i + 1
                )))
            }
        }
    }
    Ok(done)
}

/// Runs the sweep. Every configuration is built and validated before the first run, so a
/// bad value fails fast.
pub fn sweep(
    base: &RunConfig,
    spec: &SweepSpec,
    runner: &Runner,
    progress: Progress<'_>,
) -> Result<Vec<Row>, ExperimentError> {
    let plan = plan(base, spec)?;
    let total = plan.len();
    let keys: Vec<Value> = plan
        .iter()
        .map(|p| serde_json::to_value(&p.config).unwrap_or_default())
        .collect();
    let mut results: Vec<Option<Map<String, Value>>> = vec![None; total];
    let mut log = None;
    if let Some(path) = &runner.checkpoint {
        for f in read_checkpoint(path)? {
            if let Some(i) = keys.iter().position(|k| *k == f.config) {
                results[i] = Some(f.metrics);
            }
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| {
                ExperimentError::Run(format!("cannot write checkpoint {}: {e}", path.display()))
            })?;
        log = Some(std::io::BufWriter::new(file));
    }
    let label = |params: &Map<String, Value>| {
        params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let todo: Vec<usize> = (0..total).filter(|&i| results[i].is_none()).collect();
    let mut done = total - todo.len();
    if done > 0 {
        progress(done, total, "resumed from the checkpoint");
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel();
    let mut failure = None;
    std::thread::scope(|scope| {
        for _ in 0..runner.threads(todo.len()) {
            let (tx, next, stop, todo, plan) = (tx.clone(), &next, &stop, &todo, &plan);
            scope.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Some(&i) = todo.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    let r = run_one(&plan[i].config);
                    if tx.send((i, r)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (i, r) in rx {
            let l = label(&plan[i].params);
            match r {
                Ok(metrics) => {
                    if let Some(w) = &mut log {
                        let line = Finished {
                            config: keys[i].clone(),
                            params: plan[i].params.clone(),
                            metrics: metrics.clone(),
                        };
                        let written = serde_json::to_writer(&mut *w, &line)
                            .map_err(std::io::Error::from)
                            .and_then(|()| writeln!(w))
                            .and_then(|()| w.flush());
                        if let Err(e) = written {
                            failure.get_or_insert(ExperimentError::Run(format!(
                                "cannot write checkpoint: {e}"
                            )));
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                    results[i] = Some(metrics);
                    done += 1;
                    progress(done, total, &l);
                }
                Err(e) => {
                    failure.get_or_insert(ExperimentError::Run(format!("{l}: {e}")));
                    stop.store(true, Ordering::Relaxed);
                }
            }
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(plan
        .into_iter()
        .zip(results)
        .map(|(Point { params, .. }, metrics)| Row {
            params,
            metrics: metrics.expect("every point ran or was read back"),
        })
        .collect())
}
