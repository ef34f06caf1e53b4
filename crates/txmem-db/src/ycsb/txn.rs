//! One transaction: draw its operations, run them in a txmem transaction,
//! count what committed.

use std::sync::atomic::Ordering;

use rand::rngs::SmallRng;
use rand::Rng;
use txmem::{atomically, read_only, Transaction, TxResult};

use super::config::Op;
use super::keys::KeyChooser;
use super::record::{Record, Stamp};
use super::workers::{Planned, Worker};
use super::Ycsb;
use crate::Outcome;

/// How many operations of each writing kind a transaction holds.
#[derive(Clone, Copy, Default)]
struct Writes {
    updates: u64,
    rmws: u64,
    inserts: u64,
}

impl Writes {
    fn any(&self) -> bool {
        self.updates + self.rmws + self.inserts > 0
    }
}

impl Ycsb {
    /// A fresh worker's state.
    fn new_worker(&self) -> Worker {
        let mut keys = KeyChooser::new(self.config.distribution(), &self.zipfian);
        keys.resize(self.key_space());
        Worker {
            keys,
            plan: Vec::with_capacity(self.config.ops_per_txn),
            buf: vec![0; self.config.value_size],
            committed: Default::default(),
        }
    }

    /// The records readers may choose from: those loaded and those whose
    /// insert committed.
    fn key_space(&self) -> u64 {
        self.config.record_count + self.inserted.load(Ordering::Acquire)
    }

    /// Draws an operation by the workload's proportions.
    #[inline]
    fn draw_op(&self, rng: &mut SmallRng) -> Op {
        let mixes = self.config.mix.proportions();
        if mixes.len() == 1 {
            return mixes[0].0;
        }
        let mut r = rng.random_range(0..100u32);
        for &(op, percent) in mixes {
            if r < percent {
                return op;
            }
            r -= percent;
        }
        unreachable!("proportions sum to 100")
    }

    /// Runs one transaction as worker `worker` (see [`crate::Workload::run_one`]).
    pub(super) fn run_txn(&self, rng: &mut SmallRng, worker: usize) -> Outcome {
        let mut w = self.workers.claim(worker, || self.new_worker());
        let w = &mut *w;
        if self.config.mix.inserts() {
            w.keys.resize(self.key_space());
        }
        // The operations are drawn first, so that every attempt runs the
        // same ones (an insert's key is taken once).
        let kinds = self.config.mix.kind_ops();
        let mut kind = 0;
        let mut writes = Writes::default();
        w.plan.clear();
        for _ in 0..self.config.ops_per_txn {
            let op = self.draw_op(rng);
            let (key, len) = match op {
                Op::Insert => {
                    writes.inserts += 1;
                    (self.next_key.fetch_add(1, Ordering::Relaxed), 0)
                }
                Op::Scan => (
                    w.keys.next(rng),
                    rng.random_range(1..=self.config.max_scan_len),
                ),
                _ => {
                    match op {
                        Op::Update => writes.updates += 1,
                        Op::ReadModifyWrite => writes.rmws += 1,
                        _ => {}
                    }
                    (w.keys.next(rng), 0)
                }
            };
            kind = kind.max(kinds.iter().position(|&k| k == op).unwrap_or(0));
            w.plan.push(Planned { op, key, len });
        }

        let first_update = w.committed.updates;
        let (plan, buf) = (&w.plan, &mut w.buf);
        let mut attempts = 0u32;
        // A transaction of reads and scans only is declared read-only: its
        // first attempt reads from a snapshot, unlogged.
        let problem = if writes.any() {
            atomically(|tx| {
                attempts += 1;
                self.run_plan(tx, plan, buf, worker, first_update)
            })
        } else {
            read_only(|tx| {
                attempts += 1;
                self.run_plan(tx, plan, buf, worker, first_update)
            })
        };

        let c = &mut w.committed;
        c.txns += 1;
        c.updates += writes.updates;
        c.rmws += writes.rmws;
        c.inserts += writes.inserts;
        if writes.inserts > 0 {
            self.inserted.fetch_add(writes.inserts, Ordering::Release);
        }
        if let Some(p) = problem {
            self.fail(p);
        }
        Outcome {
            kind,
            attempts,
            rolled_back: false,
        }
    }

    /// The body of the transaction: runs `plan`, returning the first
    /// inconsistency it saw (reported once the transaction commits, since
    /// only a committed transaction's view counts).
    fn run_plan<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        plan: &[Planned],
        buf: &mut [u8],
        worker: usize,
        first_update: u64,
    ) -> TxResult<Option<String>> {
        let size = self.config.value_size;
        let loaded = self.config.record_count;
        let mut problem = None;
        let mut note = |p: String| {
            problem.get_or_insert(p);
        };
        let mut update_seq = first_update;
        for p in plan {
            let key = p.key;
            match p.op {
                Op::Read => {
                    let got = self.table.read(tx, key, |r| {
                        copy_fields(buf, r);
                        r.key()
                    })?;
                    match got {
                        Some(k) if k == key => {}
                        Some(k) => note(format!("a read of record {key} found record {k}")),
                        // A record being inserted may not be visible yet.
                        None if key >= loaded => {}
                        None => note(format!("a read found no record {key}")),
                    }
                }
                Op::Update => {
                    let stamp = Stamp::Update {
                        worker,
                        seq: update_seq,
                    };
                    update_seq += 1;
                    self.table.write(tx, key, Record::new(key, stamp, size))?;
                }
                Op::ReadModifyWrite => {
                    let got = self.table.read(tx, key, |r| {
                        copy_fields(buf, r);
                        (r.key(), r.stamp())
                    })?;
                    match got {
                        Some((k, Stamp::Version(v))) if k == key => {
                            let record = Record::new(key, Stamp::Version(v + 1), size);
                            self.table.write(tx, key, record)?;
                        }
                        Some((k, stamp)) => note(format!(
                            "a read-modify-write of record {key} found record {k} stamped {stamp:?}"
                        )),
                        None => note(format!("a read-modify-write found no record {key}")),
                    }
                }
                Op::Insert => {
                    let record = Record::new(key, Stamp::Version(0), size);
                    if !self.table.insert_if_absent(tx, key, record)? {
                        note(format!("record {key} was inserted twice"));
                    }
                }
                Op::Scan => {
                    let mut misfiled = None;
                    self.table.scan(tx, key, p.len, |r, filed_right| {
                        copy_fields(buf, r);
                        if !filed_right {
                            misfiled.get_or_insert(r.key());
                        }
                    })?;
                    if let Some(k) = misfiled {
                        note(format!("a scan found record {k} out of its place"));
                    }
                }
            }
        }
        Ok(problem)
    }
}

/// Copies a record's fields into the worker's buffer: what a read returns
/// to its client. (A record of the wrong size, which the check reports,
/// is copied as far as it fits.)
#[inline]
fn copy_fields(buf: &mut [u8], r: &Record) {
    let fields = r.fields();
    let n = buf.len().min(fields.len());
    buf[..n].copy_from_slice(&fields[..n]);
}
