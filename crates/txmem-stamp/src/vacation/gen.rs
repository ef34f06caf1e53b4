//! The clients' tasks, generated deterministically.
//!
//! Task `i` depends only on the seed, the parameters and `i` (it has its
//! own random stream), so every variant and every thread count runs the
//! same tasks, however they are split among threads, and no task list has
//! to be stored (the paper input has four million tasks).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::{Kind, Params};

/// One client task: one transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Task {
    /// Query `queries` items and reserve, per table, the most expensive
    /// available one among them for `customer`.
    Reserve {
        /// The customer who books.
        customer: u64,
        /// The items looked at, in order (ties go to the first).
        queries: Vec<(Kind, u64)>,
    },
    /// Release everything `customer` holds and remove the customer, if
    /// present.
    DeleteCustomer {
        /// The customer.
        customer: u64,
    },
    /// Change the tables: per operation, add capacity (`true`) or retire
    /// the item if unused (`false`).
    Update {
        /// The operations, in order.
        ops: Vec<(Kind, u64, bool)>,
    },
}

/// Task `i` of the run with `params` and `seed`.
pub fn task(params: &Params, seed: u64, i: usize) -> Task {
    // A multiplicative mix keeps the streams of neighbouring tasks apart
    // (`seed_from_u64` expands its argument further).
    let mut rng =
        SmallRng::seed_from_u64(seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let range = params.query_range();
    let item = |rng: &mut SmallRng| {
        let kind = Kind::from_index(rng.random_range(0..3));
        (kind, rng.random_range(1..=range))
    };
    let roll = rng.random_range(0..100);
    let deletes = (100 - params.percent_user) / 2;
    if roll < params.percent_user {
        let customer = rng.random_range(1..=range);
        let queries = (0..params.queries).map(|_| item(&mut rng)).collect();
        Task::Reserve { customer, queries }
    } else if roll < params.percent_user + deletes {
        Task::DeleteCustomer {
            customer: rng.random_range(1..=range),
        }
    } else {
        let ops = (0..params.queries)
            .map(|_| {
                let (kind, id) = item(&mut rng);
                (kind, id, rng.random_bool(0.5))
            })
            .collect();
        Task::Update { ops }
    }
}

/// How many tasks of each kind (reserve, delete, update) `0..params.tasks`
/// holds: what a run must have executed.
pub fn census(params: &Params, seed: u64) -> [u64; 3] {
    let mut n = [0; 3];
    for i in 0..params.tasks {
        n[match task(params, seed, i) {
            Task::Reserve { .. } => 0,
            Task::DeleteCustomer { .. } => 1,
            Task::Update { .. } => 2,
        }] += 1;
    }
    n
}
