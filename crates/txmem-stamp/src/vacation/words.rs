//! The `words` variant: the same algorithm over txmem's untyped word STM.
//!
//! Everything lives in one [`TWords`] arena and every access is a tracked
//! word read or a buffered word write, as in a word-based STM:
//!
//! * tables: direct-indexed (ids are `1..=r`), one record of
//!   [`RECORD`] words per id: `present, used, free, total, price`;
//! * customers: direct-indexed, [`CUSTOMER`] words per id:
//!   `present, head` (the head of the customer's list, [`NIL`] if empty);
//! * list nodes: [`NODE`] words allocated from the arena:
//!   `kind << 32 | id, price, next`.
//!
//! A node allocated by an attempt that aborts is freed by an abort
//! handler; the nodes of a deleted customer are freed once the deletion
//! commits.

use txmem::{atomically, TWords, Transaction, TxResult, WordAddr};

use super::check::State;
use super::client::run_transactional;
use super::gen::Task;
use super::{Entry, Kind, Record, Vacation};
use crate::Measured;

/// Words per table record.
pub const RECORD: usize = 5;
/// Words per customer.
pub const CUSTOMER: usize = 2;
/// Words per list node.
pub const NODE: usize = 3;
/// The empty list.
pub const NIL: u64 = u64::MAX;

// Offsets within a record.
const PRESENT: usize = 0;
const USED: usize = 1;
const FREE: usize = 2;
const TOTAL: usize = 3;
const PRICE: usize = 4;
// Offsets within a customer.
const HEAD: usize = 1;
// Offsets within a node.
const KEY: usize = 0;
const NODE_PRICE: usize = 1;
const NEXT: usize = 2;

/// The arena and where its regions start.
struct Db {
    mem: TWords,
    relations: u64,
    customers: WordAddr,
}

/// Counts are stored as two's-complement words.
fn word(x: i64) -> u64 {
    x as u64
}

fn signed(w: u64) -> i64 {
    w as i64
}

impl Db {
    fn initial(app: &Vacation) -> Db {
        let p = app.params();
        let r = p.relations as usize;
        // Every reservation task adds at most one node per table; freed
        // nodes are reused, so this bounds the arena.
        let capacity = 3 * r * RECORD + r * CUSTOMER + 3 * p.tasks * NODE + 1024;
        let mem = TWords::new(capacity);
        let tables = mem.alloc(3 * r * RECORD);
        debug_assert_eq!(tables, WordAddr(0));
        let customers = mem.alloc(r * CUSTOMER);
        let db = Db {
            mem,
            relations: p.relations,
            customers,
        };
        for ids in (1..=p.relations).collect::<Vec<_>>().chunks(512) {
            atomically(|tx| {
                for &id in ids {
                    for k in Kind::ALL {
                        db.write_record(tx, k, id, Some(Record::fresh(k, id)))?;
                    }
                    let c = db.customer(id);
                    db.mem.write(tx, c, 1)?;
                    db.mem.write(tx, c.offset(HEAD), NIL)?;
                }
                Ok(())
            });
        }
        db
    }

    fn record(&self, kind: Kind, id: u64) -> WordAddr {
        WordAddr((kind.index() * self.relations as usize + (id as usize - 1)) * RECORD)
    }

    fn customer(&self, id: u64) -> WordAddr {
        self.customers.offset((id as usize - 1) * CUSTOMER)
    }

    fn read<'env>(&'env self, tx: &mut Transaction<'env>, a: WordAddr) -> TxResult<u64> {
        self.mem.read(tx, a)
    }

    fn write_record<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        kind: Kind,
        id: u64,
        rec: Option<Record>,
    ) -> TxResult<()> {
        let a = self.record(kind, id);
        self.mem
            .write(tx, a.offset(PRESENT), u64::from(rec.is_some()))?;
        if let Some(r) = rec {
            self.mem.write(tx, a.offset(USED), word(r.used))?;
            self.mem.write(tx, a.offset(FREE), word(r.free))?;
            self.mem.write(tx, a.offset(TOTAL), word(r.total))?;
            self.mem.write(tx, a.offset(PRICE), word(r.price))?;
        }
        Ok(())
    }

    /// Adds `n` to an item's `used` and takes it from `free`: only the two
    /// words that change are read and written.
    fn reserve<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        kind: Kind,
        id: u64,
        n: i64,
    ) -> TxResult<()> {
        let a = self.record(kind, id);
        let used = signed(self.read(tx, a.offset(USED))?);
        let free = signed(self.read(tx, a.offset(FREE))?);
        self.mem.write(tx, a.offset(USED), word(used + n))?;
        self.mem.write(tx, a.offset(FREE), word(free - n))
    }

    fn task<'env>(&'env self, tx: &mut Transaction<'env>, task: &Task) -> TxResult<()> {
        match task {
            Task::Reserve { customer, queries } => {
                let mut best: [Option<(u64, i64)>; 3] = [None; 3];
                for &(kind, id) in queries {
                    let a = self.record(kind, id);
                    if self.read(tx, a.offset(PRESENT))? == 0
                        || signed(self.read(tx, a.offset(FREE))?) <= 0
                    {
                        continue;
                    }
                    let price = signed(self.read(tx, a.offset(PRICE))?);
                    let slot = &mut best[kind.index()];
                    if slot.is_none_or(|(_, p)| price > p) {
                        *slot = Some((id, price));
                    }
                }
                if best.iter().all(Option::is_none) {
                    return Ok(());
                }
                let c = self.customer(*customer);
                let mut head = if self.read(tx, c)? == 0 {
                    self.mem.write(tx, c, 1)?;
                    NIL
                } else {
                    self.read(tx, c.offset(HEAD))?
                };
                for (i, slot) in best.iter().enumerate() {
                    let Some((id, price)) = *slot else { continue };
                    let kind = Kind::from_index(i);
                    self.reserve(tx, kind, id, 1)?;
                    let node = self.mem.alloc(NODE);
                    let mem = &self.mem;
                    tx.on_abort(move || mem.free(node, NODE));
                    self.mem
                        .write(tx, node.offset(KEY), (i as u64) << 32 | id)?;
                    self.mem.write(tx, node.offset(NODE_PRICE), word(price))?;
                    self.mem.write(tx, node.offset(NEXT), head)?;
                    head = node.0 as u64;
                }
                self.mem.write(tx, c.offset(HEAD), head)
            }
            Task::DeleteCustomer { customer } => {
                let c = self.customer(*customer);
                if self.read(tx, c)? == 0 {
                    return Ok(());
                }
                let mut node = self.read(tx, c.offset(HEAD))?;
                let mut unlinked = Vec::new();
                while node != NIL {
                    let n = WordAddr(node as usize);
                    let key = self.read(tx, n.offset(KEY))?;
                    let kind = Kind::from_index((key >> 32) as usize);
                    self.reserve(tx, kind, key & 0xFFFF_FFFF, -1)?;
                    unlinked.push(n);
                    node = self.read(tx, n.offset(NEXT))?;
                }
                self.mem.write(tx, c, 0)?;
                self.mem.write(tx, c.offset(HEAD), NIL)?;
                let mem = &self.mem;
                tx.on_commit(move || unlinked.into_iter().for_each(|n| mem.free(n, NODE)));
                Ok(())
            }
            Task::Update { ops } => {
                for &(kind, id, add) in ops {
                    let a = self.record(kind, id);
                    let present = self.read(tx, a.offset(PRESENT))? != 0;
                    if add {
                        if present {
                            let free = signed(self.read(tx, a.offset(FREE))?);
                            let total = signed(self.read(tx, a.offset(TOTAL))?);
                            let step = super::CAPACITY_STEP;
                            self.mem.write(tx, a.offset(FREE), word(free + step))?;
                            self.mem.write(tx, a.offset(TOTAL), word(total + step))?;
                        } else {
                            self.write_record(tx, kind, id, Some(Record::fresh(kind, id)))?;
                        }
                    } else if present && self.read(tx, a.offset(USED))? == 0 {
                        self.mem.write(tx, a.offset(PRESENT), 0)?;
                    }
                }
                Ok(())
            }
        }
    }

    fn into_state(self, app: &Vacation, tasks: [u64; 3]) -> State {
        let mem = &self.mem;
        let load = |a: WordAddr| signed(mem.load(a));
        let mut s = State::empty(app.params());
        for id in 1..=self.relations {
            for k in Kind::ALL {
                let a = self.record(k, id);
                s.tables[k.index()][id as usize] = (mem.load(a) != 0).then(|| Record {
                    used: load(a.offset(USED)),
                    free: load(a.offset(FREE)),
                    total: load(a.offset(TOTAL)),
                    price: load(a.offset(PRICE)),
                });
            }
            let c = self.customer(id);
            if mem.load(c) != 0 {
                let mut list = Vec::new();
                let mut node = mem.load(c.offset(HEAD));
                while node != NIL {
                    let n = WordAddr(node as usize);
                    let key = mem.load(n.offset(KEY));
                    list.push(Entry {
                        kind: Kind::from_index((key >> 32) as usize),
                        id: key & 0xFFFF_FFFF,
                        price: load(n.offset(NODE_PRICE)),
                    });
                    node = mem.load(n.offset(NEXT));
                }
                // Nodes are pushed at the head: restore booking order.
                list.reverse();
                s.customers[id as usize] = Some(list);
            }
        }
        s.tasks = tasks;
        s
    }
}

/// Runs the tasks as transactions over one word arena from `threads`
/// threads; returns the task phase's measurement and the final database.
pub fn run(app: &Vacation, threads: usize) -> (Measured, State) {
    run_transactional(app, threads, Db::initial, Db::task, Db::into_state)
}
