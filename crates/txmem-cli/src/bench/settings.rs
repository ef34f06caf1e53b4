//! The settings of one `txmem bench` run: the parsed arguments with every
//! default filled in (thread counts from the machine, durations from the
//! suite), so that the steps after it never look at an argument again.

use std::time::Duration;

use txmem::ContentionPolicy;

use super::args::BenchArgs;
use crate::harness::drive::ThreadList;
use crate::harness::suites::Suite;
use crate::harness::system::System;
use crate::measure::settings::{Measurement, Outputs};

/// Everything a run does.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The suite to plan.
    pub suite: Suite,
    /// Only list suites, workloads and systems.
    pub list: bool,
    /// txmem's contention policy.
    pub policy: ContentionPolicy,
    /// Only these systems, if given.
    pub systems: Option<Vec<System>>,
    /// Only workloads whose name contains this text, if given.
    pub filter: Option<String>,
    /// Files to write besides the table.
    pub outputs: Outputs,
    /// How every row is measured.
    pub measure: Measurement,
}

impl Settings {
    /// Fills in the defaults of `args` for a machine with `cores` CPUs.
    pub fn new(args: BenchArgs, cores: usize) -> Settings {
        let quick = args.suite == Suite::Quick;
        let duration = args.duration.unwrap_or(if quick {
            Duration::from_millis(120)
        } else {
            Duration::from_secs(1)
        });
        let threads = args.threads.unwrap_or_else(|| ThreadList::up_to(cores));
        Settings {
            suite: args.suite,
            list: args.list,
            policy: args.contention.unwrap_or(ContentionPolicy::DEFAULT),
            systems: args.systems,
            filter: args.filter,
            outputs: args.output.outputs(),
            measure: Measurement {
                threads: threads.counts().to_vec(),
                duration,
                repeats: args.repeat,
                warmup: args
                    .warmup
                    .unwrap_or_else(|| (duration / 5).min(Duration::from_millis(300))),
                seed: args.seed,
                progress: !args.output.no_progress,
                break_check: args.hooks.break_check(),
            },
        }
    }
}
