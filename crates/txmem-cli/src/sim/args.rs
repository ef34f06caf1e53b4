//! The command line of `txmem sim`. Values are parsed into their types
//! here: the experiment is looked up, the configuration file read and
//! parsed, each `--set` checked against the simulator's configuration, so
//! a bad value is reported before anything runs.

use std::str::FromStr;

use clap::Args;
use txmem_sim::experiments::registry::{self, Experiment, EXPERIMENTS};
use txmem_sim::experiments::RunConfig;
use txmem_sim::workloads::hashmap::Scenario;
use txmem_sim::workloads::WorkloadKind;

use crate::measure::args::{OutputArgs, OutputFlavor};

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
    pub list: bool,

    /// Experiment to run (see --list), or `sweep`.
    #[arg(value_parser = Target::from_str)]
    pub experiment: Option<Target>,

    /// TOML file with `[sim]` and `[workload]` tables (fields of RunConfig).
    #[arg(long, value_name = "FILE", value_parser = read_config)]
    pub config: Option<RunConfig>,

    /// Set any parameter: PATH=VALUE, e.g. htm.policy=polka, l1.ways=8, workload.think_cycles=50.
    #[arg(long = "set", value_name = "PATH=VALUE", value_parser = Assignment::from_str)]
    pub sets: Vec<Assignment>,

    /// Start from a machine preset instead of the default machine: power8 (10 cores x 8
    /// hardware threads, RW-LE's machine), haswell (4 cores x 2, XSync's) or flask (Flask's
    /// 16-core tiled CMP on a 4x4 mesh); the other flags and --set then change it.
    #[arg(long, value_parser = parse_preset)]
    pub preset: Option<Preset>,

    /// RW-LE's hashmap configuration (rwle-hashmap, rwle-fair): hc-hc, hc-lc, lc-hc or lc-lc
    /// (capacity pressure, then contention: Figs 3, 4, 5, 6); sets workload.buckets and
    /// workload.items_per_bucket before --set.
    #[arg(long, value_parser = Scenario::from_str)]
    pub scenario: Option<Scenario>,

    /// Simulated cores.
    #[arg(long)]
    pub cores: Option<usize>,

    /// Random seed.
    #[arg(long)]
    pub seed: Option<u64>,

    /// Increments per core.
    #[arg(long)]
    pub increments: Option<u64>,

    /// Counters in the array (counter-array workload).
    #[arg(long)]
    pub array_size: Option<u64>,

    /// Workload for `sweep`: counter, counter-array, xsync-counters, rwle-hashmap, rwle-app, flask-app or xsync-leveldb.
    #[arg(long, value_parser = parse_workload)]
    pub workload: Option<WorkloadKind>,

    /// Parameter to sweep (sweep only), e.g. htm.policy, cores, workload.array_size.
    #[arg(long, value_name = "PATH")]
    pub param: Option<String>,

    /// Comma-separated values of --param (sweep), or values replacing those an experiment
    /// sweeps (e.g. `txmem sim policies --values polka,timestamp`).
    #[arg(long, value_delimiter = ',', value_name = "V1,V2,...")]
    pub values: Vec<String>,

    /// One plot line per value of another parameter (sweep only): PATH=V1,V2,...
    #[arg(long, value_name = "PATH=V1,V2", value_parser = Series::from_str)]
    pub series: Option<Series>,

    /// Metric on the plot's y axis (default: the experiment's, or `cycles` for sweeps).
    #[arg(long)]
    pub metric: Option<String>,

    /// The files to write, and the progress bar.
    #[command(flatten)]
    pub output: OutputArgs<SimOutput>,

    /// Points to simulate at once, one per host thread (default: every host core). The rows
    /// are the same whatever the number; the host_* metrics then include the contention.
    #[arg(long, short = 'j', value_parser = clap::value_parser!(u64).range(1..))]
    pub jobs: Option<u64>,

    /// A JSON-lines file of finished points: points already in it are not run again, and
    /// each point is appended as it finishes, so a rerun resumes an interrupted sweep.
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<std::path::PathBuf>,

    /// Print the points of the experiment or sweep (JSON lines, one configuration each) and
    /// run nothing: for an external engine, which runs them with `txmem sim points` and
    /// writes the checkpoint this command then reads back (see scripts/sim-dask.py).
    #[arg(long)]
    pub plan: bool,
}

/// `txmem sim`'s output flags: JSON and a plot, no tables; `-q` and
/// `--quiet` kept as names of `--no-progress`.
#[derive(Debug, Clone)]
pub struct SimOutput;

impl OutputFlavor for SimOutput {
    const JSON_HELP: &'static str = "Write the results as JSON to FILE";
    const PLOT_HELP: &'static str = "Write an SVG plot to FILE";
    const PROGRESS_HELP: &'static str = "Never draw the progress bar (as in `txmem bench`, `db` and `stamp`; `-q` and `--quiet` say the same)";
    const QUIET: bool = true;
}

/// What `txmem sim` runs: a named experiment, a sweep of any parameter, or given points.
#[derive(Clone, Copy, Debug)]
pub enum Target {
    /// An experiment of the registry.
    Experiment(&'static Experiment),
    /// `sweep`.
    Sweep,
    /// `points`: the points on standard input (as `--plan` prints them), each finished point
    /// printed as a checkpoint line.
    Points,
}

impl FromStr for Target {
    type Err = String;

    fn from_str(s: &str) -> Result<Target, String> {
        if s == "sweep" {
            return Ok(Target::Sweep);
        }
        if s == "points" {
            return Ok(Target::Points);
        }
        registry::find(s).map(Target::Experiment).map_err(|_| {
            let names: Vec<&str> = EXPERIMENTS.iter().map(|e| e.name).collect();
            format!(
                "unknown experiment `{s}` (expected one of: {}, sweep or points)",
                names.join(", ")
            )
        })
    }
}

/// One `--set PATH=VALUE`, known to apply to the simulator's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    /// Dotted parameter path.
    pub path: String,
    /// Its value, as the configuration reads it.
    pub value: String,
}

impl FromStr for Assignment {
    type Err = String;

    fn from_str(s: &str) -> Result<Assignment, String> {
        let (path, value) = s
            .split_once('=')
            .ok_or_else(|| format!("expected PATH=VALUE, got `{s}`"))?;
        let a = Assignment {
            path: path.trim().to_string(),
            value: value.trim().to_string(),
        };
        // Whether the path exists and the value has its type does not
        // depend on the rest of the configuration: check it now.
        RunConfig::default()
            .set(&a.path, &a.value)
            .map_err(|e| e.to_string())?;
        Ok(a)
    }
}

/// `--series PATH=V1,V2,...`: one plot line per value of `param`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Series {
    /// Dotted parameter path.
    pub param: String,
    /// Its values, one line each.
    pub values: Vec<String>,
}

impl FromStr for Series {
    type Err = String;

    fn from_str(s: &str) -> Result<Series, String> {
        let (param, values) = s
            .split_once('=')
            .ok_or_else(|| format!("expected PATH=V1,V2, got `{s}`"))?;
        Ok(Series {
            param: param.trim().to_string(),
            values: values.split(',').map(|x| x.trim().to_string()).collect(),
        })
    }
}

/// Reads and parses a TOML configuration file.
fn read_config(path: &str) -> Result<RunConfig, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    toml::from_str::<RunConfig>(&text).map_err(|e| format!("bad configuration file {path}: {e}"))
}

/// A machine preset (`--preset`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// `SimConfig::power8()`.
    Power8,
    /// `SimConfig::haswell()`.
    Haswell,
    /// `SimConfig::flask()`.
    Flask,
}

impl Preset {
    /// The machine configuration.
    pub fn config(self) -> txmem_sim::SimConfig {
        match self {
            Preset::Power8 => txmem_sim::SimConfig::power8(),
            Preset::Haswell => txmem_sim::SimConfig::haswell(),
            Preset::Flask => txmem_sim::SimConfig::flask(),
        }
    }
}

/// Parses a preset by name.
fn parse_preset(s: &str) -> Result<Preset, String> {
    match s {
        "power8" => Ok(Preset::Power8),
        "haswell" => Ok(Preset::Haswell),
        "flask" => Ok(Preset::Flask),
        _ => Err(format!(
            "unknown preset `{s}` (expected power8, haswell or flask)"
        )),
    }
}

/// Parses a workload kind by name.
fn parse_workload(s: &str) -> Result<WorkloadKind, String> {
    WorkloadKind::ALL
        .into_iter()
        .find(|k| k.name() == s)
        .ok_or_else(|| {
            let names: Vec<&str> = WorkloadKind::ALL.iter().map(|k| k.name()).collect();
            format!(
                "unknown workload `{s}` (expected one of {})",
                names.join(", ")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert!(matches!("sweep".parse::<Target>(), Ok(Target::Sweep)));
        assert!(
            matches!("counter".parse::<Target>(), Ok(Target::Experiment(e)) if e.name == "counter")
        );
        let err = "nope".parse::<Target>().unwrap_err();
        assert!(
            err.contains("unknown experiment `nope`") && err.contains("counter"),
            "{err}"
        );
    }

    #[test]
    fn assignments_are_checked() {
        let a: Assignment = "htm.policy=polka".parse().unwrap();
        assert_eq!((a.path.as_str(), a.value.as_str()), ("htm.policy", "polka"));
        assert!("cores"
            .parse::<Assignment>()
            .unwrap_err()
            .contains("PATH=VALUE"));
        assert!("htm.nope=1".parse::<Assignment>().is_err());
        assert!("htm.policy=bogus".parse::<Assignment>().is_err());
    }

    #[test]
    fn series() {
        let s: Series = "cores=2,3".parse().unwrap();
        assert_eq!(s.param, "cores");
        assert_eq!(s.values, ["2", "3"]);
        assert!("cores".parse::<Series>().is_err());
    }
}
