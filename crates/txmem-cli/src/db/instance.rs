//! A database workload as a row of the benchmark runner: the adapter from
//! [`txmem_db::Workload`] to the harness's [`Instance`].

use std::time::Instant;

use rand::rngs::SmallRng;
use txmem::TxOptions;
use txmem_db::Workload;

use crate::harness::kinds::KindTallies;
use crate::harness::spec::{AbortCounting, Instance, Tally};

/// A loaded database (a [`Workload`], or `dyn Workload`) run under txmem
/// options of its own.
pub struct DbInstance<W: ?Sized> {
    workload: Box<W>,
    /// Set as txmem's defaults before every run (the workload's
    /// transactions use the defaults).
    options: TxOptions,
    /// What `--break-check` does to this workload (`None`: nothing).
    sabotage: Option<fn(&W)>,
}

impl<W: Workload + ?Sized> DbInstance<W> {
    /// `workload` run with `options`; `sabotage` breaks what its check
    /// verifies.
    pub fn new(workload: Box<W>, options: TxOptions, sabotage: Option<fn(&W)>) -> Self {
        DbInstance {
            workload,
            options,
            sabotage,
        }
    }
}

impl<W: Workload + ?Sized> Instance for DbInstance<W> {
    /// Runs one transaction as worker 0: for a single thread only (the
    /// driver calls [`op_as`](Instance::op_as), which names the worker).
    fn op(&self, rng: &mut SmallRng, tally: &mut Tally) {
        let o = self.workload.run_one(rng, 0);
        tally.ops += 1;
        tally.attempts += u64::from(o.attempts);
    }

    /// Runs one transaction as worker `worker`, timing one in
    /// [`LATENCY_STRIDE`](crate::harness::kinds::LATENCY_STRIDE).
    #[inline]
    fn op_as(&self, worker: usize, rng: &mut SmallRng, tally: &mut Tally, kinds: &mut KindTallies) {
        let start = kinds.time_next().then(Instant::now);
        let o = self.workload.run_one(rng, worker);
        let latency = start.map(|t| t.elapsed());
        kinds.record(o.kind, o.attempts, o.rolled_back, latency);
        tally.ops += 1;
        tally.attempts += u64::from(o.attempts);
    }

    fn kinds(&self) -> &'static [&'static str] {
        self.workload.kinds()
    }

    fn prepare(&self) {
        txmem::set_default_options(self.options);
    }

    /// The workload's own check of the whole database.
    /// The workload's check, with the item index at its default cutoff
    /// whatever `--index-cutoff` says: the check reads whole tables in a
    /// transaction, which without the index takes time quadratic in their
    /// size. (No worker runs during the check.)
    fn verify(&self, _total: &Tally) -> Result<(), String> {
        let cutoff = txmem::tuning::item_index_cutoff();
        txmem::tuning::set_item_index_cutoff(txmem::tuning::HASH_CUTOFF);
        let checked = self.workload.check();
        txmem::tuning::set_item_index_cutoff(cutoff);
        checked
    }

    fn sabotage(&self) {
        if let Some(s) = self.sabotage {
            s(&self.workload)
        }
    }

    /// Aborts are the attempts beyond the first of each transaction.
    fn abort_counting(&self) -> AbortCounting {
        AbortCounting::Attempts
    }
}
