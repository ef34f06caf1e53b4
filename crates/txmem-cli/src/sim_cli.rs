//! `txmem sim`: simulator experiments, sweeps, tables, JSON and SVG output.

mod svg;

use crate::plot::{write_svg, Panel, Series};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::path::PathBuf;
use svg::{labelled_line_plot, LabelledSeries};
use txmem_sim::experiments::registry::{self, EXPERIMENTS};
use txmem_sim::experiments::sweep::{short_name, sweep, SweepSpec};
use txmem_sim::experiments::{report, table, Report, Row, RunConfig};

/// Arguments of `txmem sim`.
#[derive(Debug, Args)]
#[command(
    about = "Run simulator experiments and sweeps",
    after_help = "Examples:\n  txmem sim --list\n  txmem sim counter --cores 8 --json counter.json\n  \
                  txmem sim policies --plot policies.svg\n  \
                  txmem sim sweep --param htm.backoff --values none,linear,exponential,random --plot backoff.svg\n  \
                  txmem sim sweep --param cores --values 1,2,4,8 --series workload.sync=spinlock,tx"
)]
pub struct SimArgs {
    /// List the experiments and exit.
    #[arg(long)]
    list: bool,

    /// Experiment to run (see --list), or `sweep`.
    experiment: Option<String>,

    /// TOML file with `[sim]` and `[workload]` tables (fields of RunConfig).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Set any parameter: PATH=VALUE, e.g. htm.policy=polka, l1.ways=8, workload.think_cycles=50.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,

    /// Simulated cores.
    #[arg(long)]
    cores: Option<usize>,

    /// Random seed.
    #[arg(long)]
    seed: Option<u64>,

    /// Increments per core.
    #[arg(long)]
    increments: Option<u64>,

    /// Counters in the array (counter-array workload).
    #[arg(long)]
    array_size: Option<u64>,

    /// Workload for `sweep`: counter or counter-array.
    #[arg(long)]
    workload: Option<String>,

    /// Parameter to sweep (sweep only), e.g. htm.policy, cores, workload.array_size.
    #[arg(long, value_name = "PATH")]
    param: Option<String>,

    /// Comma-separated values of --param (sweep), or values replacing those an experiment
    /// sweeps (e.g. `txmem sim policies --values polka,timestamp`).
    #[arg(long, value_delimiter = ',', value_name = "V1,V2,...")]
    values: Vec<String>,

    /// One plot line per value of another parameter (sweep only): PATH=V1,V2,...
    #[arg(long, value_name = "PATH=V1,V2")]
    series: Option<String>,

    /// Metric on the plot's y axis (default: the experiment's, or `cycles` for sweeps).
    #[arg(long)]
    metric: Option<String>,

    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,

    /// Write an SVG plot to FILE.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,

    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

fn base_config(a: &SimArgs) -> Result<RunConfig, String> {
    let mut rc = match &a.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            toml::from_str::<RunConfig>(&text)
                .map_err(|e| format!("bad configuration file {}: {e}", path.display()))?
        }
        None => RunConfig::default(),
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
    if let Some(w) = &a.workload {
        set("workload.kind", w.clone())?;
    }
    for s in &a.sets {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| format!("--set expects PATH=VALUE, got `{s}`"))?;
        set(k.trim(), v.trim().to_string())?;
    }
    rc.validate().map_err(|e| e.to_string())?;
    Ok(rc)
}

fn progress_bar(quiet: bool) -> ProgressBar {
    let pb = ProgressBar::new(0);
    if quiet {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    } else {
        pb.set_draw_target(ProgressDrawTarget::stderr());
    }
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
    {
        pb.set_style(style);
    }
    pb
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

fn list() -> Result<(), String> {
    let mut text = String::from("Experiments (txmem sim <name>):\n");
    for e in EXPERIMENTS {
        text.push_str(&format!("  {:<14} {}\n", e.name, e.description));
    }
    text.push_str(&format!(
        "  {:<14} {}\n",
        "sweep", "any parameter: --param PATH --values V1,V2,... [--series PATH=V1,V2] [--workload counter|counter-array]"
    ));
    write_stdout(&text)
}

/// Runs `txmem sim`.
pub fn run(a: SimArgs) -> Result<(), String> {
    if a.list {
        return list();
    }
    let Some(name) = a.experiment.clone() else {
        return Err("no experiment given; run `txmem sim --list` to see them".into());
    };
    let is_sweep = name == "sweep";
    if !is_sweep && (a.param.is_some() || a.series.is_some()) {
        return Err("--param and --series are only for `txmem sim sweep`".into());
    }
    if !is_sweep && a.workload.is_some() {
        return Err(
            "--workload is only for `txmem sim sweep` (experiments choose their workload)".into(),
        );
    }
    let base = base_config(&a)?;
    let pb = progress_bar(a.quiet);
    let mut progress = |done: usize, total: usize, label: &str| {
        pb.set_length(total as u64);
        pb.set_position(done as u64);
        pb.set_message(label.to_string());
    };
    let (report, columns, x_param, series_param, metric): (
        Report,
        Vec<String>,
        String,
        Option<String>,
        String,
    ) = if is_sweep {
        let param = a
            .param
            .clone()
            .ok_or("sweep needs --param PATH (e.g. --param htm.policy)")?;
        if a.values.is_empty() {
            return Err("sweep needs --values V1,V2,...".into());
        }
        let (series_param, series_values) = match &a.series {
            Some(s) => {
                let (p, v) = s
                    .split_once('=')
                    .ok_or_else(|| format!("--series expects PATH=V1,V2, got `{s}`"))?;
                (
                    Some(p.trim().to_string()),
                    v.split(',').map(|x| x.trim().to_string()).collect(),
                )
            }
            None => (None, vec![]),
        };
        let spec = SweepSpec {
            param: param.clone(),
            values: a.values.clone(),
            series_param: series_param.clone(),
            series_values,
        };
        let rows = sweep(&base, &spec, &mut progress).map_err(|e| e.to_string())?;
        let metric = a.metric.clone().unwrap_or_else(|| "cycles".into());
        let mut cols: Vec<String> = [
            "cycles",
            "commits",
            "restarts",
            "restart_rate",
            "bus_transactions_per_increment",
            "host_ops_per_sec",
        ]
        .map(String::from)
        .to_vec();
        if !cols.contains(&metric) {
            cols.insert(0, metric.clone());
        }
        let desc = format!(
            "sweep of {param} on the {} workload",
            base.workload.kind.name()
        );
        (
            report("sweep", &desc, &base, rows),
            cols,
            short_name(&param).to_string(),
            series_param.map(|p| short_name(&p).to_string()),
            metric,
        )
    } else {
        let e = registry::find(&name).map_err(|e| e.to_string())?;
        let spec = e.sweep_spec();
        // --values replaces the swept values; a flag naming the swept parameter
        // (--array-size for counter-array) selects that one value.
        let values: Option<Vec<String>> = if !a.values.is_empty() {
            Some(a.values.clone())
        } else if spec.param == "workload.array_size" {
            a.array_size.map(|n| vec![n.to_string()])
        } else {
            None
        };
        let r = e
            .run_values(&base, values.as_deref(), &mut progress)
            .map_err(|e| e.to_string())?;
        (
            r,
            e.columns.iter().map(|s| s.to_string()).collect(),
            e.plot_x.to_string(),
            spec.series_param.map(|p| short_name(&p).to_string()),
            a.metric
                .clone()
                .unwrap_or_else(|| e.plot_metric.to_string()),
        )
    };
    pb.finish_and_clear();
    if let Some(first) = report.results.first() {
        if !first.metrics.contains_key(&metric) {
            let known: Vec<&String> = first.metrics.keys().collect();
            return Err(format!(
                "unknown metric `{metric}`; known metrics: {known:?}"
            ));
        }
    }
    let cols: Vec<&str> = columns.iter().map(String::as_str).collect();
    let text = format!(
        "# {}: {}\n{}simulator speed: {:.2} M simulated memory ops per host second (mean over rows)\n",
        report.experiment,
        report.description,
        table::render(&report.results, &cols),
        report.host_ops_per_sec / 1e6
    );
    write_stdout(&text)?;
    if let Some(path) = &a.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| format!("cannot encode JSON: {e}"))?;
        std::fs::write(path, text + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &a.plot {
        plot_report(path, &report, &x_param, series_param.as_deref(), &metric)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn label(v: Option<&serde_json::Value>) -> String {
    match v {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "-".into(),
    }
}

/// Plots `metric` against parameter `x`, one line per value of `series` (if any).
fn plot_report(
    path: &std::path::Path,
    r: &Report,
    x: &str,
    series: Option<&str>,
    metric: &str,
) -> Result<(), String> {
    let mut xs: Vec<String> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for row in &r.results {
        let xv = label(row.params.get(x));
        if !xs.contains(&xv) {
            xs.push(xv);
        }
        let s = series
            .map(|s| label(row.params.get(s)))
            .unwrap_or_else(|| metric.to_string());
        if !names.contains(&s) {
            names.push(s);
        }
    }
    let lines: Vec<LabelledSeries> = names
        .iter()
        .map(|n| {
            let ys = xs
                .iter()
                .map(|xv| {
                    r.results
                        .iter()
                        .find(|row: &&Row| {
                            label(row.params.get(x)) == *xv
                                && series
                                    .map(|s| label(row.params.get(s)) == *n)
                                    .unwrap_or(true)
                        })
                        .and_then(|row| row.metrics.get(metric)?.as_f64())
                })
                .collect();
            LabelledSeries {
                name: n.clone(),
                ys,
            }
        })
        .collect();
    let title = format!("txmem sim {}", r.experiment);
    let numeric: Option<Vec<f64>> = xs.iter().map(|x| x.parse::<f64>().ok()).collect();
    let ymax = lines
        .iter()
        .flat_map(|l| l.ys.iter().flatten())
        .fold(0.0f64, |a, &b| a.max(b));
    match numeric {
        // Numeric parameter and large values: the shared plot with a real x axis (its axis
        // labels are whole numbers, so small rates and ratios use the labelled plot).
        Some(xv) if ymax >= 10.0 => {
            let series = lines
                .iter()
                .map(|l| Series {
                    name: l.name.clone(),
                    points: xv
                        .iter()
                        .zip(&l.ys)
                        .filter_map(|(&x, y)| y.map(|y| (x, y)))
                        .collect(),
                })
                .collect();
            let panel = Panel {
                title,
                x_label: x.to_string(),
                y_label: metric.to_string(),
                series,
            };
            write_svg(path, &[panel], 1)
        }
        _ => labelled_line_plot(path, &title, x, metric, &xs, &lines),
    }
}
