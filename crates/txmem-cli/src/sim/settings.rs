//! The settings of one `txmem sim` run: what to run, on which base
//! configuration, and where the results go, resolved from the arguments
//! once. Combinations that make no sense (`--param` without `sweep`, a
//! value the swept parameter cannot take, a configuration that does not
//! validate) are rejected here, before anything runs.

use txmem_sim::experiments::registry::Experiment;
use txmem_sim::experiments::sweep::{Runner, SweepSpec};
use txmem_sim::experiments::RunConfig;

use crate::output::OutputFile;
use crate::sim::args::{SimArgs, Target};

/// Everything a run does.
pub struct SimSettings {
    /// What to run.
    pub job: Job,
    /// Metric on the plot's y axis, if not the job's default.
    pub metric: Option<String>,
    /// Where to write the JSON report.
    pub json: Option<OutputFile>,
    /// Where to write the plot.
    pub plot: Option<OutputFile>,
    /// Hide the progress bar.
    pub no_progress: bool,
    /// How the points run: how many at once, and the checkpoint file.
    pub runner: Runner,
    /// Print the points instead of running them.
    pub plan: bool,
}

/// What a run does.
// One value per process: the size of the larger variant costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Job {
    /// List the experiments.
    List,
    /// Run an experiment or a sweep.
    Run(Work),
    /// Run the points on standard input, print them finished.
    Points,
}

/// The simulations of a run.
pub enum Work {
    /// Run a named experiment.
    Experiment {
        /// The experiment.
        experiment: &'static Experiment,
        /// Its base configuration.
        base: RunConfig,
        /// Values replacing those it sweeps, if given.
        values: Option<Vec<String>>,
    },
    /// Sweep a parameter.
    Sweep {
        /// The base configuration.
        base: RunConfig,
        /// The parameter, its values and the optional series.
        spec: SweepSpec,
    },
}

impl SimSettings {
    /// Resolves the arguments; `Err` names what does not fit.
    pub fn new(a: SimArgs) -> Result<SimSettings, String> {
        let job = if a.list {
            Job::List
        } else {
            match a.experiment {
                None => {
                    return Err("no experiment given; run `txmem sim --list` to see them".into())
                }
                Some(Target::Sweep) => Job::Run(sweep_work(&a)?),
                Some(Target::Points) => Job::Points,
                Some(Target::Experiment(experiment)) => Job::Run(experiment_work(&a, experiment)?),
            }
        };
        Ok(SimSettings {
            job,
            metric: a.metric,
            json: a.output.json,
            plot: a.output.plot,
            no_progress: a.output.no_progress,
            runner: Runner {
                jobs: a.jobs.map_or(0, |n| n as usize),
                checkpoint: a.checkpoint,
            },
            plan: a.plan,
        })
    }
}

/// A sweep: `--param` and `--values` are required, and every value (and
/// series value) must be one its parameter can take.
fn sweep_work(a: &SimArgs) -> Result<Work, String> {
    let base = base_config(a)?;
    let param = a
        .param
        .clone()
        .ok_or("sweep needs --param PATH (e.g. --param htm.policy)")?;
    if a.values.is_empty() {
        return Err("sweep needs --values V1,V2,...".into());
    }
    check_values(&base, &param, &a.values)?;
    let (series_param, series_values) = match &a.series {
        Some(s) => {
            check_values(&base, &s.param, &s.values)?;
            (Some(s.param.clone()), s.values.clone())
        }
        None => (None, Vec::new()),
    };
    Ok(Work::Sweep {
        base,
        spec: SweepSpec {
            param,
            values: a.values.clone(),
            series_param,
            series_values,
            ..SweepSpec::default()
        },
    })
}

/// A named experiment: the sweep-only flags are refused; `--values`
/// replaces the values it sweeps, and a flag naming its swept parameter
/// (`--array-size` for counter-array) selects that one value.
fn experiment_work(a: &SimArgs, experiment: &'static Experiment) -> Result<Work, String> {
    if a.param.is_some() || a.series.is_some() {
        return Err("--param and --series are only for `txmem sim sweep`".into());
    }
    if a.workload.is_some() {
        return Err(
            "--workload is only for `txmem sim sweep` (experiments choose their workload)".into(),
        );
    }
    let base = base_config(a)?;
    let spec = experiment.sweep_spec();
    let values = if !a.values.is_empty() {
        Some(a.values.clone())
    } else if spec.param == "workload.array_size" {
        a.array_size.map(|n| vec![n.to_string()])
    } else {
        None
    };
    if let Some(v) = &values {
        let mut own = base.clone();
        own.workload.kind = experiment.workload;
        check_values(&own, &spec.param, v)?;
    }
    Ok(Work::Experiment {
        experiment,
        base,
        values,
    })
}

/// The base configuration: the file, the preset's machine or the defaults,
/// then the flags, then each `--set`, validated as a whole.
fn base_config(a: &SimArgs) -> Result<RunConfig, String> {
    let mut rc = match (&a.config, a.preset) {
        (Some(_), Some(_)) => {
            return Err(
                "--config and --preset both give the machine: use one (and --set to change it)"
                    .into(),
            )
        }
        (Some(c), None) => c.clone(),
        (None, Some(p)) => RunConfig {
            sim: p.config(),
            ..RunConfig::default()
        },
        (None, None) => RunConfig::default(),
    };
    let mut set = |k: &str, v: String| rc.set(k, &v).map_err(|e| e.to_string());
    if let Some(c) = a.cores {
        set("cores", c.to_string())?;
    }
    if let Some(s) = a.seed {
        set("seed", s.to_string())?;
    }
    if let Some(n) = a.increments {
        set("workload.increments", n.to_string())?;
    }
    if let Some(n) = a.array_size {
        set("workload.array_size", n.to_string())?;
    }
    if let Some(w) = a.workload {
        set("workload.kind", w.name().to_string())?;
    }
    if let Some(s) = a.scenario {
        set("workload.buckets", s.buckets().to_string())?;
        set(
            "workload.items_per_bucket",
            s.items_per_bucket().to_string(),
        )?;
    }
    for s in &a.sets {
        set(&s.path, s.value.clone())?;
    }
    rc.validate().map_err(|e| e.to_string())?;
    Ok(rc)
}

/// Checks that `param` exists and can take each of `values` on `base`.
fn check_values(base: &RunConfig, param: &str, values: &[String]) -> Result<(), String> {
    for v in values {
        base.clone().set(param, v).map_err(|e| e.to_string())?;
    }
    Ok(())
}
