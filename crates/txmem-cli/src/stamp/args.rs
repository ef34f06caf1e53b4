//! `txmem stamp`'s arguments.

use crate::measure::args::{parse_repeats, OutputArgs, OutputFlavor};
use std::path::PathBuf;
use std::str::FromStr;

use clap::Args;
use txmem_stamp::{Input, Variant};

use crate::harness::drive::ThreadList;

/// Run the STAMP applications on txmem: each variant (sequential, typed,
/// word-based) to completion, its result verified, with times, speedups
/// over the sequential run, aborts and items per transaction.
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Applications: bayes, genome, intruder, kmeans, labyrinth, ssca2, vacation-low, vacation-high, yada,\n\
                  or all.\n\
                  Input files (--input FILE, --save-input), in STAMP's formats, for kmeans, labyrinth and yada:\n\
                  \x20 kmeans     a point a line: an id, then its coordinates (spaces, tabs or commas); run with\n\
                  \x20            the paper input's -m160 -n160 -t0.01, coordinates as they are (STAMP's -z)\n\
                  \x20 labyrinth  `d X Y Z` grid, `p x1 y1 z1 x2 y2 z2` pairs, `w x y z` walls, `#` comments\n\
                  \x20 yada       FILE is a prefix: Triangle's FILE.node, FILE.ele and, if present, FILE.poly;\n\
                  \x20            a Delaunay mesh of the unit square, refined with -a20\n\
                  Use a release build: cargo run --release -- stamp all --input paper"
)]
pub struct StampArgs {
    /// Applications to run (comma separated), or `all`.
    #[arg(value_name = "APP,..", value_delimiter = ',', default_value = "all")]
    pub apps: Vec<String>,

    /// Variants, comma separated: seq, typed, words, typed-plus (default:
    /// every variant the application has).
    #[arg(long, value_name = "V,..", value_delimiter = ',', value_parser = Variant::from_str)]
    pub variant: Vec<Variant>,

    /// Thread counts of the transactional variants, comma separated (`seq`
    /// always runs on one).
    #[arg(long, value_name = "N,N,..", default_value = "1,2", value_parser = ThreadList::from_str)]
    pub threads: ThreadList,

    /// Input: `dev` (small, seconds in all), `paper` (the STO thesis'
    /// Table 7.1 arguments), both generated, or a file in STAMP's format
    /// for kmeans, labyrinth or yada (below; `./dev` for a file named
    /// `dev`).
    #[arg(long, value_name = "dev|paper|FILE", default_value = "dev", value_parser = InputArg::from_str)]
    pub input: InputArg,

    /// Write the generated input (`--input dev` or `paper`) of one of
    /// kmeans, labyrinth or yada to PATH in STAMP's format, and run
    /// nothing (yada writes PATH.node, PATH.ele and PATH.poly).
    #[arg(long, value_name = "PATH")]
    pub save_input: Option<PathBuf>,

    /// Runs per row; the table shows their median time, min and max.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = parse_repeats)]
    pub repeat: usize,

    /// The files to write, and the progress bar.
    #[command(flatten)]
    pub output: OutputArgs<StampOutput>,
}

/// `txmem stamp`'s output flags: JSON and a plot, no tables.
#[derive(Debug, Clone)]
pub struct StampOutput;

impl OutputFlavor for StampOutput {
    const JSON_HELP: &'static str = "Write the results as JSON";
    const PLOT_HELP: &'static str = "Write an SVG plot: speedup over `seq` against threads, one panel per application, a line per variant";
    const PROGRESS_HELP: &'static str = "Never draw the progress bar";
}

/// Where the applications' inputs come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputArg {
    /// Generated, of this size.
    Generated(Input),
    /// Read from this file (or, for yada, prefix).
    File(PathBuf),
}

impl InputArg {
    /// The input's name in reports: `dev`, `paper` or the file.
    pub fn name(&self) -> String {
        match self {
            InputArg::Generated(i) => i.name().to_string(),
            InputArg::File(f) => f.display().to_string(),
        }
    }
}

impl FromStr for InputArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "" => Err("an empty input (expected dev, paper or a file)".into()),
            "dev" | "paper" => Input::from_str(s).map(InputArg::Generated),
            file => Ok(InputArg::File(PathBuf::from(file))),
        }
    }
}
