//! The settings of one `txmem db` run: the parsed arguments with every
//! default filled in and every combination checked, so that the steps
//! after it never look at an argument again.

use std::time::Duration;

use txmem::{ContentionPolicy, Opacity};
use txmem_db::ycsb;

use crate::db::args::{Benchmark, CommonArgs, DbArgs};
use crate::db::tpcc::TpccSettings;
use crate::failure::Failure;
use crate::harness::drive::ThreadList;
use crate::measure::settings::{Measurement, Outputs};

/// Everything a run does.
#[derive(Clone, Debug)]
pub struct DbSettings {
    /// `ycsb` or `tpcc`.
    pub benchmark: &'static str,
    /// The workloads, each a block of rows.
    pub workloads: Vec<DbWorkload>,
    /// txmem's opacity modes, each a system (a row per thread count).
    pub opacity: Vec<Opacity>,
    /// txmem's contention policy.
    pub policy: ContentionPolicy,
    /// Reads of unwritten records go to the read log.
    pub untracked_reads: bool,
    /// Reads look for the transaction's own writes.
    pub read_my_writes: bool,
    /// The tracking set's hash-index cutoff (`usize::MAX`: never).
    pub index_cutoff: usize,
    /// Files to write besides the table.
    pub outputs: Outputs,
    /// How every row is measured.
    pub measure: Measurement,
}

/// One database workload.
#[derive(Clone, Debug)]
pub enum DbWorkload {
    /// A YCSB table and mix.
    Ycsb(ycsb::Config),
    /// TPC-C.
    Tpcc(TpccSettings),
}

impl DbWorkload {
    /// The name its rows are reported under.
    pub fn name(&self) -> String {
        match self {
            DbWorkload::Ycsb(c) => c.name(),
            DbWorkload::Tpcc(t) => t.name(),
        }
    }

    /// What the rows run on, for the report's notes (the knobs off their
    /// defaults included).
    pub fn note(&self, opacity: Opacity, settings: &DbSettings) -> String {
        let on = match self {
            DbWorkload::Ycsb(c) => format!("YCSB on txmem {}", c.index().map_type()),
            DbWorkload::Tpcc(_) => "TPC-C on txmem maps".to_string(),
        };
        let mut knobs = String::new();
        if !settings.untracked_reads {
            knobs += ", untracked reads off";
        }
        if !settings.read_my_writes {
            knobs += ", read-my-writes off";
        }
        match settings.index_cutoff {
            usize::MAX => knobs += ", no item index",
            txmem::tuning::HASH_CUTOFF => {}
            n => knobs += &format!(", item index past {n}"),
        }
        format!("{on}, opacity {}{knobs}", opacity.name())
    }
}

impl DbSettings {
    /// Fills in the defaults of `args` for a machine with `cores` CPUs; a
    /// combination that makes no workload is a usage error.
    pub fn new(args: DbArgs, cores: usize) -> Result<DbSettings, Failure> {
        let benchmark = args.benchmark.name();
        let (workloads, common) = match args.benchmark {
            Benchmark::Ycsb(a) => {
                let mut workloads = Vec::new();
                for (i, &mix) in a.workload.iter().enumerate() {
                    if a.workload[..i].contains(&mix) {
                        return Err(Failure::Usage(format!("workload `{mix}` given twice")));
                    }
                    let config = ycsb::Config {
                        record_count: a.records,
                        value_size: a.value_size,
                        distribution: a.distribution,
                        theta: a.theta,
                        ops_per_txn: a.ops_per_txn,
                        index: a.index,
                        ..ycsb::Config::new(mix)
                    };
                    config.validate().map_err(Failure::Usage)?;
                    workloads.push(DbWorkload::Ycsb(config));
                }
                (workloads, a.common)
            }
            Benchmark::Tpcc(a) => (
                vec![DbWorkload::Tpcc(TpccSettings {
                    warehouses: a.warehouses,
                    items: a.items,
                    customers: a.customers,
                    orders: a.orders,
                })],
                a.common,
            ),
        };
        let CommonArgs {
            threads,
            duration,
            repeat,
            warmup,
            opacity,
            untracked_reads,
            read_my_writes,
            index_cutoff,
            contention,
            output,
            seed,
            hooks,
        } = common;
        for (i, mode) in opacity.iter().enumerate() {
            if opacity[..i].contains(mode) {
                return Err(Failure::Usage(format!(
                    "opacity mode `{}` given twice",
                    mode.name()
                )));
            }
        }
        let threads = threads.unwrap_or_else(|| ThreadList::up_to(cores));
        Ok(DbSettings {
            benchmark,
            workloads,
            opacity,
            policy: contention.unwrap_or(ContentionPolicy::DEFAULT),
            untracked_reads,
            read_my_writes,
            index_cutoff: index_cutoff.unwrap_or(txmem::tuning::HASH_CUTOFF),
            outputs: output.outputs(),
            measure: Measurement {
                threads: threads.counts().to_vec(),
                duration,
                repeats: repeat,
                warmup: warmup.unwrap_or_else(|| (duration / 5).min(Duration::from_millis(300))),
                seed,
                progress: !output.no_progress,
                break_check: hooks.break_check(),
            },
        })
    }
}
