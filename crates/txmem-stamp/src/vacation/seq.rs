//! The `seq` variant: plain collections, no transactions, one thread.
//!
//! The baseline that speedups are measured against. It ignores the thread
//! count and always runs every task on the calling thread.

use std::collections::HashMap;

use super::check::State;
use super::client::kind_index;
use super::gen::{self, Task};
use super::{Entry, Kind, Record, Vacation};
use crate::{timed, Measured};

/// The database in ordinary hash maps.
struct Db {
    tables: [HashMap<u64, Record>; 3],
    customers: HashMap<u64, Vec<Entry>>,
}

impl Db {
    fn initial(app: &Vacation) -> Db {
        let r = app.params().relations;
        Db {
            tables: Kind::ALL.map(|k| (1..=r).map(|id| (id, Record::fresh(k, id))).collect()),
            customers: (1..=r).map(|c| (c, Vec::new())).collect(),
        }
    }

    fn run(&mut self, task: &Task) {
        match task {
            Task::Reserve { customer, queries } => {
                let mut best: [Option<(u64, Record)>; 3] = [None; 3];
                for &(kind, id) in queries {
                    if let Some(&rec) = self.tables[kind.index()].get(&id) {
                        let slot = &mut best[kind.index()];
                        if rec.free > 0 && slot.is_none_or(|(_, b)| rec.price > b.price) {
                            *slot = Some((id, rec));
                        }
                    }
                }
                if best.iter().all(Option::is_none) {
                    return;
                }
                let list = self.customers.entry(*customer).or_default();
                for (i, slot) in best.iter().enumerate() {
                    if let Some((id, rec)) = *slot {
                        self.tables[i].insert(id, rec.reserved(1));
                        list.push(Entry {
                            kind: Kind::from_index(i),
                            id,
                            price: rec.price,
                        });
                    }
                }
            }
            Task::DeleteCustomer { customer } => {
                if let Some(list) = self.customers.remove(customer) {
                    for e in list {
                        let rec = self.tables[e.kind.index()]
                            .get_mut(&e.id)
                            .expect("a held item exists");
                        *rec = rec.reserved(-1);
                    }
                }
            }
            Task::Update { ops } => {
                for &(kind, id, add) in ops {
                    let table = &mut self.tables[kind.index()];
                    if add {
                        let grown = table
                            .get(&id)
                            .map_or_else(|| Record::fresh(kind, id), |r| r.grown());
                        table.insert(id, grown);
                    } else if table.get(&id).is_some_and(|r| r.used == 0) {
                        table.remove(&id);
                    }
                }
            }
        }
    }

    fn into_state(self, app: &Vacation, tasks: [u64; 3]) -> State {
        let mut s = State::empty(app.params());
        for (i, table) in self.tables.into_iter().enumerate() {
            for (id, rec) in table {
                s.tables[i][id as usize] = Some(rec);
            }
        }
        for (c, list) in self.customers {
            s.customers[c as usize] = Some(list);
        }
        s.tasks = tasks;
        s
    }
}

/// Runs every task in order on the calling thread; returns the task
/// phase's time and the final database.
pub fn run(app: &Vacation) -> (Measured, State) {
    let mut db = Db::initial(app);
    let (params, seed) = (app.params(), app.seed());
    let mut tasks = [0u64; 3];
    let ((), measured) = timed(|| {
        for i in 0..params.tasks {
            let task = gen::task(params, seed, i);
            db.run(&task);
            tasks[kind_index(&task)] += 1;
        }
    });
    (measured, db.into_state(app, tasks))
}
