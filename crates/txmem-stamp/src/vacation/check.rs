//! Verification of a finished run.
//!
//! Every variant turns its final database into a [`State`] and
//! [`verify`] checks what must hold whatever order the tasks committed in:
//! each item's counts add up, no count is negative, every reserved unit is
//! held by exactly one customer entry (and every entry names an existing
//! item at its fixed price), and every task ran exactly once.

use super::{price_of, Entry, Kind, Params, Record};

/// A variant's final database, in one shape for all variants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct State {
    /// Per table, the record of each id (index = id; index 0 unused).
    pub tables: [Vec<Option<Record>>; 3],
    /// Each customer's entries (index = id; index 0 unused); `None` when
    /// the customer does not exist.
    pub customers: Vec<Option<Vec<Entry>>>,
    /// Tasks executed, by kind: reservations, deletions, updates.
    pub tasks: [u64; 3],
}

impl State {
    /// An empty database for `params.relations` ids, tables and customers
    /// all absent.
    pub fn empty(params: &Params) -> State {
        let n = params.relations as usize + 1;
        State {
            tables: std::array::from_fn(|_| vec![None; n]),
            customers: vec![None; n],
            tasks: [0; 3],
        }
    }

    /// The record of `id` in table `kind`, if present.
    pub fn record(&self, kind: Kind, id: u64) -> Option<&Record> {
        self.tables[kind.index()].get(id as usize)?.as_ref()
    }
}

/// Checks `state` against the invariants; the error names the first
/// violation found.
pub fn verify(params: &Params, state: &State) -> Result<(), String> {
    let executed: u64 = state.tasks.iter().sum();
    if executed != params.tasks as u64 {
        return Err(format!(
            "{executed} tasks executed (by kind {:?}), expected {}",
            state.tasks, params.tasks
        ));
    }
    let n = params.relations as usize + 1;
    if state.customers.len() != n || state.tables.iter().any(|t| t.len() != n) {
        return Err(format!("tables do not cover ids 1..={}", params.relations));
    }
    // Units held by customers, per item.
    let mut held: [Vec<i64>; 3] = std::array::from_fn(|_| vec![0; n]);
    for (c, list) in state.customers.iter().enumerate() {
        for e in list.iter().flatten() {
            let Some(rec) = state.record(e.kind, e.id) else {
                return Err(format!(
                    "customer {c} holds {:?} {}, which does not exist",
                    e.kind, e.id
                ));
            };
            if e.price != rec.price {
                return Err(format!(
                    "customer {c} paid {} for {:?} {}, which costs {}",
                    e.price, e.kind, e.id, rec.price
                ));
            }
            held[e.kind.index()][e.id as usize] += 1;
        }
    }
    for kind in Kind::ALL {
        for (id, rec) in state.tables[kind.index()].iter().enumerate() {
            let holders = held[kind.index()][id];
            let Some(r) = rec else { continue };
            if id == 0 {
                return Err(format!("{kind:?} has an item with id 0"));
            }
            if r.used + r.free != r.total || r.free < 0 || r.used < 0 {
                return Err(format!("{kind:?} {id}: inconsistent counts {r:?}"));
            }
            if r.used != holders {
                return Err(format!(
                    "{kind:?} {id}: {} units used but {holders} held by customers",
                    r.used
                ));
            }
            if r.price != price_of(kind, id as u64) {
                return Err(format!("{kind:?} {id}: price {} is not its own", r.price));
            }
        }
    }
    Ok(())
}
