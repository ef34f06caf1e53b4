//! The `typed` variant: the database in txmem's maps.
//!
//! Each table is a `THashMap<u64, Record>` and the customers a
//! `THashMap<u64, Vec<Entry>>`. Hash maps rather than `TBTreeMap`s because
//! vacation only ever looks items up by id (no range scans), and a hash
//! map's operations on distinct keys never conflict, where a B+ tree's
//! inserts and removals can conflict through a shared leaf. A record is a
//! map value: reading it tracks that key, and writing it back replaces it,
//! so two reservations of the same item conflict (the case [`plus`]
//! removes).
//!
//! [`plus`]: super::plus

use txmem::{atomically, THashMap, Transaction, TxResult};

use super::check::State;
use super::client::run_transactional;
use super::gen::Task;
use super::{Entry, Kind, Record, Vacation};
use crate::Measured;

/// The database in transactional hash maps.
pub(super) struct Db {
    tables: [THashMap<u64, Record>; 3],
    customers: THashMap<u64, Vec<Entry>>,
}

impl Db {
    fn initial(app: &Vacation) -> Db {
        let r = app.params().relations;
        let db = Db {
            tables: std::array::from_fn(|_| THashMap::with_capacity(r as usize)),
            customers: THashMap::with_capacity(r as usize),
        };
        // Filled in batches: one transaction per id would be slow, one for
        // everything would hold millions of items.
        for ids in (1..=r).collect::<Vec<_>>().chunks(1024) {
            atomically(|tx| {
                for &id in ids {
                    for k in Kind::ALL {
                        db.tables[k.index()].set(tx, id, Record::fresh(k, id))?;
                    }
                    db.customers.set(tx, id, Vec::new())?;
                }
                Ok(())
            });
        }
        db
    }

    /// One task's transaction body.
    fn task<'env>(&'env self, tx: &mut Transaction<'env>, task: &Task) -> TxResult<()> {
        match task {
            Task::Reserve { customer, queries } => {
                let mut best: [Option<(u64, Record)>; 3] = [None; 3];
                for &(kind, id) in queries {
                    if let Some(rec) = self.tables[kind.index()].get(tx, &id)? {
                        let slot = &mut best[kind.index()];
                        if rec.free > 0 && slot.is_none_or(|(_, b)| rec.price > b.price) {
                            *slot = Some((id, rec));
                        }
                    }
                }
                if best.iter().all(Option::is_none) {
                    return Ok(());
                }
                let mut list = self.customers.get(tx, customer)?.unwrap_or_default();
                for (i, slot) in best.iter().enumerate() {
                    if let Some((id, rec)) = *slot {
                        self.tables[i].set(tx, id, rec.reserved(1))?;
                        list.push(Entry {
                            kind: Kind::from_index(i),
                            id,
                            price: rec.price,
                        });
                    }
                }
                self.customers.set(tx, *customer, list)
            }
            Task::DeleteCustomer { customer } => {
                let Some(list) = self.customers.get(tx, customer)? else {
                    return Ok(());
                };
                for e in list {
                    let table = &self.tables[e.kind.index()];
                    // Opacity: the view is consistent, so a held item exists.
                    let rec = table.get(tx, &e.id)?.expect("a held item exists");
                    table.set(tx, e.id, rec.reserved(-1))?;
                }
                self.customers.remove(tx, customer)?;
                Ok(())
            }
            Task::Update { ops } => {
                for &(kind, id, add) in ops {
                    let table = &self.tables[kind.index()];
                    let rec = table.get(tx, &id)?;
                    if add {
                        let grown = rec.map_or_else(|| Record::fresh(kind, id), |r| r.grown());
                        table.set(tx, id, grown)?;
                    } else if rec.is_some_and(|r| r.used == 0) {
                        table.remove(tx, &id)?;
                    }
                }
                Ok(())
            }
        }
    }

    fn into_state(self, app: &Vacation, tasks: [u64; 3]) -> State {
        let mut s = State::empty(app.params());
        for id in 1..=app.params().relations {
            for k in Kind::ALL {
                s.tables[k.index()][id as usize] = self.tables[k.index()].load(&id);
            }
            s.customers[id as usize] = self.customers.load(&id);
        }
        s.tasks = tasks;
        s
    }
}

/// Runs the tasks as transactions from `threads` threads; returns the task
/// phase's measurement and the final database.
pub fn run(app: &Vacation, threads: usize) -> (Measured, State) {
    run_transactional(app, threads, Db::initial, Db::task, Db::into_state)
}
