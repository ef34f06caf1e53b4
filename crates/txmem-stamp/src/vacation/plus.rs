//! The `typed-plus` variant: [`typed`](super::typed) with each item a
//! [`Resource`] (the STO thesis' STO+ vacation).
//!
//! Customers stay in a `THashMap<u64, Vec<Entry>>`. Each table is a
//! direct-indexed array of [`Resource`]s, one per id in `1..=r` (every id a
//! task can name), each present or absent: a transaction registers items
//! of an object by reference, so the objects must outlive every
//! transaction, which a map's values (replaced and reclaimed on write) do
//! not.
//!
//! A reservation chooses by [`Resource::peek`] (untracked) and reserves
//! blindly, so reservations of the same item no longer conflict; the
//! object refuses a reservation that cannot be met at commit, and the
//! rerun chooses again. The price a customer pays is the chosen item's
//! fixed price, so an untracked choice cannot record a wrong one. This is
//! the STO+ relaxation: an item that becomes available, or more
//! expensive, after the choice is not reconsidered.

use txmem::{atomically, THashMap, Transaction, TxResult};

use super::check::State;
use super::client::run_transactional;
use super::gen::Task;
use super::resource::Resource;
use super::{Entry, Kind, Record, Vacation};
use crate::Measured;

/// The database: resources by table and id, customers in a map.
struct Db {
    /// Index `id` (0 unused, always absent).
    tables: [Vec<Resource>; 3],
    customers: THashMap<u64, Vec<Entry>>,
}

impl Db {
    fn initial(app: &Vacation) -> Db {
        let r = app.params().relations;
        let table = |k: Kind| {
            (0..=r)
                .map(|id| Resource::new((id > 0).then(|| Record::fresh(k, id))))
                .collect()
        };
        let db = Db {
            tables: Kind::ALL.map(table),
            customers: THashMap::with_capacity(r as usize),
        };
        for ids in (1..=r).collect::<Vec<_>>().chunks(1024) {
            atomically(|tx| {
                for &id in ids {
                    db.customers.set(tx, id, Vec::new())?;
                }
                Ok(())
            });
        }
        db
    }

    fn resource(&self, kind: Kind, id: u64) -> &Resource {
        &self.tables[kind.index()][id as usize]
    }

    fn task<'env>(&'env self, tx: &mut Transaction<'env>, task: &Task) -> TxResult<()> {
        match task {
            Task::Reserve { customer, queries } => {
                let mut best: [Option<(u64, Record)>; 3] = [None; 3];
                for &(kind, id) in queries {
                    if let Some(rec) = self.resource(kind, id).peek() {
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
                        let kind = Kind::from_index(i);
                        self.resource(kind, id).reserve(tx)?;
                        list.push(Entry {
                            kind,
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
                    self.resource(e.kind, e.id).release(tx)?;
                }
                self.customers.remove(tx, customer)?;
                Ok(())
            }
            Task::Update { ops } => {
                for &(kind, id, add) in ops {
                    let res = self.resource(kind, id);
                    let slot = res.read(tx)?;
                    if add {
                        let grown = slot.map_or_else(|| Record::fresh(kind, id), |r| r.grown());
                        res.write(tx, Some(grown))?;
                    } else if slot.is_some_and(|r| r.used == 0) {
                        res.write(tx, None)?;
                    }
                }
                Ok(())
            }
        }
    }

    fn into_state(self, app: &Vacation, tasks: [u64; 3]) -> State {
        let mut s = State::empty(app.params());
        for k in Kind::ALL {
            for (id, res) in self.tables[k.index()].iter().enumerate() {
                s.tables[k.index()][id] = res.peek();
            }
        }
        for id in 1..=app.params().relations {
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
