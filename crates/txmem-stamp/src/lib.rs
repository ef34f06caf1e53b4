//! The STAMP applications on txmem.
//!
//! STAMP is the suite transactional-memory systems are compared on. Each
//! application here comes in up to four [`Variant`]s over one algorithm:
//! `seq` (no transactions: the baseline every speedup is measured
//! against), `typed` (txmem's datatypes where STAMP uses maps, lists,
//! queues and heaps), `words` (the same algorithm over txmem's untyped word
//! STM, `TWords`: the word-based STM analogue) and, for vacation and kmeans,
//! `typed-plus` (an application-defined transactional object).
//!
//! An [`App`] is built from an [`Input`] (a deterministic generator: same
//! seed, same input) with [`build`], then [`App::run`] runs one variant
//! with a number of threads to completion and verifies the result; a wrong
//! result is an error, never a time; [`timed`] measures the parallel phase.
//!
//! **Input files.** The applications STAMP feeds from files ([`FILE_APPS`]:
//! kmeans, labyrinth and yada) also read them, in STAMP's formats, with
//! [`load`]; [`save_input`] writes a generated input in the same format, so
//! that STAMP itself can run on the same bytes. The formats:
//!
//! - kmeans: text, a point a line: an id, then the coordinates, separated
//!   by spaces, tabs or commas (STAMP's `-i FILE` without `-b`). Blank
//!   lines are skipped; every point has the same number of coordinates.
//!   The file gives only the points: the clusters and threshold are the
//!   `paper` input's (`-m160 -n160 -t0.01`), and the coordinates are used
//!   as they are (STAMP's `-z`: no z-score transform), rounded to the
//!   port's fixed point (multiples of 2^-20). See [`kmeans::Points`].
//! - labyrinth: `d X Y Z` (the grid), `p x1 y1 z1 x2 y2 z2` (a pair to
//!   connect), `w x y z` (a wall: a cell no path may use) and `#`
//!   comments. See [`labyrinth::Maze`].
//! - yada: Triangle's `.node` and `.ele` files, and its `.poly` file if
//!   there is one, named by a prefix (`FILE.node`, `FILE.ele`,
//!   `FILE.poly`), as STAMP's `-i` reads them. The port refines meshes of
//!   the unit square only: every vertex must lie in `[0, 1]²`, every
//!   boundary edge on a side of the square, and the triangulation must be
//!   Delaunay. See [`yada::files`].
//!
//! A file that does not parse, or that the port cannot run, is an error
//! naming the file, the line where there is one, and what is wrong.

#![warn(missing_docs)]

pub mod bayes;
pub mod genome;
pub mod intruder;
pub mod kmeans;
pub mod labyrinth;
pub mod ssca2;
pub mod vacation;
pub mod yada;

mod files;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

/// Which implementation of an application runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Sequential, no transactions.
    Seq,
    /// txmem's typed datatypes.
    Typed,
    /// txmem's untyped word STM (`TWords`).
    Words,
    /// Typed, with an application-defined transactional object (vacation,
    /// kmeans).
    TypedPlus,
}

impl Variant {
    /// Every variant, in report order.
    pub const ALL: [Variant; 4] = [
        Variant::Seq,
        Variant::Typed,
        Variant::Words,
        Variant::TypedPlus,
    ];

    /// The variant's name on the command line and in reports.
    pub const fn name(self) -> &'static str {
        match self {
            Variant::Seq => "seq",
            Variant::Typed => "typed",
            Variant::Words => "words",
            Variant::TypedPlus => "typed-plus",
        }
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Variant {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Variant::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| {
                format!("unknown variant `{s}` (expected seq, typed, words or typed-plus)")
            })
    }
}

/// The size of an application's input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Input {
    /// Small inputs for tests: each variant runs in well under a second.
    Dev,
    /// The STO thesis' Table 7.1 arguments.
    Paper,
}

impl Input {
    /// The input's name on the command line and in reports.
    pub const fn name(self) -> &'static str {
        match self {
            Input::Dev => "dev",
            Input::Paper => "paper",
        }
    }
}

impl FromStr for Input {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "dev" => Ok(Input::Dev),
            "paper" => Ok(Input::Paper),
            other => Err(format!("unknown input `{other}` (expected dev or paper)")),
        }
    }
}

/// A STAMP application with its input generated.
pub trait App: Sync {
    /// The application's name (`kmeans`, `vacation-high`, ...).
    fn name(&self) -> &'static str;

    /// The variants it implements.
    fn variants(&self) -> &'static [Variant];

    /// The input's parameters, in STAMP's argument syntax where there is one.
    fn describe(&self) -> String;

    /// Runs `variant` with `threads` threads to completion and verifies
    /// the result (against the application's own check, or the sequential
    /// run's answer). Returns the measurement of the parallel phase, taken
    /// with [`timed`] (input generation, setup and verification excluded);
    /// `Err` names what was wrong.
    fn run(&self, variant: Variant, threads: usize) -> Result<Measured, String>;
}

/// The applications, by name.
pub fn names() -> &'static [&'static str] {
    &[
        "bayes",
        "genome",
        "intruder",
        "kmeans",
        "labyrinth",
        "ssca2",
        "vacation-low",
        "vacation-high",
        "yada",
    ]
}

/// The application `name` with its `input` generated, or `None` for a
/// name [`names`] does not list.
pub fn build(name: &str, input: Input) -> Option<Box<dyn App>> {
    match name {
        "bayes" => Some(Box::new(bayes::Bayes::new(bayes::Params::of(input)))),
        "genome" => Some(Box::new(genome::Genome::new(genome::Params::of(input)))),
        "intruder" => Some(Box::new(intruder::Intruder::new(intruder::Params::of(
            input,
        )))),
        "kmeans" => Some(Box::new(kmeans::Kmeans::new(kmeans::Params::of(input)))),
        "labyrinth" => Some(Box::new(labyrinth::Labyrinth::new(labyrinth::Params::of(
            input,
        )))),
        "ssca2" => Some(Box::new(ssca2::Ssca2::new(ssca2::Params::of(input)))),
        "vacation-low" => Some(Box::new(vacation::Vacation::new(
            vacation::ContentionLevel::Low,
            input,
            1,
        ))),
        "vacation-high" => Some(Box::new(vacation::Vacation::new(
            vacation::ContentionLevel::High,
            input,
            1,
        ))),
        "yada" => Some(Box::new(yada::Yada::new(yada::Params::of(input)))),
        _ => None,
    }
}

/// The applications whose input STAMP reads from a file, in the order of
/// [`names`]: the ones [`load`] and [`save_input`] take.
pub const FILE_APPS: [&str; 3] = ["kmeans", "labyrinth", "yada"];

/// The application `name` with its input read from `path` in STAMP's
/// format (for yada, `path` is the prefix of the `.node`, `.ele` and
/// `.poly` files). `Err` says what is wrong: a name [`names`] does not
/// list, an application STAMP does not feed from a file, or a file that
/// cannot be read or run (naming the file and line).
pub fn load(name: &str, path: &Path) -> Result<Box<dyn App>, String> {
    match name {
        "kmeans" => Ok(Box::new(kmeans::Kmeans::load(path)?)),
        "labyrinth" => Ok(Box::new(labyrinth::Labyrinth::load(path)?)),
        "yada" => Ok(Box::new(yada::Yada::load(path)?)),
        _ => Err(not_from_file(name)),
    }
}

/// Writes application `name`'s generated `input` to `path` in the format
/// [`load`] reads (for yada, `path` is a prefix: `.node`, `.ele` and
/// `.poly` are appended); returns the files written.
pub fn save_input(name: &str, input: Input, path: &Path) -> Result<Vec<PathBuf>, String> {
    match name {
        "kmeans" => {
            let p = kmeans::Params::of(input);
            kmeans::Points::generate(p.points, p.dims, p.blobs, p.seed).write(path)?;
            Ok(vec![path.to_path_buf()])
        }
        "labyrinth" => {
            let p = labyrinth::Params::of(input);
            labyrinth::Maze::generate(p.x, p.y, p.z, p.paths, p.seed).write(path)?;
            Ok(vec![path.to_path_buf()])
        }
        "yada" => {
            let p = yada::Params::of(input);
            let mesh = yada::mesh::generate(p.points, p.seed, &yada::mesh::Quality::new(p.angle));
            yada::files::write(&mesh, path)
        }
        _ => Err(not_from_file(name)),
    }
}

/// Why `name` has no input file.
fn not_from_file(name: &str) -> String {
    if names().contains(&name) {
        format!(
            "{name} has no input file, only the dev and paper inputs: STAMP \
             generates its input from arguments (input files: {})",
            FILE_APPS.join(", ")
        )
    } else {
        format!("unknown application `{name}`")
    }
}

/// What one run of one variant did.
#[derive(Clone, Debug)]
pub struct Measured {
    /// The parallel phase's time.
    pub elapsed: Duration,
    /// txmem's counters over the run (all zero for `seq`).
    pub stats: txmem::stats::Stats,
}

impl Measured {
    /// Items per committed transaction: reads and writes recorded (tracking
    /// set and read log), on average. ([`Stats::max_items`](txmem::stats::Stats::max_items)
    /// is the largest tracking set of the run.)
    pub fn items_per_commit(&self) -> f64 {
        let s = &self.stats;
        if s.commits == 0 {
            0.0
        } else {
            (s.read_items + s.write_items) as f64 / s.commits as f64
        }
    }
}

/// Runs `variant` of `app` with `threads` threads: its time and txmem's
/// statistics over its parallel phase. Statistics are process-wide, so runs
/// must not overlap.
pub fn measure(app: &dyn App, variant: Variant, threads: usize) -> Result<Measured, String> {
    if !app.variants().contains(&variant) {
        return Err(format!("{} has no {variant} variant", app.name()));
    }
    app.run(variant, threads)
}

/// Runs `phase`, the measured part of a run, and returns its result with
/// its time and txmem's statistics over it (maxima included: they are reset
/// first, so no transaction may be running when it is called).
pub fn timed<R>(phase: impl FnOnce() -> R) -> (R, Measured) {
    txmem::stats::reset_maxima();
    let before = txmem::stats::snapshot();
    let started = Instant::now();
    let out = phase();
    let elapsed = started.elapsed();
    let stats = txmem::stats::snapshot() - before;
    (out, Measured { elapsed, stats })
}

/// Splits `0..n` into `parts` contiguous chunks of nearly equal size: the
/// range of chunk `i`.
pub fn chunk(n: usize, parts: usize, i: usize) -> std::ops::Range<usize> {
    let parts = parts.max(1);
    let (q, r) = (n / parts, n % parts);
    let start = i * q + i.min(r);
    start..start + q + usize::from(i < r)
}
