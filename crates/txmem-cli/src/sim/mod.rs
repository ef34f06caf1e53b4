//! `txmem sim`: simulator experiments, sweeps, tables, JSON and SVG output.
//!
//! [`args`] parses the command line into types, [`settings`] resolves it
//! into one job; [`run`] executes the job, prints the table and writes the
//! files; [`plot`] and [`svg`] draw the results.

pub mod args;
mod plot;
mod settings;
mod svg;

use std::io::Write;
use txmem_sim::experiments::registry::EXPERIMENTS;
use txmem_sim::experiments::sweep::{plan, run_point, short_name, sweep, Point};
use txmem_sim::experiments::{report, table, Report};

use crate::failure::Failure;
use args::SimArgs;
use settings::{Job, SimSettings, Work};

/// Metrics a sweep's table shows.
const SWEEP_COLUMNS: [&str; 6] = [
    "cycles",
    "commits",
    "restarts",
    "restart_rate",
    "bus_transactions_per_increment",
    "host_ops_per_sec",
];

/// A finished job and how to show it.
struct Outcome {
    report: Report,
    /// Metrics in the table.
    columns: Vec<String>,
    /// Parameter on the plot's x axis.
    x_param: String,
    /// Parameter whose values are the plot's lines, if any.
    series_param: Option<String>,
    /// Metric on the plot's y axis.
    metric: String,
}

/// Runs `txmem sim`.
pub fn run(args: SimArgs) -> Result<(), Failure> {
    let settings = SimSettings::new(args).map_err(Failure::Usage)?;
    let work = match &settings.job {
        Job::List => return list().map_err(Failure::Run),
        Job::Points => return points(),
        Job::Run(work) if settings.plan => return print_plan(work).map_err(Failure::Run),
        Job::Run(work) => work,
    };
    let outcome = execute(work, &settings).map_err(Failure::Run)?;
    check_metric(&outcome).map_err(Failure::Usage)?;
    print_table(&outcome).map_err(Failure::Run)?;
    export(&settings, &outcome).map_err(Failure::Run)
}

/// `--plan`: prints the points of the experiment or sweep, one JSON object per line.
fn print_plan(work: &Work) -> Result<(), String> {
    let (base, spec) = match work {
        Work::Sweep { base, spec } => (base.clone(), spec.clone()),
        Work::Experiment {
            experiment,
            base,
            values,
        } => experiment
            .prepare(base, values.as_deref())
            .map_err(|e| e.to_string())?,
    };
    let mut out = std::io::stdout().lock();
    for p in plan(&base, &spec).map_err(|e| e.to_string())? {
        serde_json::to_writer(&mut out, &p).map_err(|e| e.to_string())?;
        writeln!(out).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// `txmem sim points`: runs each point read from standard input and prints it finished (a
/// checkpoint line). A line that is not a point is an error naming it.
fn points() -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    for (i, line) in std::io::stdin().lines().enumerate() {
        let line = line.map_err(|e| Failure::Run(format!("reading points: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let p: Point = serde_json::from_str(&line)
            .map_err(|e| Failure::Usage(format!("point on line {}: {e}", i + 1)))?;
        let done = run_point(&p).map_err(|e| Failure::Run(format!("line {}: {e}", i + 1)))?;
        serde_json::to_writer(&mut out, &done).map_err(|e| Failure::Run(e.to_string()))?;
        writeln!(out).map_err(|e| Failure::Run(e.to_string()))?;
    }
    Ok(())
}

/// Runs the experiment or sweep, with a progress bar unless `--no-progress`.
fn execute(work: &Work, settings: &SimSettings) -> Result<Outcome, String> {
    let pb = crate::output::progress_bar(settings.no_progress);
    let mut progress = |done: usize, total: usize, label: &str| {
        pb.set_length(total as u64);
        pb.set_position(done as u64);
        pb.set_message(label.to_string());
    };
    let outcome = match work {
        Work::Sweep { base, spec } => {
            let rows =
                sweep(base, spec, &settings.runner, &mut progress).map_err(|e| e.to_string())?;
            let metric = settings.metric.clone().unwrap_or_else(|| "cycles".into());
            let mut columns: Vec<String> = SWEEP_COLUMNS.map(String::from).to_vec();
            if !columns.contains(&metric) {
                columns.insert(0, metric.clone());
            }
            let desc = format!(
                "sweep of {} on the {} workload",
                spec.param,
                base.workload.kind.name()
            );
            Outcome {
                report: report("sweep", &desc, base, rows),
                columns,
                x_param: short_name(&spec.param).to_string(),
                series_param: spec
                    .series_param
                    .as_deref()
                    .map(|p| short_name(p).to_string()),
                metric,
            }
        }
        Work::Experiment {
            experiment: e,
            base,
            values,
        } => {
            let report = e
                .run_values(base, values.as_deref(), &settings.runner, &mut progress)
                .map_err(|e| e.to_string())?;
            Outcome {
                report,
                columns: e.columns.iter().map(|s| s.to_string()).collect(),
                x_param: e.plot_x.to_string(),
                series_param: e
                    .sweep_spec()
                    .series_param
                    .map(|p| short_name(&p).to_string()),
                metric: settings
                    .metric
                    .clone()
                    .unwrap_or_else(|| e.plot_metric.to_string()),
            }
        }
    };
    pb.finish_and_clear();
    Ok(outcome)
}

/// A `--metric` must name one the rows measured (known only once they ran).
fn check_metric(o: &Outcome) -> Result<(), String> {
    if let Some(first) = o.report.results.first() {
        if !first.metrics.contains_key(&o.metric) {
            let known: Vec<&String> = first.metrics.keys().collect();
            return Err(format!(
                "unknown metric `{}`; known metrics: {known:?}",
                o.metric
            ));
        }
    }
    Ok(())
}

/// Prints the results table and the simulator's speed.
fn print_table(o: &Outcome) -> Result<(), String> {
    let cols: Vec<&str> = o.columns.iter().map(String::as_str).collect();
    let r = &o.report;
    write_stdout(&format!(
        "# {}: {}\n{}simulator speed: {:.2} M simulated memory ops per host second (mean over rows)\n",
        r.experiment,
        r.description,
        table::render(&r.results, &cols),
        r.host_ops_per_sec / 1e6
    ))
}

/// Writes the JSON report and the plot, where asked for.
fn export(settings: &SimSettings, o: &Outcome) -> Result<(), String> {
    if let Some(file) = &settings.json {
        let text = serde_json::to_string_pretty(&o.report)
            .map_err(|e| format!("cannot encode JSON: {e}"))?;
        file.write(&(text + "\n"))?;
        eprintln!("wrote {file}");
    }
    if let Some(file) = &settings.plot {
        plot::plot_report(
            file.path(),
            &o.report,
            &o.x_param,
            o.series_param.as_deref(),
            &o.metric,
        )?;
        eprintln!("wrote {file}");
    }
    Ok(())
}

/// Writes to stdout; a closed pipe (`txmem sim ... | head`) is not an error.
fn write_stdout(text: &str) -> Result<(), String> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(format!("cannot write to stdout: {e}")),
    }
}

/// Prints the experiments and the sweep's usage.
fn list() -> Result<(), String> {
    let mut text = String::from("Experiments (txmem sim <name>):\n");
    for e in EXPERIMENTS {
        text.push_str(&format!("  {:<14} {}\n", e.name, e.description));
    }
    text.push_str(&format!(
        "  {:<14} {}\n",
        "sweep", "any parameter: --param PATH --values V1,V2,... [--series PATH=V1,V2] [--workload counter|counter-array|xsync-counters|rwle-hashmap|rwle-app|flask-app|xsync-leveldb]"
    ));
    write_stdout(&text)
}
