//! `txmem bench`: benchmark suites run side by side against peers.
//!
//! A run goes through four steps, one function each: [`select`] plans the
//! suite and keeps the rows `--systems` and `--filter` ask for; [`measure`]
//! runs them ([`runner`]); [`assemble`] builds the report; [`export`]
//! prints the table and writes the files.
//!
//! Layout: [`args`] (the command line, parsed into types) and [`settings`]
//! (its defaults filled in); [`metadata`] (the report's settings object);
//! [`list`] (`--list`). Running the rows and reporting them is
//! [`measure`](crate::measure), shared with `txmem db`; what the rows
//! measure is the [`harness`](crate::harness), shared with the criterion
//! benches.

pub mod args;
mod list;
mod metadata;
mod settings;

use std::path::PathBuf;
use std::sync::Arc;

use crate::failure::Failure;
use crate::harness::peers::libitm::{txmem_itm_library, Libitm};
use crate::harness::spec::Plan;
use crate::harness::suites::config::SuiteConfig;
use crate::harness::suites::Suite;
use crate::harness::system::System;
use crate::measure::host::{self, Host};
use crate::measure::report::{self, Report};
use crate::measure::runner::{self, Measured};
use crate::measure::{exit_status, export, measure_plan};
use args::BenchArgs;
use settings::Settings;

/// Runs `txmem bench` and returns the process exit status: 0, 1 if a row
/// failed its check, 130 after Ctrl-C.
pub fn run(args: BenchArgs) -> Result<u8, Failure> {
    let machine = Host::detect();
    let settings = Settings::new(args, machine.cores);
    let libitm = prepare_libitm(&settings);
    let cfg = SuiteConfig {
        quick: settings.suite == Suite::Quick,
        policy: settings.policy,
        seed: settings.measure.seed,
        libitm: libitm.clone(),
        txmem_itm: prepare_txmem_itm(&settings),
    };
    if settings.list {
        list::print(&cfg);
        return Ok(0);
    }
    let plan = select(&settings, &cfg)?;
    let date = host::utc_now();
    let measured = measure(&plan, &settings);
    let report = assemble(&settings, machine, date, &plan, &measured, &libitm);
    export(&report, &settings.outputs)?;
    Ok(exit_status(&report))
}

/// Compiles the libitm harness if the run may use it; otherwise, or if it
/// cannot be built, the reason its rows are skipped.
fn prepare_libitm(settings: &Settings) -> Result<Arc<Libitm>, String> {
    let wanted = settings
        .systems
        .as_ref()
        .is_none_or(|s| s.contains(&System::Libitm) || s.contains(&System::TxmemItm));
    if wanted {
        Libitm::prepare().map(Arc::new)
    } else {
        Err("not selected".to_string())
    }
}

/// Finds `libtxmem_itm.so` if the run may use it.
fn prepare_txmem_itm(settings: &Settings) -> Result<PathBuf, String> {
    let wanted = settings
        .systems
        .as_ref()
        .is_none_or(|s| s.contains(&System::TxmemItm));
    if wanted {
        txmem_itm_library()
    } else {
        Err("not selected".to_string())
    }
}

/// Plans the suite and keeps the rows of the systems and workloads asked
/// for. A system the suite does not run, or a selection that leaves no row,
/// is a usage error.
fn select(settings: &Settings, cfg: &SuiteConfig) -> Result<Plan, Failure> {
    let suite = settings.suite;
    let mut plan = suite.plan(cfg);
    if let Some(wanted) = &settings.systems {
        let known = plan.systems();
        if let Some(bad) = wanted.iter().find(|s| !known.contains(s)) {
            let names: Vec<&str> = known.iter().map(|s| s.name()).collect();
            return Err(Failure::Usage(format!(
                "system `{bad}` does not run in suite {suite} (its systems: {})",
                names.join(", ")
            )));
        }
        plan.retain(|system, _| wanted.contains(&system));
    }
    if let Some(f) = &settings.filter {
        plan.retain(|_, workload| workload.contains(f.as_str()));
    }
    if plan.cases.is_empty() {
        return Err(Failure::Usage(format!(
            "no benchmark rows match (suite {suite}, --systems/--filter); see `txmem bench --list`"
        )));
    }
    Ok(plan)
}

/// Runs the plan. The first Ctrl-C lets the current repeat finish and the
/// run report what ran; a second exits at once.
fn measure(plan: &Plan, settings: &Settings) -> Vec<Measured> {
    measure_plan(plan, &settings.measure)
}

/// The report of the measured rows.
fn assemble(
    settings: &Settings,
    machine: Host,
    date: String,
    plan: &Plan,
    measured: &[Measured],
    libitm: &Result<Arc<Libitm>, String>,
) -> Report {
    Report {
        title: format!("txmem bench {}", settings.suite.name()),
        unit: "ops",
        suite: settings.suite.name().to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        machine,
        settings: metadata::settings_json(settings, libitm),
        results: report::rows(measured),
        skipped: plan.skips.clone(),
        date,
        interrupted: runner::interrupted(),
    }
}
