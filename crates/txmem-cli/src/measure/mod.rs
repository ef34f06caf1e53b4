//! Measuring, shared by the commands that measure rows (`txmem bench`,
//! `txmem db`) and, for the host description and metadata, by `txmem stamp`
//! and `txmem sim`.
//!
//! [`runner`] runs a plan's rows (threads, warm-up, repeats, medians,
//! checks after timing) with [`placement`] (where the threads ran) and
//! [`stats`]; [`report`] renders the results (table, JSON, CSV, Markdown,
//! SVG); [`host`] describes the host and [`metadata`] the checkout;
//! [`settings`] says how rows are measured and what is written, [`args`]
//! parses the options that set it. What the rows measure is the
//! [`harness`](crate::harness).

pub(crate) mod args;
pub(crate) mod host;
pub(crate) mod metadata;
mod placement;
pub(crate) mod report;
pub(crate) mod runner;
pub(crate) mod settings;
mod stats;

use std::sync::atomic::Ordering;

use crate::failure::Failure;
use crate::harness::spec::Plan;
use report::Report;
use runner::Measured;
use settings::{Measurement, Outputs};

/// Exit status when a row failed its result check.
const EXIT_CHECK_FAILED: u8 = 1;
/// Exit status after Ctrl-C (128 + SIGINT).
const EXIT_INTERRUPTED: u8 = 130;

/// Runs `plan` as `measurement` says. A first Ctrl-C stops after the row in
/// progress; a second quits.
pub(crate) fn measure_plan(plan: &Plan, measurement: &Measurement) -> Vec<Measured> {
    let _ = ctrlc::set_handler(|| {
        if runner::INTERRUPTED.swap(true, Ordering::SeqCst) {
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
        eprintln!("\ninterrupted: stopping after the current run (Ctrl-C again to quit now)");
    });
    runner::run(plan, measurement)
}

/// Prints the table, then writes each requested file (all of them, even
/// after one fails; the last failure is returned).
pub(crate) fn export(report: &Report, outputs: &Outputs) -> Result<(), Failure> {
    print!("{}", report::table::render(report));
    type Writer = fn(&std::path::Path, &Report) -> Result<(), String>;
    let files: [(&Option<_>, Writer); 4] = [
        (&outputs.json, report::json::write),
        (&outputs.csv, report::csv::write),
        (&outputs.plot, report::svg::write),
        (&outputs.markdown, report::markdown::write),
    ];
    let mut failed = None;
    for (file, write) in files {
        let Some(file) = file else { continue };
        match write(file.path(), report) {
            Ok(()) => eprintln!("wrote {file}"),
            Err(e) => failed = Some(Failure::Run(e)),
        }
    }
    failed.map_or(Ok(()), Err)
}

/// The exit status a finished report calls for.
pub(crate) fn exit_status(report: &Report) -> u8 {
    if report.interrupted {
        EXIT_INTERRUPTED
    } else if report.any_failed() {
        EXIT_CHECK_FAILED
    } else {
        0
    }
}
