//! How rows are measured and which files a run writes: the settings every
//! measuring command (`bench`, `db`) fills from its own arguments.

use std::time::Duration;

use crate::harness::system::System;
use crate::output::OutputFile;

/// The files a run writes besides the table.
#[derive(Clone, Debug, Default)]
pub struct Outputs {
    /// The JSON report.
    pub json: Option<OutputFile>,
    /// The CSV results.
    pub csv: Option<OutputFile>,
    /// The SVG plot.
    pub plot: Option<OutputFile>,
    /// The Markdown table.
    pub markdown: Option<OutputFile>,
}

/// How every row is measured.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// Thread counts, each a separate row.
    pub threads: Vec<usize>,
    /// Timed length of each repeat.
    pub duration: Duration,
    /// Timed repeats per row.
    pub repeats: usize,
    /// Untimed warm-up before the repeats.
    pub warmup: Duration,
    /// Seed of the workloads' generators.
    pub seed: u64,
    /// Draw a progress bar on long runs.
    pub progress: bool,
    /// Systems whose state the test hook breaks before their first check
    /// (none but in builds with the `test-hooks` feature: see
    /// [`HookArgs`](super::args::HookArgs)).
    pub break_check: Vec<System>,
}
