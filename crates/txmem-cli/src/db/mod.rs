//! `txmem db`: database workloads (YCSB, TPC-C from `txmem-db`) measured
//! by the `txmem bench` runner.
//!
//! A run plans one row per (workload, opacity mode): each builds a fresh
//! database for every thread count, and the bench runner warms it up,
//! times the repeats, and runs the workload's consistency check after
//! each one, so a failed check makes the row FAILED, never a figure. The
//! rows report transactions per second, aborts (attempts beyond the first
//! of each transaction) and, per transaction kind, commits, aborts and
//! latency percentiles; the table, JSON, CSV, Markdown and SVG outputs are
//! those of `txmem bench`.
//!
//! Layout: [`args`] (the command line, parsed into types) and `settings`
//! (defaults filled in, combinations checked); `instance` (a
//! [`txmem_db::Workload`] as a runner row); `tpcc` (TPC-C's settings and
//! its constructor); `metadata` (the report's settings object).

pub mod args;
mod instance;
mod metadata;
mod settings;
mod tpcc;

use std::cell::RefCell;

use txmem::TxOptions;
use txmem_db::ycsb::Ycsb;

use crate::failure::Failure;
use crate::harness::spec::{Instance, Plan};
use crate::harness::system::System;
use crate::measure::host::{self, Host};
use crate::measure::report::{self, Report};
use crate::measure::runner;
use args::DbArgs;
use instance::DbInstance;
use settings::{DbSettings, DbWorkload};
use tpcc::{break_tpcc, make_tpcc};

/// Runs `txmem db` and returns the process exit status: 0, 1 if a row
/// failed its check, 130 after Ctrl-C.
pub fn run(args: DbArgs) -> Result<u8, Failure> {
    let machine = Host::detect();
    let settings = DbSettings::new(args, machine.cores)?;
    txmem::tuning::set_item_index_cutoff(settings.index_cutoff);
    let plan = plan(&settings)?;
    let date = host::utc_now();
    let measured = crate::measure::measure_plan(&plan, &settings.measure);
    let report = Report {
        title: format!("txmem db {}", settings.benchmark),
        unit: "txn",
        suite: settings.benchmark.to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        machine,
        settings: metadata::settings_json(&settings),
        results: report::rows(&measured),
        skipped: Vec::new(),
        date,
        interrupted: runner::interrupted(),
    };
    crate::measure::export(&report, &settings.outputs)?;
    Ok(crate::measure::exit_status(&report))
}

/// A database row's builder: loads a fresh database for a thread count.
type Builder = Box<dyn Fn(usize) -> Result<Box<dyn Instance>, Failure>>;

/// One row per (workload, opacity mode). The first row's database for the
/// first thread count is built here, before anything runs, so that a
/// workload that cannot be built stops the command with its error; the
/// runner receives that database when it builds the row.
fn plan(settings: &DbSettings) -> Result<Plan, Failure> {
    let mut plan = Plan::default();
    let first_threads = settings.measure.threads[0];
    for w in &settings.workloads {
        for &opacity in &settings.opacity {
            let options = TxOptions::new()
                .opacity(opacity)
                .contention(settings.policy)
                .untracked_reads(settings.untracked_reads)
                .read_my_writes(settings.read_my_writes);
            let build = builder(w.clone(), options);
            let prebuilt = match plan.cases.is_empty() {
                true => Some(build(first_threads)?),
                false => None,
            };
            let prebuilt = RefCell::new(prebuilt);
            plan.case_sized(
                settings.benchmark,
                &w.name(),
                System::Txmem.with_opacity(opacity),
                &w.note(opacity, settings),
                move |threads| {
                    if threads == first_threads {
                        if let Some(inst) = prebuilt.borrow_mut().take() {
                            return Ok(inst);
                        }
                    }
                    build(threads).map_err(|e| match e {
                        Failure::Usage(m) | Failure::Run(m) => m,
                    })
                },
            );
        }
    }
    Ok(plan)
}

/// The builder of `workload`'s databases, run with `options` (which are
/// also txmem's defaults while it loads).
fn builder(workload: DbWorkload, options: TxOptions) -> Builder {
    Box::new(move |threads| {
        txmem::set_default_options(options);
        Ok(match &workload {
            DbWorkload::Ycsb(config) => {
                let ycsb = Ycsb::new(config.clone()).map_err(Failure::Run)?;
                Box::new(DbInstance::new(
                    Box::new(ycsb),
                    options,
                    Some(|y: &Ycsb| y.corrupt(0)),
                ))
            }
            DbWorkload::Tpcc(t) => Box::new(DbInstance::new(
                Box::new(make_tpcc(t, threads)?),
                options,
                Some(break_tpcc),
            )),
        })
    })
}
