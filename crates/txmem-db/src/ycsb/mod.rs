//! YCSB on txmem: workloads A–F and the 16-operations-per-transaction variant.
//!
//! The Yahoo! Cloud Serving Benchmark (Cooper et al., SoCC 2010) runs a
//! mix of key-value operations over one table of records; STO (Herman et
//! al., EuroSys 2016) runs it with 16 operations per transaction to
//! measure a transactional memory rather than a network round trip per
//! operation. [`Ycsb`] is one loaded table and its workload.
//!
//! ```
//! use rand::{rngs::SmallRng, SeedableRng};
//! use txmem_db::ycsb::{Config, Mix, Ycsb};
//! use txmem_db::Workload;
//!
//! let config = Config { record_count: 1000, ops_per_txn: 16, ..Config::new(Mix::A) };
//! let ycsb = Ycsb::new(config).unwrap();
//! let mut rng = SmallRng::seed_from_u64(1);
//! for _ in 0..100 {
//!     ycsb.run_one(&mut rng, 0);
//! }
//! ycsb.check().unwrap();
//! ```
//!
//! # The table
//!
//! Records are numbered `0..record_count`; inserts (D, E) take the next
//! numbers. Each record holds `value_size` bytes of fields (YCSB's 10
//! fields of 10 bytes by default), stored inline up to 112 bytes so that a
//! record is one allocation (see *Representation* below).
//! The index is a [`THashMap`](txmem::THashMap) for A–D and F, whose point
//! operations cost the same at any table size, and a
//! [`TBTreeMap`](txmem::TBTreeMap) for E, whose scans need key order and
//! phantom protection over the range they read; [`Index`] says why, and
//! [`Config::index`] runs any workload but E on either.
//!
//! # Representation
//!
//! txmem hands a transactional read either a clone of the value (`get`)
//! or a reference to it (`get_with`, scans). Every read here goes through
//! a reference and copies the fields into the worker's buffer, as a
//! database copies them into its reply; no record is ever cloned. Writes
//! build a new record (a txmem value is replaced whole), so storing the
//! fields separately would save nothing: an update writes every field
//! (YCSB's `writeallfields=true`), a read-modify-write reads every field
//! and writes a new version of the record.
//!
//! # Operations
//!
//! | op | what it does in the transaction |
//! |---|---|
//! | read | `get_with` the record, copy its fields out |
//! | update | `set` a new record without reading the old one (a blind write) |
//! | read-modify-write | `get_with` the record, then `set` its next version |
//! | insert | `insert` a record under a fresh key (the result must be `true`) |
//! | scan | visit 1–`max_scan_len` records (uniform) in key order, copying each |
//!
//! Keys come from YCSB's distributions ([`Distribution`]): zipfian
//! (θ = 0.99, scrambled so the popular records are scattered over the
//! keys), uniform, or latest (zipfian by recency). The zipfian ranks come
//! from [`Zipfian`], Gray et al.'s generator, which follows a growing
//! table incrementally. A transaction draws all its operations before it
//! starts, so every attempt runs the same ones.
//!
//! A transaction is reported under one kind ([`Mix::kinds`]): its writing
//! operation if it has one, else its reading one.
//!
//! # Verification
//!
//! Every record carries its key and a *stamp* naming the write that
//! produced it, and its field bytes are a function of both. Blind updates
//! are stamped with the worker and the number of updates it committed
//! before; read-modify-writes count versions up from 0. Each worker counts
//! the updates, read-modify-writes and inserts it committed. [`check`]
//! verifies, for every record number below the number loaded plus the
//! number inserted:
//!
//! * the record exists, holds its own key, and its fields are exactly
//!   those its stamp calls for (no mix of two writes, no torn value);
//! * a blind update's stamp is one its worker committed;
//! * the versions add up to the number of committed read-modify-writes
//!   (a lost update or a write of an aborted attempt shows here);
//! * some record shows an update if any committed, none more than were;
//! * the table holds exactly the loaded and inserted records.
//!
//! Reads verify the key of every record they see, and report a record
//! missing, or found under another key, through the same check.
//!
//! [`check`]: crate::Workload::check

mod check;
mod config;
mod keys;
mod permutation;
mod record;
mod table;
mod txn;
mod workers;
mod zipfian;

use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use rand::rngs::SmallRng;

pub use config::{
    Config, Distribution, Index, Mix, Op, DEFAULT_MAX_SCAN_LEN, DEFAULT_RECORDS, DEFAULT_THETA,
    DEFAULT_VALUE_SIZE, MAX_OPS_PER_TXN, MAX_RECORDS, MAX_VALUE_SIZE,
};
pub use record::INLINE as INLINE_VALUE_SIZE;
pub use workers::MAX_WORKERS;
pub use zipfian::Zipfian;

use crate::{Outcome, Workload};
use table::Table;
use workers::Workers;

/// A counter on its own cache lines.
#[repr(align(128))]
#[derive(Default)]
struct Padded(AtomicU64);

/// A loaded YCSB table and its workload (see the [module docs](self)).
pub struct Ycsb {
    config: Config,
    table: Table,
    /// The zipfian over the loaded records, cloned into every worker.
    zipfian: Zipfian,
    /// The next record number an insert takes.
    next_key: Padded,
    /// Inserts committed: keys below `record_count + inserted` are chosen.
    inserted: Padded,
    workers: Workers,
    /// The first inconsistency a committed transaction saw.
    failure: Mutex<Option<String>>,
}

impl Ycsb {
    /// Validates `config`, then builds and loads the table (on
    /// `config.load_threads` threads).
    pub fn new(config: Config) -> Result<Ycsb, String> {
        config.validate()?;
        let n = config.record_count;
        let table = Table::new(config.index(), n);
        let threads = match config.load_threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            t => t,
        };
        table.load_records(n, config.value_size, threads);
        Ok(Ycsb {
            zipfian: Zipfian::new(n, config.theta),
            table,
            next_key: Padded(AtomicU64::new(n)),
            inserted: Padded::default(),
            workers: Workers::new(),
            failure: Mutex::new(None),
            config,
        })
    }

    /// The configuration it was built from.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The committed number of records.
    pub fn records(&self) -> u64 {
        self.table.committed_len() as u64
    }

    /// Records the first inconsistency seen (the check reports it).
    fn fail(&self, problem: String) {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(problem);
    }
}

impl std::ops::Deref for Padded {
    type Target = AtomicU64;
    fn deref(&self) -> &AtomicU64 {
        &self.0
    }
}

impl Workload for Ycsb {
    fn kinds(&self) -> &'static [&'static str] {
        self.config.mix.kinds()
    }

    /// Runs one transaction of `ops_per_txn` operations as worker `worker`
    /// (below [`MAX_WORKERS`]; one thread per index at a time).
    fn run_one(&self, rng: &mut SmallRng, worker: usize) -> Outcome {
        self.run_txn(rng, worker)
    }

    fn check(&self) -> Result<(), String> {
        self.check_all()
    }
}
